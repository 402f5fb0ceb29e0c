"""bench stalls: the share of slow calls, and of those the ones the machine slowed (CPU time too)."""
import numpy as np

from spaceship_sim.bench.bench_stalls import slow_shares


def test_slow_calls_are_told_apart_by_whether_their_cpu_time_grew_too():
    wall = np.full(100, 2e-3)
    cpu = wall.copy()
    wall[:4] = 9e-3           # four calls 4.5x the median
    cpu[:3] = 8e-3            # three of them slow on the CPU clock too: the machine
    assert slow_shares(wall, cpu) == (0.04, 0.75)
    assert slow_shares(np.full(10, 1e-3), np.full(10, 1e-3)) == (0.0, 0.0)


def test_the_bench_prints_both_ways_for_each_load(capsys):
    from spaceship_sim.cli.main import main

    assert main(["bench", "stalls", "--calls", "20", "--work-ms", "0.2", "--sleep-ms", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == ["load 0, back to back", "load 0, after a 1 ms sleep"]
    assert all("of those slow in CPU time too" in line for line in lines)
