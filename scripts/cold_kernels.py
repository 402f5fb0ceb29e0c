#!/usr/bin/env python3
"""How much of a cold frame is its numba kernels, and how much the Python around them.

    python scripts/cold_kernels.py [--gap-ms 32] [--repeats 300] [--render-ms 32.3] [--config TOML]

Runs configs/lamps.toml (or --config) time-critical with the budget of a stand-in render of --render-ms
(32.3 ms: the narrow phase's budget is zero, the frame all fixed cost), records one frame's numba calls
made from Python (every kernel of the spaceship_sim modules, with copies of its arguments), then, after
a busy wait of --gap-ms each time, alternates a replay of those calls alone (their arrays restored before
the wait) with a whole frame. Prints both medians and p99s: the replay is what a frame costs from cold
caches with no Python between its kernels — about what one compiled call per sample could cost.
"""
from __future__ import annotations

import argparse
import copy
import sys
import time

import numpy as np
from numba.core.registry import CPUDispatcher

from cold_calls import busy_wait  # scripts/, beside this one
from spaceship_sim.clock import WallClock
from spaceship_sim.config import load_config, shipped_config
from spaceship_sim.sim.world import World

SETTLE = 100  # frames before the recorded one: predictors settled, kernels compiled


def _kernel_names() -> list[tuple]:
    """(module, attribute, dispatcher) of every numba kernel bound in a spaceship_sim module."""
    return [(mod, attr, val) for name, mod in list(sys.modules.items())
            if name.startswith("spaceship_sim") and mod is not None
            for attr, val in list(vars(mod).items()) if isinstance(val, CPUDispatcher)]


def record_frame(world, render: float) -> list[tuple]:
    """[(dispatcher, copied arguments)] of the numba calls one world.step makes from Python."""
    calls, bound = [], _kernel_names()

    def recording(d):
        def call(*args):
            calls.append((d, copy.deepcopy(args)))
            return d(*args)
        return call

    wrappers = {d: recording(d) for _, _, d in bound}
    for mod, attr, d in bound:
        setattr(mod, attr, wrappers[d])
    try:
        world.step()
        world.end_frame(render)
    finally:
        for mod, attr, d in bound:
            setattr(mod, attr, d)
    return calls


def _restore(args, pristine) -> None:
    for a, p in zip(args, pristine):
        if isinstance(a, np.ndarray):
            np.copyto(a, p)
        elif isinstance(a, tuple):
            _restore(a, p)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gap-ms", type=float, default=32.0, help="busy wait before each timed run [ms]")
    p.add_argument("--repeats", type=int, default=300)
    p.add_argument("--render-ms", type=float, default=32.3, help="the stand-in render the budget sees [ms]")
    p.add_argument("--config", default=shipped_config("lamps.toml"))
    args = p.parse_args()
    gap, render = args.gap_ms / 1e3, args.render_ms / 1e3
    world = World.from_config(load_config(args.config), clock=WallClock())
    for _ in range(SETTLE):
        world.step()
        world.end_frame(render)
    calls = record_frame(world, render)
    print(f"{len(calls)} numba calls from Python in a frame: {', '.join(d.__name__ for d, _ in calls)}")
    work = [(d, copy.deepcopy(a), a) for d, a in calls]  # (kernel, arguments it runs on, pristine copy)
    kernels, frames = [], []
    for _ in range(args.repeats):
        for _, run_args, pristine in work:
            _restore(run_args, pristine)
        busy_wait(gap)
        t0 = time.perf_counter()
        for d, run_args, _ in work:
            d(*run_args)
        kernels.append(time.perf_counter() - t0)
        busy_wait(gap)
        t0 = time.perf_counter()
        world.step()
        frames.append(time.perf_counter() - t0)
        world.end_frame(render)
    for label, x in (("the frame's numba calls alone", kernels), ("the whole frame", frames)):
        print(f"after a {args.gap_ms:g} ms busy wait, {label}: median {np.median(x) * 1e3:.3f} ms, "
              f"p99 {np.percentile(x, 99) * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
