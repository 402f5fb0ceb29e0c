"""Sweeps on a real local dask cluster (2 worker processes): the same table as the cells run
serially, every cell despite a worker killed mid-sweep, finished cells skipped by a rerun, a
failing cell reported beside the others, timing cells held to the worker that offers `timing`.
Cells are tiny: a few lamps frames on a TickClock."""
from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time

import pytest

from spaceship_sim.cli.main import main
from spaceship_sim.sweep.cell import code_version
from spaceship_sim.sweep.cluster import TIMING
from spaceship_sim.sweep.runner import computed, run_sweep
from spaceship_sim.sweep.spec import Cell, load_spec
from spaceship_sim.sweep.store import CellStore


def _spec(folder, spec_file, **kw):
    return load_spec(spec_file(folder, **kw), code_version())


@pytest.fixture(scope="module")
def serial(spec_file, tmp_path_factory):
    """8 deterministic cells (lamps, 2 seeds x 2 detectors x 2 render loads) and their rows, run
    one after another in this process: the reference."""
    spec = _spec(tmp_path_factory.mktemp("serial"), spec_file)
    return spec, run_sweep(spec.cells, None, progress=False)


def test_a_sweep_on_the_cluster_gives_the_table_of_the_cells_run_serially(client, serial, tmp_path):
    spec, reference = serial
    assert len(spec.cells) >= 8
    rows = run_sweep(spec.cells, CellStore(tmp_path), client, progress=False)
    assert all(r["status"] == "ok" for r in reference + rows)
    assert [computed(r) for r in rows] == [computed(r) for r in reference]
    assert {r["worker"] for r in rows} <= {str(w["name"]) for w in client.scheduler_info()["workers"].values()}
    assert all(r["host"] and r["cpu"] and r["load_1m"] >= 0 and r["numba_threads"] >= 1 for r in rows)


def test_each_local_worker_runs_numba_on_its_share_of_the_cores(client):
    def numba_threads():
        import numba
        return numba.config.NUMBA_NUM_THREADS, numba.get_num_threads()

    share = max(1, (os.cpu_count() or 1) // 2)
    assert set(client.run(numba_threads).values()) == {(share, share)}


def test_a_closed_local_cluster_leaves_this_process_environment_as_it_was(monkeypatch):
    from spaceship_sim.sweep.cluster import open_client

    monkeypatch.setenv("NUMBA_NUM_THREADS", "7")  # not the share of the cores the worker gets
    with open_client(None, 1, quiet=True) as one:
        assert set(one.run(lambda: os.environ["NUMBA_NUM_THREADS"]).values()) == {str(os.cpu_count() or 1)}
    assert os.environ["NUMBA_NUM_THREADS"] == "7"


def test_a_rerun_skips_every_finished_cell_and_runs_only_the_missing_one(client, serial, tmp_path, capsys):
    spec, reference = serial
    store = CellStore(tmp_path)
    run_sweep(spec.cells, store, client, progress=False)
    stamps = {k: store.path(k).stat().st_mtime_ns for k in store.keys()}
    assert len(stamps) == len(spec.cells)
    gone = spec.cells[3].key
    store.path(gone).unlink()
    capsys.readouterr()
    rows = run_sweep(spec.cells, store, client, progress=False)
    assert f"{len(spec.cells) - 1} of {len(spec.cells)} cells already finished" in capsys.readouterr().out
    after = {k: store.path(k).stat().st_mtime_ns for k in store.keys()}
    assert {k for k in after if after[k] != stamps.get(k)} == {gone}  # only the missing cell ran again
    assert [computed(r) for r in rows] == [computed(r) for r in reference]


def test_a_failing_cell_is_reported_with_its_error_and_the_others_are_kept(client, serial, tmp_path):
    spec, reference = serial
    bad = spec.cells[1]
    broken = Cell(bad.index, bad.params, dataclasses.replace(bad.task, exact_only="no_such_strategy"), "f" * 64)
    cells = [spec.cells[0], broken, *spec.cells[2:]]
    store = CellStore(tmp_path)
    rows = run_sweep(cells, store, client, progress=False)
    assert rows[1]["status"] == "failed" and "no_such_strategy" in rows[1]["error"]
    assert all(r["status"] == "ok" for i, r in enumerate(rows) if i != 1)
    assert store.keys() == {c.key for c in cells} - {broken.key}  # a failure is not stored: a rerun tries it again
    assert [computed(r) for i, r in enumerate(rows) if i != 1] == \
        [computed(r) for i, r in enumerate(reference) if i != 1]


def test_timing_cells_run_only_on_the_worker_that_offers_timing(client, spec_file, tmp_path):
    spec = _spec(tmp_path, spec_file, text='[sweep]\nframes = 3\nwarmup = 1\n[axes]\nconfig = ["lamps.toml"]\n'
                                           'seed = [1, 2, 3]\nclock = ["wall", "tick"]\n')
    timing_workers = {str(w["name"]) for w in client.scheduler_info()["workers"].values()
                      if w.get("resources", {}).get(TIMING)}
    assert len(timing_workers) == 1  # one per machine: timing cells never share the cores with each other
    rows = run_sweep(spec.cells, None, client, progress=False)
    assert all(r["status"] == "ok" for r in rows)
    assert {r["worker"] for r in rows if r["timing"]} == timing_workers


def test_a_worker_killed_mid_sweep_still_yields_every_cell(client, serial, spec_file, tmp_path):
    spec, reference = serial
    more = _spec(tmp_path, spec_file, frames=8, seeds=(1, 2, 3))  # 12 cells: the first 8 are the reference's
    store = CellStore(tmp_path / "out")
    killed = []

    def kill_a_busy_worker():
        while not store.keys():  # the first cell is stored: the workers are warm and busy
            time.sleep(0.02)
        pids = client.run(os.getpid)
        for address, keys in client.processing().items():
            if keys and address in pids:
                os.kill(pids[address], signal.SIGKILL)
                killed.append((address, list(keys)))
                return

    killer = threading.Thread(target=kill_a_busy_worker, daemon=True)
    killer.start()
    rows = run_sweep(more.cells, store, client, progress=False)
    killer.join(timeout=60)
    assert killed and killed[0][1], "no worker held a cell when the first one finished"
    assert all(r["status"] == "ok" for r in rows), [r["error"] for r in rows if r["status"] != "ok"]
    assert store.keys() == {c.key for c in more.cells}
    assert [computed(r) for r in rows[:8]] == [computed(r) for r in reference]
    client.wait_for_workers(2, timeout=120)  # the nanny restarts the killed worker


def test_the_sweep_command_writes_the_table_and_the_figure(spec_file, tmp_path, capsys):
    import pyarrow.parquet as pq

    spec = spec_file(tmp_path, frames=4, seeds=(1,))
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "--out", str(out), "--workers", "2", "--no-progress"]) == 0
    table = pq.read_table(out / "results.parquet").to_pylist()
    assert [r["cell"] for r in table] == [0, 1, 2, 3] and all(r["status"] == "ok" for r in table)
    assert {"within_target", "separation_bound_median_m", "host", "numba_threads"} <= set(table[0])
    assert (out / "results.csv").read_text().count("\n") == 5
    assert (out / "within_target.png").stat().st_size > 0
    assert "wrote" in capsys.readouterr().out
    assert main(["sweep", str(spec), "--out", str(out), "--no-progress"]) == 0  # a rerun: nothing to run
    assert "4 of 4 cells already finished" in capsys.readouterr().out
