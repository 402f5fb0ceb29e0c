"""Report and picture of SSV trees: per-level statistics, and levels drawn over the mesh by kind."""
from __future__ import annotations

import numpy as np

from .core import LSS, PSS, RSS
from .tree import SSVTree, _volumes

KIND_NAMES = {PSS: "PSS (sphere)", LSS: "LSS (capsule)", RSS: "RSS (rounded rectangle)"}
KIND_COLORS = {PSS: "tab:blue", LSS: "tab:orange", RSS: "tab:green"}
PICTURE_LEVELS = (2, 4, 6)  # a binary tree: 4, 16 and 64 nodes where the tree is that deep


def node_depths(tree: SSVTree) -> np.ndarray:
    """(n,) int64 depth of every node (root 0; children are numbered after their parent)."""
    depth = np.zeros(tree.n_nodes, np.int64)
    for node in range(tree.n_nodes):
        if tree.child[node, 0] >= 0:
            depth[tree.child[node]] = depth[node] + 1
    return depth


def format_ssv_report(trees: dict) -> str:
    """Per model: nodes, depth, build time, PSS/LSS/RSS counts, and per level 0..4 and the leaves
    the mean radius, mean half-extents and mean volume of the nodes."""
    lines = []
    for name, tree in trees.items():
        kinds = np.bincount(tree.kind, minlength=3)
        lines.append(f"{name}: {len(tree.tris)} triangles, {tree.n_nodes} nodes, depth {tree.depth}, build time "
                     f"{tree.build_seconds:.2f} s; PSS {kinds[PSS]}, LSS {kinds[LSS]}, "
                     f"RSS {kinds[RSS]}")
        lines.append(f"  {'level':>6s} {'nodes':>6s} {'radius [m]':>11s} {'a [m]':>8s} {'b [m]':>8s} {'volume [m^3]':>13s}")
        depth, vol = node_depths(tree), _volumes(tree.half[:, 0], tree.half[:, 1], tree.radius)
        for label, m in [(str(k), depth == k) for k in range(5)] + [("leaves", tree.face >= 0)]:
            if m.any():
                lines.append(f"  {label:>6s} {int(m.sum()):6d} {tree.radius[m].mean():11.4f} {tree.half[m, 0].mean():8.4f} "
                             f"{tree.half[m, 1].mean():8.4f} {vol[m].mean():13.4g}")
    return "\n".join(lines)



def ssv_surface(center, u, v, a, b, r, normals):
    """Points on the surface of one SSV: the core's support point in each outward unit normal plus r
    times it (the Minkowski sum of a convex core and a sphere). normals (..., 3) -> (..., 3) [m]."""
    su = np.where(normals @ u >= 0, a, -a)[..., None]
    sv = np.where(normals @ v >= 0, b, -b)[..., None]
    return center + su * u + sv * v + r * normals


def draw_ssv_levels(trees: dict, path, levels=PICTURE_LEVELS) -> None:
    """PNG: one row per model, one 3-D panel per level: the mesh in grey, each node's SSV as a
    wireframe coloured by kind (PSS / LSS / RSS)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    lon, lat = np.meshgrid(np.linspace(0, 2 * np.pi, 25), np.linspace(0, np.pi, 13))
    normals = np.stack([np.cos(lon) * np.sin(lat), np.sin(lon) * np.sin(lat), np.cos(lat)], axis=-1)
    fig = plt.figure(figsize=(4.2 * len(levels), 4.2 * len(trees)))
    for row, (name, tree) in enumerate(trees.items()):
        depth = node_depths(tree)
        pts = tree.tris.reshape(-1, 3)
        mid, half = (pts.max(0) + pts.min(0)) / 2, (pts.max(0) - pts.min(0)).max() / 2 * 1.1
        for col, k in enumerate(levels):
            ax = fig.add_subplot(len(trees), len(levels), row * len(levels) + col + 1, projection="3d")
            ax.add_collection3d(Poly3DCollection(tree.tris, facecolor="0.6", edgecolor="none", alpha=0.5))
            nodes = np.flatnonzero(depth == k)
            for n in nodes:
                s = ssv_surface(tree.center[n], tree.u[n], tree.v[n], *tree.half[n], tree.radius[n], normals)
                ax.plot_wireframe(s[..., 0], s[..., 1], s[..., 2], color=KIND_COLORS[int(tree.kind[n])],
                                  linewidth=0.3, alpha=0.6)
            counts = np.bincount(tree.kind[nodes], minlength=3)
            ax.set_title(f"{name} level {k}: {len(nodes)} nodes (PSS {counts[PSS]}, LSS {counts[LSS]}, "
                         f"RSS {counts[RSS]})" if len(nodes) else f"{name}: no level {k}", fontsize=8)
            for setter, i in ((ax.set_xlim, 0), (ax.set_ylim, 1), (ax.set_zlim, 2)):
                setter(mid[i] - half, mid[i] + half)
            ax.set_box_aspect((1, 1, 1))
            ax.set_axis_off()
    fig.legend([Line2D([], [], color=KIND_COLORS[k]) for k in KIND_NAMES], list(KIND_NAMES.values()),
               loc="lower center", ncol=3, fontsize=9)
    fig.tight_layout(rect=(0, 0.04, 1, 0.97))
    fig.savefig(path, dpi=90)
    plt.close(fig)
