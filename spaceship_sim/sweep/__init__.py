"""Experiment sweeps and asset-library builds on dask.distributed.

A sweep spec (TOML, spec.py) names axes — configs, seeds, detectors, tree methods, exact
strategies, stand-in render times, budgets, frames, clocks — whose product is a grid of cells.
Each cell is one headless run through `sim.runs.run_frames` (cell.py), stored as soon as it ends
under a key of its parameters and the code version (store.py), so that a rerun skips it. The
cells run as tasks on a dask cluster (cluster.py, runner.py): a local one by default, any one
given its address; wall-clock cells hold a `timing` resource that one worker per machine offers.
table.py gathers one row per cell into Parquet and CSV and draws the figures; trees.py builds a
folder's sphere and SSV trees as parallel tasks. docs/SWEEPS.md is the user's guide.
"""
