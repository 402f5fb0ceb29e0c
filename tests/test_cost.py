"""The cost model the time-critical loop plans with: robust to a lone outlier, follows a sustained
change, and probes an estimate that would otherwise lock its work out."""
import pytest

from spaceship_sim.cost import CostModel


def test_prior_until_measured_then_rate_times_units():
    m = CostModel(2.0)
    assert m.predict(3) == 6.0
    m.observe(1.0, units=4)
    assert m.rate() == 0.25 and m.predict(8) == 2.0


@pytest.mark.parametrize("first", [True, False])
def test_a_lone_1000x_outlier_is_forgotten_after_one_ordinary_measurement(first):
    m = CostModel(1.0, window=5)
    if not first:
        m.observe(1.0)
    m.observe(1000.0)
    m.observe(1.0)
    assert m.rate() == 1.0


def test_a_sustained_3x_slowdown_is_followed_within_three_measurements():
    m = CostModel(1.0, window=5)
    for _ in range(5):
        m.observe(1.0)
    seen = []
    for _ in range(5):
        m.observe(3.0)
        seen.append(m.rate())
    assert seen[:2] == [1.0, 1.0] and seen[2:] == [3.0, 3.0, 3.0]


def test_a_high_quantile_counts_lateness_in_a_quarter_of_the_window():
    m = CostModel(0.0, window=8, quantile=0.75)
    for late in [False] * 6 + [True] * 2:
        m.observe(0.035 if late else 0.030)
    assert m.rate() == 0.030
    m.observe(0.035)  # three late in the window of 8
    assert m.rate() == 0.035


def test_a_probe_is_due_after_refusals_in_a_row_and_a_measurement_resets_it():
    m = CostModel(1.0, probe_after=3)
    for _ in range(2):
        m.refused()
    assert not m.probe_due
    m.refused()
    assert m.probe_due
    m.observe(1.0)
    assert not m.probe_due


@pytest.mark.parametrize("kw", [dict(window=0), dict(quantile=1.5), dict(probe_after=0)])
def test_bad_parameters_are_refused(kw):
    with pytest.raises(ValueError, match="CostModel"):
        CostModel(1.0, **kw)


def test_a_caller_may_read_another_quantile_of_the_same_window():
    m = CostModel(0.0, window=5, quantile=0.5)
    for x in (3.0, 1.0, 5.0, 2.0, 4.0):
        m.observe(x)
    assert (m.rate(), m.rate(0.0), m.rate(0.75), m.rate(1.0)) == (3.0, 1.0, 4.0, 5.0)
    assert CostModel(7.0).rate(1.0) == 7.0  # the prior before any measurement, whatever the quantile
