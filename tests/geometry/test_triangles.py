"""Triangle kernels (geometry.triangles) against their numpy oracles (geometry.reference) and trimesh,
on random and degenerate inputs.

Small-integer coordinates make orientation determinants exact in float64, so touching cases
(shared vertices, edges on faces, coplanar overlaps) are decided exactly by both sides and must
agree exactly.
"""
import numpy as np
from hypothesis import given, settings, strategies as st

from spaceship_sim.geometry import reference as ref
from spaceship_sim.geometry.triangles import (closest_point_triangle, closest_points_triangles,
                                             distance_triangle_triangle, intersect_triangle_triangle,
                                             triangle_box_overlap, triangle_plane_gap)

SEEDS = st.integers(0, 2**32 - 1)
SETTINGS = settings(max_examples=30, deadline=None)


def non_degenerate(T):
    return np.linalg.norm(np.cross(T[:, 1] - T[:, 0], T[:, 2] - T[:, 0]), axis=1) > 0


def kernel_intersect(T1, T2):
    return np.array([intersect_triangle_triangle(np.ascontiguousarray(a), np.ascontiguousarray(b))
                     for a, b in zip(T1, T2)], bool)


def integer_pairs(rng, n, span):
    T1 = rng.integers(-span, span + 1, size=(n, 3, 3)).astype(float)
    T2 = rng.integers(-span, span + 1, size=(n, 3, 3)).astype(float)
    keep = non_degenerate(T1) & non_degenerate(T2)
    return T1[keep], T2[keep]


@SETTINGS
@given(SEEDS, st.sampled_from([1, 2, 4]))
def test_intersection_matches_segment_reference_on_integer_grid(seed, span):
    T1, T2 = integer_pairs(np.random.default_rng(seed), 300, span)
    got, want = kernel_intersect(T1, T2), ref.intersect_tri_tri(T1, T2)
    assert np.array_equal(got, want), np.flatnonzero(got != want)[:5]


@SETTINGS
@given(SEEDS)
def test_intersection_coplanar_triangles(seed):
    """Both triangles on one plane z = a x + b y + c (exact with integers), so every pair takes
    the coplanar path: overlap, containment, shared edges and disjoint cases."""
    rng = np.random.default_rng(seed)
    a, b, c = rng.integers(-2, 3, size=3)
    xy = rng.integers(-3, 4, size=(2, 80, 3, 2)).astype(float)
    z = a * xy[..., 0] + b * xy[..., 1] + c
    T1, T2 = (np.concatenate([xy[k], z[k][..., None]], axis=2) for k in range(2))
    keep = non_degenerate(T1) & non_degenerate(T2)
    T1, T2 = T1[keep], T2[keep]
    assert np.array_equal(kernel_intersect(T1, T2), ref.intersect_tri_tri(T1, T2))


@SETTINGS
@given(SEEDS)
def test_intersection_symmetric_and_vertex_order_free(seed):
    rng = np.random.default_rng(seed)
    T1, T2 = integer_pairs(rng, 200, 2)
    base = kernel_intersect(T1, T2)
    assert np.array_equal(base, kernel_intersect(T2, T1))
    perm = rng.permutation(3)
    assert np.array_equal(base, kernel_intersect(T1[:, perm], T2[:, ::-1]))


@SETTINGS
@given(SEEDS)
def test_intersection_random_float_poses(seed):
    rng = np.random.default_rng(seed)
    T1 = rng.normal(size=(300, 3, 3))
    T2 = rng.normal(size=(300, 3, 3)) * rng.uniform(0.1, 2) + rng.normal(size=(300, 1, 3)) * 0.5
    assert np.array_equal(kernel_intersect(T1, T2), ref.intersect_tri_tri(T1, T2))


@SETTINGS
@given(SEEDS)
def test_closest_point_matches_projection_reference(seed):
    rng = np.random.default_rng(seed)
    T = rng.normal(size=(100, 3, 3))
    P = rng.normal(size=(100, 3)) * 2
    got = closest_points_triangles(P, T)
    assert np.allclose(got, ref.closest_point_triangle(P, T), atol=1e-9)
    assert np.array_equal(got[0], closest_point_triangle(*P[0], T[0])[:3])


def random_pair(rng):
    """Two random triangles, the second shifted by up to ~3 of their size: apart, touching or crossing."""
    return rng.normal(size=(3, 3)), rng.normal(size=(3, 3)) + rng.normal(size=3) * rng.uniform(0, 3)


@SETTINGS
@given(SEEDS)
def test_distance_is_attained_and_no_larger_than_dense_sampling(seed):
    """The kernel's closest points lie on the triangles (so its distance is >= the true one) and
    the distance is <= the smallest distance between dense samples (so it is <= the true one
    up to the sampling error, which is second order here: samples are matched exactly)."""
    rng = np.random.default_rng(seed)
    out = np.empty((2, 3))
    for _ in range(5):
        T1, T2 = random_pair(rng)
        d = distance_triangle_triangle(T1, T2, out)
        hit = ref.intersect_tri_tri(T1[None], T2[None])[0]
        assert (d == 0.0) == hit
        if hit:
            continue
        assert np.isclose(np.linalg.norm(out[0] - out[1]), d)
        for p, T in ((out[0], T1), (out[1], T2)):
            assert np.linalg.norm(ref.closest_point_triangle(p[None], T[None])[0] - p) < 1e-9
        assert d <= ref.sampled_distance(T1, T2, 30) + 1e-12


def triangle_distance_ref(T1, T2):
    """Distance of disjoint triangles: the least over the 9 edge pairs and the 6 vertex–triangle pairs."""
    i, j = np.repeat(np.arange(3), 3), np.tile(np.arange(3), 3)  # the 9 edge pairs
    d = list(ref.segment_distance_ref(T1[i], T1[(i + 1) % 3], T2[j], T2[(j + 1) % 3]))
    for X, Y in ((T1, T2), (T2, T1)):
        d += list(np.linalg.norm(ref.closest_point_triangle(X, np.repeat(Y[None], 3, 0)) - X, axis=1))
    return min(d)


@SETTINGS
@given(SEEDS, st.sampled_from(["random", "parallel", "edges"]))
def test_distance_equals_the_least_of_its_15_features(seed, how):
    """Against a numpy oracle over all 15 features: the distance stops at an edge pair whose slab
    holds both triangles (PQP's test) or takes a vertex over a face; a wrong stop gives a larger
    distance. Parallel planes (a face case or ties) and nearly touching edges (an edge case) too."""
    rng = np.random.default_rng(seed)
    out = np.empty((2, 3))
    for _ in range(20):
        T1, T2 = random_pair(rng)
        if how == "parallel":  # T2 in a plane parallel to T1's, shifted by up to its size
            n = np.cross(T1[1] - T1[0], T1[2] - T1[0])
            n /= np.linalg.norm(n)
            T2 = T2 - np.outer((T2 - T1[0]) @ n, n) + n * rng.uniform(0.001, 1)
        elif how == "edges":  # T2 moved so that an edge of each nearly meets the other's
            a, b = T1[0] + rng.uniform() * (T1[1] - T1[0]), T2[0] + rng.uniform() * (T2[1] - T2[0])
            T2 = T2 + (a - b) + rng.normal(size=3) * 1e-3
        if ref.intersect_tri_tri(T1[None], T2[None])[0]:
            continue
        d = distance_triangle_triangle(T1, T2, out)
        assert np.isclose(d, triangle_distance_ref(T1, T2), rtol=1e-9, atol=1e-14)
        assert np.isclose(np.linalg.norm(out[0] - out[1]), d, rtol=1e-12, atol=1e-15)


@SETTINGS
@given(SEEDS)
def test_distance_symmetric_and_translation_invariant(seed):
    rng = np.random.default_rng(seed)
    out = np.empty((2, 3))
    T1 = rng.normal(size=(3, 3))
    T2 = rng.normal(size=(3, 3)) + rng.normal(size=3) * 2
    shift = rng.normal(size=3) * 10
    d = distance_triangle_triangle(T1, T2, out)
    assert np.isclose(d, distance_triangle_triangle(T2, T1, out), atol=1e-12)
    assert np.isclose(d, distance_triangle_triangle(T1 + shift, T2 + shift, out), atol=1e-9)


@SETTINGS
@given(SEEDS)
def test_plane_gap_is_a_lower_bound_attained_by_vertex_face_pairs(seed):
    """triangle_plane_gap <= the distance (0 for intersecting triangles), and equal to it where one
    triangle lies in a plane parallel to the other's, over its interior (a vertex–face closest pair)."""
    rng = np.random.default_rng(seed)
    out = np.empty((2, 3))
    for _ in range(20):
        T1, T2 = random_pair(rng)
        d = distance_triangle_triangle(T1, T2, out)
        g = triangle_plane_gap(T1, T2)
        assert 0.0 <= g <= d * (1 + 1e-12) + 1e-15
        if d == 0.0:
            assert g == 0.0
    flat = np.array([[-5.0, -5.0, 0.0], [5.0, -5.0, 0.0], [0.0, 5.0, 0.0]])
    small = rng.uniform(-1, 1, size=(3, 3)) * [1, 1, 0] + [0, 0, rng.uniform(0.1, 2)]
    assert np.isclose(triangle_plane_gap(flat, small), distance_triangle_triangle(flat, small, out), rtol=1e-12)


@settings(max_examples=30, deadline=None)
@given(seed=SEEDS)
def test_closest_points_match_trimesh(seed):
    import trimesh
    rng = np.random.default_rng(seed)
    tris = rng.normal(size=(50, 3, 3))
    p = rng.normal(size=(50, 3)) * 2
    ours = closest_points_triangles(p, tris)
    ref = trimesh.triangles.closest_point(tris, p)
    np.testing.assert_allclose(np.linalg.norm(ours - p, axis=1), np.linalg.norm(ref - p, axis=1), atol=1e-9)


@settings(max_examples=20, deadline=None)
@given(seed=SEEDS, grid=st.booleans())
def test_triangle_box_overlap_kernel_equals_numpy_oracle_bit_for_bit(seed, grid):
    """On random and on grid-aligned input (vertices on box faces, edges along them: the touching cases)."""
    rng = np.random.default_rng(seed)
    n = 2000
    if grid:
        tris, centers, half = rng.integers(-3, 4, (n, 3, 3)) / 2, rng.integers(-2, 3, (n, 3)) / 2, np.full(n, 0.5)
    else:
        tris, centers, half = rng.uniform(-1, 1, (n, 3, 3)), rng.uniform(-1, 1, (n, 3)), rng.uniform(0.05, 0.5, n)
    assert np.array_equal(triangle_box_overlap(tris, centers, half), ref.triangle_box_overlap_ref(tris, centers, half))


@settings(max_examples=30, deadline=None)
@given(seed=SEEDS)
def test_triangle_box_overlap_against_sampling(seed):
    rng = np.random.default_rng(seed)
    n = 400
    tris = rng.uniform(-1, 1, (n, 3, 3))
    centers = rng.uniform(-1, 1, (n, 3))
    half = rng.uniform(0.05, 0.5, n)
    got = triangle_box_overlap(tris, centers, half)
    # dense barycentric samples: a sample inside the box proves overlap
    w = rng.dirichlet(np.ones(3), 400)
    pts = np.einsum("sk,nkd->nsd", w, tris)
    hit = (np.abs(pts - centers[:, None]) <= half[:, None, None]).all(axis=2).any(axis=1)
    assert np.all(got[hit])
    # and overlap claimed but no sample hit must be rare (thin slivers of overlap only)
    assert np.count_nonzero(got & ~hit) <= 0.1 * n


FIRST_COMPILED_WITHOUT_NRT = """
import numpy as np
from numba import njit
from spaceship_sim.geometry.triangles import distance_triangle_triangle, intersect_triangle_triangle

@njit(_nrt=False)
def first(a, b, out):
    return intersect_triangle_triangle(a, b), distance_triangle_triangle(a, b, out)

a = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]])
print(first(a, a + 0.1 * np.array([1.0, 1, 0]), np.empty((2, 3))))
"""


def test_triangle_kernels_compile_first_inside_a_kernel_without_reference_counting(tmp_path):
    """Kernels compiled with _nrt=False (narrowphase, intervals) call the triangle tests; on an empty
    cache those are compiled first under the caller's flags, so they must allocate nothing (the
    coplanar test once did, and a cold `bench intervals` failed to compile)."""
    import os
    import subprocess
    import sys
    from spaceship_sim.kernel_cache import CACHE_ENV
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"), **{CACHE_ENV: str(tmp_path / "sim")})
    done = subprocess.run([sys.executable, "-c", FIRST_COMPILED_WITHOUT_NRT], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["(True,", "0.0)"]
