"""SSV core distances (numba) against a brute-force oracle; SSV trees cover their triangles."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from spaceship_sim.ssv.core import LSS, PSS, RSS, box_gap, core_frame, normal_gaps, rect_distance, ssv_box_gap
from spaceship_sim.ssv.build import FIT, _fit, _hull, _work
from spaceship_sim.ssv.reference import _turned_axes, build_ssv_reference, fit_ssv
from spaceship_sim.ssv.tree import RECT_TURNS, TURNS, build_ssv

SETTINGS = settings(max_examples=40, deadline=None)


def core_distance_ref(c1, u1, v1, e1, c2, u2, v2, e2):
    """Distance between two cores {c + s u + t v : |s| <= e[0], |t| <= e[1]}: the convex quadratic
    in (s1, t1, s2, t2) minimised on every face of the parameter box (each variable at its lower
    bound, upper bound or free; free ones by least squares), the best feasible value kept."""
    M = np.stack([u1, v1, -u2, -v2], 1)
    half = np.array([e1[0], e1[1], e2[0], e2[1]])
    best = np.inf
    for fix in itertools.product((-1, 1, 0), repeat=4):
        x = np.array(fix, float) * half
        free = [i for i in range(4) if fix[i] == 0 and half[i] > 0]
        rhs = c2 - c1 - M @ x
        if free:
            x[free] = np.linalg.lstsq(M[:, free], rhs, rcond=None)[0]
        if np.all(np.abs(x) <= half * (1 + 1e-12) + 1e-15):
            best = min(best, np.linalg.norm(c1 + M @ x - c2))
    return best


def _frame(rng):
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    return q[:, 0], q[:, 1]


def _core(rng, kind):
    u, v = _frame(rng)
    a = rng.uniform(0.1, 1.5) if kind != PSS else 0.0
    b = rng.uniform(0.05, a) if kind == RSS else 0.0
    return rng.normal(size=3) * rng.choice([0.3, 1.0, 3.0]), u, v, np.array([a, b])


def _rect_distance(c1, u1, v1, e1, c2, u2, v2, e2):
    return rect_distance(tuple(c1), tuple(u1), tuple(v1), e1[0], e1[1], tuple(c2), tuple(u2), tuple(v2), e2[0], e2[1])


KINDS = st.sampled_from([PSS, LSS, RSS])


@SETTINGS
@given(st.integers(0, 2**32 - 1), KINDS, KINDS, st.sampled_from(["free", "parallel", "coplanar", "edge-parallel"]))
def test_rect_distance_matches_oracle(seed, k1, k2, how):
    """Random placements, and the ones that sit on the edge-pair screening's boundaries: parallel
    planes, one plane (overlapping or not), parallel edges in crossing planes."""
    rng = np.random.default_rng(seed)
    (c1, u1, v1, e1), (c2, u2, v2, e2) = _core(rng, k1), _core(rng, k2)
    n1 = np.cross(u1, v1)
    if how == "parallel":
        u2, v2 = u1, v1
        c2 = c1 + rng.uniform(-0.5, 0.5) * n1 + rng.uniform(-1, 1) * u1
    elif how == "coplanar":
        angle = rng.choice([0.0, np.pi / 2, rng.uniform(0, np.pi)])
        u2, v2 = np.cos(angle) * u1 + np.sin(angle) * v1, -np.sin(angle) * u1 + np.cos(angle) * v1
        c2 = c1 + rng.uniform(-2, 2) * u1 + rng.uniform(-2, 2) * v1
    elif how == "edge-parallel":
        angle = rng.uniform(0, np.pi)
        u2, v2 = u1, np.cos(angle) * v1 + np.sin(angle) * n1
    want = core_distance_ref(c1, u1, v1, e1, c2, u2, v2, e2)
    for got in (_rect_distance(c1, u1, v1, e1, c2, u2, v2, e2), _rect_distance(c2, u2, v2, e2, c1, u1, v1, e1)):
        assert abs(got - want) <= 1e-9 * max(1.0, want)
    first, second = (c1, u1, v1, e1), (c2, u2, v2, e2)
    for (ca, ua, va, ea), (cb, ub, vb, eb) in ((first, second), (second, first)):  # the normals' gaps stay below
        frame = core_frame(tuple(ca), tuple(ua), tuple(va), tuple(cb), tuple(ub), tuple(vb))
        assert normal_gaps(*frame[:3], ea[0], ea[1], eb[0], eb[1]) <= want + 1e-12


def _support(c, u, v, e, n):
    """A point of the core {c + s u + t v} farthest along n (a corner, or any point of an edge or
    face orthogonal to n)."""
    return c + e[0] * np.sign(u @ n) * u + e[1] * np.sign(v @ n) * v


@SETTINGS
@given(st.integers(0, 2**32 - 1), KINDS, KINDS, st.sampled_from(["random", "normal", "edge"]),
       st.sampled_from([0.0, 1e-9, 1e-4, 0.3]))
def test_rect_distance_of_touching_and_near_touching_cores(seed, k1, k2, along, gap):
    """Core 2 placed beyond core 1 along n with a gap `gap` between their extreme points: the
    distance is exactly the gap (those points are closest: the plane between them separates).
    n random (corners meet), along core 1's normal (a face) or orthogonal to its u (an edge)."""
    rng = np.random.default_rng(seed)
    (c1, u1, v1, e1), (_, u2, v2, e2) = _core(rng, k1), _core(rng, k2)
    n = rng.normal(size=3)
    if along == "normal":
        n = np.cross(u1, v1)
    elif along == "edge":
        n -= (n @ u1) * u1
    n /= np.linalg.norm(n)
    c2 = _support(c1, u1, v1, e1, n) + gap * n - _support(np.zeros(3), u2, v2, e2, -n)
    for got in (_rect_distance(c1, u1, v1, e1, c2, u2, v2, e2), _rect_distance(c2, u2, v2, e2, c1, u1, v1, e1)):
        assert abs(got - gap) <= 1e-9


@SETTINGS
@given(st.integers(0, 2**32 - 1), KINDS, KINDS)
def test_rect_distance_is_zero_when_cores_cross(seed, k1, k2):
    """Core 2 through a point of core 1 (an edge may lie in the other's plane): distance 0."""
    rng = np.random.default_rng(seed)
    (c1, u1, v1, e1), (_, u2, v2, e2) = _core(rng, k1), _core(rng, k2)
    p1 = c1 + rng.uniform(-1, 1) * e1[0] * u1 + rng.uniform(-1, 1) * e1[1] * v1
    c2 = p1 - rng.uniform(-1, 1) * e2[0] * u2 - rng.uniform(-1, 1) * e2[1] * v2
    assert _rect_distance(c1, u1, v1, e1, c2, u2, v2, e2) <= 1e-12


def test_crossing_rectangles_are_at_distance_zero():
    x, y, z = np.eye(3)
    assert _rect_distance(np.zeros(3), x, y, (1.0, 1.0), np.array([0.2, 0.1, 0.0]), x, z, (0.5, 0.5)) == 0.0


def _dist_to_core(p, c, u, v, e):
    """Distance from point p (3,) to a core (the clamp into the rectangle's frame)."""
    d = p - c
    return np.linalg.norm(p - (c + np.clip(d @ u, -e[0], e[0]) * u + np.clip(d @ v, -e[1], e[1]) * v))


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(3, 40))
def test_fit_covers_its_points(seed, n):
    rng = np.random.default_rng(seed)
    pts = rng.normal(size=(n, 3)) * rng.uniform(0.01, 3, 3)
    kind, c, u, v, a, b, r = fit_ssv(pts)
    d = np.array([_dist_to_core(p, c, u, v, (a, b)) for p in pts])
    assert np.all(d <= r * (1 + 1e-12) + 1e-12)
    assert kind == (RSS if b > 0 else LSS if a > 0 else PSS) and a >= b >= 0


def _rect_area(X2, c, s):
    """Area of the bounding rectangle of plane points X2 (p, 2) along the axes turned by (cos, sin)."""
    Y = X2 @ np.array([[c, -s], [s, c]])
    return float(np.ptp(Y[:, 0]) * np.ptp(Y[:, 1]))


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(3, 40), st.floats(0.0, np.pi))
def test_turned_axes_leave_nearly_the_least_bounding_rectangle(seed, n, angle):
    """Against the oracle, the least rectangle over every two points' direction (a hull edge's
    among them): never more than its sides widened by the diameter times half a turn step
    (a support width changes by at most the diameter times the angle), never more than unturned."""
    rng = np.random.default_rng(seed)
    X2 = rng.uniform(-1, 1, (n, 2)) * rng.uniform(0.01, 3, 2) @ np.array([[np.cos(angle), np.sin(angle)],
                                                                           [-np.sin(angle), np.cos(angle)]])
    c, s = _turned_axes(X2)
    got = _rect_area(X2, c, s)
    best, sides = np.inf, None
    for i, j in itertools.combinations(range(n), 2):
        e = X2[j] - X2[i]
        if np.hypot(*e) > 0:
            e = e / np.hypot(*e)
            Y = X2 @ np.array([[e[0], -e[1]], [e[1], e[0]]])
            if np.ptp(Y[:, 0]) * np.ptp(Y[:, 1]) < best:
                best, sides = np.ptp(Y[:, 0]) * np.ptp(Y[:, 1]), (np.ptp(Y[:, 0]), np.ptp(Y[:, 1]))
    slack = max(np.hypot(*(X2[i] - X2[j])) for i, j in itertools.combinations(range(n), 2)) * np.pi / 4 / RECT_TURNS
    assert got <= (sides[0] + slack) * (sides[1] + slack) * (1 + 1e-12)
    assert got <= _rect_area(X2, 1.0, 0.0) * (1 + 1e-12)


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(3, 40))
def test_compiled_fit_covers_its_points(seed, n):
    """The compiled fit (distinct points with weights, its own axes) holds every point, as the numpy one."""
    rng = np.random.default_rng(seed)
    pts = rng.normal(size=(n, 3)) * rng.uniform(0.01, 3, 3)
    out = np.empty(FIT)
    _fit(pts, rng.integers(1, 7, n).astype(float), n, TURNS, out, _work(n))
    kind, c, u, v, (a, b, r) = int(out[0]), out[1:4], out[4:7], out[7:10], out[10:13]
    d = np.array([_dist_to_core(p, c, u, v, (a, b)) for p in pts])
    assert np.all(d <= r * (1 + 1e-12) + 1e-12)
    assert kind == (RSS if b > 0 else LSS if a > 0 else PSS) and a >= b >= 0
    assert abs(u @ v) < 1e-12 and abs(u @ u - 1) < 1e-12 and abs(v @ v - 1) < 1e-12


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(3, 200))
def test_hull_keeps_every_extreme_point(seed, n):
    """Along any direction the points kept as possible hull corners reach as far as all the points
    (the turned rectangles are measured on them); points on a grid give collinear and repeated ones."""
    rng = np.random.default_rng(seed)
    X2 = rng.integers(-4, 5, (n, 2)).astype(float) if seed % 2 else rng.normal(size=(n, 2))
    H = _hull(X2)
    for angle in rng.uniform(0, 2 * np.pi, 16):
        d = np.array([np.cos(angle), np.sin(angle)])
        assert (H @ d).max() == (X2 @ d).max()


@pytest.mark.parametrize("name", ["ico", "torus", "lamp"])
def test_compiled_tree_is_as_tight_as_the_numpy_one(meshes, name):
    """The compiled builder's hierarchy, the same method rounded differently (its splits may differ
    where cuts tie): its SSVs' total surface area within 10% of the numpy builder's (0.97-1.04 on the
    bench models)."""
    from spaceship_sim.meshes import load_model
    v, f = meshes[name] if name in meshes else (load_model(name).vertices, load_model(name).faces)
    got, ref = build_ssv(v, f), build_ssv_reference(v, f)

    def area(t):
        a, b, r = t.half[:, 0], t.half[:, 1], t.radius
        return float(np.sum(8 * a * b + 4 * np.pi * r * (a + b + r)))
    assert got.n_nodes == ref.n_nodes and sorted(got.face[got.face >= 0]) == list(range(len(f)))
    assert 0.9 < area(got) / area(ref) < 1.1


@pytest.mark.parametrize("build", [build_ssv, build_ssv_reference])
def test_tree_nodes_cover_their_triangles(meshes, build):
    v, f = meshes["torus"]
    tree = build(v, f)
    assert tree.n_nodes == 2 * len(f) - 1 and sorted(tree.face[tree.face >= 0]) == list(range(len(f)))
    below = {}
    for node in range(tree.n_nodes - 1, -1, -1):  # children come after their parent
        kids = tree.child[node]
        below[node] = [tree.face[node]] if kids[0] < 0 else below[kids[0]] + below[kids[1]]
        pts = tree.tris[below[node]].reshape(-1, 3)
        d = np.array([_dist_to_core(p, tree.center[node], tree.u[node], tree.v[node], tree.half[node]) for p in pts])
        assert np.all(d <= tree.radius[node])
        E = np.stack([tree.u[node], tree.v[node], np.cross(tree.u[node], tree.v[node])], 1)
        assert np.all(np.abs((pts - tree.box_center[node]) @ E) <= tree.box_half[node])  # the box holds them too


@SETTINGS
@given(st.integers(0, 2**32 - 1), KINDS, KINDS, st.sampled_from([0.0, 1e-9, 1e-4, 0.3, -0.01]))
def test_box_apart_only_when_the_ssvs_are_apart(seed, k1, k2, gap):
    """The box (axes u, v, u x v, half-extents a + r, b + r, r) holds its SSV: where the boxes are
    found apart, the SSVs' exact distance (cores' distance less both radii) is > 0. SSVs placed at
    random and touching, near-touching or overlapping along a random direction."""
    rng = np.random.default_rng(seed)
    (c1, u1, v1, e1), (c2, u2, v2, e2) = _core(rng, k1), _core(rng, k2)
    r1, r2 = rng.uniform(0.01, 1.0, 2)
    if rng.uniform() < 0.7:  # a random direction, the cores' supports gap + r1 + r2 apart
        n = rng.normal(size=3)
        n /= np.linalg.norm(n)
        c2 = _support(c1, u1, v1, e1, n) + (gap + r1 + r2) * n - _support(np.zeros(3), u2, v2, e2, -n)
    dist = _rect_distance(c1, u1, v1, e1, c2, u2, v2, e2) - r1 - r2
    for args in ((c1, u1, v1, e1, r1, c2, u2, v2, e2, r2), (c2, u2, v2, e2, r2, c1, u1, v1, e1, r1)):
        ca, ua, va, ea, ra, cb, ub, vb, eb, rb = args
        g = ssv_box_gap(tuple(ca), tuple(ua), tuple(va), ea[0], ea[1], ra, tuple(cb), tuple(ub), tuple(vb), eb[0], eb[1], rb)
        assert g <= 0.0 or dist > 0.0


def _box_depth_lp(c1, E1, h1, c2, E2, h2):
    """max s such that a point lies s inside both boxes (each face moved in by s): > 0 the boxes
    overlap, < 0 they are apart (a linear programme)."""
    from scipy.optimize import linprog
    A, b = [], []
    for c, E, h in ((c1, E1, h1), (c2, E2, h2)):
        for k in range(3):
            for sign in (1.0, -1.0):  # sign E_k.(p - c) + s <= h_k
                A.append([*(sign * E[:, k]), 1.0])
                b.append(h[k] + sign * E[:, k] @ c)
    res = linprog([0, 0, 0, -1.0], A_ub=A, b_ub=b, bounds=[(None, None)] * 3 + [(None, 1e3)], method="highs")
    return -res.fun


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.sampled_from(["random", "aligned", "edge-parallel"]))
def test_box_gap_finds_the_boxes_apart_exactly_when_they_are(seed, how):
    """The 15-axis test against a linear programme on random boxes (some sharing an axis, where the
    edge-edge axes degenerate): apart (> 0) when the boxes are at least 1e-6 apart, overlapping
    (<= 0) when they overlap by 1e-6."""
    rng = np.random.default_rng(seed)
    E1, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    E2, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    if how == "aligned":
        E2 = E1[:, rng.permutation(3)]
    elif how == "edge-parallel":
        angle = rng.uniform(0, np.pi)
        E2 = np.stack([E1[:, 0], np.cos(angle) * E1[:, 1] + np.sin(angle) * E1[:, 2],
                       -np.sin(angle) * E1[:, 1] + np.cos(angle) * E1[:, 2]], 1)
    E1[:, 2], E2[:, 2] = np.cross(E1[:, 0], E1[:, 1]), np.cross(E2[:, 0], E2[:, 1])  # right-handed
    h1, h2 = rng.uniform(0.0, 2.0, 3), rng.uniform(0.0, 2.0, 3)
    c1, c2 = rng.normal(size=3), rng.normal(size=3) * rng.uniform(0.5, 4.0)
    d = c2 - c1
    U, V, N = E1.T @ E2[:, 0], E1.T @ E2[:, 1], E1.T @ E2[:, 2]
    g = box_gap(tuple(E1.T @ d), tuple(U), tuple(V), tuple(N), tuple(h1), tuple(h2))
    depth = _box_depth_lp(c1, E1, h1, c2, E2, h2)
    if depth < -1e-6:
        assert g > 0.0
    elif depth > 1e-6:
        assert g <= 0.0
