"""`spaceship-sim build-trees`: caching, report table, picture, and clear errors."""
from __future__ import annotations

import pytest

from spaceship_sim.cli.main import main


@pytest.fixture
def mesh_file(shapes, tmp_path):
    import trimesh
    v, f, _ = shapes["notched"]
    p = tmp_path / "notched.ply"
    trimesh.Trimesh(v, f, process=False).export(p)
    return p


def test_build_trees_report_and_picture(mesh_file, tmp_path, capsys):
    cache = tmp_path / "cache"
    png = tmp_path / "levels.png"
    rc = main(["build-trees", str(mesh_file), "--depth", "2", "--cache-dir", str(cache), "--report",
               "--picture", str(png)])
    assert rc == 0
    out = capsys.readouterr().out
    assert "ratio" in out and "notched" in out
    rows = [line for line in out.splitlines() if line.strip().split("|")[0].strip().endswith(("0", "1", "2"))]
    assert len(rows) == 3 and all("yes" in r for r in rows)  # coverage verified on every level
    assert sorted(p.name.split("-")[1] for p in cache.glob("*.npz")) == ["medial", "octree"]
    assert png.stat().st_size > 10_000
    from PIL import Image
    assert Image.open(png).format == "PNG"
    # second run: served from the cache, same files
    before = {p.name: p.stat().st_mtime_ns for p in cache.glob("*.npz")}
    assert main(["build-trees", str(mesh_file), "--depth", "2", "--cache-dir", str(cache)]) == 0
    assert {p.name: p.stat().st_mtime_ns for p in cache.glob("*.npz")} == before


@pytest.mark.parametrize("extra, text", [
    (["--depth", "0"], "depth"), (["--branching", "1"], "branching"), (["--picture", "x.txt"], "--picture"),
])
def test_build_trees_bad_arguments(mesh_file, tmp_path, capsys, extra, text):
    assert main(["build-trees", str(mesh_file), "--cache-dir", str(tmp_path), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and text in err and len(err.strip().splitlines()) == 1


def test_build_trees_unknown_model(tmp_path, capsys):
    assert main(["build-trees", "no_such_model", "--cache-dir", str(tmp_path)]) == 2
    assert "unknown model" in capsys.readouterr().err
