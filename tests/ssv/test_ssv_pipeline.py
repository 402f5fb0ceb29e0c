"""The exact level on SSV trees inside the time-critical loop: the same verdicts and triangle pairs
as the sphere-tree leaves, exact distances for pairs found apart, nothing past the deadline."""
import math

import numpy as np

from spaceship_sim.clock import TickClock
from spaceship_sim.narrowphase import TreeBank, refine_frame
from spaceship_sim.spheretree import load_or_build


def _scene(k=24, seed=11):
    """A ships' worth of lamps (model 2 of conftest.models) in k pairs, about half intersecting."""
    from scipy.spatial.transform import Rotation
    rng = np.random.default_rng(seed)
    T = np.tile(np.eye(4), (2 * k, 1, 1))
    T[:, :3, :3] = Rotation.random(2 * k, random_state=seed).as_matrix()
    d = rng.normal(size=(k, 3))
    T[1::2, :3, 3] = d / np.linalg.norm(d, axis=1, keepdims=True) * rng.uniform(1, 9, (k, 1))
    return T, np.arange(2 * k).reshape(k, 2)


def test_ssv_exact_level_matches_the_leaves_and_measures_apart_pairs(models):
    from spaceship_sim.ssv.exact import SSVExact
    lamp = SSVExact([models[2]], cache=False)
    bank = TreeBank.from_trees([load_or_build(models[2], method="medial")])
    T, pairs = _scene()
    ids = np.zeros(len(T), np.int64)
    leaves = refine_frame(bank, ids, T, pairs, deadline=math.inf, min_level=0)
    got = refine_frame(bank, ids, T, pairs, deadline=math.inf, min_level=0, detector=lamp)
    assert np.array_equal(got.colliding, leaves.colliding) and np.array_equal(got.certain, leaves.certain)
    assert 0 < got.colliding.sum() < len(pairs)
    for a, b in zip(got.tri_pairs, leaves.tri_pairs):
        assert {tuple(p) for p in a.tolist()} == {tuple(p) for p in b.tolist()}
    want = lamp.distance(ids[:len(pairs)], ids[:len(pairs)], T[0::2], T[1::2]).distance
    assert np.array_equal(got.distance[~got.colliding], want[~got.colliding])
    assert np.all(got.distance[got.colliding] == 0)
    assert np.all(np.isnan(leaves.distance[~leaves.colliding]))  # the leaves measure no distance


def test_past_the_deadline_no_distance_and_no_exact_level_beyond_min_level(models):
    from spaceship_sim.ssv.exact import SSVExact
    lamp = SSVExact([models[2]], cache=False)
    bank = TreeBank.from_trees([load_or_build(models[2], method="medial")])
    T, pairs = _scene()
    clock = TickClock(tick=1.0)  # every reading a second later: the deadline is always past
    r = refine_frame(bank, np.zeros(len(T), np.int64), T, pairs, deadline=clock() + 0.5, min_level=1,
                     detector=lamp, clock=clock)
    assert np.all(np.isnan(r.distance[~r.colliding]))  # no time: measured nothing, claimed nothing
    assert np.all(r.level[r.colliding] >= 1) and not r.certain[r.colliding].any()


def test_distances_of_pairs_found_apart_stop_where_the_narrowing_must_and_leave_the_verdicts(models):
    """The exact distance of pairs found apart (by the spheres or at the triangles) is work a frame can
    do without: it ends at tighten_until (the lateness learned left free), as the narrowing does; the
    verdicts are those of a call given the whole deadline."""
    from spaceship_sim.ssv.exact import SSVExact
    lamp = SSVExact([models[2]], cache=False)
    bank = TreeBank.from_trees([load_or_build(models[2], method="medial")])
    T, pairs = _scene()
    ids = np.zeros(len(T), np.int64)
    runs = {}
    for until in (math.inf, 0.0):
        clock = TickClock(1e-6)
        start = clock()
        runs[until] = refine_frame(bank, ids, T, pairs, deadline=start + 1.0, min_level=0, detector=lamp, clock=clock,
                                   tighten_until=start + until)
    whole, short = runs[math.inf], runs[0.0]
    for name in ("colliding", "certain", "level"):
        assert np.array_equal(getattr(short, name), getattr(whole, name)), name
    apart = ~whole.colliding
    assert np.all(np.isfinite(whole.distance[apart]))
    assert np.all(np.isnan(short.distance[apart]))
    assert (apart & (whole.level == whole.level.max())).any()  # some were found apart at the triangles
