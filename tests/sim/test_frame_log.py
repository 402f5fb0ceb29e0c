"""Run reports from bounded accumulators: summary.json figures, profile columns, files all or nothing."""
import csv
import json
import math

import numpy as np
import pytest

from spaceship_sim.sim.frame_log import OUTPUTS, FrameLog, ProfileColumns, RunSummary
from spaceship_sim.sim.stats import FrameStats, Quantiles

MAX_LEVEL = 4
RENDER = 0.027  # [s] the stand-in render's nominal time


def random_frames(n: int, seed: int = 0) -> list[FrameStats]:
    rng = np.random.default_rng(seed)
    frames = []
    for i in range(n):
        hits = int(rng.integers(0, 3))
        bounds = rng.uniform(0, 3, hits) * (rng.random(hits) < 0.8)  # a fifth exact: bound 0
        s = FrameStats(frame=i, target=1 / 30, t_integrate=rng.uniform(2e-4, 6e-4), t_broad=rng.lognormal(-8, 1),
                       t_narrow=rng.lognormal(-7, 1.5), budget=rng.uniform(0, 0.03),
                       detection_used=rng.uniform(0, 0.01), candidate_pairs=int(rng.integers(0, 40)),
                       colliding_pairs=hits, exact_pairs=int(rng.integers(0, hits + 1)),
                       level_hist=tuple(int(x) for x in rng.multinomial(hits, [0.2] * 5)),
                       sep_bound_min=float(bounds.min()) if hits else math.nan, sep_bounds=bounds,
                       sep_bounds_rel=bounds / rng.uniform(1, 5, hits))
        s.finish(rng.uniform(0.02, 0.034))
        s.t_off_core = rng.uniform(0, 0.004) * (rng.random() < 0.3)
        frames.append(s)
    return frames


def reference_summary(frames: list[FrameStats], skip: int) -> dict:
    """summary.json's figures computed from every frame held at once (numpy)."""
    fs = frames[skip:]
    out = {}
    for attr in ["frame_time", "t_sim", "t_narrow", "render_actual", "slack"]:
        v = np.array([getattr(s, attr) for s in fs]) * 1e3
        out[f"{attr}_ms"] = {"median": np.median(v), "p99": np.percentile(v, 99), "max": v.max()}
    b = np.array([s.sep_bound_min for s in fs if not math.isnan(s.sep_bound_min)])
    out["separation_bound_m"] = {"median": np.median(b), "p99": np.percentile(b, 99), "max": b.max()}
    out["frames_over_target"] = sum(s.overrun for s in fs)
    out["frames_over_target_render_late"] = sum(s.overrun and s.frame_time - s.render_actual + RENDER <= s.target
                                                for s in fs)
    out["candidate_pairs_mean"] = np.mean([s.candidate_pairs for s in fs])
    out["colliding_pairs_total"] = sum(s.colliding_pairs for s in fs)
    out["exact_pairs_total"] = sum(s.exact_pairs for s in fs)
    out["level_histogram"] = np.sum([s.level_hist for s in fs], axis=0).tolist()
    out["accuracy"] = {}
    for key, attr in (("separation_bound_m", "sep_bounds"), ("separation_bound_fraction", "sep_bounds_rel")):
        v = np.concatenate([getattr(s, attr) for s in fs])
        out["accuracy"][key] = {"median": np.median(v), "p90": np.percentile(v, 90), "p99": np.percentile(v, 99),
                                "max": v.max()}
    return out


def test_run_summary_matches_figures_from_every_frame():
    frames = random_frames(3000)
    acc = RunSummary(len(frames), skip=5, max_level=MAX_LEVEL, render_nominal=RENDER)
    for s in frames:
        acc.add(s)
    got, want = acc.to_dict(), reference_summary(frames, skip=5)
    assert got["frames"] == 3000 and got["frames_summarized"] == 2995 and got["warmup_frames_skipped"] == 5
    for key in ["frame_time_ms", "t_sim_ms", "t_narrow_ms", "render_actual_ms", "slack_ms", "separation_bound_m"]:
        for fig in ("median", "p99", "max"):
            assert got[key][fig] == pytest.approx(want[key][fig], rel=Quantiles.RESOLUTION, abs=1e-9), (key, fig)
    assert 0 < want["frames_over_target_render_late"] < want["frames_over_target"]  # both kinds drawn
    for key in ["frames_over_target", "frames_over_target_render_late", "colliding_pairs_total", "exact_pairs_total",
                "level_histogram"]:
        assert got[key] == want[key], key
    assert got["candidate_pairs_mean"] == pytest.approx(want["candidate_pairs_mean"])
    accuracy = got["accuracy"]  # over every colliding verdict, not per frame
    hist = np.array(want["level_histogram"])
    assert accuracy["level_histogram"] == want["level_histogram"] and accuracy["colliding_verdicts"] == hist.sum()
    assert accuracy["exact_fraction"] == hist[-1] / hist.sum()
    assert accuracy["level_fraction"] == pytest.approx(hist / hist.sum())
    for key, figures in want["accuracy"].items():
        for fig, value in figures.items():
            assert accuracy[key][fig] == pytest.approx(value, rel=Quantiles.RESOLUTION, abs=1e-9), (key, fig)
    assert got["fraction_within_target"] == 1 - want["frames_over_target"] / 2995
    off_core = sum(s.overrun and s.frame_time - s.t_off_core <= s.target for s in frames[5:])
    assert 0 < off_core < want["frames_over_target"]  # both kinds drawn
    machine = acc.machine_figures()
    assert machine["frames_over_target_off_core"] == off_core
    v = np.array([s.t_off_core for s in frames[5:]]) * 1e3
    assert machine["off_core_ms"]["p99"] == pytest.approx(np.percentile(v, 99), rel=Quantiles.RESOLUTION, abs=1e-9)


def test_profile_has_one_column_per_frame_in_short_runs_and_keeps_spikes_in_long_ones():
    short = random_frames(600)
    cols = ProfileColumns(600, MAX_LEVEL)
    for s in short:
        cols.add(s)
    assert cols.per_column == 1 and np.array_equal(cols.x(), np.arange(600))
    assert np.allclose(cols.mean_ms("t_narrow"), [1e3 * s.t_narrow for s in short])
    assert np.array_equal(cols.levels().T, [s.level_hist for s in short])

    n = 200_000
    cols = ProfileColumns(n, MAX_LEVEL)
    assert cols.per_column == 100 and len(cols.count) == 2000
    spike = FrameStats(target=1 / 30, t_narrow=0.5)
    spike.finish(0.0)
    calm = FrameStats(target=1 / 30, t_narrow=0.001)
    calm.finish(0.0)
    for i in range(n):
        cols.add(spike if i == 123_456 else calm)
    assert cols.frame_time_max.max() == 0.5 and np.argmax(cols.frame_time_max) == 1234
    assert cols.mean_ms("t_narrow")[1234] == pytest.approx((500 + 99 * 1) / 100)
    assert cols.frames == n and cols.over == 1


def test_frame_log_writes_rows_as_they_come_and_moves_all_files_in_at_commit(tmp_path):
    out = tmp_path / "run"
    frames = random_frames(50)
    log = FrameLog(out, 50, 5, MAX_LEVEL)
    for s in frames:
        log.add(s)
    partial = list(out.glob(".partial-*/frames.csv"))
    assert len(partial) == 1 and not any((out / name).exists() for name in OUTPUTS), "nothing in place before commit"
    summary = log.commit("test", seed=1)
    assert sorted(p.name for p in out.iterdir()) == sorted(OUTPUTS), "three files, no partial folder left"
    assert json.loads((out / "summary.json").read_text()) == json.loads(json.dumps(summary))
    assert summary["seed"] == 1 and summary["rss_mb"]["end"] > 0
    rows = list(csv.DictReader(open(out / "frames.csv")))
    assert len(rows) == 50
    for s, row in zip(frames, rows):
        assert row["sep_bound_min"] == ("" if math.isnan(s.sep_bound_min) else repr(s.sep_bound_min))


def test_frame_log_discarded_on_failure_leaves_no_folder(tmp_path):
    out = tmp_path / "run"
    log = FrameLog(out, 50, 5, MAX_LEVEL)
    log.add(random_frames(1)[0])
    log.discard()
    assert not out.exists()


@pytest.mark.parametrize("seed", range(6))
def test_verdict_tally_kernel_equals_numpy(seed):
    """FrameStats.add_detection's two tallies (numba once compiled, numpy before) agree bit for bit."""
    from spaceship_sim.sim.stats import tally_verdicts_kernel, tally_verdicts_numpy
    rng = np.random.default_rng(seed)
    n, k = 8, int(rng.integers(0, 15))
    pairs = np.array([rng.choice(n, 2, replace=False) for _ in range(k)], np.int64).reshape(-1, 2)
    colliding, exact = rng.random(k) < 0.5, rng.random(k) < 0.5
    bound = np.where(colliding, rng.uniform(0, 3, k), np.inf)
    distance = np.where(rng.random(k) < 0.5, rng.uniform(0, 9, k), np.nan)
    distance[rng.random(k) < 0.2] = np.inf
    radii = rng.uniform(1, 5, n)
    got = tally_verdicts_kernel(colliding, exact, bound, pairs, radii, distance)
    want = tally_verdicts_numpy(colliding, exact, bound, pairs, radii, distance)
    assert got[:2] == want[:2] and got[4] == want[4]
    np.testing.assert_array_equal(got[2], want[2])
    np.testing.assert_array_equal(got[3], want[3])


def test_summary_records_the_machines_load_over_the_run(tmp_path):
    """summary.json says what the machine was doing: load average at the start and the end and how
    often the OS preempted the run, so a slow run on a busy machine is not read as a slow algorithm."""
    log = FrameLog(tmp_path / "out", n_frames=3, skip=0, max_level=2)
    for frame in range(3):
        log.add(FrameStats(frame=frame, target=0.033))
    load = log.commit("t")["machine_load"]
    saved = json.loads((tmp_path / "out" / "summary.json").read_text())["machine_load"]
    assert saved == load and load["cores"] >= 1 and load["preempted"] >= 0
    assert len(load["load_average_start"]) == 3 and len(load["load_average_end"]) == 3
