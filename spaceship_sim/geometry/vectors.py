"""Small 3-vector operations, one of each for the whole package.

The numba kernels hold points and directions as 3-tuples of float64 (registers: no array views, no
allocation, no reference counting in the innermost loops); every function here is inlined into its
caller (`inline="always"`), so a call costs what the written-out arithmetic did. The arithmetic is
the plain left-to-right one (x, then y, then z), which the kernels that call these wrote out before:
answers stay the same bit for bit.

`unit_rows` is the numpy one for (n, 3) arrays (Python-side set-up code, no kernel).
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def sub(p, q):
    """p - q, 3-tuples."""
    return (p[0] - q[0], p[1] - q[1], p[2] - q[2])


@njit(cache=True, inline="always")
def dot(p, q):
    """p . q, 3-tuples."""
    return p[0] * q[0] + p[1] * q[1] + p[2] * q[2]


@njit(cache=True, inline="always")
def cross(p, q):
    """p x q, 3-tuples."""
    return (p[1] * q[2] - p[2] * q[1], p[2] * q[0] - p[0] * q[2], p[0] * q[1] - p[1] * q[0])


@njit(cache=True, inline="always")
def dot_from(r, a, n):
    """(r - a) . n, 3-tuples: how far r lies above the plane through a with normal n (times |n|)."""
    return (r[0] - a[0]) * n[0] + (r[1] - a[1]) * n[1] + (r[2] - a[2]) * n[2]


@njit(cache=True, inline="always")
def lerp(p, q, s):
    """p + s (q - p), 3-tuples: the point at parameter s of the segment p q."""
    return (p[0] + s * (q[0] - p[0]), p[1] + s * (q[1] - p[1]), p[2] + s * (q[2] - p[2]))


@njit(cache=True, inline="always")
def dist2(p, q):
    """|p - q|^2, 3-tuples."""
    return (p[0] - q[0]) ** 2 + (p[1] - q[1]) ** 2 + (p[2] - q[2]) ** 2


@njit(cache=True, inline="always")
def row(A, i):
    """Row i of an (n, 3) array as a 3-tuple (read element by element: no view)."""
    return (A[i, 0], A[i, 1], A[i, 2])


def unit_rows(v: np.ndarray) -> np.ndarray:
    """Each row of v (n, 3) divided by its length: (n, 3) unit vectors (rows of length 0 give nan)."""
    return v / np.linalg.norm(v, axis=1, keepdims=True)
