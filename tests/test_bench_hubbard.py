"""`spaceship-sim bench hubbard`: both modes' files, the accuracy sweep and the render sweep.

The runs read a TickClock (time = clock reads), so which levels the time-critical run reaches,
and so its trajectories, are the same on any machine, however slow or loaded."""
import csv
from pathlib import Path

import pytest

from spaceship_sim.bench import bench_hubbard
from spaceship_sim.cli import build_parser, main
from spaceship_sim.clock import TickClock

REPO = Path(__file__).resolve().parents[1]


def test_hubbard_bench_writes_profiles_accuracy_and_render_sweep(tmp_path, capsys):
    out = tmp_path / "h"
    args = build_parser().parse_args(["bench", "hubbard", "--config", str(REPO / "configs/lamps.toml"),
                                      "--frames", "40", "--warmup", "1", "--budgets", "0.02,50",
                                      "--sweep-render", "0,40", "--out", str(out)])
    assert bench_hubbard.run(args, clock=TickClock(1e-5)) == 0
    for mode in ("time_critical", "exact_only"):
        assert {p.name for p in (out / mode).iterdir()} == {"frames.csv", "summary.json", "profile.png"}
    acc = list(csv.DictReader(open(out / "accuracy.csv")))
    assert [float(r["budget_ms"]) for r in acc] == [0.02, 50.0]
    assert int(acc[-1]["pairs"]) > 0, "the lamps collide within 40 frames"
    # a generous budget answers every colliding pair exactly; a tiny one only at the forced level 1
    assert float(acc[-1]["exact_fraction"]) == 1.0 and float(acc[-1]["bound_max_m"]) == 0.0
    assert float(acc[0]["mean_level"]) < 4 and float(acc[0]["bound_median_m"]) > 0
    sweep = list(csv.DictReader(open(out / "render_sweep.csv")))
    assert [float(r["render_ms"]) for r in sweep] == [0.0, 40.0]
    # a 40 ms render alone is over the 33.3 ms target: no mode can hold it
    assert float(sweep[1]["time_critical_within_target"]) == 0.0 == float(sweep[1]["exact_only_within_target"])
    assert (out / "render_sweep.png").stat().st_size > 10_000 and (out / "accuracy.png").stat().st_size > 10_000


@pytest.mark.parametrize("argv, field", [(["--sweep-render", "5,-1"], "--sweep-render"),
                                         (["--budgets", "0"], "--budgets"), (["--frames", "0"], "--frames"),
                                         (["--render-ms", "-3"], "--render-ms")])
def test_hubbard_bench_bad_arguments_exit_2_and_write_nothing(tmp_path, capsys, argv, field):
    assert main(["bench", "hubbard", *argv, "--out", str(tmp_path / "h")]) == 2
    assert field in capsys.readouterr().err
    assert not (tmp_path / "h").exists()
