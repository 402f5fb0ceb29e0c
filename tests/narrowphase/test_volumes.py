"""The refinement loop's bounding-volume interface (narrowphase/volumes.py): the sphere's functions
against a numpy reference, and a second volume type — cubes around the spheres, tested by the
separating axes of their faces — plugged into the same loop by a bank subclass, a namedtuple and
five njit functions, with nothing of the loop copied: its exact answers equal brute force, and at every
sphere level it finds every pair the spheres find."""
from __future__ import annotations

import math
from collections import namedtuple
import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st
from numba import njit

from spaceship_sim.narrowphase import TreeBank, refine_frame
from spaceship_sim.narrowphase.kernels import min_distance_all_pairs
from spaceship_sim.narrowphase.reference import brute_force_pair, world_triangles
from spaceship_sim.narrowphase.volumes import SPHERE, Volume, dist2, to_a, volume_of

from narrow_helpers import random_pose, random_rotation, with_every_child_pair

SETTINGS = settings(max_examples=20, deadline=None)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_sphere_functions_match_numpy(seed):
    rng = np.random.default_rng(seed)
    center, witness = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    radius, error = rng.uniform(0.1, 1.5, 2), rng.uniform(0.0, 0.5, 2)
    V = (center, radius, error, witness)
    R, t = random_rotation(rng)[None], rng.normal(size=(1, 3))
    xb, acc = np.empty((2, 3)), np.zeros(6)
    b_in_a = R[0] @ center[1] + t[0]
    d = np.linalg.norm(center[0] - b_in_a)

    SPHERE.place(V, 1, R, t, 0, xb)
    hit, depth = SPHERE.overlap(V, 0, V, 1, R, t, 0, xb)
    assert hit == (d <= radius.sum())
    if hit:
        assert depth == pytest.approx(radius.sum() - d)
        sep = SPHERE.separation(V, 0, V, 1, R, t, 0, xb)
        assert sep == pytest.approx(min(error.sum(), np.linalg.norm(witness[0] - (R[0] @ witness[1] + t[0]))))
        SPHERE.contact(V, 0, V, 1, R, t, 0, xb, acc)
        u = (b_in_a - center[0]) / d
        assert np.allclose(acc[3:], u)
        # the contact point lies on the centre line, inside both spheres (up to rounding)
        p = acc[:3]
        assert np.linalg.norm(np.cross(p - center[0], u)) < 1e-9
        assert np.linalg.norm(p - center[0]) <= radius[0] + 1e-9
        assert np.linalg.norm(p - b_in_a) <= radius[1] + 1e-9
    c = np.empty((1, 3))
    assert SPHERE.enclosing(V, 1, c) == radius[1] and np.array_equal(c[0], center[1])


# --- a second volume type, written as a user of the interface would --------------------------
# Cubes of half side r around each node sphere (centre c, radius r), axis-aligned in their body
# frame: they contain the sphere, so they cover what it covers.

@njit(cache=True)
def _cube_place(VB, b, R, t, r, xb):
    to_a(R, t, r, VB[0], b, xb, np.int64(0))


@njit(cache=True)
def _cube_overlap(VA, a, VB, b, R, t, r, xb):
    """Face axes of both cubes (6 of the 15 separating axes): apart when one separates them, else
    overlapping — conservative, as a bounding volume may be, but not where the cubes' enclosing
    spheres are apart (the volume interface asks that: the loop skips such pairs). Depth: the least
    overlap found."""
    ha, hb, c = VA[1][a], VB[1][b], VA[0]
    d = (xb[0, 0] - c[a, 0], xb[0, 1] - c[a, 1], xb[0, 2] - c[a, 2])  # no array: overlap may not allocate
    if d[0] * d[0] + d[1] * d[1] + d[2] * d[2] > 3.0 * (ha + hb) * (ha + hb):
        return False, -np.inf  # the enclosing spheres (radius sqrt(3) x half side) are apart
    depth = np.inf
    for k in range(3):  # A's axes
        reach = ha + hb * (abs(R[r, k, 0]) + abs(R[r, k, 1]) + abs(R[r, k, 2]))
        depth = min(depth, reach - abs(d[k]))
    for k in range(3):  # B's axes
        reach = hb + ha * (abs(R[r, 0, k]) + abs(R[r, 1, k]) + abs(R[r, 2, k]))
        depth = min(depth, reach - abs(d[0] * R[r, 0, k] + d[1] * R[r, 1, k] + d[2] * R[r, 2, k]))
    return depth >= 0.0, depth


@njit(cache=True)
def _cube_separation(VA, a, VB, b, R, t, r, xb):
    """A point in both cubes is within (sqrt(3) - 1) r of the sphere, so within e + (sqrt(3) - 1) r
    of the ship: each side's error grows by that; the witnesses' distance stays a bound."""
    to_a(R, t, r, VB[3], b, xb, np.int64(1))
    grow = math.sqrt(3.0) - 1.0
    return min(VA[2][a] + VB[2][b] + grow * (VA[1][a] + VB[1][b]), math.sqrt(dist2(VA[3], a, xb, np.int64(1))))


@njit(cache=True)
def _cube_contact(VA, a, VB, b, R, t, r, xb, acc):
    """The centres' midpoint and their direction (a contact estimate for the response)."""
    to_a(R, t, r, VB[0], b, xb, np.int64(0))
    d = math.sqrt(dist2(VA[0], a, xb, np.int64(0)))
    for k in range(3):
        acc[k] += 0.5 * (VA[0][a, k] + xb[0, k])
        acc[3 + k] += (xb[0, k] - VA[0][a, k]) / d if d > 0.0 else 0.0


@njit(cache=True)
def _cube_enclosing(V, i, c):
    for k in range(3):
        c[0, k] = V[0][i, k]
    return math.sqrt(3.0) * V[1][i]


CubeNodes = namedtuple("CubeNodes", "center radius error witness")  # radius: the cube's half side
CUBE = Volume("cube", CubeNodes, _cube_place, _cube_overlap, _cube_separation, _cube_contact, _cube_enclosing)


class CubeBank(TreeBank):
    """A TreeBank whose nodes are the cubes around its spheres (radius = half side)."""

    volume = CUBE


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_cube_overlap_never_misses_an_intersection(seed):
    """Whenever the two cubes share a point (a linear program finds one), the face-axis test says
    they overlap; near-touching placements."""
    from scipy.optimize import linprog
    rng = np.random.default_rng(seed)
    c, h = rng.normal(size=(2, 3)), rng.uniform(0.2, 1.0, 2)
    R, u = random_rotation(rng), rng.normal(size=3)
    xb = c[0] + u / np.linalg.norm(u) * (h[0] + h[1]) * rng.uniform(0.8, 1.8)
    t = xb - R @ c[1]  # B's centre c[1] lands on xb
    V = CubeNodes(c, h, np.zeros(2), c)
    scratch = np.empty((2, 3))
    CUBE.place(V, 1, R[None], t[None], 0, scratch)
    hit = CUBE.overlap(V, 0, V, 1, R[None], t[None], 0, scratch)[0]
    # |x - c0|_inf <= h0 and |R^T (x - xb)|_inf <= h1, x free
    A = np.vstack([np.eye(3), -np.eye(3), R.T, -R.T])
    b = np.concatenate([c[0] + h[0], h[0] - c[0], R.T @ xb + h[1], h[1] - R.T @ xb])
    shared = linprog(np.zeros(3), A_ub=A, b_ub=b, bounds=[(None, None)] * 3).status == 0
    assert hit or not shared


@pytest.fixture(scope="module")
def trees(meshes):
    from spaceship_sim.spheretree import build_tree
    return {name: build_tree(v, f, method="octree", branching=8, depth=2) for name, (v, f) in meshes.items()}


@pytest.fixture(scope="module")
def uncached_kernels(trees):
    """The loop's kernels (and the banks' enclosing spheres) compile this module's cube volume
    without writing numba's on-disk cache:
    a cached entry's key names test_volumes.CubeNodes, and every later process loading the kernels'
    cache index (the app, a headless run) would fail to import it. The sphere kernels are loaded
    first, from the cache as usual."""
    from numba.core.caching import NullCache
    from numba.core.registry import CPUDispatcher
    from spaceship_sim.narrowphase import kernels, volumes

    bank, T = TreeBank.from_trees([trees["ico"]]), np.stack([np.eye(4)] * 2)
    for all_contacts in (False, True):
        refine_frame(bank, np.zeros(2, np.int64), T, [[0, 1]], deadline=math.inf, all_contacts=all_contacts)
    cached = {d: d._cache for module in (kernels, volumes) for d in vars(module).values()
              if isinstance(d, CPUDispatcher)}
    for d in cached:
        d._cache = NullCache()
    yield
    for d, cache in cached.items():
        d._cache = cache


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.sampled_from(["torus", "box", "ico"]))
@example(seed=216924871, name="torus")  # the 6-axis test found cubes overlapping whose spheres are apart
def test_a_second_volume_plugs_into_the_same_loop(trees, uncached_kernels, seed, name):
    rng = np.random.default_rng(seed)
    tree = trees[name]
    Ta, Tb = random_pose(rng, 0.2), random_pose(rng, 2.2 * tree.radius[0])
    T, pairs, models = np.stack([Ta, Tb]), np.array([[0, 1]]), np.zeros(2, np.int64)
    spheres = TreeBank.from_trees([tree])
    cubes = CubeBank.from_trees([tree])
    truth = brute_force_pair(tree.vertices, tree.faces, Ta, tree.vertices, tree.faces, Tb)

    exact = refine_frame(cubes, models, T, pairs, deadline=math.inf, min_level=0)
    assert bool(exact.colliding[0]) == (len(truth) > 0) and bool(exact.certain[0])
    got = {(int(a), int(b)) for a, b in exact.tri_pairs[0]}
    assert got == {(int(a), int(b)) for a, b in truth}

    d = min_distance_all_pairs(world_triangles(tree.vertices, tree.faces, Ta),
                               world_triangles(tree.vertices, tree.faces, Tb))
    every = with_every_child_pair(CubeBank.from_trees([tree]))  # the cubes' spheres must change nothing
    for level in range(tree.depth + 1):
        by_cube, by_sphere, by_every = (refine_frame(bank, models, T, pairs, deadline=math.inf, min_level=0,
                                                     max_level=level, triangle_tests=False) for bank in (cubes, spheres, every))
        assert by_cube.colliding[0] >= by_sphere.colliding[0]  # cubes contain the spheres
        if by_cube.colliding[0]:
            assert by_cube.separation_bound[0] >= d - 1e-9
        assert (by_cube.level[0], by_cube.separation_bound[0]) == (by_every.level[0], by_every.separation_bound[0])
        assert np.array_equal(by_cube.sphere_pairs[0], by_every.sphere_pairs[0])


def test_a_pair_of_banks_must_share_a_volume_type(trees):
    spheres = TreeBank.from_trees([trees["ico"]])
    cubes = CubeBank.from_trees([trees["ico"]])
    assert volume_of(spheres, spheres) is SPHERE
    with pytest.raises(ValueError, match="sphere and cube"):
        volume_of(spheres, cubes)
