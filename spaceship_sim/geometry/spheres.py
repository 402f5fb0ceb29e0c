"""Sphere primitives, one rule for the whole package.

Touching spheres overlap: two spheres overlap when the distance of their centres is at most the
sum of their radii (`<=`). Every broad phase, bounding-volume test and enclosing-sphere skip uses
this rule, so a pair the broad phase hands on is never dropped by the narrow phase for touching.
The squared form avoids a square root; centre offsets are in any frame both spheres share.

One body serves both sides: `overlap_spheres` is plain Python arithmetic, which numpy broadcasts
over arrays (vectorised set-up code, the reference broad phase) and numba compiles, inlined, as
`overlap_sphere_sphere` for scalars in the kernels.
"""
from __future__ import annotations

from numba import njit


def overlap_spheres(dx, dy, dz, ra, rb):
    """True where spheres of radii ra, rb [m] whose centres differ by (dx, dy, dz) [m] touch or
    overlap: scalars, or numpy arrays of one broadcast shape (then a bool array of it)."""
    s = ra + rb
    return dx * dx + dy * dy + dz * dz <= s * s


overlap_sphere_sphere = njit(cache=True, inline="always")(overlap_spheres)
overlap_sphere_sphere.__doc__ = """`overlap_spheres` compiled for the kernels (scalars, inlined)."""
