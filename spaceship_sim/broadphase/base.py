"""The broad-phase interface every implementation follows, and the exact sphere predicate.

A broad phase answers, at sample time t, exactly the ship pairs i < j whose bounding spheres
overlap: |p_i - p_j| <= r_i + r_j. All implementations evaluate that predicate the same way,
geometry.spheres' rule (offset p_j - p_i, squared distance summed x, y, z in that order against
(r_i + r_j)^2), so their answers agree bit for bit, even for pairs exactly touching.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..errors import InputError
from ..geometry.spheres import overlap_sphere_sphere, overlap_spheres
from ..sorting import argsort_stable

EMPTY_PAIRS = np.zeros((0, 2), np.int32)


class BroadPhaseNameError(InputError):
    """An unknown broad-phase name (config key collision.broadphase)."""


@njit(cache=True, inline="always")
def ships_overlap(pos, radius, i, j):
    """True when the spheres of ships i and j overlap or touch (the reference predicate);
    pos (n, 3), radius (n,) [m]."""
    return overlap_sphere_sphere(pos[j, 0] - pos[i, 0], pos[j, 1] - pos[i, 1], pos[j, 2] - pos[i, 2],
                                 radius[i], radius[j])


def overlap_mask(pos: np.ndarray, radius: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Vectorised `ships_overlap` for index arrays a, b (same shape); returns bool array."""
    return overlap_spheres(pos[b, 0] - pos[a, 0], pos[b, 1] - pos[a, 1], pos[b, 2] - pos[a, 2], radius[a], radius[b])


def pairs_from_keys(keys: np.ndarray, n: int) -> np.ndarray:
    """(k,) int64 keys i*n + j -> (k, 2) int32 pairs sorted lexicographically."""
    keys = np.sort(np.asarray(keys, np.int64))
    return np.stack([keys // n, keys % n], axis=1).astype(np.int32) if len(keys) else EMPTY_PAIRS.copy()


@njit(cache=True)
def pairs_from_ids(pa, pb, ids, n):
    """pairs_from_keys of the keys pa[ids] * n + pb[ids], compiled: (k, 2) int32 pairs (pa < pb
    in each) sorted lexicographically."""
    keys = np.empty(len(ids), np.int64)
    for i in range(len(ids)):
        keys[i] = np.int64(pa[ids[i]]) * n + pb[ids[i]]
    keys = keys[argsort_stable(keys)]
    pairs = np.empty((len(ids), 2), np.int32)
    for i in range(len(ids)):
        pairs[i, 0], pairs[i, 1] = keys[i] // n, keys[i] % n
    return pairs


def warm_up(cls) -> None:
    """Run every kernel path of `cls` once on four ships, so that compiling or loading cached
    numba code happens at construction, not in the middle of a timed frame."""
    radius = np.array([1.0, 1.0, 1.0, 1.0])
    pos = np.array([[0.0, 0, 0], [1.5, 0, 0], [10.0, 0, 0], [-10.0, 0, 0]])
    vel, acc = np.ones((4, 3)), np.ones(4)
    bp = cls(radius, min_resolution=0.01)
    for k in range(3):
        bp.invalidate(np.array([k], np.int64))  # as the pipeline's kernels give them
        bp.find_pairs(0.01 * k, pos + 0.01 * k * vel, vel, acc)
    cls.warm_rare_paths()


class BroadPhase:
    """Base class. Subclasses implement `_find_pairs` (inputs already checked) and may
    override `invalidate`.

    radius : (n,) float64, each ship's bounding-sphere radius [m], fixed for the ship's life.
    min_resolution : the pipeline calls `find_pairs` at least this often [s].
    """

    name = "base"
    _warmed = False  # per subclass: kernels run once in this process (see warm_up)

    def __init__(self, radius, *, min_resolution: float):
        radius = np.ascontiguousarray(radius, dtype=np.float64)
        if radius.ndim != 1 or not np.all(np.isfinite(radius)) or np.any(radius < 0):
            raise ValueError(f"radius must be a (n,) array of finite values >= 0, got shape {radius.shape}")
        if not (np.isfinite(min_resolution) and min_resolution > 0):
            raise ValueError(f"min_resolution must be > 0, got {min_resolution}")
        self.radius, self.n, self.min_resolution = radius, len(radius), float(min_resolution)
        self.last_t = -np.inf
        self.last_stats: dict = {}
        cls = type(self)
        if not cls.__dict__.get("_warmed", False):
            cls._warmed = True
            warm_up(cls)

    @classmethod
    def warm_rare_paths(cls) -> None:
        """Run the kernels that find_pairs reaches only in rare cases, which four ships do not
        meet (warm_up): none here."""

    def find_pairs(self, t: float, pos, vel, accel_bound) -> np.ndarray:
        """Pairs whose bounding spheres overlap at time t [s].

        pos : (n, 3) float64 world frame [m]; vel : (n, 3) float64 [m/s];
        accel_bound : (n,) float64 [m/s^2], bound on |d²x/dt²| of each centre until the next call.
        Returns (k, 2) int32, i < j in each row, rows sorted lexicographically.
        """
        n = self.n
        pos = np.ascontiguousarray(pos, dtype=np.float64)
        vel = np.ascontiguousarray(vel, dtype=np.float64)
        accel_bound = np.ascontiguousarray(accel_bound, dtype=np.float64)
        if pos.shape != (n, 3) or vel.shape != (n, 3) or accel_bound.shape != (n,):
            raise ValueError(f"expected pos, vel (n, 3) and accel_bound (n,) with n={n}; got "
                             f"{pos.shape}, {vel.shape}, {accel_bound.shape}")
        if n and not accel_bound.min() >= 0:  # one reduction: NaN fails it too
            raise ValueError("accel_bound must be >= 0 (and not NaN)")
        t = float(t)
        if t < self.last_t:
            raise ValueError(f"time went backwards: {t} < {self.last_t}")
        self.last_t = t
        if n < 2:
            self.last_stats = {"pairs_found": 0}
            return EMPTY_PAIRS.copy()
        return self._find_pairs(t, pos, vel, accel_bound)

    def _find_pairs(self, t, pos, vel, accel_bound) -> np.ndarray:
        raise NotImplementedError

    def invalidate(self, ships) -> None:
        """These ships' velocity/controls changed discontinuously since the last call."""
        self._check_ships(ships)

    def _check_ships(self, ships) -> np.ndarray:
        """(m,) ship indices -> int64 array; an (n,) bool mask is accepted too."""
        ships = np.asarray(ships)
        if ships.dtype == np.bool_:
            if ships.shape != (self.n,):
                raise ValueError(f"a boolean ship mask must have shape ({self.n},), got {ships.shape}")
            ships = np.flatnonzero(ships)
        ships = ships.astype(np.int64, copy=False).reshape(-1)
        if len(ships) and (ships.min() < 0 or ships.max() >= self.n):
            raise ValueError(f"ship index out of range [0, {self.n})")
        return ships
