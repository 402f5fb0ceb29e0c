"""ThreadChoice: each batch on the thread count measured faster, the other re-measured now and then,
and the choice changes when the load does (a fake clock stands in for the machine)."""
import numba
import pytest

from spaceship_sim import threads
from spaceship_sim.threads import ThreadChoice


class FakeTime:
    """perf_counter for threads.py: each batch takes `cost[n]` seconds per unit on n threads."""

    def __init__(self, cost):
        self.now, self.cost = 0.0, cost

    def __call__(self):
        return self.now


def run(choice, clock, units=100):
    with choice.threads_for(units) as n:
        assert numba.get_num_threads() == n
        clock.now += clock.cost[n] * units
    return n


@pytest.fixture
def two_threads(monkeypatch):
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread here")
    clock = FakeTime({1: 1.0, 2: 0.6})
    monkeypatch.setattr(threads.time, "perf_counter", clock)
    return clock


def test_parallel_while_faster_serial_once_the_cores_are_taken_and_back_when_they_are_free(two_threads):
    clock, choice = two_threads, ThreadChoice(2, explore_every=8)
    ran = [run(choice, clock) for _ in range(40)]
    assert ran[:2] == [2, 1] and ran[2:].count(2) >= 34  # measured both, then mostly parallel
    clock.cost[2] = 40.0  # both cores busy elsewhere: a parallel batch waits for a descheduled thread
    ran = [run(choice, clock) for _ in range(40)]
    assert ran[-30:].count(1) >= 26 and ran.count(2) <= 8  # serial within a few parallel batches
    clock.cost[2] = 0.6  # the load goes: a re-measure finds parallel faster again
    ran = [run(choice, clock) for _ in range(40)]
    assert ran[-20:].count(2) >= 17


def test_one_slow_parallel_batch_does_not_flip_the_choice(two_threads):
    clock, choice = two_threads, ThreadChoice(2, explore_every=1000)
    for _ in range(6):
        run(choice, clock)
    clock.cost[2] = 1000.0
    assert run(choice, clock) == 2
    clock.cost[2] = 0.6
    assert [run(choice, clock) for _ in range(5)] == [2] * 5


def test_not_adaptive_always_runs_the_count_given(two_threads):
    clock, choice = two_threads, ThreadChoice(2, adaptive=False)
    clock.cost[2] = 40.0
    assert {run(choice, clock) for _ in range(20)} == {2}


def test_the_thread_count_is_restored_after_a_batch():
    before = numba.get_num_threads()
    choice = ThreadChoice()
    for _ in range(3):
        with choice.threads_for(10):
            pass
    assert numba.get_num_threads() == before


def test_a_form_far_slower_under_load_is_re_measured_ever_more_rarely(two_threads):
    """Each re-measure that finds parallel slower again waits four times longer for the next: a
    long run under load pays it a handful of times (p99 kept), not once in every explore_every."""
    clock, choice = two_threads, ThreadChoice(2, explore_every=16)
    clock.cost[2] = 100.0
    ran = [run(choice, clock) for _ in range(2000)]
    assert ran.count(2) <= 6 and ran[-500:].count(2) <= 1


@pytest.mark.parametrize("given", [None, "5"])
def test_the_openmp_workers_spin_briefly_unless_the_user_says_otherwise(given):
    """The package asks libgomp for a short spin after parallel kernels (machine.spin_briefly_after_kernels
    says why) before numba can load it; a value the user set is kept."""
    import os
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k != "GOMP_SPINCOUNT"}
    if given is not None:
        env["GOMP_SPINCOUNT"] = given
    out = subprocess.run([sys.executable, "-c", "import os, spaceship_sim; print(os.environ['GOMP_SPINCOUNT'])"],
                         env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert out == (given or "20000")
