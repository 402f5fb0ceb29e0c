"""`spaceship-sim bench narrowphase`: shallow poses sit at first contact, the command runs on tiny
cases (built-in mesh, mesh file, without python-fcl) and refuses bad --model values. No timings
are asserted: the bench's figures are for people to read."""
import csv
import sys

import numpy as np
import pytest

from spaceship_sim.bench.bench_narrowphase import (DEFAULT_MODELS, SHALLOW_SCALE, exact_verdict, fcl_pair,
                                                   first_contact, model_names, resolve_model, shallow_poses)
from spaceship_sim.cli.main import main
from spaceship_sim.meshes import validate_mesh_arrays
from spaceship_sim.narrowphase import TreeBank, collide_pair
from spaceship_sim.spheretree import build_tree

TINY = ["--pairs", "20", "--depth", "2", "--brute-poses", "2", "--repeat", "1"]


@pytest.fixture(scope="module", autouse=True)
def tree_cache(tmp_path_factory):
    """Trees of non-asset models go to a throwaway cache, shared by this module's runs."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
        yield


@pytest.fixture(scope="module")
def torus(meshes):
    v, f = meshes["torus"]
    mesh = validate_mesh_arrays(v, f, "torus")
    tree = build_tree(v, f, method="octree", depth=2)
    return mesh, tree, TreeBank.from_trees([tree])


def test_first_contact_is_the_farthest_colliding_distance():
    # colliding on [0, 2] and on a thin shell [4.9, 5.1]: coming from 10, contact is at 5.1
    def collides(_, s):
        return (s <= 2.0) | ((4.9 <= s) & (s <= 5.1))
    assert np.allclose(first_contact(collides, 3, 10.0), 5.1, atol=1e-3)


@pytest.mark.parametrize("oracle", ["exact level", "fcl"])
def test_shallow_poses_sit_at_first_contact(torus, oracle):
    mesh, tree, bank = torus
    if oracle == "fcl":
        peer = fcl_pair(mesh)
        if peer is None:
            pytest.skip("python-fcl not installed")
        verdict = peer.verdict
    else:
        verdict = exact_verdict(bank)
    T, contact = shallow_poses(np.random.default_rng(3), 6, 4 * float(tree.radius[0]), verdict)
    offsets = T[1::2, :3, 3]
    scale = np.linalg.norm(offsets, axis=1) / contact
    assert np.all((SHALLOW_SCALE[0] <= scale) & (scale <= SHALLOW_SCALE[1]))
    for i in range(6):  # the project's exact verdict flips across the contact distance
        pose = T[2 * i + 1].copy()
        verdicts = []
        for s in (0.98, 1.03):
            pose[:3, 3] = offsets[i] / scale[i] * s
            verdicts.append(collide_pair(tree, np.eye(4), tree, pose, triangle_tests=True).colliding)
        assert verdicts == [True, False], f"pose {i}: contact at {contact[i]:.4f} m"


def test_methods_are_timed_in_turn_and_keep_their_best():
    from spaceship_sim.bench.bench_narrowphase import in_turn
    calls = []
    times = {"a": iter([5.0, 2.0, 3.0]), "b": iter([1.0, 4.0, 0.5])}

    def timer(name):
        def call():
            calls.append(name)
            return next(times[name]), f"{name}{len(calls)}"
        return call

    got = in_turn({"a": timer("a"), "b": timer("b")}, rounds=3)
    assert calls == ["a", "b", "a", "b", "a", "b"]  # alternately: each round sees both
    assert got == {"a": (2.0, "a5"), "b": (0.5, "b6")}  # best time, last result


def test_methods_timed_together_report_each_their_best():
    from spaceship_sim.bench.bench_narrowphase import in_turn
    rounds = iter([{"x": (3.0, "x1"), "y": (1.0, "y1")}, {"x": (2.0, "x2"), "y": (4.0, "y2")}])
    got = in_turn({"a": lambda: (5.0, "a"), "xy": lambda: next(rounds)}, rounds=2)
    assert got == {"a": (5.0, "a"), "x": (2.0, "x2"), "y": (1.0, "y2")}  # best time, last result, per name


def test_model_names_split_commas_and_drop_repeats():
    assert model_names(["lamp,torus", "capsules", " torus"]) == ["lamp", "torus", "capsules"]
    assert model_names(None) == list(DEFAULT_MODELS)


def test_cli_runs_both_pose_kinds_on_a_builtin_mesh(tmp_path, capsys):
    argv = ["bench", "narrowphase", "--model", "torus", "--poses-kind", "both", *TINY,
            "--csv", str(tmp_path / "rows.csv"), "--plot", str(tmp_path / "bars.png")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "deep poses (20;" in out and "shallow poses (20;" in out and "CHECK FAILED" not in out
    rows = list(csv.DictReader(open(tmp_path / "rows.csv")))
    methods = {"sphere level 0", "sphere level 1", "sphere level 2", "exact, first contact",
               "exact, all contacts", "brute force (2 poses)"}
    for kind in ("deep", "shallow"):
        assert methods <= {r["method"] for r in rows if r["poses_kind"] == kind}
    if fcl_pair(resolve_model("torus").mesh) is not None:
        assert "torus: level 2 vs fcl first contact: " in out and "x (deep), " in out and "x (shallow)" in out
        assert {r["reference"] for r in rows} == {"fcl collide, first contact"}
    assert (tmp_path / "bars.png").stat().st_size > 10_000


def test_cli_takes_a_mesh_file_and_centres_it(tmp_path, capsys, meshes):
    import trimesh
    v, f = meshes["box"]
    path = tmp_path / "brick.off"
    trimesh.Trimesh(v + [5.0, -1.0, 2.0], f, process=False).export(path)
    mesh = resolve_model(str(path)).mesh
    assert np.allclose(mesh.vertices.min(0) + mesh.vertices.max(0), 0.0)
    assert main(["bench", "narrowphase", "--model", str(path), "--poses-kind", "shallow", *TINY]) == 0
    out = capsys.readouterr().out
    assert f"model {path}: 12 triangles" in out and "shallow poses (20;" in out and "deep poses" not in out


def test_cli_without_fcl_compares_against_the_exact_level(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "fcl", None)  # import fcl raises ImportError
    assert main(["bench", "narrowphase", "--model", "torus", "--poses-kind", "deep", *TINY]) == 0
    out = capsys.readouterr().out
    assert "python-fcl is not installed" in out and "fcl collide" not in out
    assert "torus: level 2 vs exact first contact: " in out


def test_cli_times_on_cpu_time_when_asked(capsys):
    import spaceship_sim.bench.bench_narrowphase as bench
    try:
        assert main(["bench", "narrowphase", "--model", "torus", "--poses-kind", "deep", "--clock", "cpu", *TINY]) == 0
        assert bench._timer is bench.CLOCKS["cpu"]
    finally:
        bench._timer = bench.CLOCKS["wall"]
    out = capsys.readouterr().out
    assert out.startswith("timings: CPU time of this thread") and "CHECK FAILED" not in out


@pytest.mark.parametrize("model", ["nosuchship", "missing.ply", "garbage.ply", "notes.txt", "lamp,nosuchship"])
def test_cli_bad_model_exits_2_with_one_line(tmp_path, monkeypatch, capsys, model):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "garbage.ply").write_bytes(b"ply\nthis is not a mesh\n")
    (tmp_path / "notes.txt").write_text("hello\n")
    assert main(["bench", "narrowphase", "--model", model, *TINY]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: command line: --model: ") and err.count("\n") == 1, err


def test_the_strategy_table_has_a_column_for_every_exact_level():
    """bench narrowphase prints every exact level against fcl in one table: each has its row."""
    from spaceship_sim.bench.bench_narrowphase import EXACT_ROWS
    from spaceship_sim.config import EXACT_LEVELS
    assert set(EXACT_ROWS) == set(EXACT_LEVELS)
