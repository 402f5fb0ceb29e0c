"""Broad phases: identical pair sets over long random runs, the space-time bound never late,
edge cases, and the numba helpers against simple references."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from spaceship_sim.broadphase import BroadPhaseNameError
from spaceship_sim.registry import BROADPHASES, make_broadphase
from spaceship_sim.broadphase.base import pairs_from_ids, pairs_from_keys
from spaceship_sim.broadphase.motion import RandomMotion, box_for_volume_fraction
from spaceship_sim.broadphase.space_time import _wake_delay
from spaceship_sim.broadphase.sweep_prune import EMPTY, _set_add, _set_remove
from spaceship_sim.errors import InputError

NAMES = ("brute_force", *sorted(set(BROADPHASES) - {"brute_force"}))  # every registered one, reference first
RES = 1 / 60


def run_all(motion, frames, dt_of, controls=0.0, invalidate_all=(), **space_time):
    """Step `motion` and every registered broad phase together; assert identical pairs every call.
    controls: fraction of ships given new acceleration bounds per call; invalidate_all: calls at
    which every ship is invalidated; space_time: options of that broad phase.
    Returns the total number of overlapping pairs seen (so tests can insist on contacts), the
    broad phases, and space_time's totals of pairs added by re-balls and of ships re-balled."""
    bps = {k: make_broadphase(k, motion.radius, min_resolution=RES, **(space_time if k == "space_time" else {}))
           for k in NAMES}
    total = 0
    paths = {"pairs_added": 0, "ships_reballed": 0}
    for f in range(frames):
        jumped = motion.step(dt_of(f))
        if controls:
            motion.change_bounds(controls)
        if f in invalidate_all:
            jumped = np.arange(len(motion.radius))
        got = {}
        for k, bp in bps.items():
            bp.invalidate(jumped)
            got[k] = bp.find_pairs(motion.t, motion.pos, motion.vel, motion.accel_bound)
        ref = got["brute_force"]
        assert ref.dtype == np.int32 and ref.shape[1] == 2
        for k in NAMES[1:]:
            assert got[k].dtype == np.int32
            np.testing.assert_array_equal(got[k], ref, err_msg=f"{k} differs at frame {f}")
        total += len(ref)
        for key in paths:
            paths[key] += bps["space_time"].last_stats.get(key, 0)
    return total, bps, paths


@pytest.mark.parametrize("seed, fraction, jump_rate", [(0, 0.05, 0.0), (1, 0.15, 0.02), (2, 0.3, 0.1)])
def test_long_random_runs_agree(seed, fraction, jump_rate):
    rng = np.random.default_rng(seed)
    radius = rng.choice([0.3, 1.0, 2.5], 250)  # a few ship models, fixed radius each
    motion = RandomMotion(radius, box_for_volume_fraction(radius, fraction), speed=8.0, accel=20.0, seed=seed,
                          accel_change=0.2, jump_rate=jump_rate)
    # uneven sample spacing, some repeated times (t never decreases, may stand still)
    steps = rng.choice([0.0, RES / 3, RES / 2, RES], 600, p=[0.05, 0.25, 0.3, 0.4])
    total, bps, paths = run_all(motion, 600, lambda f: steps[f])
    assert total > 1000  # the run must actually exercise contacts
    assert paths["ships_reballed"] > 3 * 250  # several horizons
    st_stats = bps["space_time"].last_stats
    assert st_stats["pairs_scheduled"] < 250 * 249 // 2  # it does not schedule every pair


@settings(max_examples=30, deadline=None)
@given(n=st.integers(0, 40), seed=st.integers(0, 2**31 - 1), fraction=st.floats(0.01, 0.5),
       speed=st.floats(0.0, 20.0), accel=st.floats(0.0, 50.0), jump=st.floats(0.0, 0.3),
       dt=st.sampled_from([0.0, RES / 4, RES]))
def test_random_configurations_agree(n, seed, fraction, speed, accel, jump, dt):
    radius = np.random.default_rng(seed).uniform(0.0, 2.0, n)
    box = box_for_volume_fraction(radius, fraction) if n and radius.sum() > 0 else 1.0
    motion = RandomMotion(radius, box, speed, accel, seed=seed, accel_change=0.3, jump_rate=jump)
    run_all(motion, 40, lambda f: dt)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 60), seed=st.integers(0, 2**31 - 1), fraction=st.floats(0.02, 0.3),
       speed=st.floats(0.0, 30.0), accel=st.floats(0.0, 50.0), jump=st.floats(0.0, 0.1),
       controls=st.floats(0.0, 0.3), crossing=st.booleans(), crowds=st.sets(st.integers(0, 119), max_size=3),
       horizon_calls=st.integers(2, 40), adaptive=st.booleans())
def test_staggered_horizons_agree(n, seed, fraction, speed, accel, jump, controls, crossing, crowds, horizon_calls,
                                  adaptive):
    """Many calls with new controls (bounds raised and lowered), velocity jumps, whole-fleet
    invalidations and two streams of ships flying through each other, under any horizon: the
    staggered re-balls must still find exactly brute force's pairs."""
    radius = np.random.default_rng(seed).uniform(0.1, 2.0, n)
    motion = RandomMotion(radius, box_for_volume_fraction(radius, fraction), speed, accel, seed=seed,
                          accel_change=0.3, jump_rate=jump)
    if crossing:  # left half flies +x, right half -x, at full speed
        motion.vel[:] = 0.0
        motion.vel[:, 0] = np.where(motion.pos[:, 0] < motion.box / 2, speed, -speed)
    steps = np.random.default_rng(seed).choice([0.0, RES / 3, RES], 120, p=[0.1, 0.3, 0.6])
    run_all(motion, 120, lambda f: steps[f], controls=controls, invalidate_all=crowds, horizon_calls=horizon_calls,
            adaptive=adaptive)


def _maybe_zero(lo, hi):
    return st.one_of(st.just(0.0), st.floats(lo, hi))


@settings(max_examples=50, deadline=None)
@given(gap=st.floats(0.01, 100.0), closing=st.one_of(_maybe_zero(1e-3, 20.0), st.floats(-20.0, -1e-3)),
       a_i=_maybe_zero(1e-3, 30.0), a_j=_maybe_zero(1e-3, 30.0))
def test_wake_delay_is_tight_head_on(gap, closing, a_i, a_j):
    """Head on, both ships accelerating at their full bound towards each other, the gap after τ
    is exactly gap - c·τ - A·τ²/2: the predicted delay must be that touching time — the gap is
    still >= 0 then (not late) and < 0 just after (tight)."""
    pos = np.array([[0.0, 0.0, 0.0], [1.0 + 2.0 + gap, 0.0, 0.0]])
    vel = np.array([[closing, 0.0, 0.0], [0.0, 0.0, 0.0]])
    accel, radius = np.array([a_i, a_j]), np.array([1.0, 2.0])
    tau = _wake_delay(pos, vel, accel, radius, 0, 1)
    a = a_i + a_j
    if a == 0 and closing <= 0:
        assert tau == np.inf
        return

    def gap_after(s):
        return gap - closing * s - 0.5 * a * s * s

    assert gap_after(tau) >= -1e-9 * gap
    assert gap_after(tau * (1 + 1e-6)) < 0


@settings(max_examples=30, deadline=None)
@given(ops=st.lists(st.tuples(st.booleans(), st.integers(0, 300)), max_size=400))
def test_hash_set_matches_python_set(ops):
    table, count, ref = np.full(4, EMPTY, np.int64), np.zeros(1, np.int64), set()
    for add, key in ops:
        if add:
            table = _set_add(table, count, key)
            ref.add(key)
        else:
            _set_remove(table, count, key)
            ref.discard(key)
        assert count[0] == len(ref)
    assert set(table[table != EMPTY].tolist()) == ref


@pytest.mark.parametrize("name", NAMES)
def test_edge_cases(name):
    empty = make_broadphase(name, np.zeros(0), min_resolution=RES)
    out = empty.find_pairs(0.0, np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0))
    assert out.shape == (0, 2) and out.dtype == np.int32
    one = make_broadphase(name, np.ones(1), min_resolution=RES)
    assert one.find_pairs(0.0, np.zeros((1, 3)), np.zeros((1, 3)), np.zeros(1)).shape == (0, 2)
    # coincident centres, zero radii included: every pair touches
    radius = np.array([0.0, 0.0, 1.0, 2.0])
    bp = make_broadphase(name, radius, min_resolution=RES)
    pos = np.full((4, 3), 5.0)
    expected = np.array([(i, j) for i in range(4) for j in range(i + 1, 4)], np.int32)
    for t in (0.0, 0.0, 0.5):  # repeated time is allowed
        np.testing.assert_array_equal(bp.find_pairs(t, pos, np.zeros((4, 3)), np.zeros(4)), expected)
    # exactly touching spheres count (|d| == r_i + r_j)
    bp = make_broadphase(name, np.array([1.0, 2.0, 0.5]), min_resolution=RES)
    pos = np.array([[0.0, 0, 0], [3.0, 0, 0], [10.0, 0, 0]])
    np.testing.assert_array_equal(bp.find_pairs(0.0, pos, np.zeros((3, 3)), np.zeros(3)), [[0, 1]])
    with pytest.raises(ValueError, match="backwards"):
        bp.find_pairs(-1.0, pos, np.zeros((3, 3)), np.zeros(3))
    with pytest.raises(ValueError, match="expected pos"):
        bp.find_pairs(1.0, pos[:2], np.zeros((3, 3)), np.zeros(3))
    with pytest.raises(ValueError, match="accel_bound"):
        bp.find_pairs(1.0, pos, np.zeros((3, 3)), -np.ones(3))
    with pytest.raises(ValueError, match="out of range"):
        bp.invalidate([3])
    bp.invalidate(np.array([], int))
    bp.invalidate(np.zeros(3, bool))
    with pytest.raises(ValueError, match="mask"):
        bp.invalidate(np.zeros(2, bool))


def test_bad_construction():
    with pytest.raises(BroadPhaseNameError, match="collision.broadphase") as e:
        make_broadphase("octree", np.ones(3), min_resolution=RES)
    assert isinstance(e.value, InputError)
    with pytest.raises(ValueError, match="radius"):
        make_broadphase("space_time", -np.ones(3), min_resolution=RES)
    with pytest.raises(ValueError, match="min_resolution"):
        make_broadphase("sweep_prune", np.ones(3), min_resolution=0.0)


def test_space_time_reacts_to_invalidation_and_larger_bound():
    """A ship 'teleported' by a velocity jump (invalidated) or given a larger acceleration bound
    than predictions assumed is re-predicted: pairs appear at once, not at the old wake time."""
    radius = np.ones(3)
    bp = make_broadphase("space_time", radius, min_resolution=RES, horizon=10.0, adaptive=False)
    pos = np.array([[0.0, 0, 0], [50.0, 0, 0], [-50.0, 0, 0]])
    vel, acc = np.zeros((3, 3)), np.zeros(3)
    assert len(bp.find_pairs(0.0, pos, vel, acc)) == 0
    assert bp.last_stats["pairs_scheduled"] == 0  # nothing can move: nothing scheduled
    # ship 2 may now accelerate hard: its bound rose, so it gets a new reach ball and is
    # re-predicted without any invalidate (nothing was scheduled: the ball is its only way in)
    acc[2] = 1e6
    pos[2] = [-1.5, 0, 0]  # moved within one sample under that bound
    np.testing.assert_array_equal(bp.find_pairs(RES, pos, vel, acc), [[0, 2]])
    # ship 1 jumps next to ship 0 (a velocity jump the contract says gets invalidated)
    bp.invalidate([1])
    pos[1] = [1.5, 0, 0]
    np.testing.assert_array_equal(bp.find_pairs(2 * RES, pos, vel, acc), [[0, 1], [0, 2]])
    assert bp.last_stats["ships_reballed"] == 1  # found by re-balling ship 1 alone


def test_sweep_prune_is_coherent():
    """After the first call, small motions cost few swaps: insertion sort keeps the lists."""
    rng = np.random.default_rng(3)
    radius = rng.uniform(0.5, 1.5, 400)
    motion = RandomMotion(radius, box_for_volume_fraction(radius, 0.05), speed=1.0, accel=1.0, seed=3)
    bp = make_broadphase("sweep_prune", radius, min_resolution=RES)
    bp.find_pairs(0.0, motion.pos, motion.vel, motion.accel_bound)
    motion.step(RES)
    bp.find_pairs(motion.t, motion.pos, motion.vel, motion.accel_bound)
    assert 0 < bp.last_stats["swaps"] < 2 * len(radius)


def test_bench_reports_spread_and_fcl_ratio():
    """The bench prints every method's p99, max and max/median (wall clock and CPU time) and the
    ratio against fcl, and exits 0 when every method equals brute force."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "spaceship_sim.cli.main", "bench", "broadphase", "--n", "60",
                          "--frames", "6", "--warmup", "1", "--check-frames", "3"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("max/med") == 2  # wall clock and CPU tables
    rows = [line.split() for line in out.stdout.splitlines() if line.strip().startswith("space_time ")]
    assert len(rows) == 2 and all(len(r) >= 6 for r in rows)
    assert "NO" not in out.stdout
    fcl = "fcl DynamicAABBTree" in out.stdout
    assert ("vs fcl, wall clock: space_time" in out.stdout) == fcl


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 300), k=st.integers(0, 200))
def test_pairs_from_ids_matches_pairs_from_keys(seed, n, k):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n - 1, k)
    b = a + 1 + (rng.integers(0, 2**31, k) % (n - 1 - a))
    ids = rng.permutation(k)[:rng.integers(0, k + 1)]
    got = pairs_from_ids(a.astype(np.int32), b.astype(np.int32), ids, n)
    assert got.dtype == np.int32 and np.array_equal(got, pairs_from_keys(a[ids] * n + b[ids], n).reshape(-1, 2))
