"""Mesh loading/validation (spaceship_sim.meshes) and the ship generator (scripts/make_ships.py)."""
from __future__ import annotations

import importlib.util
import itertools
import re
import warnings
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spaceship_sim.errors import InputError
from spaceship_sim.meshes import (
    Mesh,
    MeshError,
    OpenMeshWarning,
    available_models,
    assets_dir,
    load_mesh,
    load_model,
    model_path,
    validate_mesh_arrays,
)

REPO = Path(__file__).resolve().parent.parent


def _load_generator():
    spec = importlib.util.spec_from_file_location("make_ships", REPO / "scripts" / "make_ships.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


make_ships = _load_generator()

# a closed, outward-oriented tetrahedron
TET_V = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], float)
TET_F = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]], np.int32)


def write_ascii_ply(path: Path, vertices, faces) -> Path:
    """ASCII PLY with any values (nan, bad indices) written verbatim."""
    lines = ["ply", "format ascii 1.0", f"element vertex {len(vertices)}",
             "property float x", "property float y", "property float z",
             f"element face {len(faces)}", "property list uchar int vertex_indices", "end_header"]
    lines += [" ".join(str(x) for x in v) for v in vertices]
    lines += [" ".join(str(int(i)) for i in [len(f), *f]) for f in faces]
    path.write_text("\n".join(lines) + "\n")
    return path


def assert_mesh_error(path, field: str, problem: str) -> MeshError:
    """load_mesh(path) raises MeshError whose one-line text is '<path>: <field>: ...<problem>...'."""
    with pytest.raises(MeshError) as info:
        load_mesh(path)
    err = info.value
    assert isinstance(err, InputError)
    assert err.file == str(path) and err.key == field
    assert problem in err.problem
    assert "\n" not in str(err) and str(err).startswith(f"{path}: ")
    return err


# ---------------------------------------------------------------- bad files

def test_missing_file(tmp_path):
    assert_mesh_error(tmp_path / "nope.ply", "", "file not found")


def test_directory_is_not_a_file(tmp_path):
    d = tmp_path / "dir.ply"
    d.mkdir()
    assert_mesh_error(d, "", "not a file")


def test_unsupported_format(tmp_path):
    p = tmp_path / "ship.xyz"
    p.write_text("0 0 0\n")
    assert_mesh_error(p, "format", "unsupported mesh format")


@pytest.mark.parametrize("content", [b"", b"\x00\xff garbage \x13" * 20, b"ply\nformat binary_little_endian"])
def test_garbage_bytes(tmp_path, content):
    p = tmp_path / "junk.ply"
    p.write_bytes(content)
    assert_mesh_error(p, "", "cannot read PLY file")


def test_truncated_binary_ply(tmp_path):
    p = tmp_path / "cut.ply"
    p.write_bytes(model_path("lamp").read_bytes()[:4000])
    assert_mesh_error(p, "", "cannot read PLY file")


def test_empty_mesh(tmp_path):
    assert_mesh_error(write_ascii_ply(tmp_path / "empty.ply", [], []), "faces", "empty mesh")


def test_vertices_without_faces(tmp_path):
    assert_mesh_error(write_ascii_ply(tmp_path / "cloud.ply", TET_V, []), "faces", "empty mesh")


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf"])
def test_non_finite_vertex(tmp_path, bad):
    v = TET_V.tolist()
    v[2][1] = bad
    err = assert_mesh_error(write_ascii_ply(tmp_path / "nan.ply", v, TET_F), "vertices[2]", "not finite")
    assert bad.lstrip("-") in err.problem


@pytest.mark.parametrize("index", [4, 99, -1])
def test_face_index_out_of_range(tmp_path, index):
    f = TET_F.copy()
    f[3, 1] = index
    assert_mesh_error(write_ascii_ply(tmp_path / "idx.ply", TET_V, f), "faces[3]", "out of range")


def test_degenerate_repeated_index(tmp_path):
    f = TET_F.copy()
    f[1] = [0, 1, 1]
    assert_mesh_error(write_ascii_ply(tmp_path / "rep.ply", TET_V, f), "faces[1]", "degenerate (repeated")


def test_degenerate_zero_area(tmp_path):
    v = np.vstack([TET_V, [[0.5, 0.0, 0.0]]])  # vertex 4 on edge 0-1: triangle (0, 4, 1) is a line
    f = np.vstack([TET_F, [[0, 4, 1]]])
    p = write_ascii_ply(tmp_path / "flat.ply", v, f)
    assert str(assert_mesh_error(p, "faces[4]", "degenerate (zero area)")) == \
        f"{p}: faces[4]: degenerate (zero area)"


def test_inside_out_closed_mesh(tmp_path):
    p = write_ascii_ply(tmp_path / "inverted.ply", TET_V, TET_F[:, ::-1])
    assert_mesh_error(p, "faces", "inside-out")


# ---------------------------------------------------------------- good and open files

def test_closed_tetrahedron_loads_exactly(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a closed mesh warns nothing
        m = load_mesh(write_ascii_ply(tmp_path / "tet.ply", TET_V, TET_F))
    assert m.closed and m.name == "tet"
    assert m.vertices.dtype == np.float64 and m.faces.dtype == np.int32
    np.testing.assert_array_equal(m.vertices, TET_V)  # no merging or reordering by trimesh
    np.testing.assert_array_equal(m.faces, TET_F)
    assert m.volume == pytest.approx(1 / 6)
    assert m.bounding_radius == pytest.approx(1.0)
    assert not m.vertices.flags.writeable and not m.faces.flags.writeable


def test_open_mesh_warns_once_and_is_flagged(tmp_path):
    p = write_ascii_ply(tmp_path / "open.ply", TET_V, TET_F[:3])  # one face missing: 3 boundary edges
    with pytest.warns(OpenMeshWarning) as rec:
        m = load_mesh(p)
    assert len(rec) == 1 and "3 boundary edges" in str(rec[0].message) and str(p) in str(rec[0].message)
    assert m.closed is False and len(m.faces) == 3


def test_inconsistent_winding_is_open(tmp_path):
    f = TET_F.copy()
    f[0] = f[0, ::-1]
    with pytest.warns(OpenMeshWarning, match="inconsistent winding"):
        assert load_mesh(write_ascii_ply(tmp_path / "flip.ply", TET_V, f)).closed is False


def test_validate_arrays_shapes_and_types():
    with pytest.raises(MeshError, match=r"mem: vertices: expected shape \(n, 3\)"):
        validate_mesh_arrays(np.zeros((4, 2)), TET_F, "mem")
    with pytest.raises(MeshError, match="mem: faces: expected triangles"):
        validate_mesh_arrays(TET_V, np.zeros((2, 4), int), "mem")
    with pytest.raises(MeshError, match="mem: faces: indices must be integers"):
        validate_mesh_arrays(TET_V, TET_F.astype(float), "mem")
    with pytest.raises(MeshError, match="mem: vertices: not an array"):
        validate_mesh_arrays([[0, 0, "a"]], TET_F, "mem")
    m = validate_mesh_arrays(TET_V.tolist(), TET_F.astype(np.int64), "mem", name="tet")
    assert isinstance(m, Mesh) and m.closed and m.name == "tet" and m.path == "mem"


def _random_closed_mesh(seed: int):
    """Convex hull of random points: closed and outward; returns (vertices, faces)."""
    from scipy.spatial import ConvexHull

    pts = np.random.default_rng(seed).normal(size=(12, 3))
    hull = ConvexHull(pts)
    faces = hull.simplices.copy()
    # orient each face so its normal points away from the centroid
    t = pts[faces]
    inward = np.einsum("ij,ij->i", np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0]),
                       t[:, 0] - pts[hull.vertices].mean(axis=0)) < 0
    faces[inward] = faces[inward][:, ::-1]
    return pts, faces


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n_drop=st.integers(0, 2), n_flip=st.integers(0, 2))
def test_closedness_matches_trimesh(seed, n_drop, n_flip):
    """Our edge-pairing check agrees with trimesh's watertight + winding-consistent test."""
    import trimesh

    v, f = _random_closed_mesh(seed)
    rng = np.random.default_rng(seed + 1)
    flip = rng.choice(len(f), n_flip, replace=False)
    f[flip] = f[flip][:, ::-1]
    f = np.delete(f, rng.choice(len(f), n_drop, replace=False), axis=0)
    ref = trimesh.Trimesh(v, f, process=False)
    expected = bool(ref.is_watertight and ref.is_winding_consistent)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        try:
            m = validate_mesh_arrays(v, f, "rand")
        except MeshError as err:  # every face flipped: closed but inside-out
            assert expected and "inside-out" in str(err) and ref.volume < 0
            return
    assert m.closed == expected
    assert len([w for w in rec if issubclass(w.category, OpenMeshWarning)]) == (0 if expected else 1)


# ---------------------------------------------------------------- the shipped models

@pytest.fixture(scope="module")
def models():
    with warnings.catch_warnings():
        warnings.simplefilter("error", OpenMeshWarning)
        return {name: load_model(name) for name in make_ships.SPECS}


def test_assets_listed():
    assert set(make_ships.SPECS) <= set(available_models())
    assert assets_dir() == REPO / "assets"


@pytest.mark.parametrize("name", ["lamp", "fighter", "freighter"])
def test_asset_is_valid_closed_and_in_range(models, name):
    import trimesh

    m = models[name]
    spec = make_ships.SPECS[name]
    lo, hi = spec["tris"]
    assert m.closed and lo <= len(m.faces) <= hi
    assert m.volume > 0
    # independent check with trimesh
    tm = trimesh.Trimesh(m.vertices, m.faces, process=False)
    assert tm.is_watertight and tm.is_winding_consistent and tm.volume == pytest.approx(m.volume)
    # body origin at the minimal bounding sphere centre: the radius about the origin is the target
    # radius, and no shift of the origin could shrink it much (check along +-axes)
    assert m.bounding_radius == pytest.approx(spec["radius"], rel=1e-4)
    for axis in np.vstack([np.eye(3), -np.eye(3)]) * 0.02 * spec["radius"]:
        assert np.linalg.norm(m.vertices - axis, axis=1).max() > m.bounding_radius * 0.999


def test_fighter_nose_points_along_plus_x(models):
    v = models["fighter"].vertices
    tip = v[np.argmax(v[:, 0])]
    assert tip[0] > 0.95 * models["fighter"].bounding_radius  # the nose touches the bounding sphere
    assert abs(tip[1]) < 0.5 and abs(tip[2]) < 1.0  # on the centre line
    assert v[:, 0].max() > -v[:, 0].min()  # longer in front of the origin than behind (pointed nose)


def test_lamp_has_deep_concavity(models):
    """A large share of the lamp's convex hull is empty space (the shade cup, gaps around the arm)."""
    from scipy.spatial import ConvexHull

    m = models["lamp"]
    assert m.volume < 0.3 * ConvexHull(m.vertices).volume


def test_unknown_model_lists_available():
    with pytest.raises(MeshError) as info:
        load_model("battlestar")
    assert info.value.key == "model" and "battlestar" in str(info.value)
    assert all(name in str(info.value) for name in make_ships.SPECS)


def test_assets_dir_env_override(tmp_path, monkeypatch):
    monkeypatch.setenv("SPACESHIP_SIM_ASSETS", str(tmp_path))
    assert assets_dir() == tmp_path and available_models() == []
    write_ascii_ply(tmp_path / "tet.ply", TET_V, TET_F)
    assert available_models() == ["tet"] and model_path("tet") == tmp_path / "tet.ply"
    assert load_model("tet").closed
    with pytest.raises(MeshError, match=r"available: tet\)"):
        load_model("lamp")


# ---------------------------------------------------------------- the generator

@pytest.mark.parametrize("name", ["lamp", "fighter"])
def test_generator_is_deterministic(name):
    v1, f1 = make_ships.build(name)
    v2, f2 = make_ships.build(name)
    np.testing.assert_array_equal(v1, v2)
    np.testing.assert_array_equal(f1, f2)


def _assets_made_with_this_manifold3d() -> bool:
    header = model_path("lamp").read_bytes()[:400].decode("ascii", "replace")
    made_with = re.search(r"comment manifold3d (\S+)", header)
    assert made_with, "assets must record the manifold3d version that made them"
    return made_with.group(1) == version("manifold3d")


def _brute_force_min_sphere_radius(pts: np.ndarray) -> float:
    """Reference: smallest enclosing sphere among all spheres through 2, 3 or 4 of the points."""
    best = np.inf
    for k in (2, 3, 4):
        for comb in itertools.combinations(range(len(pts)), k):
            c, r2 = make_ships._sphere_through([pts[i] for i in comb])
            r = np.sqrt(r2)
            if r < best and np.linalg.norm(pts - c, axis=1).max() <= r * (1 + 1e-9):
                best = r
    return best


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(5, 12), flat=st.booleans())
def test_minimal_sphere_matches_brute_force(seed, n, flat):
    pts = np.random.default_rng(seed).normal(size=(n, 3))
    if flat:  # nearly coplanar sets exercise the 3-point (circle) supports
        pts[:, 2] *= 1e-3
    centre, radius = make_ships.minimal_sphere(pts)
    assert np.linalg.norm(pts - centre, axis=1).max() <= radius * (1 + 1e-9)
    assert radius == pytest.approx(_brute_force_min_sphere_radius(pts), rel=1e-9)


def test_committed_assets_match_generator(models):
    """The files in assets/ are what the generator makes (exactly, with the same manifold3d)."""
    v, f = make_ships.build("lamp")
    if not _assets_made_with_this_manifold3d():
        # another manifold3d may triangulate differently; the shape must still agree
        assert abs(len(f) - len(models["lamp"].faces)) <= 0.1 * len(f)
        assert Mesh("x", "x", v, f, True).volume == pytest.approx(models["lamp"].volume, rel=1e-3)
        return
    np.testing.assert_array_equal(v, models["lamp"].vertices)
    np.testing.assert_array_equal(f, models["lamp"].faces)


def test_generator_main_writes_loadable_files(tmp_path, capsys):
    assert make_ships.main(["--out", str(tmp_path), "--only", "lamp"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"lamp\s+\d+\s+\d+\s+True\s+4\.000", out)
    if _assets_made_with_this_manifold3d():
        assert (tmp_path / "lamp.ply").read_bytes() == model_path("lamp").read_bytes()
