"""Sweep-and-prune with fixed cubes and dynamic boxes: boxes contain their polytope every frame
(dynamic ones exactly tight), and the incremental active list equals brute-force box pairs."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st
from scipy.spatial.transform import Rotation

from spaceship_sim.convex.polytope import pack, random_polytope
from spaceship_sim.convex.sweep import (DynamicBoxes, SweepAndPrune, box_pairs_brute, fixed_cubes,
                                        sorted_pairs)


def world_extent(s, rot, pos, b):
    w = s.vertices[s.vert_range[b]:s.vert_range[b + 1]] @ rot[b].T + pos[b]
    return w.min(axis=0), w.max(axis=0)


def tumble(seed, n, faces, spin, frames):
    """Yield (set, rot, pos) for n random polytopes in a box, tumbling and drifting."""
    rng = np.random.default_rng(seed)
    s = pack([random_polytope(faces, rng) for _ in range(n)])
    rot = Rotation.random(n, random_state=rng).as_matrix()
    pos = rng.uniform(0, 2.5 * n ** (1 / 3), (n, 3))
    step = Rotation.from_rotvec(rng.normal(size=(n, 3)) * spin).as_matrix()
    vel = rng.normal(size=(n, 3)) * 0.1
    for _ in range(frames):
        rot = np.einsum("bij,bjk->bik", rot, step)
        pos = pos + vel
        yield s, rot, pos


@settings(max_examples=12, deadline=None)
@given(st.integers(2, 60), st.sampled_from([8, 36, 100]), st.floats(0.0, 0.6), st.integers(0, 2**32 - 1))
def test_dynamic_boxes_are_tight_and_pairs_equal_brute_force(n, faces, spin, seed):
    boxes = sweep = None
    for s, rot, pos in tumble(seed, n, faces, spin, 25):
        boxes = boxes or DynamicBoxes(s, rot)
        sweep = sweep or SweepAndPrune(n)
        lo, hi = boxes.boxes(rot, pos)
        for b in range(n):
            wlo, whi = world_extent(s, rot, pos, b)
            assert (lo[b] < wlo).all() and (whi < hi[b]).all()          # contains, padded
            assert np.allclose(lo[b], wlo, atol=1e-5) and np.allclose(hi[b], whi, atol=1e-5)  # tight
        assert np.array_equal(sorted_pairs(sweep.update(lo, hi)), box_pairs_brute(lo, hi))


@settings(max_examples=8, deadline=None)
@given(st.integers(2, 80), st.integers(0, 2**32 - 1))
def test_fixed_cubes_contain_and_pairs_equal_brute_force(n, seed):
    sweep = SweepAndPrune(n)
    seen = 0
    for s, rot, pos in tumble(seed, n, 20, 0.3, 25):
        lo, hi = fixed_cubes(s.radius, pos)
        for b in range(n):
            wlo, whi = world_extent(s, rot, pos, b)
            assert (lo[b] < wlo).all() and (whi < hi[b]).all()
        pairs = sweep.update(lo, hi)
        assert np.array_equal(sorted_pairs(pairs), box_pairs_brute(lo, hi))
        seen += len(pairs)
    assert n < 10 or seen > 0  # dense enough that pairs come and go


def test_features_follow_their_pair_and_new_pairs_start_cold():
    sweep = SweepAndPrune(3)
    lo = np.array([[0.0, 0, 0], [0.5, 0, 0], [5, 5, 5]])
    hi = lo + 1
    assert sorted_pairs(sweep.update(lo, hi)).tolist() == [[0, 1]]
    assert sweep.feats.tolist() == [[-1, -1]]
    sweep.feats[0] = (7, 8)                      # the exact test's answer, kept for next frame
    lo[2] = (0.2, 0.2, 0.2)
    hi = lo + 1
    assert sorted_pairs(sweep.update(lo, hi)).tolist() == [[0, 1], [0, 2], [1, 2]]
    feats = {tuple(p): tuple(f) for p, f in zip(sweep.pairs.tolist(), sweep.feats.tolist())}
    assert feats == {(0, 1): (7, 8), (0, 2): (-1, -1), (1, 2): (-1, -1)}
    lo[1] = (3, 0, 0)
    hi = lo + 1
    assert sorted_pairs(sweep.update(lo, hi)).tolist() == [[0, 2]]


def test_a_full_active_list_grows_and_keeps_the_listed_pairs_features():
    n = 40                                       # 780 pairs at once: past the list's room for n
    lo = np.column_stack([np.arange(n) * 10.0, np.zeros(n), np.zeros(n)])
    lo[1] = (0.5, 0, 0)
    sweep = SweepAndPrune(n)
    assert sorted_pairs(sweep.update(lo, lo + 1)).tolist() == [[0, 1]]
    sweep.feats[0] = (7, 8)
    lo = np.random.default_rng(3).uniform(0, 0.5, (n, 3))  # every box now overlaps every other
    pairs = sweep.update(lo, lo + 1)
    assert len(pairs) == n * (n - 1) // 2 > len(lo)
    assert np.array_equal(sorted_pairs(pairs), box_pairs_brute(lo, lo + 1))
    feats = {tuple(p): tuple(f) for p, f in zip(pairs.tolist(), sweep.feats.tolist())}
    assert feats.pop((0, 1)) == (7, 8) and set(feats.values()) == {(-1, -1)}
    lo[:, 0] += 10.0 * np.arange(n)              # apart again: the list empties
    assert len(sweep.update(lo, lo + 1)) == 0
