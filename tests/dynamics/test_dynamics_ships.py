"""Initial placement, the arena rule and the acceleration bound."""
import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from helpers import make_cfg  # noqa: E402

from spaceship_sim.config import ConfigError, ShipsConfig, load_config  # noqa: E402
from spaceship_sim.dynamics import Integrator, RandomAutopilot, accel_bound, contain, initial_state  # noqa: E402
from spaceship_sim.state import ShipState, quat_to_matrix  # noqa: E402

NAMES = ["fighter", "lamp", "freighter"]
RADII = np.array([8.0, 4.0, 40.0])
REPO = Path(__file__).resolve().parents[2]


def ships_cfg(**ships):
    return make_cfg(ships=dataclasses.replace(ShipsConfig(), **ships))


def test_initial_state_layout_and_no_overlap():
    cfg = ships_cfg(count=60, models=("lamp", "freighter"), initial_speed=7.0, spacing=1.3)
    s = initial_state(cfg, NAMES, RADII)
    assert s.n == 60 and s.model_id[0] == 0 and s.inv_mass[0] == 0.0
    assert [NAMES[m] for m in s.model_id[1:5]] == ["lamp", "freighter", "lamp", "freighter"]
    np.testing.assert_array_equal(s.radius, RADII[s.model_id])
    d = np.linalg.norm(s.pos[:, None] - s.pos[None], axis=2)
    need = cfg.ships.spacing * (s.radius[:, None] + s.radius[None])
    off = ~np.eye(s.n, dtype=bool)
    assert np.all(d[off] >= need[off])
    assert np.all(np.abs(s.pos) + s.radius[:, None] <= cfg.arena.size / 2)
    np.testing.assert_allclose(np.linalg.norm(s.quat, axis=1), 1.0, atol=1e-15)
    speed = np.linalg.norm(s.vel, axis=1)
    assert speed[0] == 0.0 and np.all(speed <= 7.0) and speed[1:].max() > 3.0
    # mass grows as radius cubed, the user's is infinite
    mass = 1 / s.inv_mass[1:]
    np.testing.assert_allclose(mass / s.radius[1:] ** 3, mass[0] / s.radius[1] ** 3)


def test_initial_state_is_seeded():
    cfg = ships_cfg(count=30)
    a, b = initial_state(cfg, NAMES, RADII), initial_state(cfg, NAMES, RADII)
    assert a.hash() == b.hash()
    other = dataclasses.replace(cfg, sim=dataclasses.replace(cfg.sim, seed=cfg.sim.seed + 1))
    assert initial_state(other, NAMES, RADII).hash() != a.hash()


# too much volume / a ship wider than the arena / random trials jam
@pytest.mark.parametrize("count, size, model", [(2000, 400.0, "freighter"), (3, 70.0, "freighter"),
                                                (700, 100.0, "lamp")])
def test_too_many_ships_is_a_config_error(count, size, model):
    cfg = ships_cfg(count=count, models=(model,))
    cfg = dataclasses.replace(cfg, arena=dataclasses.replace(cfg.arena, size=size), source="scen.toml")
    with pytest.raises(ConfigError, match=r"scen\.toml: ships\.count: cannot place"):
        initial_state(cfg, NAMES, RADII)


def test_unknown_model_is_a_config_error():
    with pytest.raises(ConfigError, match=r"ships\.models\[1\].*'shuttle'"):
        initial_state(ships_cfg(models=("lamp", "shuttle")), NAMES, RADII)


@pytest.mark.parametrize("name", ["default", "lamps", "stress", "demo"])
def test_shipped_configs_can_be_placed(name):
    cfg = load_config(REPO / "configs" / f"{name}.toml")
    s = initial_state(cfg, NAMES, RADII)
    assert s.n == cfg.ships.count


def test_contain_reflects_outward_components_only():
    s = ShipState.zeros(4)
    s.pos[:] = [[60, 0, 0], [60, -70, 0], [0, 0, 0], [-55, 0, 0]]
    s.vel[:] = [[1, 2, 3], [-1, -2, 3], [5, 5, 5], [4, 0, 0]]
    changed = contain(s, 100.0)
    np.testing.assert_array_equal(changed, [0, 1])
    np.testing.assert_array_equal(s.vel, [[-1, 2, 3], [-1, 2, 3], [5, 5, 5], [4, 0, 0]])
    assert len(contain(s, 100.0)) == 0  # now all moving inward


def test_contain_keeps_ships_near_the_arena():
    cfg = make_cfg(controls=dict(max_thrust=20.0, drag=0.2))
    rng = np.random.default_rng(0)
    s = ShipState.zeros(50)
    s.vel[:] = rng.normal(size=(50, 3)) * 30
    integ, pilot = Integrator(cfg, 50), RandomAutopilot(cfg, np.arange(50), seed=3)
    for frame in range(300):
        pilot.update(frame / 30, s)
        integ.step(s, 1 / 30)
        contain(s, 50.0)
    # outside only while turning back: by at most the distance to cancel 100 m/s at 20 m/s^2 + drag
    assert np.abs(s.pos).max() < 25 + 100 ** 2 / (2 * 20)


def test_accel_bound_holds_along_random_trajectories():
    cfg = make_cfg()
    rng = np.random.default_rng(1)
    n = 300
    s = ShipState.zeros(n)
    q = rng.normal(size=(n, 4))
    s.quat[:] = q / np.linalg.norm(q, axis=1, keepdims=True)
    s.vel[:] = rng.normal(size=(n, 3)) * rng.uniform(0, 300, (n, 1))  # some faster than max_thrust/drag
    pilot = RandomAutopilot(make_cfg(autopilot=dataclasses.replace(cfg.autopilot, change_interval_min=0.1,
                                                                   change_interval_max=0.5)),
                            np.arange(n), seed=2)
    integ = Integrator(cfg, n)
    pilot.update(0.0, s)
    bound = accel_bound(s, cfg.controls)
    worst = 0.0
    for frame in range(300):
        pilot.update(frame / 30, s)
        nose = quat_to_matrix(s.quat)[:, :, 0]
        accel = np.linalg.norm(s.thrust[:, None] * nose - cfg.controls.drag * s.vel, axis=1)
        worst = max(worst, (accel / bound).max())
        integ.step(s, 1 / 30)
    assert worst <= 1.0
    assert worst > 0.9  # the bound is not vacuous


def test_accel_bound_counts_thrust_beyond_the_limit():
    s = ShipState.zeros(1)
    s.thrust[:] = 50.0
    c = make_cfg(controls=dict(max_thrust=20.0, drag=0.5)).controls
    assert accel_bound(s, c)[0] == pytest.approx(50 + 0.5 * 50 / 0.5)


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 80), arena=st.floats(1.0, 100.0))
def test_compiled_arena_rule_and_bound_match_numpy(seed, n, arena):
    rng = np.random.default_rng(seed)
    s = ShipState.zeros(n)
    s.pos[:] = rng.uniform(-arena, arena, (n, 3))
    s.pos[rng.random((n, 3)) < 0.1] = 0.5 * arena  # on the wall: not beyond it
    s.vel[:] = rng.normal(size=(n, 3)) * rng.uniform(0, 50, (n, 1))
    s.thrust[:] = rng.uniform(-40, 40, n)
    c = make_cfg(controls=dict(max_thrust=20.0, drag=0.3)).controls
    assert np.array_equal(accel_bound(s, c, compiled=True), accel_bound(s, c))
    t = s.copy()
    assert np.array_equal(contain(s, arena, compiled=True), contain(t, arena))
    assert np.array_equal(s.vel, t.vel)
