"""Sphere trees end to end: structure, coverage, error bounds, witnesses, cache, determinism, errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spaceship_sim.errors import InputError
from spaceship_sim.spheretree import SphereTree, SphereTreeError, build_tree, load_or_build, tree_key
from spaceship_sim.geometry.reference import triangle_distances
from spaceship_sim.spheretree.medial import MedialFallbackWarning

KEYS = [("notched", "medial"), ("notched", "octree"), ("torus", "medial"), ("torus", "octree"),
        ("open", "medial"), ("open", "octree")]
seeds = st.integers(0, 2**32 - 1)


def _tm(tree):
    import trimesh
    return trimesh.Trimesh(tree.vertices, tree.faces, process=False)


def _surface_points(tree, n, rng):
    t = tree.vertices[tree.faces]
    area = np.linalg.norm(np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0]), axis=1)
    idx = rng.choice(len(t), n, p=area / area.sum())
    w = rng.dirichlet(np.ones(3), n)
    pts = np.einsum("nk,nkd->nd", w, t[idx])
    # also the corners and edge midpoints: the hardest points to cover
    return np.concatenate([pts, tree.vertices[np.unique(tree.faces)], (t[:, 0] + t[:, 1]) / 2])


@pytest.mark.parametrize("key", KEYS)
def test_structure(trees, key):
    tree = trees[key]
    m = tree.n_nodes
    assert tree.depth == 2 and tree.level_start[0] == 0 and tree.level_start[-1] == m
    assert tree.parent[0] == -1 and np.all(tree.node_level[tree.level_slice(0)] == 0)
    for k in range(1, tree.depth + 1):
        s = tree.level_slice(k)
        assert np.all(tree.node_level[s] == k)
        assert np.all(tree.node_level[tree.parent[s]] == k - 1)
        assert np.all(np.diff(tree.parent[s]) >= 0)  # children grouped by parent
    for i in range(m):
        if tree.child_count[i]:
            kids = np.arange(tree.first_child[i], tree.first_child[i] + tree.child_count[i])
            assert np.all(tree.parent[kids] == i)
        else:
            assert tree.first_child[i] == -1
    assert tree.child_count[tree.level_slice(1)].sum() == len(tree.level(2)[1])
    assert np.all(tree.radius > 0) and np.all(tree.error >= 0)
    assert tree.method == key[1] and tree.closed == (key[0] != "open")
    # a level's arrays
    c, r, e = tree.level(1)
    assert c.shape == (len(r), 3) and e.shape == r.shape


@pytest.mark.parametrize("key", KEYS)
def test_leaf_triangles_are_every_touching_triangle(trees, key):
    tree = trees[key]
    d = triangle_distances(tree.center, tree.vertices[tree.faces])
    for i in range(tree.n_nodes):
        got = tree.leaf_triangles(i)
        if tree.child_count[i]:
            assert len(got) == 0
        else:
            want = np.flatnonzero(d[i] <= tree.radius[i] * (1 - 1e-9))
            assert set(want) <= set(got.tolist())
            assert np.all(d[i, got] <= tree.radius[i] * (1 + 1e-6))


@settings(max_examples=20, deadline=None)
@given(seed=seeds, key=st.sampled_from(KEYS))
def test_surface_points_covered_at_every_level(trees, seed, key):
    tree = trees[key]
    p = _surface_points(tree, 400, np.random.default_rng(seed))
    for k in range(tree.depth + 1):
        c, r, _ = tree.level(k)
        d = np.linalg.norm(p[:, None] - c[None], axis=2)
        assert np.all((d <= r * (1 + 1e-9)).any(axis=1)), f"level {k} misses a surface point"


def _chained(tree, p) -> np.ndarray:
    """(len(p),) bool: the point lies in a chain of spheres from the root to a leaf, each the
    child of the one before (what the refinement's descent follows)."""
    inside = np.linalg.norm(p[:, None] - tree.center[None], axis=2) <= tree.radius * (1 + 1e-9)
    chain = np.zeros_like(inside)
    chain[:, 0] = inside[:, 0]
    for n in np.flatnonzero(tree.child_count > 0):  # parents come before their children
        kids = slice(tree.first_child[n], tree.first_child[n] + tree.child_count[n])
        chain[:, kids] |= chain[:, [n]] & inside[:, kids]
    return (chain & (tree.child_count == 0)[None]).any(axis=1)


@settings(max_examples=20, deadline=None)
@given(seed=seeds, key=st.sampled_from(KEYS))
def test_surface_points_lie_in_root_to_leaf_chains(trees, seed, key):
    """A level's union covering a point is not enough for the descent: the spheres holding it
    must be children of spheres holding it, from the root down."""
    tree = trees[key]
    p = _surface_points(tree, 400, np.random.default_rng(seed))
    assert _chained(tree, p).all()


def test_enforce_chains_repairs_a_chain_broken_between_levels():
    """One triangle; the root's children hold its left and right halves, but each grandchild
    sits under the other half's parent: level 2 covers everything, no point has a chain."""
    from spaceship_sim.spheretree.finish import enforce_chains
    tri = np.array([[[0.0, 0, 0], [2, 0, 0], [1, 0.2, 0]]])
    centers = np.array([[1.0, 0, 0], [0.5, 0, 0], [1.5, 0, 0], [1.5, 0, 0], [0.5, 0, 0]])
    radii = np.array([1.2, 0.62, 0.62, 0.62, 0.62])
    first_child, child_count = np.array([1, 3, 4, -1, -1]), np.array([2, 1, 1, 0, 0])
    tree = SphereTree(center=centers, radius=radii, error=np.zeros(5), witness=centers, level=np.array([0, 1, 1, 2, 2]),
                      parent=np.array([-1, 0, 0, 1, 2]), first_child=first_child, child_count=child_count,
                      leaf_tri_ptr=np.zeros(6, np.int64), leaf_tri_idx=np.zeros(0, np.int32),
                      level_start=np.array([0, 1, 3, 5]), vertices=tri[0], faces=np.array([[0, 1, 2]]),
                      closed=False, method="medial", key="")
    p = _surface_points(tree, 300, np.random.default_rng(1))
    assert (~_chained(tree, p)).sum() > 100  # the halves away from the middle have none
    grown, n = enforce_chains(tri, centers, radii, first_child, child_count, 2, 1e-3)
    assert n > 0 and np.all(grown >= radii)
    import dataclasses
    assert _chained(dataclasses.replace(tree, radius=grown), p).all()


@settings(max_examples=12, deadline=None)
@given(seed=seeds, key=st.sampled_from(KEYS))
def test_error_bounds_distance_from_sphere_points(trees, seed, key):
    """Densely sampled points of random spheres are never farther from the ship than the error."""
    import trimesh
    tree = trees[key]
    tm = _tm(tree)
    rng = np.random.default_rng(seed)
    nodes = rng.choice(tree.n_nodes, 3, replace=False)
    for i in nodes:
        c, r = tree.center[i], tree.radius[i]
        d = rng.normal(size=(1000, 3))
        d /= np.linalg.norm(d, axis=1, keepdims=True)
        p = np.concatenate([c + d * r, c + d * (r * rng.random(1000) ** (1 / 3))[:, None]])
        _, dist, _ = trimesh.proximity.closest_point(tm, p)
        if tree.closed:
            dist[tm.contains(p)] = 0.0
        assert dist.max() <= tree.error[i] + 1e-9


@pytest.mark.parametrize("key", KEYS)
def test_witnesses_on_surface_inside_sphere(trees, key):
    tree = trees[key]
    d = triangle_distances(tree.witness, tree.vertices[tree.faces]).min(axis=1)
    assert np.all(d <= 1e-9)
    assert np.all(np.linalg.norm(tree.witness - tree.center, axis=1) <= tree.radius * (1 + 1e-9))


def test_medial_tighter_than_octree_on_concave_shape(trees):
    """The medial builder's point: at levels 1-2 its mean error beats the octree's (notched box)."""
    for k in (1, 2):
        assert trees["notched", "medial"].level(k)[2].mean() < trees["notched", "octree"].level(k)[2].mean()


@pytest.mark.parametrize("key", [("notched", "medial"), ("open", "octree")])
def test_save_load_round_trip_exact(trees, key, tmp_path):
    tree = trees[key]
    tree.save(tmp_path / "t.npz")
    back = SphereTree.load(tmp_path / "t.npz")
    for a in SphereTree._ARRAYS:
        x, y = getattr(tree, a), getattr(back, a)
        assert x.dtype == y.dtype and np.array_equal(x, y), a
    assert (back.closed, back.method, back.key) == (tree.closed, tree.method, tree.key)


def test_same_seed_same_tree_other_seed_other_tree(shapes, trees):
    v, f, _ = shapes["notched"]
    again = build_tree(v, f, method="medial", depth=2, seed=0)
    ref = trees["notched", "medial"]
    for a in SphereTree._ARRAYS:
        assert np.array_equal(getattr(again, a), getattr(ref, a)), a
    other = build_tree(v, f, method="medial", depth=2, seed=1)
    assert other.key != ref.key
    assert not np.array_equal(other.center, ref.center) if len(other.center) == len(ref.center) else True


def test_key_changes_with_mesh_and_parameters(shapes):
    v, f, _ = shapes["notched"]
    k = tree_key(v, f, "medial", 8, 3, 0)
    assert k == tree_key(v.copy(), f.copy(), "medial", 8, 3, 0)
    v2 = v.copy()
    v2[0, 0] += 1e-9
    others = [tree_key(v2, f, "medial", 8, 3, 0), tree_key(v, f[::-1], "medial", 8, 3, 0),
              tree_key(v, f, "octree", 8, 3, 0), tree_key(v, f, "medial", 4, 3, 0),
              tree_key(v, f, "medial", 8, 2, 0), tree_key(v, f, "medial", 8, 3, 1)]
    assert len(set(others + [k])) == len(others) + 1


def test_load_or_build_caches_and_rebuilds(shapes, tmp_path):
    from spaceship_sim.meshes import validate_mesh_arrays
    v, f, _ = shapes["notched"]
    mesh = validate_mesh_arrays(v, f, "notched.ply")
    t1 = load_or_build(mesh, method="octree", depth=2, cache_dir=tmp_path)
    files = list(tmp_path.glob("*.npz"))
    assert [p.name for p in files] == [f"notched-octree-{t1.key[:12]}.npz"]
    t2 = load_or_build(mesh, method="octree", depth=2, cache_dir=tmp_path)
    assert np.array_equal(t1.center, t2.center) and t2.key == t1.key
    # a changed mesh gets a new key and file, never the old tree
    moved = validate_mesh_arrays(v + 0.25, f, "notched.ply")
    t3 = load_or_build(moved, method="octree", depth=2, cache_dir=tmp_path)
    assert t3.key != t1.key and len(list(tmp_path.glob("*.npz"))) == 2
    assert np.allclose(t3.vertices, v + 0.25)
    # a corrupt cache file is rebuilt with a warning
    files[0].write_bytes(b"not a zip")
    with pytest.warns(UserWarning, match="unreadable"):
        t4 = load_or_build(mesh, method="octree", depth=2, cache_dir=tmp_path)
    assert np.array_equal(t4.center, t1.center)


def test_open_mesh_warns_and_builds(shapes):
    from spaceship_sim.meshes import OpenMeshWarning
    v, f, _ = shapes["open"]
    with pytest.warns(OpenMeshWarning), pytest.warns(MedialFallbackWarning):
        tree = build_tree(v, f, method="medial", depth=1)
    assert not tree.closed


@pytest.mark.parametrize("kwargs, field", [
    (dict(method="bsp"), "method"), (dict(depth=0), "depth"), (dict(depth=2.0), "depth"),
    (dict(branching=1), "branching"), (dict(seed=-1), "seed"), (dict(branching=True), "branching"),
])
def test_bad_parameters(shapes, kwargs, field):
    v, f, _ = shapes["notched"]
    with pytest.raises(SphereTreeError) as e:
        build_tree(v, f, **kwargs)
    assert isinstance(e.value, InputError) and e.value.key == field


@pytest.mark.parametrize("mutate, field", [
    (lambda v, f: (np.where(np.arange(len(v))[:, None] == 0, np.nan, v), f), "vertices[0]"),
    (lambda v, f: (v, np.where(np.arange(len(f))[:, None] == 1, len(v), f)), "faces[1]"),
    (lambda v, f: (v[:, :2], f), "vertices"),
    (lambda v, f: (v, f[:0]), "faces"),
])
def test_bad_meshes(shapes, mutate, field):
    v, f, _ = shapes["notched"]
    v2, f2 = mutate(v, f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(SphereTreeError) as e:
            build_tree(v2, f2, method="octree")
    assert e.value.key == field and "build_tree" in str(e.value)


@settings(max_examples=6, deadline=None)
@given(seed=seeds, method=st.sampled_from(["medial", "octree"]))
def test_random_pose_of_concave_shape(shapes, seed, method):
    """Any rigid placement of the notched box: coverage and error bounds still hold."""
    import trimesh
    from scipy.spatial.transform import Rotation
    rng = np.random.default_rng(seed)
    v, f, _ = shapes["notched"]
    v = Rotation.random(random_state=seed).apply(v) + rng.uniform(-50, 50, 3)
    tree = build_tree(v, f, method=method, depth=2, seed=seed % 1000)
    p = _surface_points(tree, 300, rng)
    for k in range(tree.depth + 1):
        c, r, _ = tree.level(k)
        assert np.all((np.linalg.norm(p[:, None] - c[None], axis=2) <= r * (1 + 1e-9)).any(axis=1))
    tm = trimesh.Trimesh(v, f, process=False)
    for i in rng.choice(tree.n_nodes, 3, replace=False):
        d = rng.normal(size=(1000, 3))
        d /= np.linalg.norm(d, axis=1, keepdims=True)
        q = tree.center[i] + d * tree.radius[i]
        _, dist, _ = trimesh.proximity.closest_point(tm, q)
        dist[tm.contains(q)] = 0.0
        assert dist.max() <= tree.error[i] + 1e-9


@pytest.mark.parametrize("method", ["medial", "octree"])
def test_asset_trees_are_cached_and_sound(method):
    """The committed default trees match the assets (no rebuild in CI) and hold their promises."""
    import trimesh
    from spaceship_sim.meshes import available_models, load_model
    from spaceship_sim.spheretree import tree_path
    rng = np.random.default_rng(7)
    names = available_models()
    assert names
    for name in names:
        mesh = load_model(name)
        key = tree_key(mesh.vertices, mesh.faces, method, 8, 3, 0)
        path = tree_path(mesh, method, key)
        assert path.is_file(), f"{path.name} missing: run `spaceship-sim build-trees` and commit assets/trees/"
        tree = load_or_build(mesh, method=method)
        assert tree.key == key and tree.depth == 3
        p = _surface_points(tree, 300, rng)
        for k in range(tree.depth + 1):
            c, r, _ = tree.level(k)
            assert np.all((np.linalg.norm(p[:, None] - c[None], axis=2) <= r * (1 + 1e-9)).any(axis=1))
        # chains fail in small patches (before enforce_chains: 1-19 of ~20,000 points per asset)
        assert _chained(tree, _surface_points(tree, 20_000, rng)).all()
        tm = trimesh.Trimesh(mesh.vertices, mesh.faces, process=False)
        for i in rng.choice(tree.n_nodes, 3, replace=False):
            d = rng.normal(size=(800, 3))
            d /= np.linalg.norm(d, axis=1, keepdims=True)
            q = tree.center[i] + d * (tree.radius[i] * rng.random(800) ** (1 / 3))[:, None]
            _, dist, _ = trimesh.proximity.closest_point(tm, q)
            dist[tm.contains(q)] = 0.0
            assert dist.max() <= tree.error[i] + 1e-9


def test_flat_open_mesh_falls_back_to_octree():
    """A flat square has no medial axis (Qhull refuses flat input): warn and build the octree."""
    v = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], float)
    f = np.array([[0, 1, 2], [0, 2, 3]])
    with pytest.warns(UserWarning) as record:
        tree = build_tree(v, f, method="medial", depth=2)
    assert any(isinstance(w.message, MedialFallbackWarning) and "octree" in str(w.message) for w in record)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        octree = build_tree(v, f, method="octree", depth=2)
    assert np.array_equal(tree.center, octree.center) and not tree.closed
    p = np.random.default_rng(0).random((200, 3)) * [1, 1, 0]
    for k in range(3):
        c, r, _ = tree.level(k)
        assert np.all((np.linalg.norm(p[:, None] - c[None], axis=2) <= r).any(axis=1))


def test_load_or_build_unwritable_cache_warns(shapes, tmp_path):
    from spaceship_sim.meshes import validate_mesh_arrays
    v, f, _ = shapes["notched"]
    mesh = validate_mesh_arrays(v, f, "notched.ply")
    blocker = tmp_path / "file"
    blocker.write_text("x")  # a file where the cache folder should be: cannot create it
    with pytest.warns(UserWarning, match="cannot cache"):
        tree = load_or_build(mesh, method="octree", depth=1, cache_dir=blocker / "trees")
    assert tree.depth == 1
