"""Config loading: every error case gives one clear line naming file and key, exit code 2."""
import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from spaceship_sim.cli.main import main
from spaceship_sim.config import Config, ConfigError, describe, load_config

REPO = Path(__file__).resolve().parents[1]
CONFIGS = sorted((REPO / "configs").glob("*.toml"))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_shipped_configs_are_valid(path):
    cfg = load_config(path)
    assert cfg.source == str(path)


def test_defaults_documented_with_units():
    lines = describe()
    assert all("[" in line.split("#", 1)[1] for line in lines), "every field states its unit"
    assert len(lines) == len({line.split(" = ")[0] for line in lines})


BAD = [
    ("[ships]\ncount = 'ten'\n", "ships.count", "expected an integer"),
    ("[ships]\ncount = 2.5\n", "ships.count", "expected an integer"),
    ("[ships]\ncount = true\n", "ships.count", "expected an integer"),
    ("[ships]\ncount = 0\n", "ships.count", "must be >= 1"),
    ("[ships]\ncolour = 3\n", "ships.colour", "unknown key"),
    ("[shipz]\ncount = 3\n", "shipz", "unknown key"),
    ("[sim]\nframe_dt = -0.1\n", "sim.frame_dt", "must be > 0"),
    ("[sim]\nframe_dt = nan\n", "sim.frame_dt", "must be finite"),
    ("[sim]\ntarget_frame_time = '30Hz'\n", "sim.target_frame_time", "expected a number"),
    ("[collision]\nbroadphase = 'octree'\n", "collision.broadphase", "must be one of"),
    ("[collision]\ntime_critical = 1\n", "collision.time_critical", "expected true/false"),
    ("ships = 3\n", "ships", "expected a table"),
    ("[ships]\nmodels = 'lamp'\n", "ships.models", "expected an array"),
    ("[ships]\nmodels = []\n", "ships.models", "at least one"),
    ("[integrator]\nmin_step = 0.1\nmax_step = 0.01\n", "integrator.min_step", "max_step"),
    ("[[script.paths]]\nship = 99\npoints = [[0.0, 0.0, 0.0]]\n", "script.paths[0].ship", "does not exist"),
    ("[[script.paths]]\nship = 0\npoints = [[0.0, 0.0]]\n", "script.paths[0].points[0]", "[x, y, z]"),
    ("[[script.paths]]\nship = 0\npoints = [[0.0, 'a', 0.0]]\n", "script.paths[0].points[0][1]", "number"),
    ("[arena\nsize = 3\n", "", "not valid TOML"),
]


@pytest.mark.parametrize("text,key,message", BAD, ids=[b[1] or "toml" for b in BAD])
def test_bad_config_names_file_and_key(tmp_path, text, key, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as e:
        load_config(path)
    msg = str(e.value)
    assert msg.startswith(f"{path}: {key}" if key else f"{path}: ")
    assert message in msg
    assert "\n" not in msg


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="file not found"):
        load_config(tmp_path / "nope.toml")


def test_check_config_exit_code_and_one_line(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text("[ships]\ncount = -3\n")
    assert main(["check-config", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {path}: ships.count: must be >= 1, got -3"
    assert main(["check-config", str(CONFIGS[0])]) == 0


def test_console_script_exit_code(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("[sim]\nseed = 'x'\n")
    r = subprocess.run([sys.executable, "-m", "spaceship_sim", "check-config", str(path)],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "sim.seed" in r.stderr


def test_config_is_frozen():
    with pytest.raises(AttributeError):
        Config().ships.count = 5  # type: ignore[misc]


def test_stage_names_come_from_one_registry_each():
    """The config's lists of broad phases and tree builders are the ones the stages implement
    (prebuilt trees: spheretree's builders; "ocst": trees built on collision, narrowphase/ocst.py)."""
    from spaceship_sim.registry import BROADPHASES
    from spaceship_sim.config import BROADPHASE_NAMES, PREBUILT_TREE_METHODS, TREE_METHODS, CollisionConfig
    from spaceship_sim.spheretree.params import METHODS
    assert set(BROADPHASES) == set(BROADPHASE_NAMES) and METHODS == PREBUILT_TREE_METHODS
    assert TREE_METHODS == (*METHODS, "ocst")
    meta = {f.name: f.metadata for f in dataclasses.fields(CollisionConfig)}
    assert meta["broadphase"]["choices"] == BROADPHASE_NAMES and meta["tree_method"]["choices"] == TREE_METHODS


def test_a_renamed_value_still_loads_with_one_line_saying_the_new_spelling(tmp_path, capsys):
    path = tmp_path / "old.toml"
    path.write_text("[collision]\nexact_method = 'leaves'\n")
    assert load_config(path).collision.exact_method == "sphere_leaves"
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "collision.exact_method" in err[0] and "'sphere_leaves'" in err[0] and str(path) in err[0]
    path.write_text("[collision]\nexact_method = 'sphere_leaves'\n")
    assert load_config(path).collision.exact_method == "sphere_leaves" and capsys.readouterr().err == ""


def test_the_default_exact_level_is_ssv_and_sphere_leaves_with_asteroids(tmp_path):
    """SSV, the fastest exact strategy, unless asteroids need the sphere leaves (the others are built
    from the ship models only); an exact level named with asteroids is kept, and checked."""
    path = tmp_path / "a.toml"
    path.write_text("[arena]\nsize = 300\n")
    assert load_config(path).collision.exact_method == "ssv" == Config().collision.exact_method
    path.write_text("[asteroids]\ncount = 10\n")
    assert load_config(path).collision.exact_method == "sphere_leaves"
    path.write_text("[asteroids]\ncount = 10\n[collision]\nexact_method = 'ssv'\n")
    with pytest.raises(ConfigError, match="with asteroids the exact level must be 'sphere_leaves'"):
        load_config(path)


def test_a_renamed_key_still_loads_with_one_line_and_may_not_be_set_twice(tmp_path, capsys):
    path = tmp_path / "old.toml"
    path.write_text("[collision]\nexact = false\n")
    assert load_config(path).collision.triangle_tests is False
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "collision.exact" in err[0] and "collision.triangle_tests" in err[0]
    path.write_text("[collision]\nexact = false\ntriangle_tests = true\n")
    with pytest.raises(ConfigError, match="collision.exact"):
        load_config(path)
