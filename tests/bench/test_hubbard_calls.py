"""The per-call histograms of bench hubbard from a synthetic call log (timing enters only through
the log), the call log of a real run on a TickClock, and the busy processes of --cpu-load."""
import math

import numpy as np
import pytest

from spaceship_sim.bench import hubbard_calls
from spaceship_sim.bench.cpu_load import cpu_load


def _log():
    """Four calls, two levels (level 2 = exact). Sphere-tree times 1, 2, 4, 8 ms at level 1 and
    10 ms at level 2; BSP 10 ms and fcl 1 ms per call. Bounds as fractions of radius 2 m."""
    return {"t_level": np.array([[1e-3, 1e-2], [2e-3, 1e-2], [4e-3, 1e-2], [8e-3, 1e-2]]),
            "bound": np.array([[0.2, 0.0], [0.5, np.nan], [1.9, 0.0], [np.nan, np.nan]]),
            "radius": np.full(4, 2.0), "t_bsp": np.full(4, 1e-2), "t_fcl": np.full(4, 1e-3),
            "hit_bsp": np.array([True, False, True, False])}


def _counts(rows, histogram, baseline, level):
    sel = [r for r in rows if r["histogram"] == histogram and r["baseline"] == baseline and r["level"] == level]
    return [r["lo"] for r in sel], [r["calls"] for r in sel]


def test_speedup_histograms_count_each_call_in_its_bin():
    rows = hubbard_calls.call_histograms(_log(), speedup_edges=np.array([0.01, 0.5, 1.0, 2.0, 100.0]),
                                         separation_edges=np.array([0.0, 0.25, 0.5, 1.0]))
    # vs BSP at level 1: speedups 10, 5, 2.5, 1.25 -> all in [2, 100) but 1.25 in [1, 2)
    assert _counts(rows, "speedup", "bsp", 1)[1] == [0, 0, 1, 3]
    # vs fcl at level 1: 1, 0.5, 0.25, 0.125 -> [1, 2): 1; [0.5, 1): 1; [0.01, 0.5): 2
    assert _counts(rows, "speedup", "fcl", 1)[1] == [2, 1, 1, 0]
    # the exact level (10 ms for every call) against BSP: speedup exactly 1, four times
    assert _counts(rows, "speedup", "bsp", 2)[1] == [0, 0, 4, 0]
    assert {r["baseline"] for r in rows if r["histogram"] == "speedup"} == {"bsp", "fcl"}


def test_separation_histograms_count_colliding_calls_as_fractions_of_the_radius():
    rows = hubbard_calls.call_histograms(_log(), speedup_edges=np.array([0.1, 10.0]),
                                         separation_edges=np.array([0.0, 0.25, 0.5, 1.0]))
    # level 1: 0.1, 0.25, 0.95 (calls 0-2; call 3 is apart) -> [0, .25): 1, [.25, .5): 1, [.5, 1]: 1
    assert _counts(rows, "separation", "", 1)[1] == [1, 1, 1]
    # level 2: two calls touching (0), two apart
    assert _counts(rows, "separation", "", 2)[1] == [2, 0, 0]
    # out of range values land in the end bins: 25 (call 0) with 0.95 in [0.5, 1], 0.25 in [0, 0.5)
    far = _log()
    far["bound"][0, 0] = 50.0
    assert _counts(hubbard_calls.call_histograms(far, np.array([0.1, 10.0]), np.array([0.0, 0.5, 1.0])),
                   "separation", "", 1)[1] == [1, 2]


def test_call_summary_medians_and_faster_shares():
    rows = hubbard_calls.call_summary(_log())
    assert rows[0]["speedup_median_bsp"] == pytest.approx((5 + 2.5) / 2)
    assert rows[0]["faster_bsp"] == 1.0 and rows[0]["faster_fcl"] == 0.0
    assert rows[0]["colliding"] == 3 and rows[0]["separation_median"] == pytest.approx(0.25)
    assert rows[1]["colliding"] == 2 and rows[1]["separation_median"] == 0.0
    assert rows[1]["faster_bsp"] == 0.0  # equal times are not faster


def test_spread_keeps_ends_and_order():
    assert hubbard_calls.spread(list(range(10)), 3) == [0, 4, 9]  # round(4.5) -> 4 (to even)
    assert hubbard_calls.spread([1, 2], 5) == [1, 2]


def test_call_log_answers_like_the_exact_baseline():
    """Calls of lamp and fighter pairs at random deep poses: the exact level's verdict equals BSP's
    on every call, the bound is 0 exactly where they collide, a pair apart at a level stays apart
    below it, and the timings are the clock's."""
    from spaceship_sim.bench.bench_narrowphase import random_poses
    from spaceship_sim.clock import TickClock
    from spaceship_sim.config import config_from_dict
    from spaceship_sim.registry import EXACT_METHODS
    from spaceship_sim.sim.world import World

    cfg = config_from_dict({"ships": {"count": 2, "user_model": "lamp", "models": ["fighter"]}})
    world = World.from_config(cfg, warm=False)
    rng = np.random.default_rng(4)
    frames = [(np.array([i % 2, i // 2 % 2]), random_poses(rng, 1, 9.0), np.array([[0, 1]])) for i in range(40)]
    radii = np.array([m.bounding_radius for m in world.models])
    log = hubbard_calls.record_calls(world.bank, radii, frames, {"bsp": EXACT_METHODS["bsp"](world.models)},
                                     all_contacts=False, max_calls=30, repeat=1, copies=4, clock=TickClock(1e-5),
                                     progress=False)
    n, L = log["t_level"].shape
    assert L == world.bank.max_level and 0 < n <= 30
    exact_hit = ~np.isnan(log["bound"][:, -1])
    assert np.array_equal(exact_hit, log["hit_bsp"]) and 0 < exact_hit.sum() < n
    assert (log["bound"][exact_hit, -1] == 0).all()
    apart = np.isnan(log["bound"])
    assert (apart[:, :-1] <= apart[:, 1:]).all()
    # times are clock reads over a batch of 4 copies: BSP reads none, so one tick; the refinement
    # reads the clock itself
    assert np.allclose(log["t_bsp"], 1e-5 / 4) and (log["t_level"] > 1.5e-5 / 4).all()
    assert np.array_equal(log["t_sphere_leaves"], log["t_level"][:, -1]) and (log["t_floor"] > 0).all()
    assert np.array_equal(log["radius"], np.minimum(radii[log["model_a"]], radii[log["model_b"]]))


def test_cpu_load_stops_its_processes_also_on_error():
    with pytest.raises(KeyboardInterrupt):
        with cpu_load(2) as procs:
            assert all(p.poll() is None for p in procs)
            raise KeyboardInterrupt
    assert len(procs) == 2 and all(p.poll() is not None for p in procs)
    with cpu_load(0) as none:
        assert none == []
