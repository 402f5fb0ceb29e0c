"""The compiled sample (compiled_sample.py) against the Python sample it stands in for.

On a TickClock every decision is a function of the number of clock reads, so a compiled sample
that reads the clock where the Python stages do, and runs their kernels, must end every frame in
the same state, with the same stats and the same clock. Each test runs the same scenario twice,
`world.use_compiled_sample` on and off, and compares everything a frame leaves behind.
"""
import dataclasses
import time
from pathlib import Path

import numpy as np
import pytest

from spaceship_sim.sim import compiled_sample
from spaceship_sim.broadphase import space_time
from spaceship_sim.clock import WALL, RecordingClock, ThreadClock, TickClock, kernel_clock, read_clock, sync_clock
from spaceship_sim.config import load_config, shipped_config
from spaceship_sim.narrowphase.refine import Scratch
from spaceship_sim.sim.stats import PER_VERDICT
from spaceship_sim.sim.world import World

ZERO_BUDGET = 0.033  # a stand-in render that leaves the narrow phase no time (target 33.3 ms, margin 0.5 ms)


def lamps(**collision):
    cfg = load_config(shipped_config("lamps.toml"))
    return dataclasses.replace(cfg, collision=dataclasses.replace(cfg.collision, **collision))


def run(cfg, compiled: bool, frames: int, render: float, tweak=lambda world: None):
    """(state hash, clock reading, per frame: its stats row, per-verdict arrays and narrow-phase answer,
    samples the compiled sample finished) of `frames` frames on a TickClock."""
    clock = TickClock()
    world = World.from_config(cfg, clock=clock, notify=None)
    world.use_compiled_sample = compiled
    tweak(world)
    finished = [0]
    sample = compiled_sample.CompiledSample.sample

    def counted(self, *args):
        got = sample(self, *args)
        finished[0] += got[2] is not None
        return got

    compiled_sample.CompiledSample.sample = counted
    try:
        frames_seen = []
        for _ in range(frames):
            stats = world.step()
            world.end_frame(clock.spend(render))
            n = world.last_narrow
            frames_seen.append((stats.row(world.max_level), [getattr(stats, f).tolist() for f in PER_VERDICT],
                                [getattr(n, f).tolist() for f in ("pairs", "colliding", "level", "certain",
                                                                  "separation_bound", "contact_normal",
                                                                  "level_histogram", "lower", "upper")],
                                [p.tolist() for p in n.sphere_pairs],
                                None if n.bound_pairs is None else n.bound_pairs.tolist()))
    finally:
        compiled_sample.CompiledSample.sample = sample
    return world.state_hash(), clock.now, frames_seen, finished[0]


def assert_same_run(python, compiled):
    assert compiled[0] == python[0], "the same state"
    assert compiled[1] == python[1], "the same number of clock reads"
    for i, (a, b) in enumerate(zip(python[2], compiled[2])):
        assert a == b, f"frame {i}"


SHIPPED = sorted(p.stem for p in Path(shipped_config("default.toml")).parent.glob("*.toml"))


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_config_runs_the_same_with_and_without_the_compiled_sample(name):
    """The Python sample is the frame's definition; the compiled one must leave the same state, stats,
    answers and clock on every shipped scenario (those beyond its common case run the Python sample
    either way). Few frames of the 5,000 ships: enough for both paths."""
    cfg = load_config(shipped_config(f"{name}.toml"))
    frames = 5 if cfg.ships.count > 1000 else 20
    assert_same_run(run(cfg, False, frames, ZERO_BUDGET), run(cfg, True, frames, ZERO_BUDGET))


def leaves(cfg):
    """cfg with the sphere leaves at the exact level."""
    return dataclasses.replace(cfg, collision=dataclasses.replace(cfg.collision, exact_method="sphere_leaves"))


@pytest.mark.parametrize("name,render", [("lamps", ZERO_BUDGET), ("default", ZERO_BUDGET), ("lamps", 0.02)])
def test_compiled_sample_runs_as_the_python_sample(name, render):
    """Zero budgets: the whole sample compiled; a render of 20 ms leaves budgets, so the narrow
    phase goes on in Python after the compiled integration and broad phase. The compiled sample's
    exact level is the sphere leaves' (an exact strategy runs the Python sample)."""
    cfg = leaves(load_config(shipped_config(f"{name}.toml")))
    python, compiled = run(cfg, False, 60, render), run(cfg, True, 60, render)
    assert python[3] == 0
    if render == ZERO_BUDGET:
        assert compiled[3] >= 100, "most samples finished in the kernel"
    else:
        assert compiled[3] == 0, "budgets left: the narrow phase ran in Python"
    assert_same_run(python, compiled)


def test_first_contacts_and_a_level_cap_run_as_the_python_sample():
    cfg = lamps(all_contacts=False, min_level=2)

    def cap(world):
        world.set_collision(max_level=2)

    python, compiled = run(cfg, False, 40, ZERO_BUDGET, cap), run(cfg, True, 40, ZERO_BUDGET, cap)
    assert compiled[3] >= 60
    assert_same_run(python, compiled)


def test_broad_phase_fallbacks_go_on_in_python():
    """Where the re-ball kernel stops (no room for the partners it found: NO_ROOM; cells that no
    longer suit the balls: REGRID) the broad phase goes on in Python, and so does the sample."""
    stops = []
    reballed = space_time.SpaceTime.reballed

    def spy(self, ships, status, found, rebuilds):
        stops.append(status)
        return reballed(self, ships, status, found, rebuilds)

    def cramp(world):  # every few samples: no room for partners, or cells made for tiny balls
        step = world.step

        def cramped():
            g = world.broad.grid
            if world.frame % 3 == 1 and g.h_want is not None:
                g.out_a, g.out_b = g.out_a[:1].copy(), g.out_b[:1].copy()
            if world.frame % 7 == 5 and g.h_want is not None:
                g.h_want = 1e-3
            return step()

        world.step = cramped

    space_time.SpaceTime.reballed = spy
    try:
        python = run(lamps(), False, 40, ZERO_BUDGET, cramp)
        compiled = run(lamps(), True, 40, ZERO_BUDGET, cramp)
    finally:
        space_time.SpaceTime.reballed = reballed
    assert {space_time.NO_ROOM, space_time.REGRID} <= set(stops)
    assert compiled[3] >= 40
    assert_same_run(python, compiled)


def test_more_pairs_than_the_scratch_holds_grow_it():
    def tiny(world):
        world.step()
        world.end_frame(world.clock.spend(ZERO_BUDGET))
        world.step()  # the compiled sample exists from the second frame
        world.end_frame(world.clock.spend(ZERO_BUDGET))
        fused = compiled_sample.for_frame(world.stages, world.sim, world.timing)
        if fused is not None:
            fused.scratch = Scratch(1, fused.width)

    python, compiled = run(lamps(), False, 30, ZERO_BUDGET, tiny), run(lamps(), True, 30, ZERO_BUDGET, tiny)
    assert compiled[3] >= 50
    assert_same_run(python, compiled)


def test_a_nan_in_the_state_fails_as_in_python():
    """A NaN velocity: the integrator ends its step at min_step, and the NaN acceleration bound
    that follows stops the kernel before the broad phase, which refuses it as it does in Python."""
    errors = []
    for compiled in (False, True):
        world = World.from_config(lamps(), clock=TickClock(), notify=None)
        world.use_compiled_sample = compiled
        for _ in range(3):
            world.step()
        world.state.vel[4, 0] = np.nan
        with pytest.raises(ValueError) as e:
            world.step()
        errors.append(str(e.value))
    assert errors[0] == errors[1] and "accel_bound" in errors[0]


@pytest.mark.parametrize("why,change", [
    ("exact-only", lambda w: setattr(w, "exact_only", object())),
    ("not time-critical", lambda w: setattr(w, "time_critical", False)),
    ("a recording clock", lambda w: setattr(w, "clock", RecordingClock(w.clock))),
    ("switched off", lambda w: setattr(w, "use_compiled_sample", False)),
    ("numpy stages", lambda w: setattr(w, "compiled", False)),
])
def test_only_the_common_case_is_compiled(why, change):
    world = World.from_config(lamps(), clock=TickClock(), notify=None)
    for _ in range(2):
        world.step()
    assert compiled_sample.for_frame(world.stages, world.sim, world.timing) is not None
    change(world)
    assert compiled_sample.for_frame(world.stages, world.sim, world.timing) is None, why


@pytest.mark.parametrize("name", ["asteroids", "deforming"])
def test_scenarios_beyond_the_common_case_run_in_python(name):
    world = World.from_config(load_config(shipped_config(f"{name}.toml")), clock=TickClock(), notify=None)
    for _ in range(2):
        world.step()
    assert compiled_sample.for_frame(world.stages, world.sim, world.timing) is None


def test_forced_levels_at_the_exact_level_are_left_to_python():
    cfg = lamps()
    world = World.from_config(lamps(min_level=cfg.collision.tree_depth + 1), clock=TickClock(), notify=None)
    for _ in range(2):
        world.step()
    assert compiled_sample.for_frame(world.stages, world.sim, world.timing) is None


def test_a_kernel_reads_the_clocks_python_reads():
    for clock, read in ((WALL, time.perf_counter), (ThreadClock(), time.thread_time)):
        state = kernel_clock(clock)
        before = read()
        inside = read_clock(state)
        assert before <= inside <= read()
    tick = TickClock(tick=0.25, start=1.0)
    state = kernel_clock(tick)
    assert [read_clock(state) for _ in range(3)] == [1.25, 1.5, 1.75]
    sync_clock(tick, state)
    assert tick() == 2.0, "the kernel's reads advanced the TickClock"
    assert kernel_clock(RecordingClock(WALL)) is None
