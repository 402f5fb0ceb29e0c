"""Space-time broad phase internals: Hubbard's bound never late (ships inside their reach balls,
unscheduled pairs apart), re-balls spread over calls, the hashed ship grid and the pair schedule
against simple references. Agreement with brute force is in test_broadphase.py."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from spaceship_sim.registry import make_broadphase
from spaceship_sim.broadphase.motion import RandomMotion, box_for_volume_fraction
from spaceship_sim.broadphase.pair_schedule import N_DUE, SIZE, PairSchedule, heap_push, make_due
from spaceship_sim.broadphase.ship_grid import ShipGrid

RES = 1 / 60


def meeting_ball_pairs(c, r, among=None):
    """Set of pairs (i, j), i < j, whose balls (c, r) meet — all, or those with a ship in `among`."""
    dx, dy, dz = (c[None, :, a] - c[:, None, a] for a in range(3))  # c_j - c_i, as the kernels
    rr = r[:, None] + r[None, :]
    meet = np.triu(dx * dx + dy * dy + dz * dz <= rr * rr, 1)
    if among is not None:
        chosen = np.zeros(len(r), bool)
        chosen[among] = True
        meet &= chosen[:, None] | chosen[None, :]
    return set(zip(*(x.tolist() for x in np.nonzero(meet))))


def scheduled_pairs(bp) -> dict:
    a, b, wake = bp.schedule.live()
    return dict(zip(zip(a.tolist(), b.tolist()), wake.tolist()))


def assert_bound_holds(bp, motion, calls, sub, controls=0.0) -> int:
    """Drive `bp` at RES, sampling the motion `sub` times finer in between, and check Hubbard's
    guarantee at every fine time t: each ship not invalidated since its reach ball was made is
    inside it until its horizon ends; a pair whose spheres overlap was due by t — scheduled with
    a wake-up <= t, or unscheduled with a horizon end <= t. After each call every unscheduled
    pair's balls are apart. Returns how many overlapping pairs were checked."""
    ref = make_broadphase("brute_force", motion.radius, min_resolution=RES)
    bp.find_pairs(motion.t, motion.pos, motion.vel, motion.accel_bound)
    checked = 0
    for _ in range(calls):
        wake = scheduled_pairs(bp)
        assert meeting_ball_pairs(bp.ball_c, bp.ball_r) <= set(wake), "balls meet but the pair is not scheduled"
        c, r, end = bp.ball_c.copy(), bp.ball_r.copy(), bp.ship_end.copy()
        jumped = np.zeros(len(motion.radius), bool)
        for _sub in range(sub):
            jumped[motion.step(RES / sub)] = True
            inside = np.linalg.norm(motion.pos - c, axis=1) + motion.radius <= r
            assert np.all(inside | jumped | (end < motion.t)), "a ship left its reach ball before its horizon end"
            for i, j in ref.find_pairs(motion.t, motion.pos, motion.vel, motion.accel_bound).tolist():
                if jumped[i] or jumped[j]:
                    continue  # a discontinuity since the prediction: re-predicted at the next call
                due = wake.get((i, j), min(end[i], end[j]))
                assert due <= motion.t, f"pair {i},{j} overlaps at {motion.t} but sleeps until {due}"
                checked += 1
        if controls:
            motion.change_bounds(controls)
        bp.invalidate(jumped)
        bp.find_pairs(motion.t, motion.pos, motion.vel, motion.accel_bound)
    return checked


def test_space_time_never_late():
    rng = np.random.default_rng(7)
    radius = rng.uniform(0.3, 2.0, 150)
    motion = RandomMotion(radius, box_for_volume_fraction(radius, 0.2), speed=10.0, accel=30.0, seed=7,
                          accel_change=0.5, jump_rate=0.02)
    bp = make_broadphase("space_time", radius, min_resolution=RES)
    assert assert_bound_holds(bp, motion, 300, 8, controls=0.05) > 500


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 50), seed=st.integers(0, 2**31 - 1), fraction=st.floats(0.02, 0.4),
       speed=st.floats(0.0, 30.0), accel=st.floats(0.0, 60.0), jump=st.floats(0.0, 0.1),
       controls=st.floats(0.0, 0.3), horizon_calls=st.integers(2, 40), adaptive=st.booleans())
def test_bound_property(n, seed, fraction, speed, accel, jump, controls, horizon_calls, adaptive):
    radius = np.random.default_rng(seed).uniform(0.1, 2.0, n)
    motion = RandomMotion(radius, box_for_volume_fraction(radius, fraction), speed, accel, seed=seed,
                          accel_change=0.3, jump_rate=jump)
    bp = make_broadphase("space_time", radius, min_resolution=RES, horizon_calls=horizon_calls, adaptive=adaptive)
    assert_bound_holds(bp, motion, 40, 5, controls=controls)


def reballs_beyond_invalidated(bp, motion, calls, crowd=None):
    """Drive bp at RES (whole fleet invalidated at call `crowd`); per call, the ships re-balled
    beyond those invalidated and the horizon then."""
    n = len(motion.radius)
    beyond, horizons = [], []
    for call in range(calls):
        jumped = np.arange(n) if call == crowd else motion.step(RES)
        bp.invalidate(jumped)
        bp.find_pairs(motion.t, motion.pos, motion.vel, motion.accel_bound)
        beyond.append(bp.last_stats["ships_reballed"] - len(jumped))
        horizons.append(bp.horizon)
    return np.array(beyond), np.array(horizons)


def test_reballs_spread_evenly_over_calls():
    """Each call re-balls its share n·Δt/H of the ships, never all of them: horizons end on
    per-ship phases, a crowd invalidated in one call is spread again at its next re-ball, and
    re-ranking the phases (every 4 horizons: 64 calls) keeps the spread."""
    n, h, crowd = 4000, 16 * RES, 40
    radius = np.full(n, 0.5)
    motion = RandomMotion(radius, box=3000.0, speed=1.0, accel=1.0, seed=5)  # sparse and slow: few bounces
    bp = make_broadphase("space_time", radius, min_resolution=RES, horizon=h, adaptive=False)
    beyond, _ = reballs_beyond_invalidated(bp, motion, 150, crowd)
    share = n * RES / h
    assert beyond[0] == n and beyond[crowd] == 0  # first call: everyone; the crowd: all invalidated
    steady = np.delete(beyond, [0, 1, crowd, crowd + 1])  # the call after those: nobody is due yet
    assert 0.8 * share - 10 <= steady.min() and steady.max() <= 1.2 * share + 10, (share, steady.min(), steady.max())


@pytest.mark.parametrize("start, max_pairs", [(4 * RES, 100.0), (16 * RES, 0.02)])
def test_reballs_stay_spread_while_the_horizon_adapts(start, max_pairs):
    """The horizon growing to its cap (×1.2 per horizon) or shrinking under too many pairs
    (×0.7): each call still re-balls at most about its share at the shortest horizon of the last
    32 calls (a longer horizon brings some ships twice for a while), never a crowd."""
    n = 3000
    radius = np.full(n, 0.5)
    motion = RandomMotion(radius, box_for_volume_fraction(radius, 0.01), speed=5.0, accel=5.0, seed=6)
    bp = make_broadphase("space_time", radius, min_resolution=RES, horizon=start, max_pairs_per_ship=max_pairs)
    beyond, horizons = reballs_beyond_invalidated(bp, motion, 200)
    assert horizons.max() / horizons.min() > 2  # it did adapt
    shortest = np.array([horizons[max(0, c - 32):c + 1].min() for c in range(len(horizons))])
    excess = beyond[2:] - (1.5 * n * RES / shortest[2:] + 10)
    assert excess.max() <= 0, excess.max()


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 120), spread=st.floats(1.0, 1e4), big=st.booleans(),
       rounds=st.integers(1, 6))
def test_ship_grid_matches_brute_force(seed, n, spread, big, rounds):
    """Moves of a few ships (some changing the largest radius enough to rebuild) then the
    moved ships' query: every meeting pair with a moved ship, each once."""
    rng = np.random.default_rng(seed)
    c = rng.uniform(-spread, spread, (n, 3))
    r = rng.uniform(0.0, 5.0, n) * (rng.random(n) < 0.9)  # some zero radii
    if big:
        r[rng.integers(n)] = 3 * spread  # its query box holds more cells than ships: the scan
    ball = np.column_stack([c, r])
    c, r = ball[:, :3], ball[:, 3]
    grid = ShipGrid(n)
    grid.move(np.arange(n), ball)
    for _ in range(rounds):
        ships = np.flatnonzero(rng.random(n) < 0.3)
        c[ships] += rng.normal(0.0, spread / 10, (len(ships), 3))
        r[ships] = rng.uniform(0.0, 5.0, len(ships)) * rng.choice([0.1, 1.0, 10.0])
        grid.move(ships, ball)
        a, b = grid.pairs(ships, ball)
        got = list(zip(a.tolist(), b.tolist()))
        assert len(got) == len(set(got))
        assert set(got) == meeting_ball_pairs(c, r, ships)
    assert not grid.batch.any()


def assert_schedule_consistent(s: PairSchedule, model: dict, n: int):
    """Heap ordered and indexed, due list indexed, every live pair in both its ships' lists, as
    the model says (due pairs with wake-up -inf)."""
    size, heap, wake, n_due = s.counts[SIZE], s.heap, s.wake, s.counts[N_DUE]
    assert all(wake[heap[(k - 1) // 2]] <= wake[heap[k]] for k in range(1, size))
    assert all(s.hpos[heap[k]] == k and s.dpos[heap[k]] == -1 for k in range(size))
    assert all(s.dpos[s.due[k]] == k and wake[s.due[k]] == -np.inf for k in range(n_due))
    a, b, w = s.live()
    assert len(a) == s.size == len(model)
    assert dict(zip(zip(a.tolist(), b.tolist()), w.tolist())) == model
    for ship in range(n):
        ends = sorted(tuple(sorted((int(s.pa[p]), int(s.pb[p])))) for p in s.of_ship(ship))
        assert ends == sorted(k for k in model if ship in k)


def shuffle_schedule(s: PairSchedule, rng) -> dict:
    """Put a random half of the live pairs to sleep with random wake-ups, the rest due, so
    later drops remove from a varied heap and due list. Returns the new model."""
    a, b, _ = s.live()
    ids = np.concatenate([s.heap[: s.counts[SIZE]], s.due[: s.counts[N_DUE]]])
    s.counts[SIZE] = s.counts[N_DUE] = 0
    s.dpos[ids] = -1
    for p in ids:
        if rng.random() < 0.5:
            make_due(p, s.wake, s.due, s.dpos, s.counts)
        else:
            s.wake[p] = rng.uniform(0.0, 10.0)
            s.counts[SIZE] = heap_push(s.heap, s.hpos, s.wake, s.counts[SIZE], p)
    return {(int(s.pa[p]), int(s.pb[p])): float(s.wake[p]) for p in ids}


@settings(max_examples=40, deadline=None)
@given(ops=st.lists(st.tuples(st.booleans(), st.lists(st.integers(0, 11), min_size=1, max_size=5)), max_size=40),
       seed=st.integers(0, 2**31 - 1))
def test_pair_schedule_matches_model(ops, seed):
    """Adds (all new pairs among some ships, due) and drops (all pairs of some ships), with the
    pairs shuffled between heap and due list in between, against a dict; starts tiny so it grows."""
    n, rng = 12, np.random.default_rng(seed)
    s, model = PairSchedule(n, cap=2), {}
    for add, ships in ops:
        ships = sorted(set(ships))
        if add:
            new = [(i, j) for i in ships for j in ships if i < j and (i, j) not in model]
            s.add(np.array([p[0] for p in new], np.int64), np.array([p[1] for p in new], np.int64))
            model.update({p: -np.inf for p in new})
        else:
            s.drop(np.array(ships, np.int64))
            model = {k: w for k, w in model.items() if not set(k) & set(ships)}
        assert_schedule_consistent(s, model, n)
        model = shuffle_schedule(s, rng)
        assert_schedule_consistent(s, model, n)


def test_invalidate_checks_kernel_indices_as_any_other():
    """int64 index arrays (the pipeline's, checked and marked in one compiled call) are refused
    out of range without marking any ship, as lists and masks are."""
    import pytest

    from spaceship_sim.broadphase.space_time import SpaceTime
    st = SpaceTime(np.ones(4), min_resolution=0.01)
    for bad in (np.array([1, 4], np.int64), np.array([-1], np.int64), [1, 4]):
        with pytest.raises(ValueError, match="out of range"):
            st.invalidate(bad)
        assert not st.dirty.any()
    st.invalidate(np.array([3, 1], np.int64))
    assert st.dirty.tolist() == [False, True, False, True]
    st.invalidate(np.array([True, False, False, False]))
    assert st.dirty.tolist() == [True, True, False, True]
