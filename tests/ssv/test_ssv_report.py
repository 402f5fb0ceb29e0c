"""SSV report and picture: `build-trees --method ssv --report --picture`, the drawn surfaces, clear errors."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from spaceship_sim.cli.main import main
from spaceship_sim.ssv.core import LSS, PSS, RSS, rect_distance
from spaceship_sim.ssv.report import ssv_surface


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([PSS, LSS, RSS]))
def test_drawn_surface_lies_at_the_radius_from_the_core(seed, kind):
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    c, u, v = rng.normal(size=3), q[:, 0], q[:, 1]
    a = rng.uniform(0.1, 2.0) if kind != PSS else 0.0
    b = rng.uniform(0.0, a) if kind == RSS else 0.0
    r = rng.uniform(0.01, 1.0)
    n = rng.normal(size=(50, 3))
    pts = ssv_surface(c, u, v, a, b, r, n / np.linalg.norm(n, axis=1, keepdims=True))
    d = [rect_distance(tuple(p), tuple(u), tuple(v), 0.0, 0.0, tuple(c), tuple(u), tuple(v), a, b) for p in pts]
    np.testing.assert_allclose(d, r, rtol=1e-9)


@pytest.fixture
def mesh_file(meshes, tmp_path):
    import trimesh
    v, f = meshes["torus"]
    p = tmp_path / "torus.ply"
    trimesh.Trimesh(v, f, process=False).export(p)
    return p


def test_build_trees_ssv_report_and_picture(mesh_file, tmp_path, capsys):
    png = tmp_path / "ssv.png"
    rc = main(["build-trees", str(mesh_file), "--method", "ssv", "--cache-dir", str(tmp_path / "cache"), "--report",
               "--picture", str(png)])
    assert rc == 0
    out = capsys.readouterr().out
    assert "torus: 144 triangles" in out and f"wrote {png}" in out
    from PIL import Image
    assert png.stat().st_size > 10_000 and Image.open(png).format == "PNG"


@pytest.mark.parametrize("picture, says", [("ssv.txt", "must name a .png file"), ("missing/ssv.png", "does not exist")])
def test_build_trees_ssv_bad_picture_is_one_line(mesh_file, tmp_path, capsys, picture, says):
    png = tmp_path / picture
    assert main(["build-trees", str(mesh_file), "--method", "ssv", "--cache-dir", str(tmp_path / "cache"),
                 "--picture", str(png)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "--picture" in err and says in err and len(err.strip().splitlines()) == 1
    assert not png.exists() and not (tmp_path / "cache").exists()
