"""Running a sweep's cells: as tasks on a dask cluster, or one after another in this process.

Each finished cell is stored at once (store.CellStore); cells already stored are skipped. A cell
that raises is reported with its error and the others are kept; a worker lost mid-cell has its
cell run again on another worker (dask reschedules it; after `distributed.scheduler.allowed-failures`
losses the cell is reported as failed). Ctrl-C cancels what is still running and keeps what finished.
"""
from __future__ import annotations

import traceback

from .cell import code_version, run_cell
from .cluster import TIMING


def run_sweep(cells: list, store, client=None, progress: bool = True, workers=None) -> list[dict]:
    """Run the cells not yet in `store` (on `client`'s cluster, or serially here when client is
    None); returns one row per cell, in the spec's order. workers: addresses the tasks are held
    to (a serial reference on one worker)."""
    version = code_version()
    records = {c.key: store.get(c.key) for c in cells} if store is not None else {}
    todo = [c for c in cells if records.get(c.key) is None]
    if store is not None and len(todo) < len(cells):
        print(f"{len(cells) - len(todo)} of {len(cells)} cells already finished: skipped", flush=True)
    errors: dict[str, str] = {}
    run = _on_cluster if client is not None else _here
    for cell, record, error in run(todo, version, client, progress, workers):
        if error is not None:
            errors[cell.key] = error
            continue
        record = {**record, "params": cell.params, "code_version": version}
        if store is not None:
            store.put(cell.key, record)
        records[cell.key] = record
    return [row(c, records.get(c.key), errors.get(c.key)) for c in cells]


def _bar(total: int, progress: bool):
    from tqdm import tqdm
    return tqdm(total=total, desc="cells", unit="cell", disable=not progress or not total)


def _here(cells, version, client, progress, workers):
    """Each cell in this process; yields (cell, record, error)."""
    with _bar(len(cells), progress) as bar:
        for c in cells:
            try:
                yield c, run_cell(c.task, version), None
            except Exception as e:  # one failing cell is reported; the others go on
                yield c, None, error_text(e)
            bar.update()


def _on_cluster(cells, version, client, progress, workers):
    """Each cell a task on `client`'s cluster, timing cells holding the `timing` resource; yields
    (cell, record, error) as they finish."""
    from distributed import as_completed

    futures = {}
    for c in cells:
        futures[client.submit(run_cell, c.task, version, key=f"cell-{c.index}-{c.key[:16]}", pure=False,
                              resources={TIMING: 1} if c.timing else None, workers=workers,
                              allow_other_workers=False)] = c
    try:
        with _bar(len(cells), progress) as bar:
            for fut in as_completed(futures):
                c = futures[fut]
                if fut.status == "error":
                    yield c, None, error_text(fut.exception())
                else:
                    yield c, fut.result(), None
                bar.update()
                fut.release()
    finally:  # Ctrl-C or an error here: stop what still runs; finished cells are stored already
        client.cancel([f for f in futures if not f.done()])


def error_text(e: BaseException) -> str:
    """A failed cell's error in one line: type, message, and where it was raised."""
    tb = traceback.extract_tb(e.__traceback__)
    where = f" (at {tb[-1].filename.rpartition('spaceship_sim/')[2] or tb[-1].filename}:{tb[-1].lineno})" if tb else ""
    return f"{type(e).__name__}: {e}".replace("\n", " ") + where


def row(cell, record: dict | None, error: str | None) -> dict:
    """The table's row of a cell: its index and axes, status and error, figures, machine."""
    from .cell import MACHINE, MEASURES

    out = {"cell": cell.index, **cell.params, "timing": cell.timing,
           "status": "ok" if record is not None else "failed", "error": error or ""}
    figures = (record or {}).get("figures", {})
    out.update({m: figures.get(m) for m in MEASURES})
    out.update({k: (record or {}).get(k) for k in (*MACHINE, "seconds")})
    out["key"] = cell.key
    return out


def computed(row: dict) -> dict:
    """A row less where and how long its cell ran: what the cell computed, the same wherever a
    deterministic cell runs."""
    from .cell import MACHINE

    return {k: v for k, v in row.items() if k not in (*MACHINE, "seconds")}
