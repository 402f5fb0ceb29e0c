"""The sphere rule (geometry.spheres): touching spheres overlap. The numba and numpy forms agree
bit for bit, both match exact arithmetic, and every site that tests bounding spheres (the broad
phases, the asteroid field's cold-start pairs, the multibody bench's reference) counts touching
spheres as overlapping."""
from fractions import Fraction

import numpy as np
from hypothesis import given, settings, strategies as st
from numba import njit

from spaceship_sim.broadphase import BruteForce, SpaceTime, SweepPrune
from spaceship_sim.convex.field import _sphere_pairs
from spaceship_sim.convex.multibody import BruteForceBodies as MultiBodyBruteForce
from spaceship_sim.convex.polytope import pack, polytope_from_points
from spaceship_sim.geometry.spheres import overlap_sphere_sphere, overlap_spheres

SEEDS = st.integers(0, 2**32 - 1)
SETTINGS = settings(max_examples=30, deadline=None)


@njit(cache=True)
def kernel_overlaps(d, ra, rb):
    """overlap_sphere_sphere over rows of d (n, 3), ra, rb (n,), as a kernel calls it."""
    out = np.empty(len(d), np.bool_)
    for i in range(len(d)):
        out[i] = overlap_sphere_sphere(d[i, 0], d[i, 1], d[i, 2], ra[i], rb[i])
    return out


def exact_overlaps(d, ra, rb):
    """The rule in rational arithmetic: |d|^2 <= (ra + rb)^2."""
    return np.array([sum(Fraction(float(x)) ** 2 for x in row) <= (Fraction(float(a)) + Fraction(float(b))) ** 2
                     for row, a, b in zip(d, ra, rb)])


@SETTINGS
@given(SEEDS)
def test_kernel_and_numpy_forms_agree_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    scale = rng.uniform(0.1, 100)
    d = rng.normal(size=(2000, 3)) * scale
    ra, rb = rng.uniform(0, scale, 2000), rng.uniform(0, scale, 2000)
    got = kernel_overlaps(d, ra, rb)
    assert np.array_equal(got, overlap_spheres(d[:, 0], d[:, 1], d[:, 2], ra, rb))
    assert 0 < got.sum() < len(got)


@SETTINGS
@given(SEEDS)
def test_small_integers_match_exact_arithmetic_touching_included(seed):
    """Small integers make every product exact: many pairs exactly touch (|d| = ra + rb)."""
    rng = np.random.default_rng(seed)
    d = rng.integers(-6, 7, size=(3000, 3)).astype(float)
    ra, rb = rng.integers(0, 6, 3000).astype(float), rng.integers(0, 6, 3000).astype(float)
    want = exact_overlaps(d, ra, rb)
    assert np.array_equal(kernel_overlaps(d, ra, rb), want)
    assert np.array_equal(overlap_spheres(d[:, 0], d[:, 1], d[:, 2], ra, rb), want)
    touching = (d ** 2).sum(axis=1) == (ra + rb) ** 2
    assert touching.any() and want[touching].all()


def test_every_broad_phase_counts_touching_ships():
    """Ships 0-1 touch along x (|d| = 5 = 2 + 3), 0-2 touch at (3, 4, 0), 1-3 miss by a hair."""
    pos = np.array([[0.0, 0.0, 0.0], [5.0, 0.0, 0.0], [3.0, 4.0, 0.0], [5.0, 0.0, 5.0]])
    radius = np.array([2.0, 3.0, 3.0, 2.0 - 1e-9])
    zero = np.zeros_like(pos)
    for cls in (BruteForce, SweepPrune, SpaceTime):
        got = cls(radius, min_resolution=1 / 60).find_pairs(0.0, pos, zero, np.zeros(len(pos)))
        assert got.tolist() == [[0, 1], [0, 2], [1, 2]], cls.name
    assert _sphere_pairs(pos, radius).tolist() == [[0, 1], [0, 2], [1, 2]]


def test_multibody_reference_counts_touching_bounding_spheres():
    """Two octahedra (radius 1) whose tips meet: their bounding spheres touch, and the reference
    hands the pair to the exact test, which finds the contact."""
    octahedron = polytope_from_points(np.vstack([np.eye(3), -np.eye(3)]))
    pset = pack([octahedron, octahedron])
    assert pset.radius.tolist() == [1.0, 1.0]
    rot, pos = np.tile(np.eye(3), (2, 1, 1)), np.array([[0.0, 0.0, 0.0], [2.0, 0.0, 0.0]])
    assert MultiBodyBruteForce(pset).detect(rot, pos).tolist() == [[0, 1]]
