"""The warm-up with an exact-level strategy (the default, SSV): what the frames call was called
first, by the world's warm-up and by the helper process's (compile_ahead.py), with the same
argument types; the strategy joins the narrow phase with the compiled stages; the helper process
runs and names its failures."""
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from spaceship_sim.clock import TickClock
from spaceship_sim.config import load_config
from spaceship_sim.sim import compile_ahead
from spaceship_sim.sim.world import World, warm_strategy

REPO = Path(__file__).resolve().parents[2]
# Hubbard's crowded lamps with the SSV exact level and no deadline: pairs reach the exact level every
# frame, and some are found apart
LAMPS = load_config(REPO / "configs/lamps.toml")
CROWD = dataclasses.replace(LAMPS, collision=dataclasses.replace(LAMPS.collision, exact_method="ssv",
                                                                 time_critical=False))


def _spy_on(monkeypatch, modules, calls, phase):
    """Every numba kernel of `modules` records (phase, name, argument types) when called from Python."""
    from numba.core.registry import CPUDispatcher

    def spy(name, kernel):
        def call(*args, **kwargs):
            calls[phase[0]].add((name, tuple(kernel.typeof_pyval(a) for a in args)))
            return kernel(*args, **kwargs)
        return call

    for module in modules:
        for name, kernel in list(vars(module).items()):
            if isinstance(kernel, CPUDispatcher):
                monkeypatch.setattr(module, name, spy(name, kernel))


def test_the_frames_call_no_kernel_the_warm_up_and_the_helper_did_not(monkeypatch):
    """Kernel calls are told apart by name and argument types, so kernels other tests compiled in
    this process do not hide a miss; the strategy's own kernels (ssv/exact.py's) are those the
    helper process compiles, and it must reach every one the frames call."""
    from spaceship_sim.narrowphase import intervals, refine
    from spaceship_sim.ssv import exact as ssv_exact

    world = World.from_config(CROWD, warm=False, notify=None, clock=TickClock(tick=1e-5))
    assert world.narrow.detector is None  # bounding spheres until the compiled stages
    calls = {"helper": set(), "warm-up": set(), "frames": set()}
    phase = ["helper"]
    _spy_on(monkeypatch, (refine, intervals, ssv_exact), calls, phase)
    warm_strategy(world.exact_level(), world.models)
    phase[0] = "warm-up"
    world.warm_up(notify=None)
    phase[0] = "frames"
    for _ in range(40):
        world.step()
        world.end_frame(0.02)
    assert type(world.narrow.detector).__name__ == "SSVExact" and world.narrow.detector is world.exact_level()
    names = {name for name, _ in calls["frames"]}
    assert {"search_levels", "complete_pairs", "collide_pairs", "distance_pairs"} <= names, names
    assert calls["frames"] <= calls["warm-up"], sorted(calls["frames"] - calls["warm-up"])
    strategy = {c for c in calls["frames"] if hasattr(ssv_exact, c[0])}
    assert strategy and strategy <= calls["helper"], sorted(strategy - calls["helper"])


def test_the_helper_process_warms_the_strategy_and_names_a_failure():
    helper = compile_ahead.start((CROWD, World.from_config(CROWD, warm=False, notify=None).models))
    assert helper is not None and helper.join() is None
    bad = compile_ahead.start(("not a config", []))
    failed = bad.join()
    assert failed and "Error" in failed  # the helper's last line: the exception


def test_an_error_in_a_background_warm_up_is_raised_by_the_next_step():
    world = World.from_config(CROWD, warm=False, notify=None)
    world.exact_level = lambda: (_ for _ in ()).throw(RuntimeError("trees unreadable"))
    with pytest.raises(RuntimeError, match="trees unreadable"):
        world.warm_up(notify=None)  # the app's thread: raised there, and kept
    with pytest.raises(RuntimeError, match="trees unreadable"):
        world.step()


def test_cached_reads_numbas_index(tmp_path, monkeypatch):
    """A kernel compiled from this source is cached; one never compiled is not; unknown counts as cached."""
    from spaceship_sim.sorting import argsort_stable

    argsort_stable(np.array([2.0, 1.0]))
    assert compile_ahead.cached(argsort_stable)
    source = tmp_path / "fresh_kernel.py"
    source.write_text("from numba import njit\n\n@njit(cache=True)\ndef f(x):\n    return x + 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import fresh_kernel
    assert not compile_ahead.cached(fresh_kernel.f)
    assert compile_ahead.cached(object())
