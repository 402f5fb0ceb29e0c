"""`spaceship-sim run`: a headless frame-timing run.

Each frame runs the pipeline, then stands in for rendering by busy-waiting `--render-ms`
(the render load a window would add), and, with `--realtime`, waits out the rest of the
target frame time. Writes frames.csv, summary.json and profile.png into --out, all or nothing.
"""
from __future__ import annotations

import contextlib
import dataclasses
import shutil
import tempfile
import time
from pathlib import Path

from ..args import COMMAND_LINE, MAX_FRAMES, integer, milliseconds, output_folder
from ..clock import WALL
from ..config import load_config, shipped_config
from ..errors import InputError
from ..scenario import validate_scenario
from . import report

DEFAULT_WARMUP = 5  # frames left out of the summary: numba compile or cache load, first tree loads


def register(sub) -> None:
    p = sub.add_parser("run", help="headless frame-timing run: frames.csv, summary.json, profile.png")
    p.add_argument("--config", default=shipped_config("default.toml"),
                   help="scenario TOML (default: the shipped configs/default.toml)")
    p.add_argument("--frames", type=integer(1, MAX_FRAMES), default=600, help="frames to run (default: %(default)s)")
    p.add_argument("--out", type=output_folder, required=True,
                   help="output folder (created; replaced files only on success)")
    p.add_argument("--render-ms", type=milliseconds, default=0.0, help="simulated render time per frame [ms]")
    p.add_argument("--realtime", action="store_true", help="wait out each frame's remaining target time")
    p.add_argument("--exact-only", action="store_true",
                   help="refine every pair to the exact level regardless of the budget (Hubbard's baseline)")
    p.add_argument("--warmup", type=integer(0, MAX_FRAMES - 1), default=None,
                   help=f"first frames left out of summary.json (numba compile, caches) (default: {DEFAULT_WARMUP}, "
                        "fewer in a shorter run)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args) -> int:
    check_args(args)
    cfg = load_config(args.config)
    validate_scenario(cfg)
    if args.exact_only:
        cfg = dataclasses.replace(cfg, collision=dataclasses.replace(cfg.collision, time_critical=False))
    log, world = run_frames(cfg, args.frames, args.render_ms / 1e3, args.realtime,
                            lambda w: report.FrameLog(Path(args.out), args.frames, args.warmup, w.max_level),
                            progress=not args.no_progress)
    mode = "time-critical" if cfg.collision.time_critical else "exact-only"
    s = log.commit(title=f"{Path(args.config).name}: {mode}, render {args.render_ms:g} ms",
                   config=str(args.config), seed=cfg.sim.seed, render_ms=args.render_ms,
                   time_critical=cfg.collision.time_critical, state_hash=world.state.hash())
    print(f"{args.out}: {s['frames']} frames, frame time median {s['frame_time_ms']['median']:.2f} ms, "
          f"p99 {s['frame_time_ms']['p99']:.2f} ms (target {s['target_ms']:.1f} ms), "
          f"{100 * s['fraction_within_target']:.1f}% within target, "
          f"{s['colliding_pairs_total']} colliding pair-samples, resident memory {s['rss_mb']['end']:.0f} MB")
    return 0


def check_args(args) -> None:
    """What the argument types cannot see alone (each value is checked while parsing)."""
    if args.warmup is None:
        args.warmup = min(DEFAULT_WARMUP, args.frames - 1)
    elif args.warmup >= args.frames:
        raise InputError(COMMAND_LINE, "--warmup", f"must be < --frames ({args.frames}): the summary "
                         f"would have no frames, got {args.warmup}")


@contextlib.contextmanager
def staged_folder(out: Path):
    """Yield an empty folder beside `out` to write into; its entries move into `out` (replacing
    same-named ones, leaving others) only when the block succeeds, so a failed or interrupted run
    leaves `out` as it was."""
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.partial-"))
    try:
        yield work
        if not out.exists():
            work.rename(out)
            return
        for entry in work.iterdir():
            target = out / entry.name
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            elif target.exists() or target.is_symlink():
                target.unlink()
            entry.rename(target)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_frames(cfg, n_frames: int, render_s: float, realtime: bool, open_log, progress: bool = True,
               on_frame=None, clock=WALL):
    """Run n_frames, handing each frame's FrameStats to `log = open_log(world)` as it comes (no
    frame is kept here); returns (log, world). A failure discards the log's partial files.
    on_frame((model_id, T, pairs)) sees each frame's candidate pairs and poses.
    The stand-in render and every budget are read from `clock` (spaceship_sim.clock)."""
    from tqdm import tqdm

    from ..world import World

    world = World.from_config(cfg, clock=clock)
    log = open_log(world)
    try:
        for _ in tqdm(range(n_frames), desc="frames", unit="frame", disable=not progress):
            start = time.perf_counter()
            stats = world.step()
            world.end_frame(clock.spend(render_s))
            log.add(stats)
            if on_frame is not None and world.last_narrow is not None:
                on_frame(frame_poses(world))
            if realtime:
                time.sleep(max(0.0, stats.target - (time.perf_counter() - start)))
    except BaseException:
        log.discard()
        raise
    return log, world


def frame_poses(world) -> tuple:
    """(model_id, T, pairs): copies of the last frame's ship models, poses and candidate pairs."""
    from ..state import transforms

    return world.state.model_id.copy(), transforms(world.state), world.last_narrow.pairs.copy()
