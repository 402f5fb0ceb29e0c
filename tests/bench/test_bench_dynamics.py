"""`bench dynamics` runs end to end on a small fleet and reports agreeing backends."""
import argparse
import re

from spaceship_sim.bench import bench_dynamics


def parse(*argv):
    parser = argparse.ArgumentParser()
    bench_dynamics.register(parser.add_subparsers())
    return parser.parse_args(["dynamics", *argv])


def test_bench_prints_both_backends_and_their_agreement(capsys):
    args = parse("--n", "40", "--frames", "3", "--reference-frames", "2")
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "numba, 1 thread" in out and "numpy reference" in out and "target 2 ms/frame" in out
    diff = float(re.search(r"after 2 frames: (\S+)", out).group(1))
    assert diff < 1e-9
