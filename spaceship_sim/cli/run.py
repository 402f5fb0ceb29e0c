"""`spaceship-sim run`: a headless frame-timing run.

Each frame runs the pipeline, then stands in for rendering by busy-waiting `--render-ms`
(the render load a window would add), and, with `--realtime`, waits out the rest of the
target frame time. Writes frames.csv, summary.json and profile.png into --out, all or nothing:
frame times and the accuracy reached (levels, separation bounds; sim/frame_log.py).
`--record FILE` also records the run (spaceship_sim.sim.replay); `--replay FILE` steps through a
recording of `run`, `fly` or `demo` instead — the same frames, stats and final state — and
writes the same three files. Both print the final state hash.
"""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from ..config import load_config, shipped_config
from ..errors import InputError
from ..sim import frame_log
from ..sim.runs import run_frames
from ..sim.scenario import validate_scenario
from .args import COMMAND_LINE, MAX_FRAMES, integer, milliseconds, new_file, output_folder

DEFAULT_WARMUP = 5  # frames left out of the summary: numba compile or cache load, first tree loads
DEFAULT_FRAMES = 600
FIXED_BY_RECORDING = ("frames", "render_ms", "exact_only", "realtime", "record")  # refused beside --replay


def register(sub) -> None:
    p = sub.add_parser("run", help="headless frame-timing run: frames.csv, summary.json, profile.png")
    p.add_argument("--config", default=None,
                   help="scenario TOML (default: the shipped configs/default.toml; with --replay: the recording's, "
                        "and naming one checks that the recording was made with it)")
    p.add_argument("--frames", type=integer(1, MAX_FRAMES), default=None,
                   help=f"frames to run (default: {DEFAULT_FRAMES})")
    p.add_argument("--out", type=output_folder, required=True,
                   help="output folder (created; replaced files only on success)")
    p.add_argument("--render-ms", type=milliseconds, default=None,
                   help="simulated render time per frame [ms] (default: 0)")
    p.add_argument("--realtime", action="store_true", help="wait out each frame's remaining target time")
    p.add_argument("--exact-only", action="store_true",
                   help="refine every pair to the exact level regardless of the budget (Hubbard's baseline)")
    p.add_argument("--warmup", type=integer(0, MAX_FRAMES - 1), default=None,
                   help=f"first frames left out of summary.json (numba compile, caches) (default: {DEFAULT_WARMUP}, "
                        "fewer in a shorter run)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--record", metavar="FILE", type=new_file,
                   help="also record the run into FILE (gzip JSON lines), for --replay")
    p.add_argument("--replay", metavar="FILE",
                   help="replay a recording of run, fly or demo instead (frames, render times, keys and clock "
                        "readings from FILE): the same frames and final state hash")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.replay is not None:
        return replay_run(args)
    check_args(args)
    cfg = load_config(args.config)
    validate_scenario(cfg)
    warn_render_over_target(cfg, ("--render-ms", args.render_ms))
    if args.exact_only:
        cfg = dataclasses.replace(cfg, collision=dataclasses.replace(cfg.collision, time_critical=False))
    log, world = run_frames(cfg, args.frames, args.render_ms / 1e3, args.realtime,
                            lambda w: frame_log.FrameLog(Path(args.out), args.frames, args.warmup, w.max_level),
                            progress=not args.no_progress, record=args.record)
    mode = "time-critical" if cfg.collision.time_critical else "exact-only"
    s = log.commit(title=f"{Path(args.config).name}: {mode}, render {args.render_ms:g} ms",
                   config=str(args.config), seed=cfg.sim.seed, render_ms=args.render_ms,
                   time_critical=cfg.collision.time_critical, state_hash=world.state_hash())
    print_summary(args.out, s)
    if args.record:
        print(f"recording: {args.record} ({args.frames} frames, {Path(args.record).stat().st_size / 1e3:.0f} kB)")
    print(f"state hash {s['state_hash']}")
    return 0


def replay_run(args) -> int:
    """`run --replay FILE`: the recorded frames again, reported as a run; the final state hash
    must be the recording's (else a ReplayError, exit 2)."""
    from ..sim.replay import Recording, replay

    given = [name for name in FIXED_BY_RECORDING if getattr(args, name) not in (None, False)]
    if given:
        flag = "--" + given[0].replace("_", "-")
        raise InputError(COMMAND_LINE, flag, "cannot be combined with --replay: the recording fixes it")
    rec = Recording(args.replay)
    args.frames = rec.n_frames
    check_args(args)
    config = None if args.config is None else load_config(args.config)
    log, world = replay(rec, lambda w: frame_log.FrameLog(Path(args.out), rec.n_frames, args.warmup, w.max_level),
                        config=config, progress=not args.no_progress)
    cfg = rec.config
    mode = "time-critical" if cfg.collision.time_critical else "exact-only"
    s = log.commit(title=f"replay of {Path(args.replay).name} ({rec.header['command']}, "
                         f"{Path(rec.header['source']).name}): {mode} at the start",
                   config=rec.header["source"], seed=cfg.sim.seed, time_critical=cfg.collision.time_critical,
                   replay_of=str(args.replay), recorded_command=rec.header["command"], state_hash=world.state_hash())
    print_summary(args.out, s)
    print(f"state hash {s['state_hash']} (replay of {args.replay}: the recorded run's)")
    return 0


def print_summary(out, s: dict) -> None:
    """The run's figures in two lines: frame times, accuracy."""
    a = s["accuracy"]
    bound = a["separation_bound_m"]
    print(f"{out}: {s['frames']} frames, frame time median {s['frame_time_ms']['median']:.2f} ms, "
          f"p99 {s['frame_time_ms']['p99']:.2f} ms (target {s['target_ms']:.1f} ms), "
          f"{100 * s['fraction_within_target']:.1f}% within target, "
          f"{s['colliding_pairs_total']} colliding pair-samples, resident memory {s['rss_mb']['end']:.0f} MB")
    load = s["machine_load"]
    print(f"machine: load average {load['load_average_start']} at the start, {load['load_average_end']} at the end "
          f"({load['cores']} cores), preempted {load['preempted']} times; "
          f"{load['frames_over_target_off_core']} frames over target only by the time the OS took their core")
    print("accuracy: no colliding pair" if not bound else
          f"accuracy: separation bound median {bound['median']:.3g} m "
          f"({a['separation_bound_fraction']['median']:.3g} of the bounding radius), p99 {bound['p99']:.3g} m; "
          f"{100 * a['exact_fraction']:.1f}% of colliding verdicts exact; by level {a['level_histogram']}")


def warn_render_over_target(cfg, *renders: tuple[str, float]) -> None:
    """One line when a stand-in render time [ms] (flag, value) leaves no time for the frame: the
    run still goes (it shows the overrun), but no frame can be within target."""
    target_ms = 1e3 * cfg.sim.target_frame_time
    over = [(flag, ms) for flag, ms in renders if ms >= target_ms]
    if over:
        flag, ms = over[0]
        print(f"warning: {flag} {ms:g} ms is not below the target frame time {target_ms:.3g} ms "
              f"(sim.target_frame_time of {cfg.source}): no frame can be within target", file=sys.stderr)


def check_args(args) -> None:
    """What the argument types cannot see alone (each value is checked while parsing)."""
    if getattr(args, "replay", None) is None:  # run's defaults (bench hubbard sets its own)
        for name, default in (("config", shipped_config("default.toml")), ("frames", DEFAULT_FRAMES),
                              ("render_ms", 0.0)):
            if getattr(args, name, default) is None:
                setattr(args, name, default)
    if args.warmup is None:
        args.warmup = min(DEFAULT_WARMUP, args.frames - 1)
    elif args.warmup >= args.frames:
        raise InputError(COMMAND_LINE, "--warmup", f"must be < --frames ({args.frames}): the summary "
                         f"would have no frames, got {args.warmup}")
