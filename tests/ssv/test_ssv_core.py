"""SSV core distances (numba) against a brute-force oracle; SSV trees cover their triangles."""
import itertools

import numpy as np
from hypothesis import given, settings, strategies as st

from spaceship_sim.ssv.core import LSS, PSS, RSS, core_bounds, dist2_core, normal_gap
from spaceship_sim.ssv.tree import build_ssv, fit_ssv

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


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.sampled_from([PSS, LSS, RSS]), st.sampled_from([PSS, LSS, RSS]))
def test_core_distance_matches_oracle(seed, k1, k2):
    rng = np.random.default_rng(seed)
    (c1, u1, v1, e1), (c2, u2, v2, e2) = _core(rng, k1), _core(rng, k2)
    if rng.uniform() < 0.3:  # parallel planes, a common case for nearby surface patches
        u2, v2 = u1, v1
        c2 = c1 + rng.uniform(-0.5, 0.5) * np.cross(u1, v1) + rng.uniform(-1, 1) * u1
    got = np.sqrt(dist2_core(k1, tuple(c1), tuple(u1), tuple(v1), e1[0], e1[1],
                             k2, tuple(c2), tuple(u2), tuple(v2), e2[0], e2[1]))
    want = core_distance_ref(c1, u1, v1, e1, c2, u2, v2, e2)
    assert abs(got - want) <= 1e-9
    for rounds in (1, 2, 5):  # the cheap bounds bracket it
        lo, hi = core_bounds(tuple(c1), tuple(u1), tuple(v1), e1[0], e1[1], tuple(c2), tuple(u2), tuple(v2),
                             e2[0], e2[1], np.int64(rounds))
        assert lo <= want + 1e-12 and hi >= want - 1e-12
    first, second = (c1, u1, v1, e1), (c2, u2, v2, e2)
    for (ca, ua, va, ea), (cb, ub, vb, eb) in ((first, second), (second, first)):  # and along either normal
        assert normal_gap(tuple(cb - ca), tuple(ua), tuple(va), tuple(ub), tuple(vb), eb[0], eb[1]) <= want + 1e-12



@SETTINGS
@given(st.integers(0, 2**32 - 1), st.sampled_from([PSS, LSS]), st.sampled_from([PSS, LSS]))
def test_core_bounds_are_exact_for_segments_and_points(seed, k1, k2):
    """One round is enough there: the closest points of the two cores' edges (here the cores
    themselves) close the bounds, as they do on most rectangles."""
    rng = np.random.default_rng(seed)
    (c1, u1, v1, e1), (c2, u2, v2, e2) = _core(rng, k1), _core(rng, k2)
    want = core_distance_ref(c1, u1, v1, e1, c2, u2, v2, e2)
    lo, hi = core_bounds(tuple(c1), tuple(u1), tuple(v1), e1[0], e1[1], tuple(c2), tuple(u2), tuple(v2),
                         e2[0], e2[1], np.int64(1))
    assert abs(lo - want) <= 1e-9 and abs(hi - want) <= 1e-9

def test_crossing_rectangles_are_at_distance_zero():
    x, y, z = np.eye(3)
    args = (RSS, (0.0, 0.0, 0.0), tuple(x), tuple(y), 1.0, 1.0, RSS, (0.2, 0.1, 0.0), tuple(x), tuple(z), 0.5, 0.5)
    assert dist2_core(*args) == 0.0


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


def test_tree_nodes_cover_their_triangles(meshes):
    v, f = meshes["torus"]
    tree = build_ssv(v, f)
    assert tree.n_nodes == 2 * len(f) - 1 and sorted(tree.face[tree.face >= 0]) == list(range(len(f)))
    below = {}
    for node in range(tree.n_nodes - 1, -1, -1):  # children come after their parent
        kids = tree.child[node]
        below[node] = [tree.face[node]] if kids[0] < 0 else below[kids[0]] + below[kids[1]]
        pts = tree.tris[below[node]].reshape(-1, 3)
        d = np.array([_dist_to_core(p, tree.center[node], tree.u[node], tree.v[node], tree.half[node]) for p in pts])
        assert np.all(d <= tree.radius[node])
