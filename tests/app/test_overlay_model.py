"""The overlay's data model is plain Python computed from FrameStats: checked without GL."""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from spaceship_sim.app.overlay_model import SERIES, OverlayModel, PairRow, collision_changes, pair_rows
from spaceship_sim.stats import FrameStats

times = st.floats(0.0, 0.05)


@st.composite
def frame_stats(draw, frame=0):
    s = FrameStats(frame=frame, target=draw(st.sampled_from([1 / 30, 1 / 60])),
                   t_controls=draw(times), t_integrate=draw(times), t_broad=draw(times),
                   t_narrow=draw(times), t_response=draw(times), render_predicted=draw(times),
                   budget=draw(times), detection_used=draw(times),
                   candidate_pairs=draw(st.integers(0, 50)), colliding_pairs=draw(st.integers(0, 50)),
                   level_hist=tuple(draw(st.lists(st.integers(0, 9), min_size=5, max_size=5))))
    s.finish(draw(times))
    return s


@st.composite
def narrow_results(draw):
    k = draw(st.integers(0, 12))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return SimpleNamespace(pairs=rng.integers(0, 20, (k, 2)), colliding=rng.random(k) < 0.6,
                           level=rng.integers(0, 5, k), exact=rng.random(k) < 0.3,
                           separation_bound=rng.random(k) * 3)


@settings(max_examples=30, deadline=None)
@given(st.lists(frame_stats(), min_size=1, max_size=8), narrow_results())
def test_model_shows_the_latest_finished_frame(frames, narrow):
    model = OverlayModel(history=5)
    for i, s in enumerate(frames):
        s.frame = i
        model.update(s, narrow)
    last = frames[-1]
    assert model.frame == last.frame
    assert list(model.frames) == [s.frame for s in frames][-5:]  # rolling history
    expected = {"frame": last.frame_time, "detection": last.t_narrow, "response": last.t_response,
                "render": last.render_actual, "slack": last.slack}
    assert set(expected) == set(SERIES)
    for name, seconds in expected.items():
        assert math.isclose(model.series[name][-1], 1e3 * seconds, rel_tol=1e-12, abs_tol=1e-12)
        assert len(model.series[name]) == min(5, len(frames))
    assert math.isclose(model.series["slack"][-1], 1e3 * (last.target - last.frame_time), abs_tol=1e-9)
    assert model.target_ms == 1e3 * last.target and model.budget_ms == 1e3 * last.budget
    assert model.render_predicted_ms == 1e3 * last.render_predicted
    assert model.render_actual_ms == 1e3 * last.render_actual
    assert model.detection_used_ms == 1e3 * last.detection_used
    assert model.level_hist == list(last.level_hist)
    assert model.overrun == (last.frame_time > last.target)
    assert (model.candidate_pairs, model.colliding_pairs) == (last.candidate_pairs, last.colliding_pairs)
    xs, ys = model.arrays()
    assert xs.shape == ys["frame"].shape == (min(5, len(frames)),)


@settings(max_examples=30, deadline=None)
@given(narrow_results())
def test_pair_rows_are_the_colliding_pairs(narrow):
    rows = pair_rows(narrow)
    # reference: loop over every pair, keep the colliding ones
    expected = sorted((PairRow(int(a), int(b), int(lv), bool(ex), float(sb), math.nan)
                       for (a, b), hit, lv, ex, sb in zip(narrow.pairs, narrow.colliding, narrow.level,
                                                            narrow.exact, narrow.separation_bound) if hit),
                      key=lambda r: r.sep_bound)
    assert [r[:5] for r in map(_astuple, rows)] == [r[:5] for r in map(_astuple, expected)]
    assert all(math.isnan(r.distance) for r in rows)
    assert [r.sep_bound for r in rows] == sorted(r.sep_bound for r in rows)


def _astuple(r: PairRow):
    return (r.ship_a, r.ship_b, r.level, r.exact, r.sep_bound, r.distance)


def test_pair_rows_show_exact_distance_when_provided():
    narrow = SimpleNamespace(pairs=np.array([[0, 1], [2, 3]]), colliding=np.array([True, False]),
                             level=np.array([4, 1]), exact=np.array([True, False]),
                             separation_bound=np.array([0.2, 1.0]), distance=np.array([0.05, 2.0]))
    assert pair_rows(narrow) == [PairRow(0, 1, 4, True, 0.2, 0.05)]
    assert pair_rows(None) == []


def test_collision_changes_pass_only_what_changed():
    old = (30.0, 1, 4, "space_time")
    assert collision_changes(old, old) == {}
    assert collision_changes(old, (60.0, 1, 4, "space_time")) == {"target_frame_time": 1 / 60}
    assert collision_changes(old, (30.0, 2, 3, "brute_force")) == {"min_level": 2, "max_level": 3,
                                                                   "broadphase": "brute_force"}
