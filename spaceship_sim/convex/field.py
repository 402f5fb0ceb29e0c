"""An asteroid field in the simulator: tumbling convex polytopes among the ships (I-COLLIDE).

Bodies share one index space with the ships: ships 0..n-1, asteroids n..n+m-1. Per detection
sample, inside the pipeline's own stages (`pipeline.step`):

- integrate: asteroids drift and tumble (constant velocity and world-frame angular velocity, the
  arena's walls reflect them as they reflect ships);
- broad phase: one sweep-and-prune over the asteroids' boxes (I-COLLIDE's dynamically resized boxes
  or fixed cubes, config key `asteroids.boxes`) and the ships' fixed cubes (bounding radius). Its
  active pairs split into ship–asteroid pairs, which join the ships' own candidate pairs, and
  asteroid–asteroid pairs (ship–ship pairs stay with the ships' broad phase);
- narrow phase: asteroid–asteroid pairs get Lin–Canny closest features walked from last sample's
  pair (the sweep keeps each active pair's features and drops them when the pair leaves): exact,
  a few steps per pair, run first on the sample's detection budget (it is the level every pair is
  refined to: the min level). Ship–asteroid pairs go through the time-critical sphere-tree
  refinement with the ship pairs: every asteroid shape has an octree sphere tree (cheap and tight
  enough for a convex body; Hubbard's medial build costs seconds per shape) and its hull triangles
  for the exact level, so the frame budget and min level hold for them exactly as for ship pairs;
- response: one elastic impulse pass over all colliding pairs (`response.respond`), the asteroid
  pairs along their centre line (I-COLLIDE's multi-body simulation exchanges velocities the same way).

Asteroids are instances of `asteroids.shapes` random polytopes (the paper's bodies: hull of random
points on a sphere); each has its own mass (density x volume). Until numba has compiled the kernels
(cold start) pairs come from bounding spheres (scipy cKDTree) and asteroid pairs collide at that level.
"""
from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass

import numpy as np
from numba import njit
from scipy.spatial import cKDTree

from ..broadphase.base import EMPTY_PAIRS
from ..dynamics import contain
from ..dynamics.integrator import quat_multiply
from ..geometry.spheres import overlap_spheres
from ..geometry.vectors import unit_rows
from ..meshes import validate_mesh_arrays
from ..state import ShipState, quat_to_matrix, rotation_into, transforms
from .closest import MAX_ITER, PENETRATING, walk_pairs, walk_scratch
from .polytope import Polytope, _hull_polytope, pack, random_polytope
from .sweep import DynamicBoxes, SweepAndPrune, fixed_cubes

SHAPE_SEED_SALT = 0xA57E  # asteroid shapes and placement draw from their own stream of sim.seed
PLACEMENT_TRIES = 200     # random positions tried per asteroid before giving up
COARSE_CORNERS = 8        # vertices of the stand-in drawn for far asteroids
_STATE_FIELDS = [f.name for f in dataclasses.fields(ShipState)]


@dataclass(frozen=True)
class AsteroidShapes:
    """The distinct asteroid shapes: polytopes (body frame at the mass centre [m]), their
    triangulated meshes, sphere trees and coarse meshes for drawing far away (same order)."""

    polytopes: list
    meshes: list
    trees: list
    coarse: list

    @classmethod
    def from_config(cls, cfg) -> "AsteroidShapes":
        from ..spheretree import load_or_build

        a = cfg.asteroids
        rng = np.random.default_rng([cfg.sim.seed, SHAPE_SEED_SALT])
        radii = rng.uniform(a.radius_min, a.radius_max, a.shapes)
        polys = [random_polytope(a.faces, rng, radius=r) for r in radii]
        meshes = [polytope_mesh(p, f"asteroid-{k}") for k, p in enumerate(polys)]
        trees = [load_or_build(m, method="octree", depth=cfg.collision.tree_depth) for m in meshes]
        return cls(polys, meshes, trees, [coarse_mesh(p) for p in polys])


def polytope_mesh(poly: Polytope, name: str):
    """The polytope's faces fanned into triangles: a `Mesh` (counter-clockwise from outside)."""
    tris = [(face[0], face[i], face[i + 1]) for face in (poly.face(f) for f in range(poly.n_faces))
            for i in range(1, len(face) - 1)]
    return validate_mesh_arrays(poly.vertices, np.array(tris, np.int32), source=name, name=name)


def coarse_mesh(poly: Polytope, corners: int = COARSE_CORNERS):
    """A few-triangle stand-in for drawing a polytope far away: the hull of `corners` of its vertices
    spread by farthest-point sampling (inside the polytope, same body frame)."""
    v = poly.vertices
    pick = [int(np.argmax((v ** 2).sum(axis=1)))]
    gap = ((v - v[pick[0]]) ** 2).sum(axis=1)
    while len(pick) < min(corners, len(v)):
        pick.append(int(np.argmax(gap)))
        gap = np.minimum(gap, ((v - v[pick[-1]]) ** 2).sum(axis=1))
    hull, centre = _hull_polytope(v[pick], "coarse asteroid")
    shifted = dataclasses.replace(hull, vertices=hull.vertices + centre)  # back into the polytope's frame
    return polytope_mesh(shifted, "asteroid-coarse")


@dataclass(eq=False)
class ConvexPairs:
    """Asteroid–asteroid pairs of one sample (global body indices).

    pairs    : (k, 2) int64 the sweep's active pairs; colliding : (k,) bool
    distance : (k,) float64 [m], 0 when penetrating; points : (k, 2, 3) float64 world closest points
               (undefined when penetrating); features : (k, 2) int64 closest-feature codes"""

    pairs: np.ndarray
    colliding: np.ndarray
    distance: np.ndarray
    points: np.ndarray
    features: np.ndarray

    @classmethod
    def empty(cls) -> "ConvexPairs":
        return cls(np.zeros((0, 2), np.int64), np.zeros(0, bool), np.zeros(0), np.zeros((0, 2, 3)),
                   np.zeros((0, 2), np.int64))

    @property
    def hits(self) -> np.ndarray:
        """(h, 2) int64 colliding pairs."""
        return self.pairs[self.colliding]


class NoField:
    """No asteroids: every method leaves the ships' pipeline exactly as it was."""

    count = 0
    last = ConvexPairs.empty()

    def integrate(self, dt, compiled=True):
        pass

    def ship_pairs(self, state, compiled):
        return EMPTY_PAIRS

    def collide(self, compiled):
        return self.last

    def model_ids(self, state):
        return state.model_id

    def transforms(self, state, compiled=False):
        return transforms(state, compiled)

    def bodies(self, state):
        return state.pos, state.vel, state.inv_mass

    def radii(self, state):
        """(n,) bounding radius of every body [m]."""
        return state.radius

    def set_velocities(self, state, vel):
        pass

    def hash(self, state) -> str:
        """SHA-256 of every body's state (ships only here): equal hashes, bit-identical states."""
        return state.hash()

    def body_state(self, state):
        """Every body as one ShipState (what the app draws): the ships' own here."""
        return state


class AsteroidField(NoField):
    """The asteroids' state (struct of arrays, m asteroids) and their detection stages.

    pos (m, 3), vel (m, 3) world [m, m/s]; quat (m, 4) (w, x, y, z) body -> world; omega (m, 3)
    world angular velocity [rad/s]; shape (m,) int64 index into the shapes; radius (m,) [m];
    inv_mass (m,) [1/kg]. n_ships ships come first in the shared index space; ship models are
    0..model_offset-1 in the tree bank and asteroid shape k is model model_offset + k."""

    def __init__(self, cfg, shapes: AsteroidShapes, ships, model_offset: int):
        a = cfg.asteroids
        rng = np.random.default_rng([cfg.sim.seed, SHAPE_SEED_SALT, 1])
        m, self.count, self.n_ships, self.model_offset = a.count, a.count, ships.n, model_offset
        self.arena = cfg.arena.size
        self.shape = rng.integers(0, len(shapes.polytopes), m)
        self.pset = pack([shapes.polytopes[k] for k in self.shape])
        self.radius = self.pset.radius.copy()
        volume = np.array([p.volume for p in shapes.polytopes])[self.shape]
        self.inv_mass = 1.0 / (a.density * volume)
        self.pos = _place(self.radius, ships.pos, ships.radius, cfg, rng)
        q = rng.normal(size=(m, 4))
        self.quat = unit_rows(q)
        self.vel = unit_rows(rng.normal(size=(m, 3))) * rng.uniform(0.0, a.speed_max, (m, 1))
        self.omega = unit_rows(rng.normal(size=(m, 3))) * rng.uniform(0.0, a.spin_max, (m, 1))
        self.rot = np.ascontiguousarray(quat_to_matrix(self.quat))  # kept in place: numba reads it C-ordered
        self.T = np.zeros((m, 4, 4))  # body -> world, kept with rot and pos (the narrow phase's poses)
        self.T[:, :3, :3], self.T[:, :3, 3], self.T[:, 3, 3] = self.rot, self.pos, 1.0
        self.args, self.scratch = self.pset.kernel_args(), walk_scratch(self.pset)
        self.boxes = DynamicBoxes(self.pset, self.rot) if a.boxes == "dynamic" else None
        self.sweep = SweepAndPrune(self.n_ships + m)
        self._spin, self._spin_dt = None, None
        self.last = ConvexPairs.empty()
        self._convex_rows = np.zeros(0, np.int64)
        self.box_lo = self.box_hi = np.zeros((0, 3))  # the asteroids' boxes of the last sweep (m, 3) world
        self.steps = self.fallbacks = 0  # Lin–Canny walk steps and brute-force fallbacks, last sample

    # --- integrate ----------------------------------------------------------------------
    def integrate(self, dt: float, compiled: bool = True) -> None:
        """Drift and tumble by dt [s]; the arena's walls reflect outward velocities. One numba
        pass once compiled (`_tumble`), else the numpy reference below: the same arithmetic in the
        same order, bit for bit (tests/convex/test_field.py)."""
        if self._spin_dt != dt:  # one fixed sample length per run: compute the turns once
            self._spin, self._spin_dt = _turn_quats(self.omega * dt), dt
        if compiled:
            _tumble(self.pos, self.vel, self.quat, self._spin, dt, 0.5 * self.arena, self.rot, self.T)
            return
        self.pos += self.vel * dt
        q = quat_multiply(self._spin, self.quat)
        self.quat[:] = unit_rows(q)
        self.rot[:] = quat_to_matrix(self.quat)
        self.T[:, :3, :3], self.T[:, :3, 3] = self.rot, self.pos
        contain(self, self.arena)

    # --- broad phase --------------------------------------------------------------------
    def ship_pairs(self, state, compiled: bool) -> np.ndarray:
        """Sweep (or, before the kernels are compiled, bounding spheres) over ships and asteroids.
        Returns the ship–asteroid pairs (k, 2) int32 (ship, n + asteroid); keeps the
        asteroid–asteroid ones for `collide`."""
        n = self.n_ships
        if compiled:
            lo_s, hi_s = fixed_cubes(state.radius, state.pos)
            lo_a, hi_a = self.boxes.boxes(self.rot, self.pos) if self.boxes else fixed_cubes(self.radius, self.pos)
            self.box_lo, self.box_hi = lo_a, hi_a  # drawn by the app
            pairs = self.sweep.update(np.concatenate([lo_s, lo_a]), np.concatenate([hi_s, hi_a]))
        else:
            pairs = _sphere_pairs(np.concatenate([state.pos, self.pos]), np.concatenate([state.radius, self.radius]))
        self._convex_rows = np.flatnonzero(pairs[:, 0] >= n)
        self._cold_pairs = None if compiled else pairs[self._convex_rows]
        return pairs[(pairs[:, 0] < n) & (pairs[:, 1] >= n)]

    # --- narrow phase -------------------------------------------------------------------
    def collide(self, compiled: bool) -> ConvexPairs:
        """Asteroid–asteroid pairs of the last `ship_pairs`: coherent Lin–Canny (exact), or, before
        the kernels are compiled, their bounding spheres."""
        n, rows = self.n_ships, self._convex_rows
        if not compiled:
            k = len(self._cold_pairs)
            self.last = ConvexPairs(self._cold_pairs.astype(np.int64), np.ones(k, bool), np.zeros(k),
                                    np.full((k, 2, 3), np.nan), np.full((k, 2), -1, np.int64))
            return self.last
        pairs = self.sweep.pairs[rows]
        feats = self.sweep.feats[rows]  # a copy (fancy index): written back below
        k = len(pairs)
        dist, status, points = np.empty(k), np.empty(k, np.int8), np.empty((k, 2, 3))
        self.steps, self.fallbacks = walk_pairs(self.args, self.radius, self.rot, self.pos, pairs - np.int32(n),
                                                feats, MAX_ITER, False, dist, status, points, self.scratch)
        self.sweep.feats[rows] = feats
        self.last = ConvexPairs(pairs.astype(np.int64), status == PENETRATING, dist, points, feats)
        return self.last

    # --- all bodies -------------------------------------------------------------------------
    def model_ids(self, state) -> np.ndarray:
        """(n + m,) int64 tree-bank model of every body."""
        return np.concatenate([state.model_id, self.model_offset + self.shape])

    def transforms(self, state, compiled=False) -> np.ndarray:
        """(n + m, 4, 4) float64 body -> world of every body."""
        return np.concatenate([transforms(state, compiled), self.T])

    def bodies(self, state):
        """(pos, vel, inv_mass) of every body, ships first (copies: see set_velocities)."""
        return (np.concatenate([state.pos, self.pos]), np.concatenate([state.vel, self.vel]),
                np.concatenate([state.inv_mass, self.inv_mass]))

    def body_state(self, state) -> ShipState:
        """Ships then asteroids as one ShipState (pose, radius, model; asteroids have no controls):
        what the app draws and what the narrow phase's pair indices refer to."""
        rocks = ShipState.zeros(self.count)
        rocks.pos[:], rocks.vel[:], rocks.quat[:], rocks.radius[:] = self.pos, self.vel, self.quat, self.radius
        rocks.inv_mass[:], rocks.model_id[:] = self.inv_mass, self.model_offset + self.shape
        return ShipState(**{f: np.concatenate([getattr(state, f), getattr(rocks, f)]) for f in _STATE_FIELDS})

    def radii(self, state) -> np.ndarray:
        """(n + m,) bounding radius of every body, ships first [m]."""
        return np.concatenate([state.radius, self.radius])

    def set_velocities(self, state, vel) -> None:
        """Store velocities (n + m, 3) of every body (after response) back."""
        state.vel[:] = vel[:state.n]
        self.vel[:] = vel[state.n:]

    def hash(self, state) -> str:
        """SHA-256 of the ships' state hash and the asteroids' motion state."""
        h = hashlib.sha256(state.hash().encode())
        for a in (self.pos, self.vel, self.quat, self.omega):
            h.update(np.ascontiguousarray(a).tobytes())
        return h.hexdigest()


def make_field(cfg, shapes: AsteroidShapes | None, ships, model_offset: int):
    """The config's asteroid field, or NoField when it has none."""
    return NoField() if shapes is None else AsteroidField(cfg, shapes, ships, model_offset)


def _sphere_pairs(pos, radius) -> np.ndarray:
    """(k, 2) int32 pairs i < j whose bounding spheres overlap (the cold-start broad phase)."""
    pairs = cKDTree(pos).query_pairs(2.0 * radius.max(), output_type="ndarray")
    d = pos[pairs[:, 1]] - pos[pairs[:, 0]]
    pairs = pairs[overlap_spheres(d[:, 0], d[:, 1], d[:, 2], radius[pairs[:, 0]], radius[pairs[:, 1]])]
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))].astype(np.int32).reshape(-1, 2)


def _place(radius, ship_pos, ship_radius, cfg, rng) -> np.ndarray:
    """(m, 3) centres uniform in the arena, bounding spheres clear of the ships and of each other
    (random trials, largest first). Raises ConfigError (asteroids.count) when they do not fit."""
    from ..config import ConfigError

    half, m, n = 0.5 * cfg.arena.size, len(radius), len(ship_pos)
    pos, rad = np.concatenate([ship_pos, np.zeros((m, 3))]), np.concatenate([ship_radius, np.zeros(m)])
    for placed, i in enumerate(np.argsort(-radius, kind="stable")):
        r, k = radius[i], n + placed
        for _ in range(PLACEMENT_TRIES):
            p = rng.uniform(-half + r, half - r, 3)
            if (((pos[:k] - p) ** 2).sum(axis=1) > (rad[:k] + r) ** 2).all():
                break
        else:
            raise ConfigError(cfg.source, "asteroids.count",
                              f"cannot place {m} asteroids in a {cfg.arena.size:g} m arena among {n} ships "
                              f"(placed {placed})")
        pos[k], rad[k] = p, r
    out = np.empty((m, 3))
    out[np.argsort(-radius, kind="stable")] = pos[n:]
    return out


@njit(cache=True)
def _tumble(pos, vel, quat, spin, dt, half, rot, T):
    """`AsteroidField.integrate` in one pass over the asteroids (arrays updated in place): drift,
    turn by spin (m, 4) (Hamilton product spin * quat, renormalised), rotation matrix and pose T
    (m, 4, 4), walls."""
    for i in range(len(pos)):
        for k in range(3):
            pos[i, k] += vel[i, k] * dt
        aw, ax, ay, az = spin[i, 0], spin[i, 1], spin[i, 2], spin[i, 3]
        bw, bx, by, bz = quat[i, 0], quat[i, 1], quat[i, 2], quat[i, 3]
        w = aw * bw - ax * bx - ay * by - az * bz
        x = aw * bx + ax * bw + ay * bz - az * by
        y = aw * by - ax * bz + ay * bw + az * bx
        z = aw * bz + ax * by - ay * bx + az * bw
        norm = np.sqrt(w * w + x * x + y * y + z * z)
        w, x, y, z = w / norm, x / norm, y / norm, z / norm
        quat[i, 0], quat[i, 1], quat[i, 2], quat[i, 3] = w, x, y, z
        rotation_into(w, x, y, z, rot[i])
        rotation_into(w, x, y, z, T[i])
        for r in range(3):
            T[i, r, 3] = pos[i, r]
        for k in range(3):
            if (pos[i, k] > half and vel[i, k] > 0) or (pos[i, k] < -half and vel[i, k] < 0):
                vel[i, k] = -vel[i, k]


def _turn_quats(rotvec: np.ndarray) -> np.ndarray:
    """(m, 4) unit quaternions of the rotations by rotation vectors (m, 3) [rad]."""
    angle = np.linalg.norm(rotvec, axis=1, keepdims=True)
    axis = np.divide(rotvec, angle, out=np.zeros_like(rotvec), where=angle > 0)
    return np.concatenate([np.cos(0.5 * angle), np.sin(0.5 * angle) * axis], axis=1)
