"""`spaceship-sim bench hubbard`: Hubbard's experiment, headless.

1. The lamps scenario run twice with the same render load: time-critical detection against
   exact-only detection (every pair refined to the triangles whatever the cost). Each run
   writes frames.csv, summary.json and profile.png into its own folder.
2. Accuracy against budget: the candidate pairs met in the time-critical run are refined again
   under a sweep of detection budgets; the separation-distance upper bound and the level reached
   are plotted against the budget (accuracy.png, accuracy.csv).
"""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np

from ..config import load_config
from ..errors import InputError
from . import report
from .run import run_frames, write_outputs


def register(sub) -> None:
    p = sub.add_parser("hubbard", help="time-critical vs exact-only on the lamps scenario, and accuracy vs budget")
    p.add_argument("--config", default="configs/lamps.toml")
    p.add_argument("--frames", type=int, default=600)
    p.add_argument("--render-ms", type=float, default=29.0,
                   help="stand-in render time per frame [ms] (default: %(default)s, a render-bound frame)")
    p.add_argument("--budgets", default="0.02,0.05,0.1,0.2,0.5,1,2,5,10",
                   help="detection budgets for the accuracy sweep [ms, comma-separated]")
    p.add_argument("--out", default="runs/hubbard")
    p.add_argument("--warmup", type=int, default=5)
    p.set_defaults(func=run)


def run(args) -> int:
    budgets = parse_budgets(args.budgets)
    if args.frames < 1:
        raise InputError("command line", "--frames", f"must be >= 1, got {args.frames}")
    cfg = load_config(args.config)
    out = Path(args.out)
    results = {}
    poses = []
    for mode, tc in (("time_critical", True), ("exact_only", False)):
        c = dataclasses.replace(cfg, collision=dataclasses.replace(cfg.collision, time_critical=tc))
        frames, world = run_frames(c, args.frames, args.render_ms / 1e3, realtime=False,
                                   on_frame=poses.append if tc else None)
        summary = report.summarize(frames, skip=args.warmup)
        summary.update(config=args.config, render_ms=args.render_ms, time_critical=tc)
        write_outputs(out / mode, frames, summary, world.max_level,
                      title=f"{Path(args.config).name}: {mode.replace('_', '-')}, render {args.render_ms:g} ms")
        results[mode] = summary
        if tc:
            bank_world = world
    for mode, s in results.items():
        print(f"{mode:14s} frame time median {s['frame_time_ms']['median']:6.2f} ms  p99 "
              f"{s['frame_time_ms']['p99']:6.2f} ms  within target {100 * s['fraction_within_target']:5.1f}%  "
              f"level histogram {s['level_histogram']}")
    rows = accuracy_sweep(bank_world, poses, budgets)
    report.write_csv(out / "accuracy.csv", rows)
    plot_accuracy(out / "accuracy.png", rows, Path(args.config).name)
    for r in rows:
        print(f"budget {r['budget_ms']:7.3f} ms: separation bound median {r['bound_median_m']:.3f} m, "
              f"p90 {r['bound_p90_m']:.3f} m, mean level {r['mean_level']:.2f}, exact {100 * r['exact_fraction']:.0f}%")
    print(f"wrote {out}/time_critical, {out}/exact_only, {out}/accuracy.png")
    return 0


def parse_budgets(text: str) -> list[float]:
    try:
        values = [float(x) / 1e3 for x in text.split(",")]
    except ValueError:
        raise InputError("command line", "--budgets", f"expected comma-separated numbers, got {text!r}") from None
    if not values or min(values) <= 0:
        raise InputError("command line", "--budgets", "budgets must be > 0")
    return sorted(values)


def accuracy_sweep(world, poses, budgets, max_frames: int = 200) -> list[dict]:
    """Refine the recorded (model_id, T, pairs) frames under each budget."""
    from ..narrowphase import refine_frame

    frames = [p for p in poses if len(p[2])][:max_frames]
    opts = dict(world.refine_options)
    rows = []
    for b in budgets:
        bounds, levels, exact = [], [], []
        for model_id, T, pairs in frames:
            r = refine_frame(world.bank, model_id, T, pairs, deadline=time.perf_counter() + b, **opts)
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
