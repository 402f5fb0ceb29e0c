#!/usr/bin/env python3
"""How often the narrow phase overruns its deadline in a lamps run, on this thread's CPU time.

    python scripts/deadline_overruns.py [--renders 26,28,30] [--frames 600] [--over-ms 0.3] [--config TOML]

Runs configs/lamps.toml (or --config) time-critical under each stand-in render load, the world's clock reading
this thread's CPU time (time.thread_time, so that the host preempting the process is left out and
what remains is the narrow phase's own deadline keeping), and counts the narrow-phase calls that
end more than --over-ms past their deadline, with the stage that took longest in each. The script
reads the clock itself (no clock class of the package), so it runs on older checkouts too: for an
A/B, point PYTHONPATH at each and alternate.
"""
from __future__ import annotations

import argparse
import collections
import time

from spaceship_sim.clock import WALL
from spaceship_sim.config import load_config
from spaceship_sim.narrowphase import refine
from spaceship_sim.sim.world import World

STAGES = ("levels", "exact_level", "summary")
STAGE_TIME = collections.Counter()  # wall seconds per stage of the current narrow-phase call (an instrument)


class CpuClock:
    def __call__(self) -> float:
        return time.thread_time()

    def spend(self, seconds: float) -> float:
        return WALL.spend(seconds)


def instrument() -> None:
    """Time the search's stages into STAGE_TIME."""
    for name in STAGES:
        method = getattr(refine._Search, name)

        def timed(*args, _method=method, _name=name, **kwargs):
            t0 = time.perf_counter()
            try:
                return _method(*args, **kwargs)
            finally:
                STAGE_TIME[_name] += time.perf_counter() - t0

        setattr(refine._Search, name, timed)


def overruns(config: str, render: float, frames: int, over: float) -> tuple[int, int, collections.Counter]:
    """(narrow-phase calls, calls over their deadline by more than `over` s, {longest stage: count})."""
    longest, counts = collections.Counter(), [0, 0]
    inner = refine._refine

    def refine_counted(*args, **kwargs):
        STAGE_TIME.clear()
        answer = inner(*args, **kwargs)
        counts[0] += 1
        if time.thread_time() - kwargs["deadline"] > over:
            counts[1] += 1
            longest[max(STAGES, key=lambda s: STAGE_TIME[s])] += 1
        return answer

    refine._refine = refine_counted
    try:
        world = World.from_config(load_config(config), clock=CpuClock())
        for _ in range(frames):
            world.step()
            world.end_frame(WALL.spend(render))
    finally:
        refine._refine = inner
    return counts[0], counts[1], longest


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--renders", default="26,28,30", help="stand-in render loads [ms, comma-separated]")
    p.add_argument("--frames", type=int, default=600)
    p.add_argument("--over-ms", type=float, default=0.3)
    p.add_argument("--config", default="configs/lamps.toml", help="scenario (time-critical)")
    args = p.parse_args()
    instrument()
    for ms in map(float, args.renders.split(",")):
        calls, late, longest = overruns(args.config, ms / 1e3, args.frames, args.over_ms / 1e3)
        print(f"render {ms:g} ms: {late} of {calls} narrow-phase calls over their deadline by > {args.over_ms:g} ms "
              f"(longest stage: {dict(longest)})")


if __name__ == "__main__":
    main()
