"""Scripted ships start on their path and fly its drawn legs."""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from helpers import make_cfg  # noqa: E402

from spaceship_sim.config import ScriptConfig, Waypoints  # noqa: E402
from spaceship_sim.dynamics import Integrator, ScriptedAutopilot, initial_state  # noqa: E402
from spaceship_sim.state import ShipState, quat_to_matrix  # noqa: E402

NAMES, RADII = ["fighter", "lamp", "freighter"], np.array([8.0, 4.0, 40.0])
DT = 1 / 30


def script_cfg(*paths, count=12):
    cfg = make_cfg(script=ScriptConfig(paths=paths))
    return make_cfg(script=cfg.script, ships=type(cfg.ships)(count=count))


def test_scripted_ships_start_at_their_first_waypoint_heading_for_the_next():
    paths = (Waypoints(ship=0, points=((-50.0, 0.0, 0.0), (50.0, 0.0, 0.0)), speed=14.0),
             Waypoints(ship=3, points=((10.0, 20.0, 30.0), (10.0, 60.0, 60.0)), speed=9.0))
    s = initial_state(script_cfg(*paths), NAMES, RADII)
    for p in paths:
        start, nxt = np.array(p.points)
        heading = (nxt - start) / np.linalg.norm(nxt - start)
        np.testing.assert_allclose(s.pos[p.ship], start)
        np.testing.assert_allclose(quat_to_matrix(s.quat[p.ship])[:, 0], heading, atol=1e-12)
        np.testing.assert_allclose(s.vel[p.ship], p.speed * heading, atol=1e-12)
    # the random ships keep their distance from the scripted ones
    gap = np.linalg.norm(s.pos[:, None] - s.pos[None], axis=2) - s.radius[:, None] - s.radius[None]
    np.fill_diagonal(gap, np.inf)
    assert gap[[0, 3]].min() > 0


def test_scripted_ship_pushed_off_its_leg_returns_to_the_drawn_line():
    """A ship knocked 20 m sideways (as by a collision) steers back onto its leg, so it crosses
    other paths where they were drawn; aiming straight at the waypoint would leave it ~15 m off."""
    path = Waypoints(ship=0, points=((0.0, 0.0, 0.0), (300.0, 0.0, 0.0)), speed=12.0, arrive_radius=5.0)
    cfg = make_cfg(script=ScriptConfig(paths=(path,)))
    s = ShipState.zeros(1)
    s.vel[0] = (12.0, 0.0, 0.0)
    pilot, integ = ScriptedAutopilot(cfg), Integrator(cfg, 1)
    pilot.update(0.0, s)  # at the first waypoint: now on the leg to the second
    s.pos[0] = (0.0, 20.0, 0.0)
    for frame in range(1, int(round(8 / DT))):
        integ.step(s, DT)
        pilot.update(frame * DT, s)
    assert 60.0 < s.pos[0, 0] < 130.0  # still on the leg, far from its end
    assert np.hypot(s.pos[0, 1], s.pos[0, 2]) < 2.0, s.pos[0]
