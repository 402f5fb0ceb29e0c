"""Sphere primitives, one rule for the whole package.

Touching spheres overlap: two spheres overlap when the distance of their centres is at most the
sum of their radii (`<=`). Every broad phase, bounding-volume test and enclosing-sphere skip uses
this rule, so a pair the broad phase hands on is never dropped by the narrow phase for touching.
The squared form avoids a square root; centre offsets are in any frame both spheres share.
"""
from __future__ import annotations

from numba import njit


@njit(cache=True, inline="always")
def overlap_sphere_sphere(dx, dy, dz, ra, rb):
    """True when spheres of radii ra, rb [m] whose centres differ by (dx, dy, dz) [m] touch or overlap."""
    s = ra + rb
    return dx * dx + dy * dy + dz * dz <= s * s
