"""`spaceship-sim sweep SPEC.toml`: a grid of headless runs on dask.distributed, one table.

The spec's axes (configs, seeds, detectors, tree methods, exact strategies, stand-in render times,
budgets, frames, clocks) span the cells (spaceship_sim/sweep/spec.py); each cell runs on a local
cluster started here, or on the cluster --scheduler names. Finished cells are stored in OUT/cells/
as they end and skipped by a rerun; the table (results.parquet, results.csv) and the figures are
written when every cell has run. docs/SWEEPS.md has the details.
"""
from __future__ import annotations

from pathlib import Path

from .args import output_folder


def register(sub) -> None:
    from ..sweep.cluster import add_cluster_args

    p = sub.add_parser("sweep", help="run a grid of headless runs (spec TOML) on dask: one table, figures",
                       description=__doc__.splitlines()[0])
    p.add_argument("spec", metavar="SPEC", help="sweep spec (TOML), e.g. configs/sweeps/hubbard.toml")
    p.add_argument("--out", type=output_folder, default=None,
                   help="output folder: cells/, results.parquet, results.csv, figures (default: runs/sweeps/SPEC-NAME)")
    add_cluster_args(p)
    p.add_argument("--serial", action="store_true", help="run every cell here, one after another (no cluster)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..sweep.cell import code_version
    from ..sweep.spec import load_spec

    spec = load_spec(args.spec, code_version())  # every value checked before anything is written
    out = Path(args.out or Path("runs") / "sweeps" / Path(args.spec).stem)
    rows = run_spec(spec, out, args)
    return report(spec, out, rows)


def run_spec(spec, out: Path, args) -> list[dict]:
    from ..sweep.cluster import open_client
    from ..sweep.runner import run_sweep
    from ..sweep.store import CellStore

    store, progress = CellStore(out), not args.no_progress
    timed = sum(c.timing for c in spec.cells)
    print(f"{args.spec}: {len(spec.cells)} cells ({timed} timing, {len(spec.cells) - timed} deterministic) -> {out}",
          flush=True)
    if args.serial or all(store.get(c.key) is not None for c in spec.cells):  # no cluster for nothing to run
        return run_sweep(spec.cells, store, progress=progress)
    with open_client(args.scheduler, args.workers, timing=timed > 0) as client:
        return run_sweep(spec.cells, store, client, progress=progress)


def report(spec, out: Path, rows: list[dict]) -> int:
    """Write the table and figures, print the failures and the headline figure; 1 if a cell failed."""
    from ..sweep.table import plot_figures, select, spread, write_table

    rows = select(rows, list(spec.axes), spec.measure)
    written = write_table(out, rows) + plot_figures(out, rows, spec.axes)
    failed = [r for r in rows if r["status"] != "ok"]
    for r in failed:
        print(f"cell {r['cell']} failed ({', '.join(f'{a}={r[a]}' for a in spec.axes)}): {r['error']}")
    if "within_target" in spec.measure and len(spec.axes.get("render_ms", [])) > 1:
        lines = [a for a in spec.axes if a not in ("render_ms", "seed") and len(spec.axes[a]) > 1]
        for label, points in spread(rows, "render_ms", "within_target", lines).items():
            print(f"{label}: frames within target " + ", ".join(
                f"{100 * mean:.1f}% ({100 * lo:.1f}-{100 * hi:.1f}) at {x:g} ms" for x, mean, lo, hi in points))
    print(f"wrote {out}: {', '.join(written)}; {len(rows) - len(failed)} of {len(rows)} cells ok")
    return 1 if failed else 0
