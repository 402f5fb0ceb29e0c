"""geometry.vectors (3-tuple arithmetic inlined into kernels) against numpy."""
import numpy as np
from hypothesis import given, settings, strategies as st
from numba import njit

from spaceship_sim.geometry.vectors import cross, dist2, dot, dot_from, lerp, row, sub, unit_rows


@njit(cache=True)
def all_ops(P, Q, N, s):
    """Each operation on rows i of P, Q, N (n, 3) and s (n,), as a kernel calls them: (n, 14)."""
    out = np.empty((len(P), 14))
    for i in range(len(P)):
        p, q, n = row(P, i), row(Q, i), row(N, i)
        d, c, m = sub(p, q), cross(p, q), lerp(p, q, s[i])
        out[i, 0:3] = d[0], d[1], d[2]
        out[i, 3:6] = c[0], c[1], c[2]
        out[i, 6:9] = m[0], m[1], m[2]
        out[i, 9], out[i, 10], out[i, 11] = dot(p, q), dist2(p, q), dot_from(p, q, n)
        out[i, 12], out[i, 13] = p[0], p[2]
    return out


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_operations_match_numpy(seed):
    rng = np.random.default_rng(seed)
    P, Q, N = (rng.normal(size=(100, 3)) * 10 for _ in range(3))
    s = rng.uniform(size=100)
    got = all_ops(P, Q, N, s)
    tol = dict(rtol=1e-13, atol=1e-12)
    assert np.array_equal(got[:, 0:3], P - Q)
    assert np.allclose(got[:, 3:6], np.cross(P, Q), **tol)
    assert np.allclose(got[:, 6:9], P + s[:, None] * (Q - P), **tol)
    assert np.allclose(got[:, 9], np.einsum("ij,ij->i", P, Q), **tol)
    assert np.allclose(got[:, 10], ((P - Q) ** 2).sum(axis=1), **tol)
    assert np.allclose(got[:, 11], np.einsum("ij,ij->i", P - Q, N), **tol)
    assert np.array_equal(got[:, 12:14], P[:, [0, 2]])
    u = unit_rows(P)
    assert np.allclose(np.linalg.norm(u, axis=1), 1.0, rtol=0, atol=1e-15)
    assert np.allclose(u * np.linalg.norm(P, axis=1, keepdims=True), P, **tol)
