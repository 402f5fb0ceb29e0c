#!/usr/bin/env python3
"""What a frame's fixed cost is when its code and data are still in the CPU's caches, and when
they are not.

    python scripts/cold_frames.py [--gaps 0,1,4,16,32] [--render-ms 32.3] [--frames 1200] [--config TOML]

Runs configs/lamps.toml (or --config) time-critical with every frame given the budget of a stand-in
render of --render-ms (32.3 ms: target - 1 ms, where the narrow phase's budget is zero and the frame is
all fixed cost), while the wall time between frames is a busy wait of one of --gaps [ms]. The gaps take
turns in chunks of 50 frames in one process, so that the machine's drift falls on all of them alike.
Prints, per gap, the simulation time of a frame (every stage, render excluded: median, p90, p99) and
each stage's median. A gap of 0 is the frame with warm caches; the stand-in render of `bench hubbard`
(a sleep, then a spin) leaves the CPU for the whole render.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from spaceship_sim.clock import WallClock
from spaceship_sim.config import load_config, shipped_config
from spaceship_sim.sim.world import World

CHUNK = 50  # frames in a row at one gap
STAGES = ("t_controls", "t_integrate", "t_broad", "t_narrow", "t_response", "t_other")


class GapClock(WallClock):
    """The wall clock; `spend` busy-waits `gap` seconds whatever it is asked, and reports what it
    was asked (the render predictor, and so the budget, sees the nominal render)."""

    gap = 0.0

    def spend(self, seconds: float) -> float:
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < self.gap:
            pass
        return seconds


def measure(config: str, render: float, gaps: list[float], frames: int) -> dict:
    """gap -> (frames, 1 + len(STAGES)) array: each frame's simulation time, then its stages [s]."""
    clock = GapClock()
    world = World.from_config(load_config(config), clock=clock)
    for _ in range(CHUNK):  # settle the predictors
        world.step()
        world.end_frame(clock.spend(render))
    rows = {g: [] for g in gaps}
    for i in range(frames // CHUNK):
        clock.gap = gaps[i % len(gaps)]
        for j in range(CHUNK):
            clock.spend(render)  # the gap before this frame as well
            stats = world.step()
            world.end_frame(clock.spend(render))
            if j:  # the chunk's first frame follows the other gap
                rows[clock.gap].append([stats.t_sim, *(getattr(stats, s) for s in STAGES)])
    return {g: np.array(r) for g, r in rows.items()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gaps", default="0,1,4,16,32", help="busy waits between frames [ms, comma-separated]")
    p.add_argument("--render-ms", type=float, default=32.3, help="the nominal render the budget sees [ms]")
    p.add_argument("--frames", type=int, default=1200, help="frames in all, shared by the gaps")
    p.add_argument("--config", default=shipped_config("lamps.toml"))
    args = p.parse_args()
    gaps = [float(g) / 1e3 for g in args.gaps.split(",")]
    got = measure(args.config, args.render_ms / 1e3, gaps, args.frames)
    print(f"{'gap':>7} {'frames':>6} {'median':>8} {'p90':>8} {'p99':>8}   stage medians [us]: "
          + " ".join(s[2:] for s in STAGES))
    for g, x in got.items():
        ms = x[:, 0] * 1e3
        stages = " ".join(f"{np.median(x[:, 1 + k]) * 1e6:.0f}" for k in range(len(STAGES)))
        print(f"{g * 1e3:5.0f}ms {len(x):6d} {np.median(ms):6.3f}ms {np.percentile(ms, 90):6.3f}ms "
              f"{np.percentile(ms, 99):6.3f}ms   {stages}")


if __name__ == "__main__":
    main()
