"""Keyboard, random and scripted controllers, and their composition."""
import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from helpers import make_cfg  # noqa: E402

from spaceship_sim.config import ScriptConfig, Waypoints, load_config  # noqa: E402
from spaceship_sim.dynamics import (Controllers, Integrator, KeyboardController, KeyState,  # noqa: E402
                                    RandomAutopilot, ScriptedAutopilot, contain, initial_state)
from spaceship_sim.state import ShipState, quat_to_matrix  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
NAMES, RADII = ["fighter", "lamp", "freighter"], np.array([8.0, 4.0, 40.0])
DT = 1 / 30


def fly(controller, state, cfg, seconds, arena=None, keys=None):
    """Run controller + integrator (+ arena rule) for `seconds` in frames of DT."""
    integ = Integrator(cfg, state.n)
    for frame in range(int(round(seconds / DT))):
        args = (keys,) if keys is not None else ()
        controller.update(frame * DT, state, *args)
        integ.step(state, DT)
        if arena:
            contain(state, arena)


def nose(state, i=0):
    return quat_to_matrix(state.quat[i])[:, 0]


# --- keyboard -----------------------------------------------------------------------

def test_thrust_key_changes_controls_then_velocity():
    cfg = make_cfg()
    s, keys, kb = ShipState.zeros(2), KeyState(), KeyboardController(cfg, ship=0)
    assert not kb.update(0.0, s, keys).any()
    keys.press(KeyState.THRUST_FORWARD)
    changed = kb.update(0.0, s, keys)
    np.testing.assert_array_equal(changed, [True, False])
    assert s.thrust[0] == cfg.controls.max_thrust
    assert not kb.update(DT, s, keys).any()  # held: nothing new
    fly(kb, s, cfg, 0.5, keys=keys)
    assert s.vel[0] @ nose(s) > 0.9 * 0.5 * cfg.controls.max_thrust
    np.testing.assert_array_equal(s.vel[1], 0.0)
    keys.release(KeyState.THRUST_FORWARD)
    keys.press(KeyState.THRUST_BACK)
    kb.update(0.0, s, keys)
    assert s.thrust[0] == -cfg.controls.max_thrust


@pytest.mark.parametrize("action, toward", [(KeyState.YAW_LEFT, 1), (KeyState.YAW_RIGHT, -1),
                                            (KeyState.PITCH_UP, 2), (KeyState.PITCH_DOWN, -2)])
def test_turn_keys_swing_the_nose(action, toward):
    """From the identity pose, yaw left turns the nose toward +y, pitch up toward +z."""
    cfg = make_cfg()
    s, keys = ShipState.zeros(1), KeyState({action})
    fly(KeyboardController(cfg), s, cfg, 0.5, keys=keys)
    axis, sign = abs(toward), np.sign(toward)
    assert sign * nose(s)[axis] > 0.2


def test_roll_left_lowers_the_left_wing():
    cfg = make_cfg()
    s, keys = ShipState.zeros(1), KeyState({KeyState.ROLL_LEFT})
    fly(KeyboardController(cfg), s, cfg, 0.5, keys=keys)
    left_wing = quat_to_matrix(s.quat[0])[:, 1]
    assert left_wing[2] < -0.2 and nose(s)[0] > 0.999


def test_brake_stops_forward_motion_and_rotation():
    cfg = make_cfg()
    s = ShipState.zeros(1)
    s.vel[0] = [30.0, 0, 0]
    s.omega_cmd[0] = [0, 0, 1.0]
    fly(KeyboardController(cfg), s, cfg, 3.0, keys=KeyState({KeyState.BRAKE, KeyState.THRUST_FORWARD}))
    assert abs(s.vel[0] @ nose(s)) < 0.5 and np.all(s.omega_cmd[0] == 0)
    assert np.linalg.norm(s.omega[0]) < 1e-3


def test_unknown_action_is_refused():
    with pytest.raises(ValueError, match="warp"):
        KeyState().press("warp")


# --- random autopilot ----------------------------------------------------------------

def run_random(seed, frames=200, compiled=False):
    cfg = make_cfg()
    s = ShipState.zeros(20)
    pilot = RandomAutopilot(cfg, np.arange(1, 20), seed)
    masks = [pilot.update(f * DT, s, compiled) for f in range(frames)]
    return s, np.array(masks)


def reference_controls(seed, frames=200):
    """The autopilot as first written: three uniform() calls on the ships due, frame by frame."""
    cfg = make_cfg()
    c, a = cfg.controls, cfg.autopilot
    rng, next_change = np.random.default_rng(seed), np.zeros(19)
    thrust, omega = np.zeros(20), np.zeros((20, 3))
    for f in range(frames):
        due = np.flatnonzero(next_change <= f * DT)
        k = len(due)
        thrust[due + 1] = rng.uniform(0.0, a.thrust_fraction_max * c.max_thrust, k)
        omega[due + 1] = rng.uniform(-c.max_angular_rate, c.max_angular_rate, (k, 3))
        next_change[due] = np.maximum(next_change[due] + rng.uniform(a.change_interval_min, a.change_interval_max, k),
                                      f * DT)
    return thrust, omega


@pytest.mark.parametrize("compiled", [False, True])
def test_random_autopilot_draws_what_three_uniform_calls_drew(compiled):
    """Drawing uniforms ahead in blocks changes no control: bit for bit the first version's."""
    s, _ = run_random(7, compiled=compiled)
    thrust, omega = reference_controls(7)
    np.testing.assert_array_equal(s.thrust, thrust)
    np.testing.assert_array_equal(s.omega_cmd, omega)


@pytest.mark.parametrize("seed", [0, 5, 11])
def test_random_autopilot_kernel_equals_numpy(seed):
    """The compiled draw (_apply_due) gives the numpy path's controls and masks bit for bit."""
    (a, ma), (b, mb) = run_random(seed), run_random(seed, compiled=True)
    assert a.hash() == b.hash() and np.array_equal(ma, mb)
    assert ma.any(axis=1).sum() > 10, "draws were due in many frames"


def test_random_autopilot_is_deterministic_for_a_seed():
    a, ma = run_random(5)
    b, mb = run_random(5)
    c, _ = run_random(6)
    assert a.hash() == b.hash() and np.array_equal(ma, mb)
    assert a.hash() != c.hash()


def test_random_autopilot_draws_within_limits_on_schedule():
    cfg = make_cfg()
    s, masks = run_random(7, frames=int(round(20 / DT)))
    assert not masks[:, 0].any() and masks[0, 1:].all()  # ship 0 not its; all others draw at t = 0
    c, a = cfg.controls, cfg.autopilot
    assert np.all((0 <= s.thrust) & (s.thrust <= c.max_thrust)) and np.all(np.abs(s.omega_cmd) <= c.max_angular_rate)
    for ship in range(1, 20):
        times = np.flatnonzero(masks[:, ship]) * DT
        gaps = np.diff(times)
        # a frame late at most, never early
        assert np.all(gaps >= a.change_interval_min - DT) and np.all(gaps <= a.change_interval_max + DT)
        assert len(times) >= 20 / a.change_interval_max


# --- scripted autopilot --------------------------------------------------------------

def test_scripted_ship_reaches_its_waypoints():
    points = ((60.0, 0.0, 0.0), (0.0, 60.0, 20.0), (-40.0, -40.0, -30.0))
    cfg = make_cfg(script=ScriptConfig(paths=(Waypoints(ship=1, points=points, speed=12.0, arrive_radius=5.0),)))
    s = ShipState.zeros(2)
    pilot = ScriptedAutopilot(cfg)
    reached = []
    integ = Integrator(cfg, 2)
    for frame in range(int(round(60 / DT))):
        before = pilot.target[0]
        pilot.update(frame * DT, s)
        if pilot.target[0] != before:
            reached.append(np.linalg.norm(s.pos[1] - points[before]))
        integ.step(s, DT)
    assert pilot.laps[0] >= 4  # the loop went round: 3 points, then the first again
    assert all(d < 5.0 for d in reached)
    assert np.all(s.thrust == [0.0, s.thrust[1]]) and np.all(s.pos[0] == 0)  # ship 0 not scripted


def test_scripted_ship_without_loop_holds_at_the_last_point():
    points = ((30.0, 0.0, 0.0), (30.0, 30.0, 0.0))
    cfg = make_cfg(script=ScriptConfig(paths=(Waypoints(ship=0, points=points, speed=8.0, arrive_radius=3.0,
                                                        loop=False),)))
    s = ShipState.zeros(1)
    fly(ScriptedAutopilot(cfg), s, cfg, 40.0)
    assert np.linalg.norm(s.pos[0] - points[-1]) < 6.0 and np.linalg.norm(s.vel[0]) < 3.0


def test_demo_script_ships_all_reach_waypoints():
    cfg = load_config(REPO / "configs" / "demo.toml")
    s = initial_state(cfg, NAMES, RADII)
    ctl = Controllers.from_config(cfg, s.n, user="autopilot")
    fly(ctl, s, cfg, 30.0, arena=cfg.arena.size)
    assert np.all(ctl.scripted.laps >= 2), ctl.scripted.laps


# --- composition ---------------------------------------------------------------------

def test_from_config_assigns_every_ship_once():
    cfg = load_config(REPO / "configs" / "demo.toml")  # paths for ships 0..3
    kb = Controllers.from_config(cfg, cfg.ships.count, user="keyboard")
    assert kb.keyboard.ship == 0 and 0 not in kb.scripted.ships
    assert sorted([0, *kb.scripted.ships, *kb.random.ships]) == list(range(cfg.ships.count))
    auto = Controllers.from_config(cfg, cfg.ships.count, user="autopilot")
    assert auto.keyboard is None and 0 in auto.scripted.ships
    assert sorted([*auto.scripted.ships, *auto.random.ships]) == list(range(cfg.ships.count))
    with pytest.raises(ValueError, match="user"):
        Controllers.from_config(cfg, 3, user="joystick")


def test_composed_keyboard_reads_keys():
    cfg = make_cfg()
    s = initial_state(cfg, NAMES, RADII)
    ctl = Controllers.from_config(cfg, s.n)
    first = ctl.update(0.0, s)
    assert not first[0] and first[1:].all()
    ctl.keys.press(KeyState.YAW_LEFT)
    changed = ctl.update(DT, s)
    assert changed[0] and s.omega_cmd[0, 2] == cfg.controls.max_angular_rate


def test_composed_run_is_deterministic():
    cfg = dataclasses.replace(load_config(REPO / "configs" / "demo.toml"))
    hashes = []
    for _ in range(2):
        s = initial_state(cfg, NAMES, RADII)
        fly(Controllers.from_config(cfg, s.n, user="autopilot"), s, cfg, 5.0, arena=cfg.arena.size)
        hashes.append(s.hash())
    assert hashes[0] == hashes[1]


@pytest.mark.parametrize("seed", range(20))
def test_autopilot_draws_are_the_three_uniform_calls(seed):
    """RandomAutopilot splits one rng.random draw where it used to make three uniform() calls:
    the same numbers bit for bit (thrust, then omega, then interval), and the generator left in
    the same state."""
    from spaceship_sim.dynamics.controllers import _uniform
    k = seed % 4 + 1
    three, one = np.random.default_rng(seed), np.random.default_rng(seed)
    want = (three.uniform(0.0, 4.8, k), three.uniform(-1.3, 1.3, (k, 3)), three.uniform(1.0, 3.0, k))
    u = one.random(5 * k)
    got = (_uniform(u[:k], 0.0, 4.8), _uniform(u[k:4 * k].reshape(k, 3), -1.3, 1.3), _uniform(u[4 * k:], 1.0, 3.0))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert one.random() == three.random()
