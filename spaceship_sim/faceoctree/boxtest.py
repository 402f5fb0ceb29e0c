"""Exact triangle / axis-aligned box overlap (numba) and a clipping reference (numpy).

Both treat the triangle and the box as closed sets: touching counts as overlapping.

- `overlap_triangle_box`: the separating-axis test (Akenine-Möller 2001) — the box's three face
  normals, the triangle's normal and the nine edge × axis cross products; the sets are disjoint
  iff one of these 13 axes separates their projections. Smith & Kitamura clip against four box
  planes instead; both are exact, the SAT has no divisions.
- `overlap_triangle_box_ref`: Sutherland–Hodgman clipping of the triangle by the box's six
  closed half-spaces; the sets meet iff something is left (the paper's idea, in numpy).
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _axis_separates(p0, p1, p2, r):
    """Projections p0..p2 of the triangle's vertices all beyond +-r (the box's projected half width)."""
    return min(p0, p1, p2) > r or max(p0, p1, p2) < -r


@njit(cache=True)
def overlap_triangle_box(T, i, boxes, b):
    """Closed triangle T[i] ((n, 3, 3) float64, one vertex per row) meets the closed box
    boxes[b] ((m, 2, 3) float64, [lo; hi] corners), same frame. Rows are indexed, never sliced:
    views cost reference counting in the octree's inner loop."""
    lx, ly, lz = boxes[b, 0, 0], boxes[b, 0, 1], boxes[b, 0, 2]
    ux, uy, uz = boxes[b, 1, 0], boxes[b, 1, 1], boxes[b, 1, 2]
    cx, cy, cz = 0.5 * (lx + ux), 0.5 * (ly + uy), 0.5 * (lz + uz)
    hx, hy, hz = 0.5 * (ux - lx), 0.5 * (uy - ly), 0.5 * (uz - lz)
    # vertices relative to the box centre
    ax, ay, az = T[i, 0, 0] - cx, T[i, 0, 1] - cy, T[i, 0, 2] - cz
    bx, by, bz = T[i, 1, 0] - cx, T[i, 1, 1] - cy, T[i, 1, 2] - cz
    qx, qy, qz = T[i, 2, 0] - cx, T[i, 2, 1] - cy, T[i, 2, 2] - cz
    # the box's face normals: the two boxes
    if _axis_separates(ax, bx, qx, hx) or _axis_separates(ay, by, qy, hy) or _axis_separates(az, bz, qz, hz):
        return False
    # the triangle's plane
    e0x, e0y, e0z = bx - ax, by - ay, bz - az
    e1x, e1y, e1z = qx - bx, qy - by, qz - bz
    e2x, e2y, e2z = ax - qx, ay - qy, az - qz
    nx, ny, nz = e0y * e1z - e0z * e1y, e0z * e1x - e0x * e1z, e0x * e1y - e0y * e1x
    if abs(nx * ax + ny * ay + nz * az) > hx * abs(nx) + hy * abs(ny) + hz * abs(nz):
        return False
    # edge x unit axis: e x X = (0, ez, -ey), e x Y = (-ez, 0, ex), e x Z = (ey, -ex, 0)
    for ex, ey, ez in ((e0x, e0y, e0z), (e1x, e1y, e1z), (e2x, e2y, e2z)):
        if _axis_separates(ez * ay - ey * az, ez * by - ey * bz, ez * qy - ey * qz, hy * abs(ez) + hz * abs(ey)):
            return False
        if _axis_separates(ex * az - ez * ax, ex * bz - ez * bx, ex * qz - ez * qx, hx * abs(ez) + hz * abs(ex)):
            return False
        if _axis_separates(ey * ax - ex * ay, ey * bx - ex * by, ey * qx - ex * qy, hx * abs(ey) + hy * abs(ex)):
            return False
    return True


def overlap_triangle_box_ref(tri, lo, hi) -> bool:
    """Reference: clip triangle tri (3, 3) by the six closed half-spaces of box [lo, hi] (3,);
    they meet iff a (possibly degenerate) polygon is left."""
    poly = [np.asarray(p, float) for p in tri]
    for axis in range(3):
        for sign, bound in ((1.0, hi[axis]), (-1.0, lo[axis])):
            dist = [sign * (p[axis] - bound) for p in poly]  # <= 0: inside the half-space
            out = []
            for k, (p, dp) in enumerate(zip(poly, dist)):
                q, dq = poly[(k + 1) % len(poly)], dist[(k + 1) % len(poly)]
                if dp <= 0:
                    out.append(p)
                if (dp < 0 < dq) or (dq < 0 < dp):
                    out.append(p + (q - p) * (dp / (dp - dq)))
            if not out:
                return False
            poly = out
    return True
