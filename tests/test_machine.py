"""The frame loop's one request of the OS scheduler: a short time slice, asked for in a block and given
back after it, never passed on to the busy programs a benchmark starts beside it."""
import threading

import pytest

from spaceship_sim.bench.cpu_load import cpu_load
from spaceship_sim.machine import LoadWatch, ask_time_slice, short_time_slice, time_slice

needs_slices = pytest.mark.skipif(time_slice() is None, reason="the OS has no per-thread time slice to ask for")


@needs_slices
def test_a_short_slice_holds_in_its_block_and_the_one_before_returns_after():
    before, go, seen = time_slice(), threading.Event(), []
    older = threading.Thread(target=lambda: (go.wait(), seen.append(time_slice())))  # a worker pool's
    older.start()
    with short_time_slice(2e-4) as granted:
        assert granted == pytest.approx(2e-4) and time_slice() == pytest.approx(2e-4)
        assert LoadWatch().figures()["time_slice_ms"] == pytest.approx(0.2)
        go.set()
        older.join()
        newer = threading.Thread(target=lambda: seen.append(time_slice()))
        newer.start()
        newer.join()
        assert seen == [pytest.approx(2e-4)] * 2  # every thread of the loop wakes as promptly
    assert time_slice() == pytest.approx(before)


@needs_slices
def test_a_slice_of_zero_leaves_the_thread_as_it_is():
    before = time_slice()
    with short_time_slice(0.0) as granted:
        assert granted is None and time_slice() == before


@needs_slices
def test_the_busy_processes_of_a_benchmark_do_not_inherit_the_short_slice():
    default = ask_time_slice(0.0)
    with short_time_slice(1e-4), cpu_load(1) as procs:
        assert time_slice() == pytest.approx(1e-4)
        assert time_slice(procs[0].pid) == pytest.approx(default)


def test_without_per_thread_slices_nothing_is_asked(monkeypatch):
    import spaceship_sim.machine as machine
    monkeypatch.setattr(machine, "_sched_attr", lambda tid: None)
    assert machine.time_slice() is None and machine.ask_time_slice(1e-4) is None
    with machine.short_time_slice(1e-4) as granted:
        assert granted is None
