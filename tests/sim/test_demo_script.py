"""The demo's script collides on cue: a pair of scripted ships touches within the first 5 s.

Exact-only (no time-critical cut-off), so the verdict does not depend on the machine's speed."""
import dataclasses
from pathlib import Path

from spaceship_sim.config import load_config
from spaceship_sim.sim.world import World

REPO = Path(__file__).resolve().parents[2]
FRAMES = 150  # 5 s at 30 Hz


def test_scripted_pair_collides_within_five_seconds():
    cfg = load_config(REPO / "configs" / "demo.toml")
    cfg = dataclasses.replace(cfg, collision=dataclasses.replace(cfg.collision, time_critical=False))
    world = World.from_config(cfg, warm=False)
    scripted = {p.ship for p in cfg.script.paths}
    hits = []  # (frame, ship a, ship b) of scripted pairs the narrow phase found colliding
    for _ in range(FRAMES):
        world.step()
        narrow = world.last_narrow
        hits += [(world.frame, int(a), int(b)) for a, b in narrow.pairs[narrow.colliding]
                 if a in scripted and b in scripted]
    assert hits, f"no scripted pair collided in {FRAMES} frames"
    # more than one scripted pair: the script stages its crossings, not one lucky meeting
    assert len({(a, b) for _, a, b in hits}) >= 2, hits
