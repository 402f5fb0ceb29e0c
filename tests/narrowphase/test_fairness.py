"""Round-robin across samples: the pairs least refined so far go first next time, so under a
budget that fits a third of the pairs, every pair gets deeper within a few samples."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from spaceship_sim.clock import TickClock
from spaceship_sim.narrowphase import TreeBank, refine_frame
from spaceship_sim.narrowphase.fairness import FairOrder

N_PAIRS = 24
BUDGET_TICKS = 3  # clock reads per sample: level 1 is forced, level 2 fits a third of the pairs


@pytest.fixture(scope="module")
def scene(meshes):
    from spaceship_sim.spheretree import build_tree
    tree = build_tree(*meshes["torus"], method="octree", branching=8, depth=3)
    rng = np.random.default_rng(2)
    T = np.tile(np.eye(4), (2 * N_PAIRS, 1, 1))
    T[:, 0, 3] = np.repeat(np.arange(N_PAIRS) * 10.0, 2)   # pairs far from each other
    T[1::2, 1, 3] = rng.uniform(0.05, 0.3, N_PAIRS)       # each pair deeply overlapping
    pairs = np.arange(2 * N_PAIRS).reshape(-1, 2)
    return TreeBank.from_trees([tree]), np.zeros(2 * N_PAIRS, np.int64), T, pairs


def deepest_levels(scene, fair: bool, samples: int) -> np.ndarray:
    """Deepest level each pair reached over `samples` samples of the same frame."""
    bank, model_id, T, pairs = scene
    order_keeper, clock = FairOrder(), TickClock(1.0)
    best = np.zeros(len(pairs), np.int64)
    for _ in range(samples):
        order = order_keeper.order(pairs, len(T)) if fair else np.arange(len(pairs))
        r = refine_frame(bank, model_id, T, pairs[order], deadline=clock() + BUDGET_TICKS, clock=clock,
                         min_level=1)
        order_keeper.record(r.pairs, r.level, len(T))
        best[order] = np.maximum(best[order], r.level)
        assert r.colliding.all()
    return best


def test_budget_fits_about_a_third_of_the_pairs(scene):
    once = deepest_levels(scene, fair=False, samples=1)
    assert 0.2 < np.mean(once >= 2) < 0.5


def test_fair_order_brings_every_pair_deeper_within_three_samples(scene):
    assert (deepest_levels(scene, fair=True, samples=3) >= 2).all()


def test_fixed_order_starves_the_same_pairs(scene):
    assert (deepest_levels(scene, fair=False, samples=10) < 2).any()


def test_refine_frame_given_the_order_equals_arranging_the_pairs_first(scene):
    """refine_frame(fair=...) — its kernels order the rows and record the levels — gives each pair
    the level that arranging the pairs by FairOrder.order and recording afterwards gives, sample
    after sample as pairs come and go, answers in the given order, and leaves the same record."""
    bank, model_id, T, pairs = scene
    inside, outside = FairOrder(), FairOrder()
    clock_in, clock_out = TickClock(1.0), TickClock(1.0)
    rng = np.random.default_rng(4)
    cut = 0
    for _ in range(6):
        some = pairs[rng.random(len(pairs)) < 0.8]
        got = refine_frame(bank, model_id, T, some, deadline=clock_in() + BUDGET_TICKS, clock=clock_in,
                           min_level=1, fair=inside)
        order = outside.order(some, len(T))
        want = refine_frame(bank, model_id, T, some[order], deadline=clock_out() + BUDGET_TICKS, clock=clock_out,
                            min_level=1)
        outside.record(want.pairs, want.level, len(T))
        assert np.array_equal(got.pairs, some)
        np.testing.assert_array_equal(got.level[order], want.level)
        np.testing.assert_array_equal(inside.keys, outside.keys)
        np.testing.assert_array_equal(inside.served, outside.served)
        cut += len(set(got.level.tolist())) > 1  # the deadline cut a level: the order mattered
    assert cut >= 3


def test_fair_order_puts_the_least_served_pairs_first():
    f = FairOrder()
    f.record(np.array([[0, 1], [2, 3], [4, 5]]), np.array([3, 1, 2]), 6)
    f.record(np.array([[2, 3], [4, 5]]), np.array([2, 2]), 6)  # (0, 1) left the broad phase: forgotten
    pairs = np.array([[2, 3], [0, 1], [4, 5], [1, 2]])
    assert f.service(pairs, 6).tolist() == [3, 0, 4, 0]
    assert f.order(pairs, 6).tolist() == [1, 3, 0, 2]


def test_the_search_visits_rows_in_the_stable_order_on_many_ties():
    from spaceship_sim.narrowphase.kernels import _visiting_order
    rng = np.random.default_rng(3)
    f = FairOrder()
    pairs = np.array([(a, b) for a in range(12) for b in range(a + 1, 12)])
    f.record(pairs, rng.integers(0, 3, len(pairs)), 12)
    mixed = pairs[rng.permutation(len(pairs))]
    got = np.empty(len(mixed), np.int64)
    _visiting_order(mixed, f.kernel_args(12), got)
    assert np.array_equal(got, f.order(mixed, 12))


class DictOrder:
    """The reference: a dict of pair key -> refinement had."""

    def __init__(self):
        self.served = {}

    def service(self, pairs, n):
        return np.array([self.served.get(a * n + b, 0) for a, b in pairs.tolist()], np.int64)

    def record(self, pairs, levels, n):
        self.served = {a * n + b: self.served.get(a * n + b, 0) + int(level)
                       for (a, b), level in zip(pairs.tolist(), levels)}


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 40), samples=st.integers(1, 6))
def test_compiled_order_matches_the_dict_reference(seed, n, samples):
    rng = np.random.default_rng(seed)
    every = np.array([(a, b) for a in range(n) for b in range(a + 1, n)], np.int32)
    fast, ref = FairOrder(), DictOrder()
    for _ in range(samples):
        pairs = every[rng.random(len(every)) < rng.uniform(0.1, 0.9)]
        pairs = pairs[rng.permutation(len(pairs))]
        assert fast.service(pairs, n).tolist() == ref.service(pairs, n).tolist()
        levels = rng.integers(0, 5, len(pairs))
        fast.record(pairs, levels, n)
        ref.record(pairs, levels, n)
