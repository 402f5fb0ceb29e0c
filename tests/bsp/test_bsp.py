"""Hubbard's BSP baseline: tree invariants, and the same intersecting triangle pairs as brute force on
random poses of every asset, on exactly touching faces, and in first-contact mode."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spaceship_sim.bsp import build_bsp
from spaceship_sim.meshes import load_model, validate_mesh_arrays
from spaceship_sim.narrowphase.exact import BruteForceExact
from spaceship_sim.registry import EXACT_METHODS

from spaceship_sim.bench.bench_narrowphase import random_poses

NAMES = ("lamp", "fighter", "freighter")


def random_pose(rng, reach):
    """(4, 4): a random rotation, centre uniform in the ball of radius `reach`."""
    return random_poses(rng, 1, reach)[1]


@pytest.fixture(scope="module")
def assets():
    meshes = [load_model(n) for n in NAMES]
    return meshes, EXACT_METHODS["bsp"](meshes), BruteForceExact(meshes)


def test_every_face_is_in_the_tree_and_children_follow_parents(assets):
    meshes, det, _ = assets
    for mesh, tree in zip(meshes, det.bank.trees):
        assert set(tree.tri_idx.tolist()) == set(range(len(mesh.faces)))
        inner = tree.front >= 0
        assert np.array_equal(inner, tree.back >= 0)
        nodes = np.flatnonzero(inner)
        assert (tree.front[inner] > nodes).all() and (tree.back[inner] > nodes).all()
        # every node but the root is the child of exactly one node
        assert sorted(np.concatenate([tree.front[inner], tree.back[inner]]).tolist()) == list(range(1, tree.n_nodes))
        assert np.allclose(np.linalg.norm(tree.plane[inner, :3], axis=1), 1.0)


def _same_as_brute(det, brute, a, b, Ta, Tb):
    ma, mb = np.array([a]), np.array([b])
    want = brute.collide(ma, mb, Ta[None], Tb[None]).pairs_of(0)
    got = det.collide(ma, mb, Ta[None], Tb[None])
    pairs = got.pairs_of(0)
    assert len(np.unique(pairs, axis=0)) == len(pairs), "each intersecting pair reported once"
    assert np.array_equal(pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))], want)
    first = det.collide(ma, mb, Ta[None], Tb[None], all_contacts=False)
    assert first.colliding[0] == (len(want) > 0)
    assert len(first.pairs_of(0)) == min(1, len(want))
    assert {tuple(p) for p in first.pairs_of(0).tolist()} <= {tuple(p) for p in want.tolist()}
    return len(want)


# the freighter against itself costs brute force ~5 s a pose: one pose below, not here
PAIRS = [(a, b) for a in range(3) for b in range(3) if (a, b) != (2, 2)]


@settings(max_examples=10, deadline=None)
@given(pair=st.sampled_from(PAIRS), seed=st.integers(0, 2**32 - 1), depth=st.floats(0.2, 1.0))
def test_bsp_equals_brute_force_on_random_poses(assets, pair, seed, depth):
    meshes, det, brute = assets
    a, b = pair
    rng = np.random.default_rng(seed)
    reach = depth * (meshes[a].bounding_radius + meshes[b].bounding_radius)
    _same_as_brute(det, brute, a, b, random_pose(rng, 0.0), random_pose(rng, reach))


def test_bsp_equals_brute_force_on_scraping_freighters(assets):
    _, det, brute = assets
    rng = np.random.default_rng(5)
    Tb = random_pose(rng, 0.0)
    Tb[:3, 3] = [6.0, 9.0, 3.0]  # hull along hull: a long intersection curve
    assert _same_as_brute(det, brute, 2, 2, np.eye(4), Tb) > 20


def _cube(size):
    import trimesh

    m = trimesh.creation.box(extents=(size, size, size))
    return validate_mesh_arrays(np.asarray(m.vertices) + size / 2, m.faces, f"cube{size}")


@pytest.mark.parametrize("shift, touching", [((2.0, 0.0, 0.0), True), ((2.0, 2.0, 2.0), True),
                                              ((2.0, 1.0, -1.0), True), ((2.0 + 2 ** -20, 0.0, 0.0), False),
                                              ((1.0, 1.0, 1.0), True)])
def test_exactly_touching_faces_edges_and_corners(shift, touching):
    """Integer coordinates: the plane classification and the triangle test are exact, so a cube
    resting on another's face, edge or corner touches (closed triangles) and one a hair away does not."""
    meshes = [_cube(2.0), _cube(4.0)]
    det, brute = EXACT_METHODS["bsp"](meshes), BruteForceExact(meshes)
    Tb = np.eye(4)
    Tb[:3, 3] = shift
    for a, b, Ta, TTb in ((0, 1, np.eye(4), Tb), (1, 0, Tb, np.eye(4))):
        assert (_same_as_brute(det, brute, a, b, Ta, TTb) > 0) == touching


def test_batched_pairs_answer_like_single_pairs(assets):
    meshes, det, _ = assets
    rng = np.random.default_rng(11)
    ma, mb = rng.integers(0, 3, 12), rng.integers(0, 3, 12)
    Ta = np.stack([random_pose(rng, 0.0) for _ in ma])
    Tb = np.stack([random_pose(rng, 0.6 * (meshes[a].bounding_radius + meshes[b].bounding_radius))
                   for a, b in zip(ma, mb)])
    batch = det.collide(ma, mb, Ta, Tb)
    for i in range(len(ma)):
        one = det.collide(ma[i:i + 1], mb[i:i + 1], Ta[i:i + 1], Tb[i:i + 1])
        assert np.array_equal(batch.pairs_of(i), one.pairs_of(0))
    assert 0 < batch.colliding.sum() < len(ma)
    assert np.isnan(batch.distance).all()


def test_build_is_deterministic_and_checks_its_input():
    tri = load_model("lamp").triangles
    t1, t2 = build_bsp(tri), build_bsp(tri)
    assert np.array_equal(t1.plane, t2.plane) and np.array_equal(t1.tri_idx, t2.tri_idx)
    with pytest.raises(ValueError, match="triangles"):
        build_bsp(np.zeros((0, 3, 3)))
