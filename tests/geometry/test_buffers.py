"""geometry.buffers.grow: kept while it has room, else doubled with its contents copied, in kernels
(one and two dimensions) and from Python against a plain numpy concatenation."""
import numpy as np
from hypothesis import given, settings, strategies as st
from numba import njit

from spaceship_sim.geometry.buffers import grow


@njit(cache=True)
def append_all(values, start):
    """values (n,) appended one by one to an array of `start` rows, grown on demand."""
    out = np.empty(start, values.dtype)
    for i in range(len(values)):
        out = grow(out, i + 1)
        out[i] = values[i]
    return out[:len(values)], len(out)


@njit(cache=True)
def append_rows(rows, start):
    """rows (n, 2) appended in blocks of 3 to an array of `start` rows, grown on demand."""
    out = np.empty((start, 2), rows.dtype)
    n = 0
    while n < len(rows):
        m = min(3, len(rows) - n)
        out = grow(out, n + m)
        for i in range(m):
            out[n + i, 0], out[n + i, 1] = rows[n + i, 0], rows[n + i, 1]
        n += m
    return out[:n]


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 200), st.integers(0, 8))
def test_appending_keeps_every_value(n, start):
    values = np.arange(n, dtype=np.int64) * 7 - 3
    got, size = append_all(values, start)
    assert np.array_equal(got, values)
    assert size <= max(start, 2 * n, 1)  # doubling: never more than twice what was needed
    rows = np.arange(2 * n, dtype=np.float64).reshape(n, 2)
    assert np.array_equal(append_rows(rows, start), rows)


def test_room_left_returns_the_same_array():
    a = np.arange(5.0)
    assert grow(a, 5) is a
    b = grow(a, 6)
    assert len(b) == 10 and np.array_equal(b[:5], a)
    c = grow(np.arange(12.0).reshape(6, 2)[::2], 4)  # any layout
    assert c.shape == (6, 2) and np.array_equal(c[:3], [[0, 1], [4, 5], [8, 9]])
