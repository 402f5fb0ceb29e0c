"""Sweep specs: a TOML file whose axes span a grid of cells, each one headless run.

    [sweep]
    frames = 300              # frames of every cell (unless a `frames` axis varies them)
    warmup = 5                # first frames left out of each cell's figures
    tick_us = 10              # tick of the TickClock that `clock = "tick"` cells read [µs]
    measure = ["within_target", "separation_bound_median_m"]   # the table's figures (default: all)

    [axes]                    # the grid is their product, in this order
    config = ["lamps.toml"]   # beside the spec, or a shipped config
    seed = [1, 2, 3]
    detector = ["medial", "sphere_leaves"]
    render_ms = [28, 30, 31]
    clock = ["wall"]          # "tick": deterministic; "wall" / "thread": timing cells

`load_spec(path)` checks every value before anything runs (InputError naming the spec file and the
key, exit 2) and returns the cells with their resolved configs and keys.
"""
from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
import tomllib
from pathlib import Path

from ..clock import CLOCKS
from ..config import (CONFIGS_DIR, EXACT_LEVELS, INTERVAL_MODES, MAX_INTERVAL_SHARE, TREE_METHODS, Config,
                      check_config, load_config)
from ..errors import InputError
from ..sim.detectors import DETECTORS, with_detector
from .cell import MEASURES, CellTask

DETERMINISTIC_CLOCK = "tick"
CLOCK_NAMES = (DETERMINISTIC_CLOCK, *CLOCKS)
MAX_MS = 10_000.0  # a stand-in render or a budget: 10 s, as the config's target frame time allows


def _number(lo: float, lo_open: bool = False):
    def check(v):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            return "expected a number"
        if v < lo or (lo_open and v == lo) or v > MAX_MS:
            return f"must be in {'(' if lo_open else '['}{lo:g}, {MAX_MS:g}] ms"
        return None
    return check


def _fraction(hi: float):
    def check(v):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= hi:
            return f"expected a number in [0, {hi:g}]"
        return None
    return check


def _integer(lo: int):
    def check(v):
        if isinstance(v, bool) or not isinstance(v, int):
            return "expected an integer"
        return None if v >= lo else f"must be >= {lo}"
    return check


def _choice(names):
    def check(v):
        return None if v in names else f"unknown {v!r} (known: {', '.join(names)})"
    return check


def _text(v):
    return None if isinstance(v, str) and v.strip() else "expected a file name"


# axis -> (check of one value: problem or None, its values when the spec leaves it out; None: the config's)
AXES = {
    "config": (_text, ["default.toml"]),
    "seed": (_integer(0), [None]),
    "detector": (_choice(tuple(DETECTORS)), [None]),
    "tree_method": (_choice(TREE_METHODS), [None]),
    "exact_method": (_choice(EXACT_LEVELS), [None]),
    "distance_intervals": (_choice(INTERVAL_MODES), [None]),
    "interval_share": (_fraction(MAX_INTERVAL_SHARE), [None]),
    "render_ms": (_number(0.0), [0.0]),
    "budget_ms": (_number(0.0, lo_open=True), [None]),  # None: the config's target frame time
    "frames": (_integer(1), [None]),  # None: [sweep] frames
    "clock": (_choice(CLOCK_NAMES), [DETERMINISTIC_CLOCK]),
}
SETTINGS = {"frames": 300, "warmup": 5, "tick_us": 10.0, "measure": list(MEASURES)}


@dataclasses.dataclass(frozen=True)
class Cell:
    """One grid point: `params` as the spec names them (axis -> value), the task a worker runs,
    and the key it is stored under (its effective parameters and the code version)."""

    index: int
    params: dict
    task: CellTask
    key: str

    @property
    def timing(self) -> bool:
        """Whether its figures are wall-clock timings (it must not share a core with another such cell)."""
        return self.task.clock != DETERMINISTIC_CLOCK


@dataclasses.dataclass(frozen=True)
class Spec:
    path: Path
    axes: dict      # axis -> values, only the axes the spec names, in its order
    measure: list   # the table's figure columns
    cells: list


def load_spec(path, code_version: str) -> Spec:
    """Read, check and expand the spec at `path` (InputError on any bad value)."""
    path = Path(path)
    raw = _read(path)
    for section in raw:
        if section not in ("sweep", "axes"):
            raise InputError(path, section, "unknown section (known: sweep, axes)")
    settings = _settings(path, raw.get("sweep", {}))
    axes = _axes(path, raw.get("axes", {}))
    configs = {name: _load_config(path, i, name) for i, name in enumerate(axes.get("config", AXES["config"][1]))}
    grid = {a: axes.get(a, default) for a, (_, default) in AXES.items()}
    frames_min = min(f or settings["frames"] for f in grid["frames"])
    if settings["warmup"] >= frames_min:
        raise InputError(path, "sweep.warmup", f"must be < the fewest frames of a cell ({frames_min}), "
                                               f"got {settings['warmup']}")
    cells = []
    for values in itertools.product(*grid.values()):
        params = dict(zip(grid, values))
        task = _task(path, params, configs[params["config"]], settings)
        shown = {a: params[a] for a in axes} or {"config": params["config"]}
        cells.append(Cell(len(cells), shown, task, cell_key(task, code_version)))
    _validate_scenarios(path, cells)
    return Spec(path, axes, settings["measure"], cells)


def _read(path: Path) -> dict:
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(path, "", "file not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(path, "", f"cannot read ({getattr(e, 'strerror', None) or e})") from None
    except tomllib.TOMLDecodeError as e:
        raise InputError(path, "", f"not valid TOML: {e}") from None
    if not raw.get("axes"):
        raise InputError(path, "axes", "missing: a sweep names at least one axis")
    return raw


def _settings(path: Path, raw) -> dict:
    if not isinstance(raw, dict):
        raise InputError(path, "sweep", "expected a table")
    out = dict(SETTINGS)
    for key, value in raw.items():
        if key not in SETTINGS:
            raise InputError(path, f"sweep.{key}", f"unknown key (known: {', '.join(SETTINGS)})")
        out[key] = value
    checks = {"frames": _integer(1), "warmup": _integer(0),
              "tick_us": lambda v: _number(0.0, lo_open=True)(v) and "expected a number > 0 [µs]"}
    for key, check in checks.items():
        if problem := check(out[key]):
            raise InputError(path, f"sweep.{key}", f"{problem}, got {out[key]!r}")
    measure = out["measure"]
    if not isinstance(measure, list) or not measure:
        raise InputError(path, "sweep.measure", "expected a non-empty list of figure names")
    for m in measure:
        if m not in MEASURES:
            raise InputError(path, "sweep.measure", f"unknown figure {m!r} (known: {', '.join(MEASURES)})")
    return out


def _axes(path: Path, raw) -> dict:
    if not isinstance(raw, dict):
        raise InputError(path, "axes", "expected a table")
    axes = {}
    for name, values in raw.items():
        key = f"axes.{name}"
        if name not in AXES:
            raise InputError(path, key, f"unknown axis (known: {', '.join(AXES)})")
        if not isinstance(values, list):
            values = [values]
        if not values:
            raise InputError(path, key, "empty: give at least one value")
        for i, v in enumerate(values):
            if problem := AXES[name][0](v):
                raise InputError(path, f"{key}[{i}]", f"{problem}, got {v!r}")
        if len(set(map(repr, values))) < len(values):
            raise InputError(path, key, f"a value appears twice in {values!r}")
        axes[name] = [float(v) if name.endswith("_ms") else v for v in values]
    if "detector" in axes and "tree_method" in axes:
        raise InputError(path, "axes.tree_method", "cannot be combined with axes.detector (a detector sets "
                                                   "the tree method)")
    too_long = [(r, b) for r in axes.get("render_ms", [0.0]) for b in axes.get("budget_ms", [0.0]) if r + b > MAX_MS]
    if too_long:
        raise InputError(path, "axes.budget_ms", f"render {too_long[0][0]:g} ms + budget {too_long[0][1]:g} ms "
                                                 f"is a frame longer than {MAX_MS:g} ms")
    return axes


def _load_config(spec: Path, i: int, name: str) -> Config:
    """The config `name` names: a path beside the spec (or as given), else a shipped one."""
    for candidate in (spec.parent / name, Path(name), CONFIGS_DIR / name):
        if candidate.is_file():
            return load_config(candidate)
    raise InputError(spec, f"axes.config[{i}]", f"no config {name!r} beside the spec or among the shipped "
                                                f"configs ({', '.join(sorted(p.name for p in CONFIGS_DIR.glob('*.toml')))})")


def _task(spec: Path, params: dict, cfg: Config, settings: dict) -> CellTask:
    """The run a cell makes: its config with the axes' values in, clock, frames, render."""
    sim, col = cfg.sim, cfg.collision
    exact_only = None
    if params["seed"] is not None:
        sim = dataclasses.replace(sim, seed=params["seed"])
    if params["budget_ms"] is not None:  # what the frame leaves the simulation beside the stand-in render
        sim = dataclasses.replace(sim, target_frame_time=(params["render_ms"] + params["budget_ms"]) / 1e3)
    if params["detector"] is not None:
        with_it, exact_only = with_detector(dataclasses.replace(cfg, collision=col), params["detector"])
        col = with_it.collision
    if params["tree_method"] is not None:
        col = dataclasses.replace(col, tree_method=params["tree_method"])
    for name in ("exact_method", "distance_intervals", "interval_share"):  # collision settings as they are
        if params[name] is not None:
            col = dataclasses.replace(col, **{name: params[name]})
    cfg = check_config(dataclasses.replace(cfg, sim=sim, collision=col), spec)
    frames = params["frames"] or settings["frames"]
    return CellTask(cfg, frames, min(settings["warmup"], frames - 1), params["render_ms"] / 1e3,
                    params["clock"], settings["tick_us"] * 1e-6, exact_only)


def cell_key(task: CellTask, code_version: str) -> str:
    """SHA-256 of what decides a cell's figures: its effective config (wherever the file lies),
    run settings, and the code version."""
    cfg = dataclasses.asdict(dataclasses.replace(task.config, source=""))
    what = {**dataclasses.asdict(dataclasses.replace(task, config=None)), "config": cfg, "code": code_version}
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=repr).encode()).hexdigest()


def _validate_scenarios(spec: Path, cells: list) -> None:
    """Every distinct scenario's models exist and its ships can be placed (before any cell runs)."""
    from ..sim.scenario import validate_scenario

    seen = set()
    for c in cells:
        cfg = c.task.config
        mark = (cfg.source, cfg.sim.seed)
        if mark not in seen:
            seen.add(mark)
            try:
                validate_scenario(cfg)
            except InputError as e:
                raise InputError(spec, f"axes.config ({Path(cfg.source).name}, seed {cfg.sim.seed})",
                                 f"{e}") from None
