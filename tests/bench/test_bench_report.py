"""`spaceship-sim bench report`: the verdicts from fixed figures, the whole report on a tiny profile (the
document, its data, its plots and the README's block), bad input, and the README's headline figures
against the report they were copied from.

The tiny report's lamps runs read a TickClock, so its sweep is the same on any machine; no timing of
the narrow phase is asserted (its figures are for people to read), only where they go."""
import json
import shutil
from pathlib import Path

import pytest

from spaceship_sim.bench import report_figures as rf
from spaceship_sim.bench.report import PROFILES, Profile, make
from spaceship_sim.bench.report_doc import END, START, readme_block, readme_block_of, with_block
from spaceship_sim.cli.main import build_parser, main
from spaceship_sim.clock import TickClock
from spaceship_sim.errors import InputError

REPO = Path(__file__).resolve().parents[2]
TINY = Profile("tiny", ("--model", "torus", "--poses", "4", "--poses-kind", "both", "--depth", "2",
                        "--brute-poses", "1", "--repeat", "1", "--threads", "1"),
               ("--frames", "6", "--warmup", "1", "--detectors", "medial,sphere_leaves", "--calls", "0",
                "--budgets", "0.1", "--sweep-render", "0,40"),
               ("--model", "torus", "--poses", "4", "--depth", "2"))


def rows(us: dict) -> list[dict]:
    """bench narrowphase rows from {(model, kind, method): µs per pair}."""
    return [dict(model=m, poses_kind=k, method=method, us_per_pair=v) for (m, k, method), v in us.items()]


def narrowphase(us: dict) -> dict:
    return dict(command="spaceship-sim bench narrowphase", rows=rows(us), checks_ok=True)


def sweep(*within: tuple) -> dict:
    """bench hubbard's render sweep rows from (render ms, time-critical share, exact-only share), target 33.33 ms."""
    return dict(command="spaceship-sim bench hubbard", cpu_load=0, sweep=[
        dict(render_ms=r, slack_ms=100 / 3 - r, time_critical_within_target=tc, exact_only_within_target=eo,
             time_critical_sim_median_ms=1.0) for r, tc, eo in within])


def figure(benches: dict, key: str) -> rf.Figure:
    return next(f for f in rf.figures(benches) if f.key == key)


LEVEL2 = {("lamp", "deep", rf.FCL_FIRST): 10.0, ("lamp", "deep", "sphere level 2"): 0.5,          # 20x
          ("fighter", "deep", rf.FCL_FIRST): 10.0, ("fighter", "deep", "sphere level 2"): 2.0,    # 5x
          ("lamp", "shallow", rf.FCL_FIRST): 30.0, ("lamp", "shallow", "sphere level 2"): 0.5}    # 60x
LAMPS = sweep((28.0, 1.0, 1.0), (100 / 3 - 1, 0.99, 0.9), (33.0, 0.2, 0.1))


def test_a_ratio_target_is_met_only_when_every_model_and_pose_kind_meets_it():
    fig = figure(dict(narrowphase=narrowphase(LEVEL2), hubbard=LAMPS), "level2_vs_fcl")
    assert fig.verdict == rf.NOT_MET and (fig.limit, fig.rule) == (10.0, ">=")
    assert [(v["model"], v["kind"], v["value"]) for v in fig.values] == [
        ("lamp", "deep", 20.0), ("fighter", "deep", 5.0), ("lamp", "near-touching", 60.0)]
    assert fig.figure == "fcl ÷ level 2: deep 5× (fighter) – 20× (lamp); near-touching 60× (lamp)"
    met = {**LEVEL2, ("fighter", "deep", "sphere level 2"): 1.0}  # 10x: the target's own value is met
    assert figure(dict(narrowphase=narrowphase(met), hubbard=LAMPS), "level2_vs_fcl").verdict == rf.MET


def test_an_upper_limit_holds_every_method_pair_and_a_missing_peer_is_not_measured():
    us = {("torus", "deep", "faceoctree, first contact"): 3.0, ("torus", "deep", "exact, first contact"): 2.0,
          ("torus", "deep", "faceoctree, all contacts"): 9.0, ("torus", "deep", "exact, all contacts"): 3.0,
          ("torus", "deep", "ssv collide, first contact"): 1.0, ("torus", "deep", "sphere level 2"): 0.5}
    benches = dict(narrowphase=narrowphase(us), hubbard=LAMPS)
    octree = figure(benches, "faceoctree_vs_leaves")
    assert [v["value"] for v in octree.values] == [1.5, 3.0] and octree.verdict == rf.NOT_MET  # all contacts 3x > 2x
    us[("torus", "deep", "faceoctree, all contacts")] = 6.0
    assert figure(benches | dict(narrowphase=narrowphase(us)), "faceoctree_vs_leaves").verdict == rf.MET
    for key in ("level2_vs_fcl", "ssv_first_vs_fcl", "ssv_all_vs_fcl"):  # no fcl rows (python-fcl missing)
        fig = figure(benches, key)
        assert fig.verdict == rf.NOT_MEASURED and fig.values == [] and fig.figure.endswith("not measured")
    leaves = figure(dict(narrowphase=narrowphase({**us, ("torus", "deep", rf.FCL_FIRST): 4.0}), hubbard=LAMPS),
                    "leaves_vs_fcl")
    assert leaves.verdict == rf.NO_TARGET and leaves.rule is None and leaves.values[0]["value"] == 0.5


def test_the_lamps_target_counts_the_renders_up_to_target_minus_1_ms():
    fig = figure(dict(narrowphase=narrowphase(LEVEL2), hubbard=LAMPS), "lamps_sweep")
    assert fig.verdict == rf.MET  # 33 ms (0.33 ms of slack) is past what the target names
    assert [v["render_ms"] for v in fig.values] == [28.0, 100 / 3 - 1]
    assert fig.figure == "time-critical 100 / 99 / 20% at 28 / 32.3333 / 33 ms" and fig.peer == "exact-only 100 / 90 / 10%"
    short = sweep((28.0, 1.0, 1.0), (100 / 3 - 1, 0.989, 0.9))
    assert figure(dict(narrowphase=narrowphase(LEVEL2), hubbard=short), "lamps_sweep").verdict == rf.NOT_MET
    beyond = sweep((33.0, 0.2, 0.1))
    assert figure(dict(narrowphase=narrowphase(LEVEL2), hubbard=beyond), "lamps_sweep").verdict == rf.NOT_MEASURED
    loaded = figure(dict(narrowphase=narrowphase(LEVEL2), hubbard=LAMPS, hubbard_load={**LAMPS, "cpu_load": 1}),
                    "lamps_sweep_load")
    assert loaded.verdict == rf.NO_TARGET and "1 busy processes beside" in loaded.target


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_each_profile_is_what_the_benches_accept_and_reaches_the_targets_last_render(name):
    profile = PROFILES[name]
    build_parser().parse_args(["bench", "narrowphase", *profile.narrowphase])
    hubbard = build_parser().parse_args(["bench", "hubbard", *profile.hubbard])
    renders = [float(ms) for ms in hubbard.sweep_render.split(",")]
    assert hubbard.detectors == "medial,sphere_leaves" and hubbard.calls == 0 and hubbard.intervals_ab
    assert rf.NARROWER_RENDER_MS in renders  # the intervals' target is measured
    assert max(renders) == pytest.approx(100 / 3 - rf.SLACK_MS, abs=0.05)  # the target's hardest load is measured
    assert "--clock" not in profile.narrowphase + profile.hubbard  # figures on the wall clock, as a frame is timed


def test_the_interval_targets_read_bench_intervals_rows():
    """Level 3 within 0.05 R on every model, and medial at most octree at every level both have."""
    spheres = {("lamp", "medial", 1): 0.53, ("lamp", "octree", 1): 0.37, ("lamp", "medial", 3): 0.049,
               ("lamp", "octree", 3): 0.092, ("torus", "medial", 3): 0.029, ("torus", "octree", 3): 0.079,
               ("torus", "medial", 4): 0.01}
    bench = dict(command="spaceship-sim bench intervals",
                 rows=[dict(model=m, method=t, level=k, spheres=v) for (m, t, k), v in spheres.items()])
    level, versus = rf.interval_figures(bench)
    assert level.verdict == rf.MET and [(v["model"], v["value"]) for v in level.values] == [("lamp", 0.049), ("torus", 0.029)]
    assert level.figure == "(upper − true) / R: 0.029 (torus) – 0.049 (lamp)"
    assert versus.verdict == rf.NOT_MET and versus.figure.startswith("medial ÷ octree: 0.367 (torus level 3) – 1.43 (lamp level 1)")
    bench["rows"] = [r for r in bench["rows"] if (r["model"], r["level"]) != ("lamp", 1)]
    bench["rows"][0]["spheres"] = 0.051
    level, versus = rf.interval_figures(bench)
    assert level.verdict == rf.NOT_MET and versus.verdict == rf.MET
    assert "intervals_level" not in [f.key for f in rf.figures(dict(narrowphase=narrowphase(LEVEL2), hubbard=LAMPS))]


def test_the_narrowing_target_reads_the_render_sweeps_intervals_ab():
    """At 31 ms: the verdict-only width over verdict-then-tighten's at least 3, frames within target the
    same within half a point; a sweep without the A/B's columns is not measured."""
    def lamps(tighten_m, frames, frames_verdict_only):
        bench = sweep((28.0, 1.0, 1.0), (31.0, frames, 0.7))
        bench["sweep"][1] |= dict(time_critical_width_median_m=tighten_m, time_critical_verdict_width_median_m=6.0,
                                  time_critical_verdict_within_target=frames_verdict_only)
        return figure(dict(narrowphase=narrowphase(LEVEL2), hubbard=bench), "intervals_narrower")

    met = lamps(1.5, 0.997, 1.0)
    assert met.verdict == rf.MET and [v["value"] for v in met.values] == [4.0]
    assert met.figure == "median width 4× narrower (99.7% of frames within target)"
    assert met.peer == "verdict-only: 100% of frames within target"
    assert lamps(2.5, 0.997, 1.0).verdict == rf.NOT_MET  # 2.4x
    assert lamps(1.5, 0.99, 1.0).verdict == rf.NOT_MET   # a point of frames lost
    assert figure(dict(narrowphase=narrowphase(LEVEL2), hubbard=LAMPS), "intervals_narrower").verdict == rf.NOT_MEASURED


@pytest.fixture()
def tree_cache(tmp_path, monkeypatch):
    """The torus's trees go to a throwaway cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def test_a_tiny_report_writes_the_document_its_data_its_plots_and_the_readme_block(tmp_path, tree_cache, capsys):
    readme = tmp_path / "README.md"
    shutil.copyfile(REPO / "README.md", readme)
    before = readme.read_text()
    command = "spaceship-sim bench report --profile tiny --cpu-load 1"
    replaced = tmp_path / "docs/benchmarks/report.json"  # the report this one replaces: its verdicts are compared
    replaced.parent.mkdir(parents=True)
    replaced.write_text(json.dumps(dict(date="2026-01-01 00:00 UTC", profile="tiny", figures=[
        dict(key="lamps_sweep", verdict=rf.NOT_MET)])))
    assert make(TINY, command, tmp_path / "docs", readme, cpu_load=1, clock=TickClock(1e-5)) == 0
    report = json.loads((tmp_path / "docs/benchmarks/report.json").read_text())
    # the saved figures are the ones the saved data gives
    assert report["figures"] == rf.as_dicts(rf.figures(report["benches"]))
    assert [f["key"] for f in report["figures"]] == [s.key for s in rf.RATIO_TARGETS] + [
        "intervals_level", "intervals_medial_vs_octree", "lamps_sweep", "intervals_narrower", "lamps_sweep_load"]
    # a depth-2 tree has no level 3: that target is not measured; levels 1 and 2 are compared
    by_key = {f["key"]: f for f in report["figures"]}
    assert by_key["intervals_level"]["verdict"] == rf.NOT_MEASURED
    assert by_key["intervals_narrower"]["verdict"] == rf.NOT_MEASURED  # no 31 ms render, no A/B
    assert [(v["model"], v["level"]) for v in by_key["intervals_medial_vs_octree"]["values"]] == [
        ("torus", 1), ("torus", 2)]
    assert report["command"] == command and report["profile"] == "tiny" and report["minutes"] >= 0
    machine = report["machine"]
    assert machine["cores"] >= 1 and len(machine["load_before"]) == 3 == len(machine["load_after"]) and machine["cpu"]
    assert machine["preempted"] >= 0 and set(machine["cpus_allowed"]) <= set(range(machine["cores"]))
    assert set(report["packages"]) >= {"numpy", "numba", "python-fcl", "spaceship_sim"} and report["threading_layer"]
    lamps = report["benches"]["hubbard"]
    assert [r["render_ms"] for r in lamps["sweep"]] == [0.0, 40.0]
    assert lamps["command"] == "spaceship-sim bench hubbard " + " ".join(TINY.hubbard)
    assert report["benches"]["hubbard_load"]["cpu_load"] == 1
    # a 40 ms render alone is over the 33.3 ms target: the verdict reads the render of 0 ms only
    sweep_fig = next(f for f in report["figures"] if f["key"] == "lamps_sweep")
    assert [v["render_ms"] for v in sweep_fig["values"]] == [0.0] and sweep_fig["verdict"] == rf.MET
    models = {r["model"] for r in report["benches"]["narrowphase"]["rows"]}
    assert models == {"torus"} and report["benches"]["narrowphase"]["checks_ok"]

    doc = (tmp_path / "docs/BENCHMARKS.md").read_text()
    for f in report["figures"]:
        assert f"### {f['target']}" in doc and f"- command: `{f['command']}`" in doc and f"- verdict: **{f['verdict']}**" in doc
    strategies = "| model | poses | " + " | ".join(f"{m} (default)" if m == report["default_exact_level"] else m
                                                  for m in ("sphere_leaves", "ssv", "bsp", "faceoctree", "ocst", "fcl"))
    for words in ("## Machine", machine["cpu"], "the benches took", "load average", "numba threading layer",
                  "## Every exact strategy", f"`{command}`", strategies):
        assert words in doc
    assert (f"Against the report this one replaced (2026-01-01 00:00 UTC, tiny profile): verdicts changed — "
            f"{sweep_fig['target']}: not met → met.") in doc
    pictures = [line.split("(", 1)[1].rstrip(")") for line in doc.splitlines() if line.startswith("![")]
    assert sorted(Path(p).name for p in pictures) == sorted(
        ["ratios.png", "narrowphase.png", "hubbard_render_sweep.png", "hubbard_profiles.png",
         "hubbard_load_render_sweep.png", "hubbard_load_profiles.png"])
    assert all((tmp_path / "docs" / p).stat().st_size > 10_000 for p in pictures)

    after = readme.read_text()
    assert readme_block_of(after, readme) == readme_block(report, "docs/BENCHMARKS.md")
    assert with_block(after, readme, readme_block_of(before, readme)) == before  # nothing else changed
    assert not [p for p in tmp_path.rglob(".*partial*")]


def test_the_document_says_whether_the_verdicts_are_the_replaced_reports():
    from spaceship_sim.bench.report_doc import agreement
    figs = [dict(key="a", target="A", verdict=rf.MET), dict(key="b", target="B", verdict=rf.NOT_MET)]
    prev = dict(date="D", profile="quick", verdicts=dict(a=rf.MET, b=rf.NOT_MET, gone=rf.MET))
    assert agreement(dict(figures=figs, previous=prev)) == [
        "Against the report this one replaced (D, quick profile): every verdict the same.", ""]
    prev["verdicts"]["b"] = rf.MET
    assert "verdicts changed — B: met → not met." in agreement(dict(figures=figs, previous=prev))[0]
    assert agreement(dict(figures=figs, previous=None)) == []


def test_readme_headline_figures_are_the_reports():
    """README.md's block is the one the report's renderer makes from docs/benchmarks/report.json, whose
    figures are the ones its own data gives."""
    saved = REPO / "docs/benchmarks/report.json"
    if not saved.exists():
        pytest.skip("docs/benchmarks/report.json not written yet: `spaceship-sim bench report` on a quiet machine")
    report = json.loads(saved.read_text())
    assert report["figures"] == rf.as_dicts(rf.figures(report["benches"]))
    readme = REPO / "README.md"
    assert readme_block_of(readme.read_text(), readme) == readme_block(report, "docs/BENCHMARKS.md")


def test_the_readme_has_one_headline_figures_block():
    text = (REPO / "README.md").read_text()
    assert text.count(START) == 1 == text.count(END) and text.index(START) < text.index(END)


@pytest.mark.parametrize("text", ["no markers", f"{END}\n{START}", f"{START}\n{START}\n{END}", f"{START} only"])
def test_a_readme_without_one_block_is_refused(tmp_path, text):
    with pytest.raises(InputError, match="headline figures: needs one line"):
        readme_block_of(text, tmp_path / "R.md")


@pytest.mark.parametrize("argv, words", [
    (["--readme", "{tmp}/plain.md"], "plain.md: headline figures: needs one line"),
    (["--readme", "{tmp}/missing.md"], "command line: --readme: "),
    (["--out", "{tmp}/plain.md"], "command line: --out: "),
    (["--profile", "huge"], "command line: --profile: invalid choice")])
def test_bad_input_exits_2_with_one_line_before_any_bench_runs(tmp_path, capsys, argv, words):
    (tmp_path / "plain.md").write_text("# a README without the block\n")
    argv = [a.format(tmp=tmp_path) for a in argv]
    out = [] if "--out" in argv else ["--out", str(tmp_path / "docs")]
    assert main(["bench", "report", *argv, *out]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1, err
    assert not (tmp_path / "docs").exists() and (tmp_path / "plain.md").read_text() == "# a README without the block\n"
