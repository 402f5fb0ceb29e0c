"""`spaceship-sim bench hubbard`: Hubbard's experiment, headless.

1. The lamps scenario run twice with the same render load: time-critical detection against
   exact-only detection (every pair refined to the triangles whatever the cost). Each run
   writes frames.csv, summary.json and profile.png into its own folder.
2. Accuracy against budget: the candidate pairs met in the time-critical run are refined again
   under a sweep of detection budgets; the separation-distance upper bound and the level reached
   are plotted against the budget (accuracy.png, accuracy.csv).
"""
from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np

from ..args import COMMAND_LINE, MAX_FRAMES, integer, milliseconds, output_folder
from ..clock import WALL
from ..config import load_config, shipped_config
from ..errors import InputError
from ..scenario import validate_scenario
from . import report
from .run import DEFAULT_WARMUP, check_args, run_frames, staged_folder

ACCURACY_FRAMES = 200  # frames with candidate pairs that the accuracy sweep refines again


def register(sub) -> None:
    p = sub.add_parser("hubbard", help="time-critical vs exact-only on the lamps scenario, and accuracy vs budget")
    p.add_argument("--config", default=shipped_config("lamps.toml"),
                   help="scenario TOML (default: the shipped configs/lamps.toml)")
    p.add_argument("--frames", type=integer(1, MAX_FRAMES), default=600)
    p.add_argument("--render-ms", type=milliseconds, default=31.0,
                   help="stand-in render time per frame [ms] (default: %(default)s, a render-bound frame)")
    p.add_argument("--budgets", default="0.02,0.05,0.1,0.2,0.5,1,2,5,10",
                   help="detection budgets for the accuracy sweep [ms, comma-separated]")
    p.add_argument("--sweep-render", default="",
                   help="also run both modes under each of these stand-in render times [ms, comma-separated] "
                        "and plot frames within target against them (render_sweep.png)")
    p.add_argument("--out", type=output_folder, default="runs/hubbard",
                   help="output folder, written all or nothing (default: %(default)s)")
    p.add_argument("--warmup", type=integer(0, MAX_FRAMES - 1), default=None,
                   help=f"first frames left out of each summary (default: {DEFAULT_WARMUP}, fewer in a shorter run)")
    p.set_defaults(func=run)


def run(args, clock=WALL) -> int:
    """clock: what budgets and the stand-in render are read from (tests pass a TickClock)."""
    budgets = parse_budgets(args.budgets)  # every argument is checked before anything runs
    sweep = parse_ms_list(args.sweep_render, "--sweep-render") if args.sweep_render else []
    check_args(args)
    cfg = load_config(args.config)
    validate_scenario(cfg)
    out = Path(args.out)
    with staged_folder(out) as work:  # a failed or interrupted run leaves no half-written files
        poses = []
        results, bank_world = run_modes(cfg, args, args.render_ms, out=work, on_frame=keep_poses(poses), clock=clock)
        for mode, s in results.items():
            print(f"{mode:14s} frame time median {s['frame_time_ms']['median']:6.2f} ms  p99 "
                  f"{s['frame_time_ms']['p99']:6.2f} ms  within target {100 * s['fraction_within_target']:5.1f}%  "
                  f"level histogram {s['level_histogram']}")
        rows = accuracy_sweep(bank_world, poses, budgets)
        report.write_csv(work / "accuracy.csv", rows)
        plot_accuracy(work / "accuracy.png", rows, Path(args.config).name)
        for r in rows:
            print(f"budget {r['budget_ms']:7.3f} ms: separation bound median {r['bound_median_m']:.3f} m, "
                  f"p90 {r['bound_p90_m']:.3f} m, mean level {r['mean_level']:.2f}, "
                  f"exact {100 * r['exact_fraction']:.0f}%")
        if sweep:
            render_sweep(cfg, args, [ms * 1e3 for ms in sweep], work, clock)
    print(f"wrote {out}/time_critical, {out}/exact_only, {out}/accuracy.png"
          + (f", {out}/render_sweep.png" if sweep else ""))
    return 0


def run_modes(cfg, args, render_ms: float, out: Path | None = None, on_frame=None, clock=WALL):
    """Run the scenario time-critical and exact-only under the same stand-in render load.
    Returns ({mode: summary}, the time-critical world); writes each run's files under out/mode."""
    results = {}
    for mode, tc in (("time_critical", True), ("exact_only", False)):
        c = dataclasses.replace(cfg, collision=dataclasses.replace(cfg.collision, time_critical=tc))
        folder = out / mode if out is not None else None
        log, world = run_frames(c, args.frames, render_ms / 1e3, False,
                                lambda w: report.FrameLog(folder, args.frames, args.warmup, w.max_level),
                                progress=out is not None, on_frame=on_frame if tc else None, clock=clock)
        results[mode] = log.commit(title=f"{Path(args.config).name}: {mode.replace('_', '-')}, render {render_ms:g} ms",
                                   config=args.config, render_ms=render_ms, time_critical=tc)
        if tc:
            tc_world = world
    return results, tc_world


def render_sweep(cfg, args, renders_ms: list[float], out: Path, clock=WALL) -> None:
    """Frames within target for both modes against the stand-in render load (render_sweep.png/.csv)."""
    from tqdm import tqdm

    rows = []
    for r in tqdm(renders_ms, desc="render sweep", unit="load"):
        results, _ = run_modes(cfg, args, r, clock=clock)
        row = {"render_ms": r, "slack_ms": results["time_critical"]["target_ms"] - r}
        for mode, s in results.items():
            row[f"{mode}_within_target"] = s["fraction_within_target"]
            row[f"{mode}_p99_ms"] = s["frame_time_ms"]["p99"]
        rows.append(row)
        print(f"render {r:5.1f} ms: within target time-critical {100 * row['time_critical_within_target']:5.1f}%, "
              f"exact-only {100 * row['exact_only_within_target']:5.1f}%")
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
        values = [milliseconds(x) / 1e3 for x in text.split(",")]
    except argparse.ArgumentTypeError as e:
        raise InputError(COMMAND_LINE, option, f"{e}" + (f" (in {text!r})" if "," in text else "")) from None
    return sorted(values)


def keep_poses(poses: list, limit: int = ACCURACY_FRAMES):
    """on_frame callback appending to `poses` the first `limit` frames with candidate pairs
    (the accuracy sweep needs no more: memory stays flat however long the run)."""
    def keep(frame):
        if len(frame[2]) and len(poses) < limit:
            poses.append(frame)
    return keep


def accuracy_sweep(world, poses, budgets, max_frames: int = ACCURACY_FRAMES) -> list[dict]:
    """Refine the recorded (model_id, T, pairs) frames under each budget (on the world's clock)."""
    frames = [p for p in poses if len(p[2])][:max_frames]
    rows = []
    for b in budgets:
        bounds, levels, exact = [], [], []
        for model_id, T, pairs in frames:
            r = world.narrow(world.bank, model_id, T, pairs, deadline=world.clock() + b, clock=world.clock)
            hit = r.colliding
            bounds += list(r.separation_bound[hit])
            levels += list(r.level[hit])
            exact += list(r.exact[hit])
        bounds = np.array(bounds) if bounds else np.array([np.nan])
        rows.append(dict(budget_ms=b * 1e3, pairs=len(levels), bound_median_m=float(np.nanmedian(bounds)),
                         bound_p90_m=float(np.nanpercentile(bounds, 90)), bound_max_m=float(np.nanmax(bounds)),
                         mean_level=float(np.mean(levels)) if levels else float("nan"),
                         exact_fraction=float(np.mean(exact)) if exact else float("nan")))
    return rows


def plot_accuracy(path: Path, rows: list[dict], name: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    b = [r["budget_ms"] for r in rows]
    fig, ax = plt.subplots(figsize=(8, 5))
    ax.fill_between(b, [r["bound_median_m"] for r in rows], [r["bound_p90_m"] for r in rows], alpha=0.25,
                    label="median .. 90th percentile")
    ax.plot(b, [r["bound_median_m"] for r in rows], "o-", label="median separation bound")
    ax.plot(b, [r["bound_max_m"] for r in rows], "x--", lw=1, label="largest separation bound")
    ax.set_xscale("log")
    ax.set_xlabel("detection budget per sample [ms]")
    ax.set_ylabel("upper bound on separation of colliding pairs [m]")
    ax.set_title(f"Accuracy vs budget ({name}): how far apart 'colliding' ships may really be")
    ax2 = ax.twinx()
    ax2.plot(b, [r["exact_fraction"] * 100 for r in rows], "s:", color="k", lw=1, label="answered exactly")
    ax2.set_ylabel("pairs answered at the exact level [%]")
    ax2.set_ylim(0, 105)
    lines = ax.get_legend_handles_labels()
    lines2 = ax2.get_legend_handles_labels()
    ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], loc="center right", fontsize=8)
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
