"""Tree builds report their stages on stderr from the start (the CLI), and stay quiet as a library."""
from __future__ import annotations

import trimesh

from spaceship_sim.cli.main import main
from spaceship_sim.spheretree import build_tree

# the medial build's stages, in the order they run
STAGES = ["loading", "checking the mesh", "distance index", "sampling", "Voronoi (Qhull)", "inside test",
          "bounding sphere", "merging", "coverage", "witness points", "error bounds", "triangle lists"]


def test_cli_reports_each_stage_before_running_it(shapes, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("spaceship_sim.cli.build_trees.LOADING_LINE_BYTES", 0)  # say "loading" for the small torus too
    v, f, _ = shapes["torus"]
    mesh = tmp_path / "ring.ply"
    trimesh.Trimesh(v, f, process=False).export(mesh)
    assert main(["build-trees", str(mesh), "--method", "medial", "--depth", "2",
                 "--cache-dir", str(tmp_path / "cache")]) == 0
    err = capsys.readouterr().err
    where = [err.find(s) for s in STAGES]
    assert all(i >= 0 for i in where), dict(zip(STAGES, where))
    assert where == sorted(where), dict(zip(STAGES, where))
    assert f"of {len(f):,} triangles" in err


def test_library_build_is_quiet_unless_asked(shapes, capsys):
    v, f, _ = shapes["ico"]
    build_tree(v, f, depth=2)
    assert capsys.readouterr().err == ""
    build_tree(v, f, depth=2, progress=True)
    assert "Voronoi (Qhull)" in capsys.readouterr().err
