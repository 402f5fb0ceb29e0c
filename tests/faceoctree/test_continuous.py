"""collision.swept in the simulator: configs/tunnel.toml's fighter crosses the freighter's tower
between two samples; only the swept test sees it, and the fighter then stays on its side."""
import dataclasses

import numpy as np
import pytest

from spaceship_sim.clock import TickClock
from spaceship_sim.config import load_config, shipped_config
from spaceship_sim.sim.world import World

TOWER_X = 32.4  # [m] the tower's near face (freighter body x; the freighter sits on the world axes)


@pytest.mark.parametrize("swept", [True, False])
def test_tunnel_crossing_is_caught_only_by_the_swept_test(swept):
    cfg = load_config(shipped_config("tunnel.toml"))
    cfg = dataclasses.replace(cfg, collision=dataclasses.replace(cfg.collision, swept=swept))
    world = World.from_config(cfg, clock=TickClock(), notify=None)
    hits = []
    for _ in range(13):
        world.step()
        hits.append(int(world.last_narrow.colliding.sum()))
    fighter_x = world.state.pos[2, 0]
    if swept:
        assert hits[:10] == [0] * 10 and hits[10] == 1 and sum(hits) == 1
        assert fighter_x < TOWER_X and world.state.vel[2, 0] < 0  # bounced back from the wall
    else:
        assert sum(hits) == 0 and fighter_x > 100.0  # flew through the wall unseen
