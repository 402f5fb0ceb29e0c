"""`spaceship-sim bench hubbard`: Hubbard's evaluation, headless.

1. The paper's runs: one scenario run once per detector under the same stand-in render load —
   exact-only detectors (bsp: Thibault–Naylor BSP trees, Hubbard's baseline; fcl: python-fcl when
   installed; sphere_leaves: the sphere trees' own exact level) and time-critical ones (octree and medial
   sphere trees). Each run writes frames.csv, summary.json and profile.png into its own folder;
   runs.csv and profiles.png put them side by side.
2. The per-call histograms (hubbard_calls): the calls of the medial run timed level by level
   against each exact baseline: speedup and separation histograms (calls.csv, histograms.csv,
   call_summary.csv, speedup.png, separation.png).
3. Accuracy against budget: the medial run's candidate pairs refined again under a sweep of
   detection budgets (accuracy.png, accuracy.csv); optionally a render sweep (render_sweep.png).
`--cpu-load N` runs it all beside N busy processes (robustness under load).
"""
from __future__ import annotations

import argparse
import dataclasses
import math
from pathlib import Path

import numpy as np

from ..cli.args import COMMAND_LINE, MAX_FRAMES, integer, milliseconds, milliseconds_list, output_folder
from ..clock import CLOCKS, WALL
from ..config import load_config, shipped_config
from ..errors import InputError
from ..sim.scenario import validate_scenario
from ..sim.detectors import DETECTORS, with_detector
from . import hubbard_calls
from ..sim import frame_log as report
from .cpu_load import cpu_load
from ..cli.run import DEFAULT_WARMUP, check_args, warn_render_over_target
from ..sim.runs import frame_poses, run_frames, staged_folder, tally_intervals

ACCURACY_FRAMES = 200  # frames with candidate pairs that the accuracy sweep refines again
# scene -> (shipped config, stand-in render [ms]): lamps is render-bound as Hubbard's lamp runs were;
# heavy leaves the render 5 ms of each 33.3 ms frame and detection the rest
SCENES = {"lamps": ("lamps.toml", 31.0), "heavy": ("heavy.toml", 5.0), "crowd": ("crowd.toml", 10.0)}
BASELINES = ("bsp", "fcl")  # exact strategies the per-call speedups are measured against, beside "sphere_leaves"


def register(sub) -> None:
    p = sub.add_parser("hubbard", help="Hubbard's evaluation: BSP / fcl / exact-only vs time-critical sphere trees, "
                                       "per-call speedup and separation histograms, accuracy vs budget")
    p.add_argument("--scene", choices=sorted(SCENES), default=None,
                   help="shipped scenario: lamps (60 lamps, render-bound), heavy (12 freighters in formation "
                        "and a lamp) or crowd (the freighters in deep, persistent interpenetration, every contact "
                        "wanted: no exact detector keeps the frame) (default: lamps)")
    p.add_argument("--config", default=None, help="scenario TOML instead of --scene")
    p.add_argument("--frames", type=integer(1, MAX_FRAMES), default=600)
    p.add_argument("--exact-frames", type=integer(1, MAX_FRAMES), default=None,
                   help="frames of the exact-only runs (default: --frames; an exact-only frame of the heavy "
                        "scene takes up to seconds)")
    p.add_argument("--render-ms", type=milliseconds, default=None,
                   help="stand-in render time per frame [ms] (default: lamps 31, heavy 5, a --config 31)")
    p.add_argument("--detectors", default=",".join(DETECTORS),
                   help="runs to make, comma-separated from %(default)s (fcl needs python-fcl)")
    p.add_argument("--calls", type=integer(0, 100_000), default=300,
                   help="narrow-phase calls of the medial run timed level by level (spread over the run; "
                        "default: %(default)s)")
    p.add_argument("--repeat", type=integer(1, 100), default=3, help="timings per call and method, best kept")
    p.add_argument("--copies", type=integer(1, 1000), default=16,
                   help="copies of a call answered in one timed batch, as a frame batches its pairs (default: "
                        "%(default)s; 1: one Python call per call, fixed costs included)")
    p.add_argument("--cpu-load", type=integer(0, 64), default=0,
                   help="busy processes running beside the bench, stopped when it ends (default: none)")
    p.add_argument("--budgets", default="0.02,0.05,0.1,0.2,0.5,1,2,5,10",
                   help="detection budgets for the accuracy sweep [ms, comma-separated]")
    p.add_argument("--sweep-render", default="",
                   help="also run time-critical and exact-only (medial trees) under each of these stand-in "
                        "render times [ms, comma-separated] and plot frames within target (render_sweep.png)")
    p.add_argument("--intervals-ab", action="store_true",
                   help="in the render sweep, also run time-critical with the other collision.distance_intervals "
                        "setting (narrowed after the verdicts or not): frames within target and interval widths")
    p.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                   help="what frames are timed on: wall (the target's clock) or thread (this thread's CPU time, "
                        "the stand-in render at its nominal time: the frames as a machine that never preempts "
                        "the process would time them; a diagnostic) (default: %(default)s)")
    p.add_argument("--out", type=output_folder, default="runs/hubbard",
                   help="output folder, written all or nothing (default: %(default)s)")
    p.add_argument("--warmup", type=integer(0, MAX_FRAMES - 1), default=None,
                   help=f"first frames left out of each summary (default: {DEFAULT_WARMUP}, fewer in a shorter run)")
    p.set_defaults(func=run)


def scene_defaults(args) -> None:
    """--config and --render-ms from --scene where not given (before the run command's own defaults,
    which are default.toml and no render). --scene beside --config is refused: one would be ignored."""
    if args.scene is not None and args.config is not None:
        raise InputError(COMMAND_LINE, "--scene", "cannot be combined with --config (the config is the scene)")
    scene = args.scene or "lamps"
    args.config = args.config or shipped_config(SCENES[scene][0])
    if args.render_ms is None:
        args.render_ms = SCENES[scene][1] if Path(args.config).name == SCENES[scene][0] else 31.0


def run(args, clock=None) -> int:
    """clock: what budgets, the stand-in render and the per-call timings are read from (tests pass
    a TickClock; default: the one --clock names)."""
    clock = clock or CLOCKS[args.clock]
    budgets = parse_budgets(args.budgets)  # every argument is checked before anything runs
    sweep = parse_ms_list(args.sweep_render, "--sweep-render") if args.sweep_render else []
    if getattr(args, "intervals_ab", False) and not sweep:
        raise InputError(COMMAND_LINE, "--intervals-ab", "acts only with --sweep-render (it adds a mode to the sweep)")
    detectors = parse_detectors(args.detectors)
    scene_defaults(args)
    check_args(args)
    cfg = load_config(args.config)
    validate_scenario(cfg)
    warn_render_over_target(cfg, ("--render-ms", args.render_ms), ("--sweep-render", max(sweep, default=0.0)))
    if "fcl" in detectors and not fcl_installed():
        print("note: python-fcl is not installed (pip install python-fcl): no fcl run or baseline")
        detectors.remove("fcl")
    out, name = Path(args.out), Path(args.config).name
    with cpu_load(args.cpu_load), staged_folder(out) as work:  # nothing half-written; the load always stopped
        traces = {d: run_detector(cfg, d, args, work / d, clock) for d in detectors}
        print_runs(traces, name, args)
        report.write_csv(work / "runs.csv", [t.row(d) for d, t in traces.items()])
        plot_profiles(work / "profiles.png", traces, f"{name}: render {args.render_ms:g} ms"
                      + (f", {args.cpu_load} busy processes beside" if args.cpu_load else ""))
        source = traces.get("medial") or next(iter(traces.values()))
        if args.calls:
            write_calls(source, args, work, name, clock)
        rows = accuracy_sweep(source.world, [f for f in source.frames if len(f[2])][:ACCURACY_FRAMES], budgets)
        report.write_csv(work / "accuracy.csv", rows)
        plot_accuracy(work / "accuracy.png", rows, name)
        for r in rows:
            print(f"budget {r['budget_ms']:7.3f} ms: separation bound median {r['bound_median_m']:.3f} m, "
                  f"p90 {r['bound_p90_m']:.3f} m, mean level {r['mean_level']:.2f}, "
                  f"exact {100 * r['exact_fraction']:.0f}%; interval width median {r['width_median_m_tighten']:.3f} m "
                  f"narrowed, {r['width_median_m_verdict']:.3f} m verdict-only")
        if sweep:
            render_sweep(cfg, args, [ms * 1e3 for ms in sweep], work, clock)
    print(f"wrote {out}: {', '.join(detectors)} runs, runs.csv, profiles.png"
          + (", calls.csv, histograms.csv, speedup.png, separation.png" if args.calls else "")
          + ", accuracy.png" + (", render_sweep.png" if sweep else ""))
    return 0


def parse_detectors(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in DETECTORS]
    if bad or not names:
        raise InputError(COMMAND_LINE, "--detectors", f"unknown detector {bad[0] if bad else text!r} "
                         f"(known: {', '.join(DETECTORS)})")
    return list(dict.fromkeys(names))


def fcl_installed() -> bool:
    try:
        import fcl  # noqa: F401
    except ImportError:
        return False
    return True


class RunTrace:
    """What one detector's run leaves for the comparison: its summary, every frame's stage times
    (for profiles.png), the separation bounds of the colliding pairs of each frame's last
    detection sample, the frames' poses and candidate pairs (for the per-call log) and the world."""

    def __init__(self, skip: int):
        self.skip = skip  # first frames left out of the timing figures (as the summary leaves them out)
        self.summary, self.world = None, None
        self.frame_ms, self.narrow_ms, self.render_ms, self.bounds, self.frames = [], [], [], [], []
        self.overhead_us = []  # per detection sample: narrow-stage time outside the kernel batches

    def __call__(self, world) -> None:
        s, narrow = world.last_stats, world.last_narrow
        self.frame_ms.append(s.frame_time * 1e3)
        self.narrow_ms.append(s.t_narrow * 1e3)
        self.overhead_us.append((s.t_narrow - s.t_narrow_batches) / max(s.samples, 1) * 1e6)
        self.render_ms.append(s.render_actual * 1e3)
        self.bounds += narrow.separation_bound[narrow.colliding].tolist()
        self.frames.append(frame_poses(world))

    def row(self, detector: str) -> dict:
        s = self.summary
        warm = np.array(self.narrow_ms[self.skip:] or self.narrow_ms)
        overhead = np.array(self.overhead_us[self.skip:] or self.overhead_us)
        return dict(detector=detector, time_critical=s["time_critical"], frames=s["frames"],
                    within_target=s["fraction_within_target"], frame_ms_median=s["frame_time_ms"]["median"],
                    render_late=s["frames_over_target_render_late"] / s["frames_summarized"],
                    off_core=s["machine_load"]["frames_over_target_off_core"] / s["frames_summarized"],
                    sim_ms_median=s["t_sim_ms"]["median"], sim_ms_p99=s["t_sim_ms"]["p99"],
                    frame_ms_p99=s["frame_time_ms"]["p99"], detection_ms_median=float(np.median(warm)),
                    overhead_us_per_sample_median=float(np.median(overhead)),
                    detection_ms_max=float(np.max(warm)), target_ms=s["target_ms"],
                    colliding_pair_samples=len(self.bounds),
                    separation_bound_median_m=float(np.median(self.bounds)) if self.bounds else math.nan)


def run_detector(cfg, detector: str, args, folder: Path | None, clock=WALL) -> RunTrace:
    """One run of the scenario with `detector` (a DETECTORS key); files under `folder`."""
    cfg, exact = with_detector(cfg, detector)
    time_critical = cfg.collision.time_critical
    frames = args.frames if time_critical or args.exact_frames is None else args.exact_frames
    warmup = min(args.warmup, frames - 1)
    trace = RunTrace(warmup)
    log, trace.world = run_frames(cfg, frames, args.render_ms / 1e3, False,
                                  lambda w: report.FrameLog(folder, frames, warmup, w.max_level, args.render_ms / 1e3),
                                  progress=folder is not None, on_frame=trace, clock=clock, exact_only=exact)
    mode = "time-critical" if time_critical else "exact-only"
    trace.summary = log.commit(title=f"{Path(args.config).name}: {detector} ({mode}), render {args.render_ms:g} ms",
                               config=args.config, render_ms=args.render_ms, time_critical=time_critical,
                               detector=detector, cpu_load=args.cpu_load, clock=args.clock)
    return trace


def print_runs(traces: dict, name: str, args) -> None:
    print(f"{name}, render {args.render_ms:g} ms, {args.frames} frames"
          + (f" ({args.exact_frames} exact-only)" if args.exact_frames else "")
          + (f", {args.cpu_load} busy processes beside" if args.cpu_load else "")
          + (f", timed on the {args.clock} clock" if args.clock != "wall" else "") + ":")
    w = max(len("detector"), *map(len, traces))  # sphere_leaves is wider than the header
    print(f"{'detector':{w}s} {'mode':13s} {'within target':>13s} {'render late':>11s} {'off core':>9s} "
          f"{'median':>9s} {'p99':>9s} "
          f"{'sim median':>10s} {'sim p99':>9s} {'detection':>10s} {'overhead/sample':>16s} "
          f"{'median separation bound':>24s}")
    for d, t in traces.items():
        r = t.row(d)
        print(f"{d:{w}s} {'time-critical' if r['time_critical'] else 'exact-only':13s} "
              f"{100 * r['within_target']:12.1f}% {100 * r['render_late']:10.1f}% {100 * r['off_core']:8.1f}% "
              f"{r['frame_ms_median']:6.2f} ms {r['frame_ms_p99']:6.2f} ms {r['sim_ms_median']:7.2f} ms "
              f"{r['sim_ms_p99']:6.2f} ms {r['detection_ms_median']:7.2f} ms {r['overhead_us_per_sample_median']:13.0f} µs "
              f"{r['separation_bound_median_m']:22.3f} m")


def write_calls(source: RunTrace, args, work: Path, name: str, clock=WALL) -> None:
    """The per-call log of the source run and the paper's histograms from it."""
    from ..registry import EXACT_METHODS

    world = source.world
    baselines = {b: EXACT_METHODS[b](world.models) for b in BASELINES if b != "fcl" or fcl_installed()}
    radii = np.array([m.bounding_radius for m in world.models])
    log = hubbard_calls.record_calls(world.bank, radii, source.frames, baselines,
                                     world.narrow.all_contacts, args.calls, args.repeat, args.copies, clock)
    if not len(log["radius"]):
        print("note: no narrow-phase calls in the run: no histograms")
        return
    report.write_csv(work / "calls.csv", hubbard_calls.call_rows(log, [m.name for m in world.models]))
    rows = hubbard_calls.call_histograms(log)
    report.write_csv(work / "histograms.csv", rows)
    summary = hubbard_calls.call_summary(log)
    report.write_csv(work / "call_summary.csv", summary)
    title = f"{name}: {len(log['radius'])} narrow-phase calls of the medial run"
    hubbard_calls.plot_speedups(work / "speedup.png", rows, summary, title)
    hubbard_calls.plot_separations(work / "separation.png", rows, title)
    print(f"per call ({args.copies} copies a batch), median: root spheres only {1e6 * np.median(log['t_floor']):.1f} µs, "
          + ", ".join(f"{b} {1e6 * np.median(log[f't_{b}']):.1f} µs" for b in hubbard_calls.baseline_names(log)))
    for r in summary:
        print(f"level {r['level']}: " + ", ".join(f"{b} {r[f'speedup_median_{b}']:.2f}x (faster in "
                                                  f"{100 * r[f'faster_{b}']:.0f}%)" for b in hubbard_calls.baseline_names(log))
              + f"; colliding {r['colliding']}/{r['calls']}, median separation {r['separation_median']:.3f} R")


def plot_profiles(path: Path, traces: dict, title: str) -> None:
    """Hubbard's profiles side by side: per detector, detection, the other stages and the render
    stacked per frame against the target."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(traces), 1, figsize=(10, 2.3 * len(traces) + 0.5), sharex=True, squeeze=False)
    for ax, (d, t) in zip(axes[:, 0], traces.items()):
        frame, narrow, render = np.array(t.frame_ms), np.array(t.narrow_ms), np.array(t.render_ms)
        x = np.arange(len(frame))
        other = frame - narrow - render
        ax.stackplot(x, narrow, other, render, labels=["detection (narrow phase)", "other stages", "render"],
                     colors=["#c44e52", "#4c72b0", "#ccb974"], step="mid")
        target = t.summary["target_ms"]
        ax.axhline(target, color="k", ls="--", lw=1, label="target")
        r = t.row(d)
        ax.set_title(f"{d} ({'time-critical' if r['time_critical'] else 'exact-only'}): "
                     f"{100 * r['within_target']:.1f}% within target, median {r['frame_ms_median']:.1f} ms, "
                     f"p99 {r['frame_ms_p99']:.1f} ms", fontsize=9)
        ax.set_ylim(0, max(1.6 * target, 1.05 * np.percentile(frame, 99)))
        ax.set_ylabel("ms", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[0, 0].legend(loc="upper right", fontsize=7, ncol=4)
    axes[-1, 0].set_xlabel("frame")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def run_modes(cfg, args, render_ms: float, out: Path | None = None, clock=WALL) -> dict:
    """Run the scenario time-critical and exact-only (its own sphere trees) under the same
    stand-in render load — with --intervals-ab, time-critical with verdicts only too (the separation
    intervals not narrowed after them) —; returns {mode: summary}; writes each run's files under
    out/mode."""
    results = {}
    modes = [("time_critical", True, cfg.collision.distance_intervals), ("exact_only", False, "verdict")]
    if getattr(args, "intervals_ab", False):
        other = "verdict" if cfg.collision.distance_intervals == "tighten" else "tighten"
        modes.insert(1, (f"time_critical_{other}", True, other))
    for mode, tc, intervals in modes:
        c = dataclasses.replace(cfg, collision=dataclasses.replace(cfg.collision, time_critical=tc,
                                                                   distance_intervals=intervals))
        folder = out / mode if out is not None else None
        log, _ = run_frames(c, args.frames, render_ms / 1e3, False,
                            lambda w: report.FrameLog(folder, args.frames, args.warmup, w.max_level, render_ms / 1e3),
                            progress=out is not None, clock=clock,
                            on_frame=tally_intervals if tc else None)
        results[mode] = log.commit(title=f"{Path(args.config).name}: {mode.replace('_', '-')}, render {render_ms:g} ms",
                                   config=args.config, render_ms=render_ms, time_critical=tc, clock=args.clock)
    return results


def render_sweep(cfg, args, renders_ms: list[float], out: Path, clock=WALL) -> None:
    """Frames within target for both modes against the stand-in render load (render_sweep.png/.csv)."""
    from tqdm import tqdm

    rows = []
    for r in tqdm(renders_ms, desc="render sweep", unit="load"):
        results = run_modes(cfg, args, r, clock=clock)
        row = {"render_ms": r, "slack_ms": results["time_critical"]["target_ms"] - r}
        for mode, s in results.items():
            row[f"{mode}_within_target"] = s["fraction_within_target"]
            row[f"{mode}_render_late"] = s["frames_over_target_render_late"] / s["frames_summarized"]
            row[f"{mode}_off_core"] = s["machine_load"]["frames_over_target_off_core"] / s["frames_summarized"]
            row[f"{mode}_sim_median_ms"] = s["t_sim_ms"]["median"]
            row[f"{mode}_p99_ms"] = s["frame_time_ms"]["p99"]
        rows.append(row)
        for mode, s in results.items():
            width = s.get("interval_width_m")
            row[f"{mode}_width_median_m"] = width["median"] if width else math.nan
        print(f"render {r:5.1f} ms: within target time-critical {100 * row['time_critical_within_target']:5.1f}% "
              f"(over only by a render longer than {r:g} ms {100 * row['time_critical_render_late']:4.1f}%, "
              f"only by the OS taking the frame's core {100 * row['time_critical_off_core']:4.1f}%), "
              f"exact-only {100 * row['exact_only_within_target']:5.1f}%")
        for mode in results:
            if mode.startswith("time_critical"):
                print(f"    {mode:24s} within target {100 * row[f'{mode}_within_target']:5.1f}%, "
                      f"separation interval width median {row[f'{mode}_width_median_m']:.3f} m")
    report.write_csv(out / "render_sweep.csv", rows)
    plot_render_sweep(out / "render_sweep.png", rows, Path(args.config).name, args.frames)


def parse_budgets(text: str) -> list[float]:
    values = parse_ms_list(text, "--budgets")
    if min(values) <= 0:
        raise InputError(COMMAND_LINE, "--budgets", f"budgets must be > 0, got {text!r}")
    return values


def parse_ms_list(text: str, option: str) -> list[float]:
    """Comma-separated milliseconds -> sorted seconds; each must be a number in 0..MAX_MS."""
    try:
        return sorted(ms / 1e3 for ms in milliseconds_list(text))
    except argparse.ArgumentTypeError as e:
        raise InputError(COMMAND_LINE, option, str(e)) from None


INTERVAL_MODES = {"tighten": True, "verdict": False}  # collision.distance_intervals -> NarrowPhase.tighten


def accuracy_sweep(world, poses, budgets, max_frames: int = ACCURACY_FRAMES) -> list[dict]:
    """Refine the recorded (model_id, T, pairs) frames under each budget (on the world's clock), with
    the separation intervals narrowed after the verdicts and without: the verdicts' figures from the
    world's own setting, the interval widths (upper - lower, every candidate pair with a finite upper
    bound) and bounds from each."""
    frames = [p for p in poses if len(p[2])][:max_frames]
    rows = []
    for b in budgets:
        row = dict(budget_ms=b * 1e3)
        for mode, tighten in INTERVAL_MODES.items():
            narrow = dataclasses.replace(world.narrow, tighten=tighten)
            answers = [narrow(world.bank, model_id, T, pairs, deadline=world.clock() + b, clock=world.clock)
                       for model_id, T, pairs in frames]
            row.update(_interval_figures(answers, mode))
            if tighten == world.narrow.tighten:
                row.update(_verdict_figures(answers))
        rows.append(row)
    return rows


def _verdict_figures(answers) -> dict:
    bounds = np.concatenate([r.separation_bound[r.colliding] for r in answers] + [np.zeros(0)])
    levels = np.concatenate([r.level[r.colliding] for r in answers] + [np.zeros(0)])
    exact = np.concatenate([r.certain[r.colliding] for r in answers] + [np.zeros(0, bool)])
    some = len(bounds) > 0
    return dict(pairs=len(levels), bound_median_m=float(np.median(bounds)) if some else math.nan,
                bound_p90_m=float(np.percentile(bounds, 90)) if some else math.nan,
                bound_max_m=float(np.max(bounds)) if some else math.nan,
                mean_level=float(np.mean(levels)) if some else math.nan,
                exact_fraction=float(np.mean(exact)) if some else math.nan)


def _interval_figures(answers, mode: str) -> dict:
    lower = np.concatenate([r.lower for r in answers])
    upper = np.concatenate([r.upper for r in answers])
    finite = np.isfinite(upper)
    width = (upper - lower)[finite]
    if not len(width):
        return {f"{k}_{mode}": math.nan for k in ("width_median_m", "width_p90_m", "lower_median_m", "upper_median_m")}
    return {f"width_median_m_{mode}": float(np.median(width)), f"width_p90_m_{mode}": float(np.percentile(width, 90)),
            f"lower_median_m_{mode}": float(np.median(lower[finite])),
            f"upper_median_m_{mode}": float(np.median(upper[finite]))}


def plot_accuracy(path: Path, rows: list[dict], name: str) -> None:
    """Two panels against the budget: the colliding verdicts' separation bound (with the share answered
    exactly), and the candidate pairs' separation intervals, narrowed after the verdicts or not."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    b = [r["budget_ms"] for r in rows]
    fig, (ax, ax3) = plt.subplots(2, 1, figsize=(8, 8), sharex=True)
    ax.fill_between(b, [r["bound_median_m"] for r in rows], [r["bound_p90_m"] for r in rows], alpha=0.25,
                    label="median .. 90th percentile")
    ax.plot(b, [r["bound_median_m"] for r in rows], "o-", label="median separation bound")
    ax.plot(b, [r["bound_max_m"] for r in rows], "x--", lw=1, label="largest separation bound")
    ax.set_xscale("log")
    ax.set_ylabel("upper bound on separation of colliding pairs [m]")
    ax.set_title(f"Accuracy vs budget ({name}): how far apart 'colliding' ships may really be")
    ax2 = ax.twinx()
    ax2.plot(b, [r["exact_fraction"] * 100 for r in rows], "s:", color="k", lw=1, label="answered exactly")
    ax2.set_ylabel("pairs answered at the exact level [%]")
    ax2.set_ylim(0, 105)
    lines = ax.get_legend_handles_labels()
    lines2 = ax2.get_legend_handles_labels()
    ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], loc="center right", fontsize=8)
    for mode, style in (("tighten", "-"), ("verdict", "--")):
        ax3.plot(b, [r[f"width_median_m_{mode}"] for r in rows], "o" + style, label=f"{mode}: median width")
        ax3.plot(b, [r[f"lower_median_m_{mode}"] for r in rows], "^" + style, lw=1, ms=4, label=f"{mode}: median lower")
        ax3.plot(b, [r[f"upper_median_m_{mode}"] for r in rows], "v" + style, lw=1, ms=4, label=f"{mode}: median upper")
    ax3.set_yscale("symlog", linthresh=1e-3)
    ax3.set_xlabel("detection budget per sample [ms]")
    ax3.set_ylabel("separation interval of candidate pairs [m]")
    ax3.set_title("lower <= distance <= upper: narrowed after the verdicts (tighten) or not (verdict)", fontsize=9)
    ax3.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_render_sweep(path: Path, rows: list[dict], name: str, frames: int) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    r = [row["render_ms"] for row in rows]
    fig, ax = plt.subplots(figsize=(8, 5))
    for mode, style in (("time_critical", "o-"), ("exact_only", "s--")):
        ax.plot(r, [100 * row[f"{mode}_within_target"] for row in rows], style, label=mode.replace("_", "-"))
    ax.axhline(99, color="k", lw=0.8, ls=":", label="99% of frames")
    target = rows[0]["render_ms"] + rows[0]["slack_ms"]
    ax.set_xlabel(f"stand-in render time per frame [ms] (target frame time {target:.1f} ms)")
    ax.set_ylabel("frames within target [%]")
    ax.set_title(f"{name}: frame rate held vs render load ({frames} frames per run)")
    ax.legend(loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
