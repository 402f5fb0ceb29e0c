import math

import numpy as np
import pytest

from spaceship_sim.sim.stats import FixedCost, FrameStats, Quantiles


def test_fixed_cost_predicts_the_median_sample_of_the_last_k_frames():
    p = FixedCost(3)
    assert p.predict(samples_left=2) == 0.0
    for t in [1.0, 2.0, 30.0, 4.0]:  # per frame of 2 samples: response+other t/2, every stage 2t/2
        p.record(FrameStats(samples=2, t_response=t / 2, t_other=t / 2, t_integrate=t / 2, t_broad=t / 2))
    assert p.predict(samples_left=3) == pytest.approx(2.0 + 2 * 4.0)


def test_finish_derives_slack_and_overrun():
    s = FrameStats(target=0.033, t_integrate=0.01, t_narrow=0.02)
    s.finish(0.005)
    assert math.isclose(s.frame_time, 0.035) and s.overrun and math.isclose(s.slack, -0.002)
    row = s.row(max_level=4)
    assert row["level_4"] == 0 and "extra" not in row


def test_row_leaves_separation_bounds_empty_without_a_colliding_pair():
    row = FrameStats().row(max_level=2)
    assert row["sep_bound_min"] == "" and row["sep_bound_median"] == ""
    row = FrameStats(sep_bound_min=0.5, sep_bound_median=1.5).row(max_level=2)
    assert row["sep_bound_min"] == 0.5 and row["sep_bound_median"] == 1.5


@pytest.mark.parametrize("values", [
    np.random.default_rng(1).lognormal(-1, 2, 20_000),       # frame times over decades
    np.random.default_rng(2).normal(0.5, 3.0, 5_001),        # slack: both signs
    np.random.default_rng(3).exponential(1.0, 7),            # few values: interpolation between bins
    np.r_[np.zeros(50), np.random.default_rng(4).uniform(0, 3, 50)],  # separation bounds: many exact 0
])
def test_quantiles_agree_with_numpy_within_the_resolution(values):
    q = Quantiles()
    for x in values:
        q.add(float(x))
    ordered = np.sort(values)
    for p in (0.0, 0.01, 0.25, 0.5, 0.9, 0.99, 1.0):
        rank = p * (len(values) - 1)
        scale = max(abs(ordered[math.floor(rank)]), abs(ordered[math.ceil(rank)]))
        assert abs(q.quantile(p) - np.percentile(values, 100 * p)) <= Quantiles.RESOLUTION * scale + Quantiles.TINY
    assert q.max == values.max() and q.min == values.min() and q.count == len(values)
    assert math.isclose(q.mean, values.mean(), rel_tol=1e-9, abs_tol=1e-12)


def test_quantiles_memory_is_bounded_by_the_bins_not_the_values():
    q = Quantiles()
    for x in np.random.default_rng(5).uniform(1.0, 1.5, 100_000):
        q.add(float(x))
    # 1..1.5 spans log(1.5) / log(1.001 / 0.999) = 203 bins of relative width 0.2%
    assert len(q.bins) <= 204 and q.count == 100_000
    assert math.isnan(Quantiles().quantile(0.5))


def test_interval_widths_tallied_per_frame_infinite_ones_left_out():
    s = FrameStats()
    s.add_intervals(np.array([0.1, np.inf, 0.3]))
    s.add_intervals(np.array([0.5]))
    assert s.interval_width_median == pytest.approx(0.3) and s.interval_width_p90 == pytest.approx(0.46)
    row = FrameStats().row(max_level=2)
    assert row["interval_width_median"] == "" and "interval_widths" not in row
