"""The overlay's data model is plain Python computed from FrameStats: checked without GL."""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spaceship_sim.app.camera import Camera, project
from spaceship_sim.app.overlay_model import (COLUMNS, interval_text, MEDIAN_EVERY, SERIES, OverlayModel, PairRow, collision_changes, pair_rows,
                                            panel_rects, sort_rows)
from spaceship_sim.sim.stats import FrameStats

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
    bound = rng.random(k) * 3
    return SimpleNamespace(pairs=rng.integers(0, 20, (k, 2)), colliding=rng.random(k) < 0.6,
                           level=rng.integers(0, 5, k), certain=rng.random(k) < 0.3,
                           separation_bound=bound, lower=bound * rng.random(k), upper=bound)


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
    # a verdict-only frame tallies no interval: the line shows the intervals of the pairs in the table
    widths = narrow.upper - narrow.lower
    if math.isnan(last.interval_width_median) and len(widths):
        assert model.interval_width == (pytest.approx(np.quantile(widths, 0.5)), pytest.approx(np.quantile(widths, 0.9)))
    elif math.isnan(last.interval_width_median):
        assert all(math.isnan(w) for w in model.interval_width)


@settings(max_examples=30, deadline=None)
@given(narrow_results())
def test_pair_rows_are_the_colliding_pairs(narrow):
    rows = pair_rows(narrow)
    # reference: loop over every pair, keep the colliding ones
    expected = sorted((PairRow(int(a), int(b), int(lv), bool(ex), float(sb), math.nan)
                       for (a, b), hit, lv, ex, sb in zip(narrow.pairs, narrow.colliding, narrow.level,
                                                            narrow.certain, narrow.separation_bound) if hit),
                      key=lambda r: r.sep_bound)
    assert [r[:5] for r in map(_astuple, rows)] == [r[:5] for r in map(_astuple, expected)]
    assert all(math.isnan(r.distance) for r in rows)
    assert [r.sep_bound for r in rows] == sorted(r.sep_bound for r in rows)


def test_the_pair_table_shows_the_sample_it_is_given_before_the_frames_stats():
    """The app hands the overlay the sample its scene draws before drawing the panels (the frame's
    stats come after the render): the table and its count are that sample's, at once."""
    narrow = SimpleNamespace(pairs=np.array([[0, 1], [2, 3], [4, 5]]), colliding=np.array([True, False, True]),
                             level=np.array([4, 1, 2]), certain=np.array([True, False, False]),
                             separation_bound=np.array([0.0, np.inf, 0.3]), distance=np.full(3, np.nan),
                             lower=np.array([0.0, 1.0, 0.0]), upper=np.array([0.0, 2.0, 0.3]))
    model = OverlayModel()
    model.show_sample(narrow)
    assert model.candidates_now == 3 and [(r.ship_a, r.ship_b) for r in model.pairs] == [(0, 1), (4, 5)]
    assert model.frames_timed == 0
    model.show_sample(None)
    assert model.candidates_now == 0 and model.pairs == []


def _astuple(r: PairRow):
    return (r.ship_a, r.ship_b, r.level, r.certain, r.sep_bound, r.distance)


def test_pair_rows_show_exact_distance_when_provided():
    narrow = SimpleNamespace(pairs=np.array([[0, 1], [2, 3]]), colliding=np.array([True, False]),
                             level=np.array([4, 1]), certain=np.array([True, False]),
                             separation_bound=np.array([0.2, np.inf]), distance=np.array([0.05, 2.0]),
                             lower=np.array([0.05, 2.0]), upper=np.array([0.05, 2.0]))
    # the pair found apart shows too: its exact distance was measured (collision.exact_method = "ssv")
    assert pair_rows(narrow) == [PairRow(0, 1, 4, True, 0.2, 0.05, 0.05, 0.05),
                                 PairRow(2, 3, 1, False, np.inf, 2.0, 2.0, 2.0)]
    narrow.distance = np.array([0.05, np.nan])  # not measured: colliding pairs only
    assert pair_rows(narrow) == [PairRow(0, 1, 4, True, 0.2, 0.05, 0.05, 0.05)]
    assert pair_rows(None) == []


def test_collision_changes_pass_only_what_changed():
    old = (30.0, 1, 4, "space_time")
    assert collision_changes(old, old) == {}
    assert collision_changes(old, (60.0, 1, 4, "space_time")) == {"target_frame_time": 1 / 60}
    assert collision_changes(old, (30.0, 2, 3, "brute_force")) == {"min_level": 2, "max_level": 3,
                                                                   "broadphase": "brute_force"}


def test_running_share_within_target_and_median_separation_bound():
    model = OverlayModel()
    assert model.accuracy_lines() == ("frames within target -", "median separation bound - (no collision yet)")
    # (frame time, the frame's colliding verdicts' bounds [m]); every pair of two ships of radius 4
    frames = [(0.02, []), (0.05, [0.4, 0.0]), (0.01, [0.1]), (0.03, [0.2, 3.0, 0.3])]
    for i, (frame_time, bounds) in enumerate(frames):
        b = np.array(bounds)
        s = FrameStats(frame=i, target=1 / 30, sep_bounds=b, sep_bounds_rel=b / 4.0,
                       level_hist=(0, len(b), 0), sep_bound_min=b.min() if len(b) else math.nan)
        s.finish(frame_time)  # render time only: frame time = that
        model.update(s)
    assert model.frames_timed == 4 and model.within_target == 0.75  # 50 ms is over 33 ms
    # the median is refreshed every MEDIAN_EVERY frames: here it is still the one of frame 1's verdicts
    assert model.median_sep_bound == pytest.approx(0.2, rel=1e-3) and model.accuracy.verdicts == 6
    for i in range(4, MEDIAN_EVERY + 1):  # frames without a collision, up to the next refresh
        s = FrameStats(frame=i, target=1 / 30)
        s.finish(0.01)
        model.update(s)
    assert model.median_sep_bound == pytest.approx(0.25, rel=1e-3)  # np.median of the six bounds
    assert model.median_sep_bound_rel == pytest.approx(0.0625, rel=1e-3)
    assert model.accuracy_lines() == (f"frames within target {MEDIAN_EVERY}/{MEDIAN_EVERY + 1} (90.9%)",
                                      "median separation bound 0.250 m = 0.06 radius")
    assert math.isnan(OverlayModel().within_target) and math.isnan(OverlayModel().median_sep_bound)


def test_the_bound_now_is_the_smallest_of_the_colliding_pairs_the_table_shows():
    model = OverlayModel()
    model.pairs = [PairRow(4, 6, 4, True, math.inf, 0.01, 0.01, 0.01)]  # measured apart: not colliding
    assert math.isnan(model.sep_bound_now)
    model.pairs += [PairRow(0, 2, 1, False, 0.8, math.nan), PairRow(1, 5, 2, False, 0.3, math.nan)]
    assert model.sep_bound_now == 0.3


def test_table_sorts_by_any_column_and_shows_the_interval_for_the_distance():
    rows = [PairRow(3, 7, 4, True, 0.0, math.nan), PairRow(0, 2, 1, False, 0.8, math.nan),
            PairRow(1, 5, 2, False, 0.3, math.nan)]
    assert [c[0] for c in COLUMNS] == ["ships", "level", "certain", "sep. bound [m]", "interval [m]"]
    assert [r.ship_a for r in sort_rows(rows, 0)] == [0, 1, 3]
    assert [r.level for r in sort_rows(rows, 1, descending=True)] == [4, 2, 1]
    assert [r.sep_bound for r in sort_rows(rows, 3)] == [0.0, 0.3, 0.8]
    assert [c[2](rows[0]) for c in COLUMNS] == ["3-7", "4", "yes", "0.000", "[0.000, -]"]
    measured = PairRow(4, 6, 4, True, math.inf, 0.01, 0.01, 0.01)  # an apart pair's exact distance
    assert COLUMNS[4][2](measured) == "= 0.010"


def test_the_interval_column_reads_as_a_bracket_or_one_exact_number():
    assert interval_text(0.1, 0.25) == "[0.100, 0.250]"
    assert interval_text(0.2, 0.2) == "= 0.200"
    assert interval_text(1.0, math.inf) == "[1.000, -]"


def chase_ship_box(width: int, height: int) -> tuple[float, float, float, float]:
    """Pixel box (x0, y0, x1, y1) of the chase camera's ship: its bounding sphere projected."""
    camera = Camera("chase")
    camera.update(np.zeros((1, 3)), np.array([[1.0, 0, 0, 0]]), np.array([5.0]), 100.0, 1 / 30)
    directions = np.random.default_rng(0).normal(size=(4000, 3))
    surface = 5.0 * directions / np.linalg.norm(directions, axis=1, keepdims=True)
    px, _ = project(surface, camera.projection(width / height) @ camera.view(), width, height)
    return (*px.min(0), *px.max(0))


def test_panels_fit_the_window_without_overlapping_each_other_or_the_chase_ship():
    for width, height in ((1280, 720), (800, 600), (1920, 1080), (1024, 768), (1600, 900)):
        rects = panel_rects(width, height)
        sx0, sy0, sx1, sy1 = chase_ship_box(width, height)
        assert sx1 - sx0 > 0.3 * height  # the ship's box is big enough to mean something
        for name, (x, y, w, h) in rects.items():
            assert 0 <= x and x + w <= width and 0 <= y and y + h <= height, (name, width, height)
            assert w >= 250 and h >= 200, (name, width, height)  # room for the panel's content
            assert x + w < sx0 or x > sx1 or y + h < sy0 or y > sy1, (name, width, height)
        boxes = list(rects.values())
        for i, (x, y, w, h) in enumerate(boxes):
            for X, Y, W, H in boxes[i + 1:]:
                assert x + w <= X or X + W <= x or y + h <= Y or Y + H <= y, (width, height)


def test_the_machine_line_shows_load_and_preemptions():
    from spaceship_sim.app.overlay_model import machine_line

    assert machine_line([1.5, 1.0, 0.5], 7, 2) == "machine load 1.50, preempted 7 times (2 late)"
    assert machine_line(None, 0, 0) == "machine load -, preempted 0 times (0 late)"


def test_the_overlay_counts_the_frames_only_the_os_made_late():
    from spaceship_sim.app.overlay_model import OverlayModel
    from spaceship_sim.sim.stats import FrameStats

    model = OverlayModel()
    for off_core in (0.004, 0.001, 0.0):  # each frame 2 ms over a 30 ms target
        s = FrameStats(target=0.030, t_integrate=0.005, t_off_core=off_core)
        s.finish(0.027)
        model.update(s)
    assert model.frames_off_core == 1


def test_the_interval_line_gives_the_frames_median_and_p90_width():
    from spaceship_sim.app.overlay_model import interval_line

    assert interval_line(0.1234, 0.5) == "separation intervals: width median 0.123 m, p90 0.500 m"
    assert interval_line(math.nan, math.nan) == "separation intervals: - (no pair with a finite interval)"
