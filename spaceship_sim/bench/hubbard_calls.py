"""Hubbard's per-call comparison: every narrow-phase call of a run timed level by level.

A call is one pair of ships whose bounding spheres meet in one frame (Hubbard's definition). For
each call (a sample of a run's calls, spread evenly over the run) `record_calls` times the sphere
trees refined to each level 1..depth+1 (depth + 1 = the exact triangle level, "sphere_leaves") and each
exact baseline on the same pose — each in a batch of copies of the call, as a frame batches its
pairs — and keeps the separation bound each level gives. That call log
is all `call_histograms` — a pure function — needs for the paper's histograms:

- speedup at level k = baseline time / sphere-tree time to level k, one histogram per baseline
  and level (Hubbard: BSP time / sphere-tree time);
- separation at level k = the upper bound on the ships' separation at level k as a fraction of
  the smaller ship's bounding radius, over the calls still colliding at level k.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..clock import WALL

SPEEDUP_EDGES = np.logspace(-3, 4, 29)        # 4 bins a decade, 0.001x .. 10,000x
SEPARATION_EDGES = np.linspace(0.0, 1.0, 21)  # fraction of the bounding radius; the last bin takes all above


def root_calls(bank, frames) -> list[tuple[int, int, int]]:
    """(frame, ship a, ship b) of every candidate pair whose root spheres meet, over `frames`
    (a list of (model_id (n,), T (n, 4, 4), pairs (k, 2)))."""
    from ..narrowphase import refine_roots

    calls = []
    for f, (model_id, T, pairs) in enumerate(frames):
        if len(pairs):
            r = refine_roots(bank, model_id, T, pairs)
            calls += [(f, int(a), int(b)) for a, b in r.pairs[r.colliding]]
    return calls


def spread(items: list, n: int) -> list:
    """At most n of `items`, evenly spaced over the list (all of them when there are fewer)."""
    if len(items) <= n:
        return list(items)
    return [items[i] for i in np.linspace(0, len(items) - 1, n).round().astype(int)]


def best_time(fn, repeat: int, clock=WALL):
    """(shortest of `repeat` timings of fn() on `clock` [s], fn's last result)."""
    best, out = math.inf, None
    for _ in range(repeat):
        t0 = clock()
        out = fn()
        best = min(best, clock() - t0)
    return best, out


def record_calls(bank, radii, frames, baselines: dict, all_contacts: bool, max_calls: int = 300, repeat: int = 3,
                 copies: int = 16, clock=WALL, progress: bool = True) -> dict:
    """The call log of a run's recorded frames (see module doc).

    bank      : narrowphase.TreeBank of the run's models;  radii : (M,) bounding radius of each model [m]
    frames    : [(model_id (n,), T (n, 4, 4), pairs (k, 2))] as the run saw them
    baselines : name -> ExactDetector (narrowphase.exact contract) built on the same models
    copies    : each timing answers this many copies of the call in one batch and is divided by it,
                so a call costs what it costs inside a frame's batch (the pipeline refines all of a
                sample's pairs in one call), not the fixed cost of one Python call
    Returns a dict of arrays over the n calls: frame, model_a, model_b (n,) int; radius (n,) [m];
    t_level (n, L) [s] and bound (n, L) [m] (nan where the pair is found apart at that level) for
    levels 1..L (L = bank.max_level, the exact level); t_floor (n,) [s] the same call stopped at the
    root spheres; t_<name> (n,) [s] and hit_<name> (n,) bool for each baseline, and t_sphere_leaves = the
    exact level's time.
    """
    from tqdm import tqdm

    from ..narrowphase import refine_frame

    calls = spread(root_calls(bank, frames), max_calls)
    L, n = bank.max_level, len(calls)
    log = {"frame": np.array([c[0] for c in calls], np.int64), "model_a": np.zeros(n, np.int64),
           "model_b": np.zeros(n, np.int64), "radius": np.zeros(n), "t_level": np.zeros((n, L)),
           "bound": np.full((n, L), np.nan), "t_floor": np.zeros(n)}
    for name in baselines:
        log[f"t_{name}"], log[f"hit_{name}"] = np.zeros(n), np.zeros(n, bool)
    pairs = np.tile([[0, 1]], (copies, 1))

    def timed(fn):  # per call [s], and fn's result
        t, out = best_time(fn, repeat, clock)
        return t / copies, out

    for c, (f, a, b) in enumerate(tqdm(calls, desc="calls", unit="call", disable=not progress)):
        model_id, T, _ = frames[f]
        m, TT = model_id[[a, b]], T[[a, b]]
        log["model_a"][c], log["model_b"][c], log["radius"][c] = m[0], m[1], min(radii[m[0]], radii[m[1]])
        ma, mb, Ta, Tb = np.repeat(m[:1], copies), np.repeat(m[1:], copies), TT[[0] * copies], TT[[1] * copies]

        def refine(max_level, exact):
            return refine_frame(bank, m, TT, pairs, deadline=math.inf, max_level=max_level, triangle_tests=exact,
                                all_contacts=all_contacts, clock=clock)

        log["t_floor"][c], _ = timed(lambda: refine(0, False))  # root spheres only: the call's fixed cost
        for k in range(1, L + 1):
            exact = k == L
            log["t_level"][c, k - 1], r = timed(lambda: refine(None if exact else k, exact))
            if r.colliding[0]:
                log["bound"][c, k - 1] = r.separation_bound[0]
        for name, det in baselines.items():
            log[f"t_{name}"][c], ans = timed(lambda: det.collide(ma, mb, Ta, Tb, all_contacts))
            log[f"hit_{name}"][c] = ans.colliding[0]
    log["t_sphere_leaves"] = log["t_level"][:, L - 1].copy()
    return log


def baseline_names(log: dict) -> list[str]:
    return [k[2:] for k in log if k.startswith("t_") and k not in ("t_level", "t_floor")]


def call_histograms(log: dict, speedup_edges=SPEEDUP_EDGES, separation_edges=SEPARATION_EDGES) -> list[dict]:
    """The paper's histograms from a call log (record_calls' dict; only t_level, bound, radius
    and the t_<baseline> columns are read). Values beyond the edges count in the end bins.
    Rows: {histogram: "speedup", baseline, level, lo, hi, calls} for every baseline, level and bin,
    and {histogram: "separation", baseline: "", level, lo, hi, calls} over the calls colliding at
    that level."""
    t_level, bound, radius = log["t_level"], log["bound"], log["radius"]
    rows = []

    def binned(values, edges):
        idx = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, len(edges) - 2)
        return np.bincount(idx, minlength=len(edges) - 1)

    for name in baseline_names(log):
        for k in range(t_level.shape[1]):
            counts = binned(log[f"t_{name}"] / t_level[:, k], speedup_edges)
            rows += [dict(histogram="speedup", baseline=name, level=k + 1, lo=float(speedup_edges[i]),
                          hi=float(speedup_edges[i + 1]), calls=int(n)) for i, n in enumerate(counts)]
    for k in range(t_level.shape[1]):
        hit = ~np.isnan(bound[:, k])
        counts = binned(bound[hit, k] / radius[hit], separation_edges)
        rows += [dict(histogram="separation", baseline="", level=k + 1, lo=float(separation_edges[i]),
                      hi=float(separation_edges[i + 1]), calls=int(n)) for i, n in enumerate(counts)]
    return rows


def call_summary(log: dict) -> list[dict]:
    """Per baseline and level: median speedup and the share of calls the sphere trees answered
    faster; per level: calls colliding and their median separation fraction."""
    rows = []
    t_level, n = log["t_level"], len(log["radius"])
    for k in range(t_level.shape[1]):
        hit = ~np.isnan(log["bound"][:, k])
        sep = log["bound"][hit, k] / log["radius"][hit]
        row = dict(level=k + 1, calls=n, colliding=int(hit.sum()),
                   separation_median=float(np.median(sep)) if len(sep) else math.nan)
        for name in baseline_names(log):
            s = log[f"t_{name}"] / t_level[:, k]
            row[f"speedup_median_{name}"] = float(np.median(s)) if n else math.nan
            row[f"faster_{name}"] = float(np.mean(s > 1)) if n else math.nan
        rows.append(row)
    return rows


def call_rows(log: dict, model_names: list[str]) -> list[dict]:
    """calls.csv: one row per call, times in seconds and bounds in metres."""
    rows = []
    for c in range(len(log["radius"])):
        row = dict(call=c, frame=int(log["frame"][c]), model_a=model_names[log["model_a"][c]],
                   model_b=model_names[log["model_b"][c]], radius_m=float(log["radius"][c]),
                   t_floor_s=float(log["t_floor"][c]))
        for k in range(log["t_level"].shape[1]):
            row[f"t_level{k + 1}_s"] = float(log["t_level"][c, k])
            b = log["bound"][c, k]
            row[f"bound_level{k + 1}_m"] = "" if np.isnan(b) else float(b)
        for name in baseline_names(log):
            row[f"t_{name}_s"] = float(log[f"t_{name}"][c])
            if f"hit_{name}" in log:
                row[f"colliding_{name}"] = bool(log[f"hit_{name}"][c])
        rows.append(row)
    return rows


def plot_speedups(path: Path, rows: list[dict], summary: list[dict], title: str) -> None:
    """One panel per baseline (rows) and level (columns): calls against speedup, log x; each
    panel's title gives the share of calls the sphere trees answered faster (from call_summary)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in rows if r["histogram"] == "speedup"]
    names = list(dict.fromkeys(r["baseline"] for r in rows))
    levels = sorted({r["level"] for r in rows})
    fig, axes = plt.subplots(len(names), len(levels), figsize=(3.2 * len(levels), 2.4 * len(names) + 0.6),
                             squeeze=False, sharex=True)
    for i, name in enumerate(names):
        for j, k in enumerate(levels):
            ax = axes[i, j]
            sel = [r for r in rows if r["baseline"] == name and r["level"] == k]
            lo = np.array([r["lo"] for r in sel])
            hi = np.array([r["hi"] for r in sel])
            n = np.array([r["calls"] for r in sel])
            ax.bar(lo, n, width=hi - lo, align="edge", color="C0" if k < levels[-1] else "C3", edgecolor="k", lw=0.3)
            ax.axvline(1.0, color="k", ls=":", lw=0.8)
            ax.set_xscale("log")
            faster = next(r[f"faster_{name}"] for r in summary if r["level"] == k)
            ax.set_title(f"vs {name}, level {k}" + (" (exact)" if k == levels[-1] else "")
                         + f"\n{100 * faster:.0f}% of calls faster", fontsize=8)
            ax.tick_params(labelsize=7)
            if j == 0:
                ax.set_ylabel("calls", fontsize=8)
            if i == len(names) - 1:
                ax.set_xlabel(f"speedup = {name} time / sphere-tree time", fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_separations(path: Path, rows: list[dict], title: str) -> None:
    """One panel per level: colliding calls against the separation bound / bounding radius."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in rows if r["histogram"] == "separation"]
    levels = sorted({r["level"] for r in rows})
    fig, axes = plt.subplots(1, len(levels), figsize=(3.2 * len(levels), 3.0), squeeze=False, sharex=True)
    for j, k in enumerate(levels):
        ax = axes[0, j]
        sel = [r for r in rows if r["level"] == k]
        lo = np.array([r["lo"] for r in sel])
        n = np.array([r["calls"] for r in sel])
        ax.bar(lo, n, width=np.diff(lo).mean(), align="edge", color="C2", edgecolor="k", lw=0.3)
        ax.set_title(f"level {k}" + (" (exact)" if k == levels[-1] else "") + f": {n.sum()} colliding", fontsize=8)
        ax.set_xlabel("separation bound / bounding radius", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[0, 0].set_ylabel("calls", fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
