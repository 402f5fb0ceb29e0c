"""build-trees --all: a folder's trees as parallel tasks on the local cluster, the same trees as a
serial build, whole files only (two workers building one tree leave one good file)."""
from __future__ import annotations

import numpy as np
import pytest

from spaceship_sim.cli.main import main
from spaceship_sim.spheretree.tree import SphereTree
from spaceship_sim.sweep.trees import build_all, build_jobs, mesh_files


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Two small closed meshes in a folder of their own."""
    import trimesh

    folder = tmp_path_factory.mktemp("models")
    trimesh.creation.icosphere(subdivisions=1).export(folder / "ball.ply")
    trimesh.creation.box(extents=(2.0, 1.0, 0.5)).export(folder / "brick.ply")
    (folder / "notes.txt").write_text("not a mesh")
    return folder


def _trees(cache) -> dict:
    return {p.name: SphereTree.load(p) for p in sorted(cache.glob("*.npz"))}


def _same(a: SphereTree, b: SphereTree) -> bool:
    return all(np.array_equal(getattr(a, k), getattr(b, k)) for k in SphereTree._ARRAYS)


def test_build_trees_all_builds_every_model_of_the_folder_as_the_serial_build_does(models, tmp_path, capsys):
    cache, serial = tmp_path / "cache", tmp_path / "serial"
    assert main(["build-trees", "--all", str(models), "--method", "octree", "--cache-dir", str(cache),
                 "--workers", "2"]) == 0
    assert "2 trees of 2 models" in capsys.readouterr().out
    build_all(None, build_jobs(mesh_files(models), ["octree"], 8, 3, 0, str(serial), False), progress=False)
    built, reference = _trees(cache), _trees(serial)
    assert sorted(built) == sorted(reference) and len(built) == 2
    assert all(_same(built[n], reference[n]) for n in built)


def test_two_workers_building_the_same_tree_leave_one_whole_file(client, models, tmp_path):
    cache, serial = tmp_path / "cache", tmp_path / "serial"
    jobs = build_jobs(mesh_files(models)[:1], ["octree"], 8, 3, 0, str(cache), True) * 4
    done = build_all(client, jobs, progress=False)
    assert len(done) == 4 and len({r["worker"] for r in done}) == 2  # both workers built it, each renaming it in
    assert [p.suffix for p in cache.iterdir()] == [".npz"]  # one file, no temp file left behind
    build_all(None, build_jobs(mesh_files(models)[:1], ["octree"], 8, 3, 0, str(serial), True), progress=False)
    (name, tree), = _trees(cache).items()
    assert _same(tree, _trees(serial)[name])


@pytest.mark.parametrize("argv, flag, says", [
    (["--all", "{empty}"], "--all", "no mesh files"),
    (["--all", "{models}", "lamp"], "--all", "not with named meshes"),
    (["--all", "{models}", "--depth", "0"], "--depth", ""),
])
def test_bad_build_trees_all_input_is_one_line_and_exit_2(models, tmp_path, capsys, argv, flag, says):
    (tmp_path / "empty").mkdir()
    argv = [a.format(empty=tmp_path / "empty", models=models) for a in argv]
    assert main(["build-trees", *argv, "--cache-dir", str(tmp_path / "cache")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: command line: {flag}: ") and says in err[0]
    assert not (tmp_path / "cache").exists()
