"""Sweep specs: the grid they span, the keys cells are stored under, and every bad spec as one
line naming the spec file and the key, exit 2, nothing written."""
from __future__ import annotations

import pytest

from spaceship_sim.cli.main import main
from spaceship_sim.errors import InputError
from spaceship_sim.sweep.spec import load_spec

VERSION = "0" * 64


def test_the_axes_span_their_product_in_the_spec_order(spec_file, tmp_path):
    spec = load_spec(spec_file(tmp_path, seeds=(1, 2, 3)), VERSION)
    assert len(spec.cells) == 3 * 2 * 2
    assert list(spec.cells[0].params) == ["config", "seed", "detector", "render_ms"]
    assert [(c.params["seed"], c.params["detector"], c.params["render_ms"]) for c in spec.cells[:4]] == [
        (1, "medial", 28.0), (1, "medial", 31.0), (1, "sphere_leaves", 28.0), (1, "sphere_leaves", 31.0)]
    first = spec.cells[0].task
    assert first.config.sim.seed == 1 and first.config.collision.time_critical and first.render_s == 0.028
    assert not spec.cells[2].task.config.collision.time_critical  # sphere_leaves: exact-only
    assert not any(c.timing for c in spec.cells)  # the default clock is the TickClock


def test_a_budget_sets_the_target_frame_time_beside_the_render(spec_file, tmp_path):
    spec = load_spec(spec_file(tmp_path, text='[axes]\nconfig = ["lamps.toml"]\nrender_ms = [31]\n'
                                               'budget_ms = [0.5, 2]\n'), VERSION)
    assert [c.task.config.sim.target_frame_time for c in spec.cells] == pytest.approx([0.0315, 0.033])


def test_cells_are_keyed_by_their_effective_parameters_and_the_code_version(spec_file, tmp_path):
    a = load_spec(spec_file(tmp_path), VERSION)
    again = load_spec(spec_file(tmp_path / "..", name="elsewhere.toml", text=(tmp_path / "spec.toml").read_text()),
                      VERSION)
    assert [c.key for c in a.cells] == [c.key for c in again.cells]  # the spec's place does not matter
    assert len({c.key for c in a.cells}) == len(a.cells)
    assert not {c.key for c in a.cells} & {c.key for c in load_spec(tmp_path / "spec.toml", "1" * 64).cells}


def test_the_separation_intervals_axes_set_the_collision_settings(spec_file, tmp_path):
    spec = load_spec(spec_file(tmp_path, text='[axes]\nconfig = ["lamps.toml"]\ndistance_intervals = ["verdict", '
                                               '"tighten"]\ninterval_share = [0, 0.5]\n'), VERSION)
    assert [(c.task.config.collision.distance_intervals, c.task.config.collision.interval_share)
            for c in spec.cells] == [("verdict", 0.0), ("verdict", 0.5), ("tighten", 0.0), ("tighten", 0.5)]


def test_wall_clock_cells_are_timing_cells(spec_file, tmp_path):
    spec = load_spec(spec_file(tmp_path, text='[axes]\nconfig = ["lamps.toml"]\nclock = ["tick", "wall"]\n'), VERSION)
    assert [c.timing for c in spec.cells] == [False, True]


BAD = {  # name: (spec text, key the error names, phrase of the problem)
    "unknown axis": ('[axes]\nconfig = ["lamps.toml"]\nspeed = [1, 2]\n', "axes.speed", "unknown axis"),
    "empty axis": ('[axes]\nconfig = ["lamps.toml"]\nseed = []\n', "axes.seed", "empty"),
    "unknown config": ('[axes]\nconfig = ["lamps.toml", "nowhere.toml"]\n', "axes.config[1]", "no config"),
    "unknown detector": ('[axes]\ndetector = ["medial", "magic"]\n', "axes.detector[1]", "unknown 'magic'"),
    "bad render": ('[axes]\nrender_ms = [28, -1]\n', "axes.render_ms[1]", "must be in"),
    "unknown figure": ('[sweep]\nmeasure = ["speed"]\n[axes]\nseed = [1]\n', "sweep.measure", "unknown figure"),
    "warmup too long": ('[sweep]\nframes = 4\nwarmup = 4\n[axes]\nseed = [1]\n', "sweep.warmup", "must be <"),
    "no axes": ('[sweep]\nframes = 4\n', "axes", "missing"),
    "detector beside tree method": ('[axes]\ndetector = ["medial"]\ntree_method = ["octree"]\n', "axes.tree_method",
                                    "cannot be combined"),
    "share past the verdicts' part": ('[axes]\ninterval_share = [0.5, 1]\n', "axes.interval_share[1]",
                                      "expected a number in [0, 0.9]"),
    "unknown interval mode": ('[axes]\ndistance_intervals = ["exact"]\n', "axes.distance_intervals[0]",
                              "unknown 'exact'"),
    "unknown section": ('[grid]\nseed = [1]\n[axes]\nseed = [1]\n', "grid", "unknown section"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_spec_is_one_line_naming_the_file_and_key(spec_file, tmp_path, case):
    text, key, says = BAD[case]
    path = spec_file(tmp_path, text=text)
    with pytest.raises(InputError) as e:
        load_spec(path, VERSION)
    assert (e.value.file, e.value.key) == (str(path), key) and says in e.value.problem


def test_the_sweep_command_refuses_a_bad_spec_with_exit_2_and_writes_nothing(spec_file, tmp_path, capsys):
    path = spec_file(tmp_path, text='[axes]\nconfig = ["lamps.toml"]\nseed = []\n')
    before = sorted(tmp_path.iterdir())
    assert main(["sweep", str(path), "--out", str(tmp_path / "out"), "--serial"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {path}: axes.seed: empty: give at least one value"]
    assert sorted(tmp_path.iterdir()) == before
