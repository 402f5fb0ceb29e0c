"""Collision response conserves momentum (and energy when elastic) and leaves pairs separating."""
import numpy as np
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from spaceship_sim.response import respond

vec = arrays(np.float64, 3, elements=st.floats(-50, 50))


def unit(v):
    n = np.linalg.norm(v)
    return v / n if n > 1e-6 else np.array([1.0, 0.0, 0.0])


@settings(max_examples=50, deadline=None)
@given(va=vec, vb=vec, n=vec, ma=st.floats(0.1, 100), mb=st.floats(0.1, 100), e=st.floats(0, 1),
       user=st.booleans())
def test_pair_impulse(va, vb, n, ma, mb, e, user):
    vel = np.array([va, vb])
    inv = np.array([0.0 if user else 1 / ma, 1 / mb])
    normal = unit(n)[None]
    before = vel.copy()
    changed = respond(vel, inv, np.array([[0, 1]]), normal, e)
    u0 = np.dot(before[1] - before[0], normal[0])
    u1 = np.dot(vel[1] - vel[0], normal[0])
    if u0 >= 0:
        assert len(changed) == 0 and np.array_equal(vel, before)
        return
    assert u1 >= -1e-9, "the pair separates along the normal"
    np.testing.assert_allclose(u1, -e * u0, rtol=1e-9, atol=1e-9)
    # tangential velocities untouched
    for i in range(2):
        t0 = before[i] - np.dot(before[i], normal[0]) * normal[0]
        t1 = vel[i] - np.dot(vel[i], normal[0]) * normal[0]
        np.testing.assert_allclose(t0, t1, atol=1e-9)
    if user:
        np.testing.assert_array_equal(vel[0], before[0])  # infinite mass never deflected
        return
    m = np.array([ma, mb])[:, None]
    np.testing.assert_allclose((m * vel).sum(0), (m * before).sum(0), atol=1e-7 * (1 + np.abs(m * before).sum()))
    if e == 1.0:
        ke = lambda v: float((m[:, 0] * (v ** 2).sum(1)).sum())
        np.testing.assert_allclose(ke(vel), ke(before), rtol=1e-9)


def test_two_immovable_ships_are_left_alone():
    vel = np.array([[1.0, 0, 0], [-1.0, 0, 0]])
    assert len(respond(vel, np.zeros(2), np.array([[0, 1]]), np.array([[1.0, 0, 0]]), 1.0)) == 0


@settings(max_examples=80, deadline=None)
@given(va=vec, vb=vec, n=vec, c=vec, ma=st.floats(0.1, 100), mb=st.floats(0.1, 100), e=st.floats(0, 1),
       speed=st.floats(0, 5), user=st.booleans())
def test_centres_part_at_least_at_separation_speed(va, vb, n, c, ma, mb, e, speed, user):
    vel = np.array([va, vb])
    inv = np.array([0.0 if user else 1 / ma, 1 / mb])
    normal, line = unit(n)[None], unit(c)[None]
    before = vel.copy()
    respond(vel, inv, np.array([[0, 1]]), normal, e, centre_line=line, separation_speed=speed)
    assert np.dot(vel[1] - vel[0], line[0]) >= speed - 1e-9, "the centres part at least that fast"
    if user:
        np.testing.assert_array_equal(vel[0], before[0])
        return
    m = np.array([ma, mb])[:, None]
    np.testing.assert_allclose((m * vel).sum(0), (m * before).sum(0), atol=1e-7 * (1 + np.abs(m * before).sum()))
    hubbard = before.copy()
    respond(hubbard, inv, np.array([[0, 1]]), normal, e)
    if np.dot(hubbard[1] - hubbard[0], line[0]) >= speed:
        np.testing.assert_array_equal(vel, hubbard)  # no second impulse when Hubbard's already parts them


def test_resting_contact_side_by_side_is_pushed_apart_along_the_centre_line():
    """Two ships flying side by side, touching: no relative velocity, so Hubbard's impulse does nothing."""
    vel = np.array([[3.0, 0, 0], [3.0, 0, 0]])
    changed = respond(vel, np.array([1.0, 1.0]), np.array([[0, 1]]), np.array([[0.0, 0, 1]]), 1.0,
                      centre_line=np.array([[0.0, 1, 0]]), separation_speed=2.0)
    assert list(changed) == [0, 1]
    np.testing.assert_allclose(vel, [[3.0, -1, 0], [3.0, 1, 0]])


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_kernel_equals_the_numpy_reference(seed, with_line):
    """Many pairs sharing ships, applied in order: the numba kernel and the numpy reference give
    the same velocities and the same changed ships (some pairs immovable, some centre lines zero)."""
    from spaceship_sim.response.impulse import respond_reference
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(2, 8)), int(rng.integers(0, 12))
    vel = rng.normal(0, 10, (n, 3))
    inv = np.where(rng.random(n) < 0.2, 0.0, rng.uniform(0.01, 2, n))
    pairs = np.array([rng.choice(n, 2, replace=False) for _ in range(k)], np.int64).reshape(-1, 2)
    normal = np.array([unit(v) for v in rng.normal(size=(k, 3))]).reshape(-1, 3)
    line = np.array([unit(v) for v in rng.normal(size=(k, 3))]).reshape(-1, 3) if with_line else None
    if with_line and k:
        line[rng.random(k) < 0.3] = 0.0  # coincident centres
    e, speed = float(rng.uniform(0, 1)), float(rng.uniform(0, 3))
    fast, slow = vel.copy(), vel.copy()
    got = respond(fast, inv, pairs, normal, e, line, speed)
    want = respond_reference(slow, inv, pairs, normal, e, line, speed)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(fast, slow, rtol=1e-12, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_respond_hits_equals_respond_on_the_selected_pairs(seed):
    """The pipeline's one-call response gives, bit for bit, what respond gives for the colliding
    rows with pipeline.centre_line's centre lines (some centres coincident, some ships immovable)."""
    from spaceship_sim.sim.pipeline import centre_line
    from spaceship_sim.response import respond_hits
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(2, 8)), int(rng.integers(0, 12))
    pos = rng.normal(0, 5, (n, 3))
    pos[rng.random(n) < 0.2] = pos[0]  # coincident centres: a zero centre line
    vel = rng.normal(0, 10, (n, 3))
    inv = np.where(rng.random(n) < 0.2, 0.0, rng.uniform(0.01, 2, n))
    pairs = np.array([rng.choice(n, 2, replace=False) for _ in range(k)], np.int64).reshape(-1, 2)
    normal = np.array([unit(v) for v in rng.normal(size=(k, 3))]).reshape(-1, 3)
    hit = rng.random(k) < 0.6
    e, speed = float(rng.uniform(0, 1)), float(rng.uniform(0, 3))
    fast, slow = vel.copy(), vel.copy()
    got = respond_hits(fast, inv, pos, pairs, hit, normal, e, speed)
    want = respond(slow, inv, pairs[hit], normal[hit], e, centre_line(pos, pairs[hit]), speed)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(fast, slow)
