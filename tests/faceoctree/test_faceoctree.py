"""Face-octree exact strategy: the same answers as brute force on random poses, whatever the
octree's limits; candidates cover every hit; parallel step 4 equals serial; deformed shapes."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from spaceship_sim.faceoctree import FaceOctreeExact
from spaceship_sim.meshes import load_model, validate_mesh_arrays
from spaceship_sim.narrowphase.exact import BruteForceExact
from spaceship_sim.registry import EXACT_METHODS

from faceoctree_helpers import random_transforms

SEEDS = st.integers(0, 2**32 - 1)
NAMES = ("capsule", "torus", "plate")


def random_pairs(seed, meshes, n):
    """n random (model of A, model of B, Ta, Tb) pairs of the meshes, posed as `poses` does."""
    rng = np.random.default_rng(seed)
    ma, mb = rng.integers(0, len(meshes), n), rng.integers(0, len(meshes), n)
    return (ma, mb, *poses(rng, meshes, n, ma, mb))


def poses(rng, meshes, n, ma, mb):
    """Pair poses close enough that about half collide: B within the summed bounding radii of A."""
    Ta = random_transforms(rng, n, 2.0)
    reach = np.array([meshes[a].bounding_radius + meshes[b].bounding_radius for a, b in zip(ma, mb)])
    Tb = random_transforms(rng, n, 1.0)
    Tb[:, :3, 3] = Tb[:, :3, 3] * reach[:, None] + Ta[:, :3, 3]
    return Ta, Tb


def assert_same(got, want):
    for field in ("colliding", "tri_ptr", "tri_a", "tri_b"):
        assert np.array_equal(getattr(got, field), getattr(want, field)), field


@pytest.fixture(scope="module")
def generated(shapes):
    meshes = [shapes[n] for n in NAMES]
    return meshes, BruteForceExact(meshes)


@settings(max_examples=12, deadline=None)
@given(SEEDS, st.integers(0, 6), st.sampled_from([0, 1, 16, 200]))
def test_equals_brute_force_on_generated_meshes(generated, seed, max_depth, leaf_pairs):
    meshes, brute = generated
    ma, mb, Ta, Tb = random_pairs(seed, meshes, 8)
    det = FaceOctreeExact(meshes, max_depth=max_depth, leaf_pairs=leaf_pairs)
    want = brute.collide(ma, mb, Ta, Tb)
    assert_same(det.collide(ma, mb, Ta, Tb), want)
    first = det.collide(ma, mb, Ta, Tb, all_contacts=False)
    assert np.array_equal(first.colliding, want.colliding)
    for i in np.flatnonzero(first.colliding):  # its one pair is one of the true ones
        pair = first.pairs_of(i)
        assert len(pair) == 1 and any((pair[0] == want.pairs_of(i)).all(1))


@settings(max_examples=6, deadline=None)
@given(SEEDS)
def test_candidates_cover_every_hit_once(generated, seed):
    meshes, brute = generated
    ma, mb, Ta, Tb = random_pairs(seed, meshes, 6)
    ptr, ca, cb = FaceOctreeExact(meshes).candidates(ma, mb, Ta, Tb)
    want = brute.collide(ma, mb, Ta, Tb)
    for i in range(6):
        cand = np.stack([ca[ptr[i]:ptr[i + 1]], cb[ptr[i]:ptr[i + 1]]], 1)
        key = cand[:, 0] * 10**6 + cand[:, 1]
        assert np.all(np.diff(key) > 0)  # sorted, each once
        assert set(map(tuple, want.pairs_of(i).tolist())) <= set(map(tuple, cand.tolist()))


def test_equals_brute_force_on_assets():
    meshes = [load_model("lamp"), load_model("fighter")]
    rng = np.random.default_rng(5)
    ma, mb = np.array([0, 1, 0, 1]), np.array([0, 1, 1, 0])
    Ta, Tb = poses(rng, meshes, 4, ma, mb)
    want = BruteForceExact(meshes).collide(ma, mb, Ta, Tb)
    assert_same(EXACT_METHODS["faceoctree"](meshes).collide(ma, mb, Ta, Tb), want)


@settings(max_examples=6, deadline=None)
@given(SEEDS)
def test_parallel_step_equals_serial(generated, seed):
    meshes, _ = generated
    ma, mb, Ta, Tb = random_pairs(seed, meshes, 10)
    serial, parallel = FaceOctreeExact(meshes), FaceOctreeExact(meshes, parallel=True)
    assert_same(parallel.collide(ma, mb, Ta, Tb), serial.collide(ma, mb, Ta, Tb))
    first = parallel.collide(ma, mb, Ta, Tb, all_contacts=False)
    assert np.array_equal(first.colliding, serial.collide(ma, mb, Ta, Tb, all_contacts=False).colliding)


def test_deformed_vertices_are_seen_without_rebuilding(shapes):
    """set_vertices changes the shape the next call tests: a capsule squashed flat clears a
    plate it used to cross."""
    capsule, plate = shapes["capsule"], shapes["plate"]
    det = FaceOctreeExact([capsule, plate])
    Ta, Tb = np.eye(4)[None], np.eye(4)[None]
    Ta[0, 2, 3] = 1.0  # the capsule's lower cap dips through the plate at z = 0
    one = np.ones(1, np.int64)
    assert det.collide(0 * one, one, Ta, Tb).colliding[0]
    squashed = capsule.vertices * [1.0, 1.0, 0.3]
    det.set_vertices(0, squashed)
    got = det.collide(0 * one, one, Ta, Tb)
    flat = validate_mesh_arrays(squashed, capsule.faces, "squashed")
    assert_same(got, BruteForceExact([flat, plate]).collide(0 * one, one, Ta, Tb))
    assert not got.colliding[0]
    with pytest.raises(ValueError):
        det.set_vertices(0, squashed[:-1])
