"""Quality report of sphere trees (Hubbard 1996's tightness measure) and a picture of their levels.

Per level: sphere count, mean and max error as a fraction of the mesh's bounding radius, whether the
level's coverage of every triangle was verified, and the tree's build time; medial and octree side by
side with the ratio of their mean errors (the reference measured in the same run).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..config import PREBUILT_TREE_METHODS
from .finish import coverage_verified, min_piece_size
from .tree import SphereTree


@dataclass(frozen=True)
class LevelStats:
    level: int
    count: int
    mean_error: float  # fraction of the bounding radius
    max_error: float  # fraction of the bounding radius
    covered: bool


def bounding_radius(tree: SphereTree) -> float:
    """Radius [m] of the root sphere (the bounding sphere every fraction is relative to)."""
    return float(tree.radius[0])


def level_stats(tree: SphereTree) -> list[LevelStats]:
    """Stats of every level of `tree` (coverage re-verified by the subdivision check)."""
    R = bounding_radius(tree)
    tris = tree.vertices[tree.faces]
    piece = min_piece_size(tris)
    out = []
    for k in range(tree.depth + 1):
        c, r, e = tree.level(k)
        out.append(LevelStats(k, len(r), float(e.mean() / R), float(e.max() / R),
                              coverage_verified(tris, c, r, piece)))
    return out


def format_report(rows: dict[str, dict[str, SphereTree]]) -> str:
    """Table for {model name: {method: tree}}; ratio = medial mean error / octree mean error."""
    head = (f"{'model':<10} {'lvl':>3} | {'medial n':>8} {'mean':>7} {'max':>7} {'cov':>3} {'build s':>7} | "
            f"{'octree n':>8} {'mean':>7} {'max':>7} {'cov':>3} {'build s':>7} | {'ratio':>5}")
    lines = [head, "-" * len(head)]
    for name, trees in rows.items():
        stats = {m: level_stats(t) for m, t in trees.items()}
        depth = max(t.depth for t in trees.values())
        for k in range(depth + 1):
            cells = []
            for m in PREBUILT_TREE_METHODS:
                s = stats.get(m)
                if s is None or k >= len(s):
                    cells.append(f"{'-':>8} {'-':>7} {'-':>7} {'-':>3} {'-':>7}")
                    continue
                st = s[k]
                secs = trees[m].build_seconds
                cells.append(f"{st.count:>8d} {st.mean_error:>7.4f} {st.max_error:>7.4f} "
                             f"{'yes' if st.covered else 'NO':>3} {secs:>7.2f}")
            ratio = (f"{stats['medial'][k].mean_error / stats['octree'][k].mean_error:>5.2f}"
                     if set(PREBUILT_TREE_METHODS) <= stats.keys() and k < min(len(v) for v in stats.values())
                     and stats["octree"][k].mean_error > 0 else f"{'-':>5}")
            lines.append(f"{name if k == 0 else '':<10} {k:>3} | {cells[0]} | {cells[1]} | {ratio}")
    lines.append("errors: fraction of the bounding radius (root sphere); cov: union of the level's spheres "
                 "contains every triangle (verified); ratio: medial mean / octree mean")
    return "\n".join(lines)


def draw_levels(rows: dict[str, dict[str, SphereTree]], path, levels=(1, 2, 3)) -> None:
    """PNG: one row per (model, method), one 3-D panel per level (mesh in grey, spheres translucent)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    panels = [(name, m, t) for name, trees in rows.items() for m, t in trees.items()]
    fig = plt.figure(figsize=(4.2 * len(levels), 4.0 * len(panels)))
    u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 13), np.linspace(0, np.pi, 7))
    unit = np.stack([np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v)], axis=-1)
    for row, (name, method, tree) in enumerate(panels):
        R = bounding_radius(tree)
        for col, k in enumerate(levels):
            ax = fig.add_subplot(len(panels), len(levels), row * len(levels) + col + 1, projection="3d")
            ax.add_collection3d(Poly3DCollection(tree.vertices[tree.faces], facecolor="0.6", edgecolor="none",
                                                 alpha=0.9))
            if k <= tree.depth:
                c, r, e = tree.level(k)
                colors = plt.cm.viridis(np.clip(e / max(float(e.max()), 1e-12), 0, 1))
                for ci, ri, col_i in zip(c, r, colors):
                    s = ci + ri * unit
                    ax.plot_wireframe(s[..., 0], s[..., 1], s[..., 2], color=col_i, linewidth=0.3, alpha=0.5)
                title = f"{name} {method} level {k}: {len(r)} spheres, mean err {e.mean() / R:.3f} R"
            else:
                title = f"{name} {method}: no level {k}"
            ax.set_title(title, fontsize=8)
            ctr = tree.center[0]
            for setter, i in ((ax.set_xlim, 0), (ax.set_ylim, 1), (ax.set_zlim, 2)):
                setter(ctr[i] - R, ctr[i] + R)
            ax.set_box_aspect((1, 1, 1))
            ax.set_axis_off()
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
