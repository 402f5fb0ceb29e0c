"""`spaceship-sim bench hubbard`: the detectors' runs, the per-call histograms, the accuracy sweep, the
render sweep, --cpu-load, and exact-only worlds.

The runs read a TickClock (time = clock reads), so which levels the time-critical run reaches,
and so its trajectories, are the same on any machine, however slow or loaded."""
import csv
import math
from pathlib import Path

import pytest

from spaceship_sim.bench import bench_hubbard
from spaceship_sim.cli.main import build_parser, main
from spaceship_sim.clock import TickClock

REPO = Path(__file__).resolve().parents[2]


def test_hubbard_bench_writes_runs_histograms_accuracy_and_render_sweep(tmp_path, capsys):
    out = tmp_path / "h"
    args = build_parser().parse_args(["bench", "hubbard", "--config", str(REPO / "configs/lamps.toml"),
                                      "--frames", "40", "--warmup", "1", "--budgets", "0.02,50", "--calls", "12",
                                      "--repeat", "1", "--detectors", "bsp,sphere_leaves,medial", "--cpu-load", "1",
                                      "--sweep-render", "0,40", "--intervals-ab", "--out", str(out)])
    assert bench_hubbard.run(args, clock=TickClock(1e-5)) == 0
    for run in ("bsp", "sphere_leaves", "medial"):
        assert {p.name for p in (out / run).iterdir()} == {"frames.csv", "summary.json", "profile.png"}
    runs = {r["detector"]: r for r in csv.DictReader(open(out / "runs.csv"))}
    assert list(runs) == ["bsp", "sphere_leaves", "medial"]
    assert runs["medial"]["time_critical"] == "True" and runs["bsp"]["time_critical"] == "False"
    assert all("overhead_us_per_sample_median" in r for r in runs.values())  # the narrow stage's, outside kernels
    # exact-only detectors answer every colliding pair exactly: bound 0
    assert float(runs["bsp"]["separation_bound_median_m"]) == 0.0 == float(runs["sphere_leaves"]["separation_bound_median_m"])
    printed = capsys.readouterr().out
    rows = {line.split()[0]: line.split()[1] for line in printed.splitlines()
            if line.split()[:1] in (["bsp"], ["sphere_leaves"], ["medial"])}
    assert rows == {"bsp": "exact-only", "sphere_leaves": "exact-only", "medial": "time-critical"}
    header = next(line for line in printed.splitlines() if line.startswith("detector"))
    sphere_leaves = next(line for line in printed.splitlines() if line.startswith("sphere_leaves"))
    assert header.index("mode") == sphere_leaves.index("exact-only")  # the columns line up
    assert "1 busy processes beside" in printed
    calls = list(csv.DictReader(open(out / "calls.csv")))
    assert len(calls) == 12 and {"t_bsp_s", "t_sphere_leaves_s", "t_level1_s", "bound_level4_m"} <= set(calls[0])
    hist = list(csv.DictReader(open(out / "histograms.csv")))
    per_panel = {}
    for r in hist:
        key = (r["histogram"], r["baseline"], r["level"])
        per_panel[key] = per_panel.get(key, 0) + int(r["calls"])
    assert all(n == 12 for (h, _, _), n in per_panel.items() if h == "speedup")  # every call in every panel
    assert {b for h, b, _ in per_panel if h == "speedup"} >= {"bsp", "sphere_leaves"}
    acc = list(csv.DictReader(open(out / "accuracy.csv")))
    assert [float(r["budget_ms"]) for r in acc] == [0.02, 50.0]
    assert int(acc[-1]["pairs"]) > 0, "the lamps collide within 40 frames"
    # a generous budget answers every colliding pair exactly; a tiny one only at the forced level 1
    assert float(acc[-1]["exact_fraction"]) == 1.0 and float(acc[-1]["bound_max_m"]) == 0.0
    assert float(acc[0]["mean_level"]) < 4 and float(acc[0]["bound_median_m"]) > 0
    # separation intervals: narrowed after the verdicts, never wider than without; closed with time enough
    for r in acc:
        assert float(r["width_median_m_tighten"]) <= float(r["width_median_m_verdict"])
    assert float(acc[-1]["width_median_m_tighten"]) == 0.0
    sweep = list(csv.DictReader(open(out / "render_sweep.csv")))
    assert [float(r["render_ms"]) for r in sweep] == [0.0, 40.0]
    # a 40 ms render alone is over the 33.3 ms target: no mode can hold it
    assert float(sweep[1]["time_critical_within_target"]) == 0.0 == float(sweep[1]["exact_only_within_target"])
    assert {"time_critical_verdict_within_target", "time_critical_width_median_m",
            "time_critical_verdict_width_median_m"} <= set(sweep[0])  # --intervals-ab's mode: not the config's
    # both modes' widths measured (verdict-only's made after each frame was timed): tightening never widens
    verdict, tighten = (float(sweep[0][f"time_critical{m}_width_median_m"]) for m in ("_verdict", ""))
    assert 0.0 <= tighten <= verdict < math.inf
    for png in ("render_sweep.png", "accuracy.png", "profiles.png", "speedup.png", "separation.png"):
        assert (out / png).stat().st_size > 10_000


def test_exact_only_worlds_bsp_and_brute_force_fly_alike():
    """The pipeline with an exact strategy alone: BSP and the brute-force oracle give the same
    verdicts, so the same trajectories (state hash), and find collisions on the way."""
    from spaceship_sim.config import config_from_dict
    from spaceship_sim.sim.world import World

    cfg = config_from_dict({"arena": {"size": 40.0}, "ships": {"count": 8, "user_model": "lamp", "models": ["lamp"],
                                                               "initial_speed": 8.0},
                            "collision": {"time_critical": False, "all_contacts": False}})
    hashes, hits = [], []
    for method in ("bsp", "brute"):
        world = World.from_config(cfg, clock=TickClock(1e-5), exact_only=method)
        hits.append(sum(world.step(0.0).colliding_pairs for _ in range(40)))
        hashes.append(world.state.hash())
    assert hashes[0] == hashes[1] and hits[0] == hits[1] > 0


@pytest.mark.parametrize("argv, field", [(["--sweep-render", "5,-1"], "--sweep-render"),
                                         (["--budgets", "0"], "--budgets"), (["--frames", "0"], "--frames"),
                                         (["--render-ms", "-3"], "--render-ms"),
                                         (["--intervals-ab"], "--intervals-ab")])
def test_hubbard_bench_bad_arguments_exit_2_and_write_nothing(tmp_path, capsys, argv, field):
    assert main(["bench", "hubbard", *argv, "--out", str(tmp_path / "h")]) == 2
    assert field in capsys.readouterr().err
    assert not (tmp_path / "h").exists()


@pytest.mark.parametrize("argv, config, render_ms", [
    ([], "lamps.toml", 31.0), (["--scene", "heavy"], "heavy.toml", 5.0), (["--scene", "crowd"], "crowd.toml", 10.0),
    (["--scene", "heavy", "--render-ms", "12"], "heavy.toml", 12.0)])
def test_scene_sets_config_and_render_unless_given(argv, config, render_ms):
    from spaceship_sim.bench.bench_hubbard import scene_defaults
    from spaceship_sim.cli.run import check_args
    args = build_parser().parse_args(["bench", "hubbard", *argv])
    scene_defaults(args)
    check_args(args)  # the run command's defaults must not override the scene's
    assert Path(args.config).name == config and args.render_ms == render_ms


def test_thread_clock_counts_this_threads_work_not_waits_and_the_bench_names_it():
    """--clock thread: frames timed in this thread's CPU time; a wait (the stand-in render's sleep)
    adds nothing, and spend() reports the nominal render time."""
    import time

    from spaceship_sim.clock import CLOCKS, ThreadClock
    from spaceship_sim.errors import InputError

    clock = ThreadClock()
    t0 = clock()
    time.sleep(0.05)
    t1 = clock()
    while clock() - t1 < 0.01:  # 10 ms of this thread's own work
        pass
    assert t1 - t0 < 0.01 and clock.spend(0.006) == 0.006
    args = build_parser().parse_args(["bench", "hubbard", "--clock", "thread"])
    assert CLOCKS[args.clock].__class__ is ThreadClock
    with pytest.raises(InputError, match="--clock: invalid choice: 'cpu'"):
        build_parser().parse_args(["bench", "hubbard", "--clock", "cpu"])
