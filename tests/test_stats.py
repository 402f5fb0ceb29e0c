import math

from spaceship_sim.stats import FrameStats, MovingAverage


def test_moving_average_predicts_mean_of_last_k():
    p = MovingAverage(3, initial=0.01)
    assert p.predict() == 0.01
    for t in [1.0, 2.0, 3.0, 4.0]:
        p.record(t)
    assert p.predict() == 3.0


def test_finish_derives_slack_and_overrun():
    s = FrameStats(target=0.033, t_integrate=0.01, t_narrow=0.02)
    s.finish(0.005)
    assert math.isclose(s.frame_time, 0.035) and s.overrun and math.isclose(s.slack, -0.002)
    row = s.row(max_level=4)
    assert row["level_4"] == 0 and "extra" not in row
