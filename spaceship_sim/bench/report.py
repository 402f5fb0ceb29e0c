"""Frame-stats reports: frames.csv, summary.json and Hubbard-style performance profiles."""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np

STAGES = [  # (FrameStats attribute, label, colour) bottom to top in the profile
    ("t_controls", "controls", "#9e9e9e"),
    ("t_integrate", "integrate", "#4c72b0"),
    ("t_broad", "broad phase", "#55a868"),
    ("t_narrow", "narrow phase", "#c44e52"),
    ("t_response", "response", "#8172b2"),
    ("render_actual", "render", "#ccb974"),
]


def write_csv(path: Path, rows: list[dict]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def summarize(frames: list, skip: int = 0) -> dict:
    """Medians, p99s and frames over target of FrameStats, ignoring the first `skip` frames."""
    fs = frames[skip:] or frames
    out = {"frames": len(frames), "frames_summarized": len(fs), "warmup_frames_skipped": len(frames) - len(fs)}
    for attr in ["frame_time", *[a for a, _, _ in STAGES], "budget", "detection_used", "slack"]:
        v = np.array([getattr(s, attr) for s in fs]) * 1e3
        out[f"{attr}_ms"] = {"median": float(np.median(v)), "p99": float(np.percentile(v, 99)),
                            "max": float(v.max())}
    over = sum(s.overrun for s in fs)
    out["target_ms"] = fs[0].target * 1e3
    out["frames_over_target"] = int(over)
    out["fraction_within_target"] = 1.0 - over / len(fs)
    out["candidate_pairs_mean"] = float(np.mean([s.candidate_pairs for s in fs]))
    out["colliding_pairs_total"] = int(sum(s.colliding_pairs for s in fs))
    out["exact_pairs_total"] = int(sum(s.exact_pairs for s in fs))
    width = max(len(s.level_hist) for s in fs)
    hist = np.zeros(width, int)
    for s in fs:
        hist[:len(s.level_hist)] += s.level_hist
    out["level_histogram"] = hist.tolist()
    b = np.array([s.sep_bound_min for s in fs if not math.isnan(s.sep_bound_min)])
    out["separation_bound_m"] = ({"median": float(np.median(b)), "p99": float(np.percentile(b, 99)),
                                  "max": float(b.max())} if len(b) else None)
    return out


def write_json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=2) + "\n")


def plot_profile(path: Path, frames: list, title: str) -> None:
    """Hubbard-style performance profile: per-frame stacked stage times against the target,
    render prediction vs actual and detection budget vs used, and the levels reached."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = np.array([s.frame for s in frames])
    fig, axes = plt.subplots(3, 1, figsize=(11, 9), sharex=True, height_ratios=[3, 2, 2])
    ax = axes[0]
    ys = [np.array([getattr(s, a) for s in frames]) * 1e3 for a, _, _ in STAGES]
    ax.stackplot(x, ys, labels=[l for _, l, _ in STAGES], colors=[c for _, _, c in STAGES], step="mid")
    ax.axhline(frames[0].target * 1e3, color="k", ls="--", lw=1.2, label="target frame time")
    over = sum(s.overrun for s in frames)
    ax.set_ylabel("frame time [ms]")
    ax.set_title(f"{title}\n{len(frames) - over}/{len(frames)} frames within target")
    ax.legend(loc="upper right", fontsize=8, ncol=4)
    ax.set_ylim(0, max(frames[0].target * 1e3 * 1.6, np.percentile(sum(ys), 99) * 1.1))

    ax = axes[1]
    ax.plot(x, [s.render_predicted * 1e3 for s in frames], lw=1, label="render predicted")
    ax.plot(x, [s.render_actual * 1e3 for s in frames], lw=1, alpha=0.7, label="render actual")
    ax.plot(x, [s.budget * 1e3 for s in frames], lw=1, label="detection budget")
    ax.plot(x, [s.detection_used * 1e3 for s in frames], lw=1, label="detection used")
    ax.set_ylabel("time [ms]")
    ax.legend(loc="upper right", fontsize=8, ncol=4)

    ax = axes[2]
    width = max(len(s.level_hist) for s in frames)
    levels = np.zeros((width, len(frames)))
    for i, s in enumerate(frames):
        levels[:len(s.level_hist), i] = s.level_hist
    names = [f"level {k}" for k in range(width - 1)] + ["exact"]
    ax.stackplot(x, levels, labels=names, step="mid")
    ax.set_ylabel("colliding pairs\nby level reached")
    ax.set_xlabel("frame")
    ax.legend(loc="upper right", fontsize=8, ncol=width)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
