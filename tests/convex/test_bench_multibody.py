"""`bench multibody`: runs on a tiny case with plot and CSV, methods agree on colliding pairs in a
dense box, and bad arguments give one line and exit 2."""
from __future__ import annotations

import csv

import numpy as np
import pytest

from spaceship_sim.bench.bench_multibody import fcl_available
from spaceship_sim.cli.main import main
from spaceship_sim.convex.multibody import BruteForceBodies, ICollide, MultiBody


def test_tiny_run_prints_every_method_and_writes_plot_and_csv(tmp_path, capsys):
    png, table = tmp_path / "mb.png", tmp_path / "mb.csv"
    rc = main(["bench", "multibody", "--n", "20", "--frames", "5", "--warmup", "1", "--faces", "20,36",
               "--at-n", "12", "--plot", str(png), "--csv", str(table)])
    out = capsys.readouterr().out
    assert rc == 0
    for label in ("dynamic boxes + Lin-Canny", "fixed cubes + Lin-Canny", "brute-force pairs + distance"):
        assert out.count(label) == 3  # N sweep row and the two faces rows
    assert png.stat().st_size > 10_000
    rows = list(csv.DictReader(open(table)))
    assert [(r["sweep"], r["n"], r["faces"]) for r in rows] == [("n", "20", "20"), ("faces", "12", "20"),
                                                                 ("faces", "12", "36")]
    assert all(float(r["disagree"]) == 0 for r in rows)
    if fcl_available():  # the same-run medians against fcl, frame and per pair
        assert out.count("medians over frames: dynamic") == 3
        for r in rows:  # the pair ratio is NaN when no frame had a box pair
            assert float(r["median_frame_ratio"]) > 0
            assert float(r["median_pair_ratio"]) > 0 if float(r["active"]) > 0 else np.isnan(float(r["median_pair_ratio"]))


def test_detectors_agree_in_a_dense_box():
    """Dynamic boxes, fixed cubes and brute force find the same colliding pairs frame after frame."""
    world = MultiBody(30, 20, 15.0, 0.1, 0.15, seed=3)
    dets = [ICollide(world.pset, world.rot, "dynamic"), ICollide(world.pset, world.rot, "fixed"),
            BruteForceBodies(world.pset)]
    colliding = 0
    for _ in range(40):
        found = [sorted(map(tuple, d.detect(world.rot, world.pos).tolist())) for d in dets]
        assert found[0] == found[1] == found[2]
        colliding += len(found[0])
        world.respond(np.array(found[0], np.int64).reshape(-1, 2))
        world.step()
    assert colliding > 0
    assert dets[0].fallbacks == 0 and all(len(d.sweep.pairs) == d.active for d in dets[:2])


def test_bodies_stay_in_the_box():
    world = MultiBody(10, 8, 10.0, 0.5, 0.05, seed=1)
    for _ in range(200):
        world.step()
    r = world.pset.radius[:, None]
    assert (world.pos > -r).all() and (world.pos < world.side + r).all()


@pytest.mark.parametrize("argv, says", [
    (["--n", "1"], "--n: values must be in 2..5000"),
    (["--n", "ten"], "--n: expected comma-separated numbers"),
    (["--faces", "4"], "--faces: values must be in 8..1000"),
    (["--density", "50"], "--density: values must be in"),
    (["--frames", "0"], "--frames: must be in 1.."),
    (["--plot", "x.jpg"], "--plot: must name a .png file"),
    (["--csv", "x.txt"], "--csv: must name a .csv file"),
])
def test_bad_arguments_one_line_exit_2(argv, says, capsys):
    assert main(["bench", "multibody", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0] and err[0].startswith("error: command line: ")
