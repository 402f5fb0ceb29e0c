"""Scenario configuration: TOML files loaded into frozen, documented dataclasses.

Every field carries its unit and valid range in its metadata; `load_config` rejects unknown
keys, wrong types and out-of-range values with one `ConfigError` naming the file and the key.
"""
from __future__ import annotations

import dataclasses
import math
import sys
import tomllib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path

from .errors import InputError
from .files import read_input


# The one list of each family of parts the config can name; spaceship_sim/registry.py maps each
# name to its implementation (tests/test_layers.py checks that the two agree)
BROADPHASE_NAMES = ("space_time", "sweep_prune", "brute_force")
EXACT_STRATEGY_NAMES = ("brute", "bsp", "fcl", "ssv", "ocst", "faceoctree")
# the exact level: the sphere-tree leaves' own triangle tests, or any strategy but the slow oracle
EXACT_LEVELS = ("sphere_leaves", *(m for m in EXACT_STRATEGY_NAMES if m != "brute"))
# keys and values renamed: the old spelling still loads, with a one-line notice (old -> new)
RENAMED_KEYS = {"collision.exact": "triangle_tests"}
RENAMED_VALUES = {"collision.exact_method": {"leaves": "sphere_leaves"}}
PREBUILT_TREE_METHODS = ("medial", "octree")   # built before the first frame (spheretree/)
TREE_METHODS = (*PREBUILT_TREE_METHODS, "ocst")  # "ocst": built during collisions (narrowphase/ocst.py)
INTERVAL_MODES = ("verdict", "tighten")  # collision.distance_intervals
MAX_INTERVAL_SHARE = 0.9  # collision.interval_share: the verdicts keep a tenth of the budget at least
BOX_KINDS = ("dynamic", "fixed")  # I-COLLIDE's boxes: resized by hill-climbing, or cubes fitting any turn


class ConfigError(InputError):
    """Invalid configuration; str() is one line naming file and key."""


# Limits on work that could not finish (or would not fit in memory) and on physical values far
# beyond any ship, so that nothing overflows: positions stay below ~1e7 m, speeds below ~1e7 m/s.
MAX_SHIPS = 100_000            # ships in one scenario or bench (stress.toml has 5,000)
MAX_SAMPLES_PER_FRAME = 1000   # detection samples per frame (frame_dt / min_temporal_resolution)
MAX_TREE_NODES = 100_000       # spheres in one sphere tree (sum of branching^k, k = 0..depth)
MAX_SPEED = 1e4                # [m/s] initial and cruise speeds
MAX_ACCEL = 1e4                # [m/s^2] thrust (about 1,000 g)
MAX_ASTEROIDS = 5_000          # the sweep keeps an (n, n) byte matrix over ships + asteroids
MAX_SWEEP_BODIES = 6_000       # ships + asteroids in that sweep: 36 MB per matrix


def _f(default, doc: str, *, lo=None, hi=None, lo_open=False, choices=None):
    """A config field: default, documentation with unit, and validation range."""
    return field(default=default, metadata=dict(doc=doc, lo=lo, hi=hi, lo_open=lo_open,
                                                choices=choices))


@dataclass(frozen=True)
class ArenaConfig:
    size: float = _f(400.0, "edge length of the cubic arena centred at the origin [m]", lo=1.0, lo_open=True, hi=1e6)


@dataclass(frozen=True)
class ShipsConfig:
    count: int = _f(12, "number of ships, the user's ship (index 0) included [-]", lo=1, hi=MAX_SHIPS)
    user_model: str = _f("fighter", "model of the user's ship (a mesh name in assets/) [-]")
    models: tuple[str, ...] = _f(("fighter", "lamp", "freighter"),
                                 "models of the autonomous ships, assigned round-robin [-]")
    initial_speed: float = _f(5.0, "largest initial speed of an autonomous ship [m/s]", lo=0.0,
                               hi=MAX_SPEED)
    spacing: float = _f(1.2, "minimum initial centre distance as a multiple of the summed bounding radii [-]",
                        lo=1.0, hi=100.0)


@dataclass(frozen=True)
class SimConfig:
    seed: int = _f(1, "seed of every random draw (placement, autopilot) [-]", lo=0, hi=2**63 - 1)
    frame_dt: float = _f(1 / 30, "simulation time advanced per frame [s]", lo=0.0, lo_open=True, hi=1.0)
    min_temporal_resolution: float = _f(1 / 60, "collision detection samples at least this often [s]",
                                        lo=0.0, lo_open=True, hi=1.0)
    target_frame_time: float = _f(1 / 30, "wall-clock time wanted per frame [s]", lo=0.0, lo_open=True, hi=10.0)
    time_slice: float = _f(1e-4, "scheduler time slice asked for the thread running the frames (Linux 6.12+: "
                           "a short slice wakes it on time on a busy machine; 0: the OS default) [s]",
                           lo=0.0, hi=0.1)


@dataclass(frozen=True)
class IntegratorConfig:
    tolerance: float = _f(1e-3, "allowed local error per RK2 step, position/velocity norm [m, m/s]",
                          lo=0.0, lo_open=True, hi=1e3)
    # >= 1 µs: at most 1e6 steps per ship and frame; smaller steps only add round-off
    min_step: float = _f(1e-4, "smallest RK2 step [s]", lo=1e-6, hi=1.0)
    max_step: float = _f(1 / 30, "largest RK2 step [s]", lo=1e-6, hi=1.0)
    max_substeps: int = _f(64, "cap on RK2 sub-steps per ship per frame [-]", lo=1, hi=100_000)


@dataclass(frozen=True)
class ControlConfig:
    max_thrust: float = _f(20.0, "largest forward (thrust) acceleration along the body x axis [m/s^2]", lo=0.0,
                            hi=MAX_ACCEL)
    max_angular_rate: float = _f(1.5, "largest commanded rotational velocity per body axis [rad/s]", lo=0.0,
                                  hi=100.0)
    drag: float = _f(0.2, "linear velocity damping coefficient (bounds speed to max_thrust/drag) [1/s]",
                     lo=1e-3, hi=1e3)
    rotation_time_constant: float = _f(0.25, "time for angular velocity to follow the command [s]",
                                       lo=1e-3, hi=1e3)


@dataclass(frozen=True)
class AutopilotConfig:
    change_interval_min: float = _f(2.0, "shortest time between random control draws [s]", lo=1e-3,
                                     hi=1e6)
    change_interval_max: float = _f(5.0, "longest time between random control draws [s]", lo=1e-3,
                                     hi=1e6)
    thrust_fraction_max: float = _f(1.0, "largest random thrust as a fraction of max_thrust [-]", lo=0.0, hi=1.0)


@dataclass(frozen=True)
class Waypoints:
    ship: int = _f(0, "index of the ship that follows this path [-]", lo=0)
    points: tuple[tuple[float, ...], ...] = _f((), "waypoints in the world frame, each [x, y, z] [m]")
    speed: float = _f(10.0, "cruise speed between waypoints [m/s]", lo=0.0, lo_open=True, hi=MAX_SPEED)
    arrive_radius: float = _f(5.0, "distance at which a waypoint counts as reached [m]", lo=0.0, lo_open=True,
                              hi=1e6)
    loop: bool = _f(True, "start again at the first waypoint after the last [-]")


@dataclass(frozen=True)
class ScriptConfig:
    paths: tuple[Waypoints, ...] = _f((), "scripted ships; the others use the random autopilot [-]")


@dataclass(frozen=True)
class CollisionConfig:
    broadphase: str = _f("space_time", "broad phase [-]", choices=BROADPHASE_NAMES)
    tree_method: str = _f("medial", "sphere-tree builder [-]", choices=TREE_METHODS)
    tree_branching: int = _f(8, "children per sphere-tree node [-]", lo=2, hi=64)
    tree_depth: int = _f(3, "sphere-tree levels below the root [-]", lo=1, hi=6)
    ocst_evict_after: float = _f(2.0, "tree_method ocst: a sphere unused for this long is evicted [s, "
                                 "simulation time]", lo=0.0, lo_open=True, hi=1e6)
    ocst_max_nodes: int = _f(100_000, "tree_method ocst: resident spheres of all models above which the least "
                             "recently used spheres are evicted [spheres]", lo=16, hi=10_000_000)
    ocst_max_share: float = _f(0.25, "tree_method ocst: the same cap as a share of the full trees (every model's "
                               "complete octree; its cells are counted when the bank is made, ~0.2 s on a "
                               "200,000-triangle mesh; 1: no share cap, nothing counted) [-]",
                               lo=0.0, lo_open=True, hi=1.0)
    time_critical: bool = _f(True, "refine only as deep as the frame budget allows (else always exact) [-]")
    min_level: int = _f(1, "every colliding pair is refined at least to this level (at most tree_depth + 1, "
                          "the exact level) [-]", lo=0)
    triangle_tests: bool = _f(True, "finish with triangle-triangle tests when time allows [-]")
    all_contacts: bool = _f(True, "the exact level finds every intersecting triangle pair (false: stops each pair at "
                                  "its first, enough for the verdict and response) [-]")
    exact_method: str = _f("ssv", "exact level's strategy: 'ssv' (swept-sphere-volume trees, the fastest; pairs "
                           "found apart also get their exact separation distance), 'sphere_leaves' (triangles of "
                           "colliding sphere-tree leaves; the default with [asteroids], which the others do not "
                           "cover) or another exact strategy of the registry ('bsp', 'faceoctree', 'fcl', ...) [-]",
                           choices=EXACT_LEVELS)
    distance_intervals: str = _f("tighten", "'tighten': after the verdicts, the time left narrows the widest "
                                 "separation intervals [lower, upper], each carried to the next sample; "
                                 "'verdict': the intervals are what the verdicts know (bench hubbard "
                                 "--intervals-ab compares them) [-]",
                                 choices=INTERVAL_MODES)
    interval_share: float = _f(0.0, "with distance_intervals = 'tighten', the share of a finite budget kept "
                               "from the verdicts for the narrowing: 0 narrows with what the verdicts leave "
                               "(the verdicts are those of 'verdict'); 0.5 narrows more, and on a tight frame "
                               "the verdicts go less deep [-]", lo=0.0, hi=MAX_INTERVAL_SHARE)
    swept: bool = _f(False, "catch ships crossing between samples: candidate pairs moving farther than their "
                            "thickness in a sample get the face octree's swept-space test [-]")
    restitution: float = _f(1.0, "coefficient of restitution of collision response [-]", lo=0.0, hi=1.0)
    separation_speed: float = _f(1.0, "least speed at which a colliding pair's centres part after response [m/s]",
                                 lo=0.0, hi=1e3)
    render_average_frames: int = _f(8, "recent frames whose render times predict the next (a high quantile "
                                    "of them) [-]", lo=1, hi=10_000)
    safety_margin: float = _f(0.0005, "time held back from the detection budget, besides the frames' lateness "
                              "past their plan, which is learned (a high quantile of recent frames') [s]",
                              lo=0.0, hi=1.0)


@dataclass(frozen=True)
class AsteroidsConfig:
    count: int = _f(0, "tumbling convex asteroids in the arena (0: none) [-]", lo=0, hi=MAX_ASTEROIDS)
    faces: int = _f(36, "faces of each asteroid's hull of random points on a sphere [-]", lo=8, hi=1000)
    shapes: int = _f(12, "distinct asteroid shapes (each has its own sphere tree) [-]", lo=1, hi=256)
    radius_min: float = _f(3.0, "smallest asteroid radius [m]", lo=0.0, lo_open=True, hi=1e4)
    radius_max: float = _f(10.0, "largest asteroid radius [m]", lo=0.0, lo_open=True, hi=1e4)
    speed_max: float = _f(3.0, "largest initial asteroid speed [m/s]", lo=0.0, hi=MAX_SPEED)
    spin_max: float = _f(0.5, "largest asteroid angular speed [rad/s]", lo=0.0, hi=100.0)
    density: float = _f(100.0, "asteroid density: mass = density x hull volume [kg/m^3]", lo=1e-3, hi=1e5)
    boxes: str = _f("dynamic", "sweep-and-prune boxes of the asteroids [-]", choices=BOX_KINDS)


@dataclass(frozen=True)
class DeformConfig:
    models: tuple[str, ...] = _f((), "ship models whose hulls flex every frame: pairs with one of them take the "
                                 "face-octree narrow phase [-]")
    amplitude: float = _f(0.15, "peak swelling of the hull's cross-section, a fraction of its size [-]", lo=0.0,
                          hi=0.5)
    frequency: float = _f(0.5, "pulses per second [Hz]", lo=0.0, hi=100.0)
    wavelength: float = _f(12.0, "length of the wave running along the ship's body x axis [m]", lo=0.0,
                           lo_open=True, hi=1e6)


@dataclass(frozen=True)
class Config:
    arena: ArenaConfig = ArenaConfig()
    ships: ShipsConfig = ShipsConfig()
    sim: SimConfig = SimConfig()
    integrator: IntegratorConfig = IntegratorConfig()
    controls: ControlConfig = ControlConfig()
    autopilot: AutopilotConfig = AutopilotConfig()
    script: ScriptConfig = ScriptConfig()
    collision: CollisionConfig = CollisionConfig()
    asteroids: AsteroidsConfig = AsteroidsConfig()
    deform: DeformConfig = DeformConfig()
    source: str = "<defaults>"  # file the config came from (not a TOML key)


_TOP_SECTIONS = [f for f in dataclasses.fields(Config) if f.name != "source"]
CONFIGS_DIR = Path(__file__).resolve().parent.parent / "configs"  # the shipped scenarios, beside the package
MAX_CONFIG_BYTES = 1_000_000  # a scenario is a page of keys; waypoint scripts make it kilobytes
MAX_TOML_DEPTH = 8  # levels of tables and arrays; a waypoint's coordinate is at 6


def shipped_config(name: str) -> str:
    """Path of a scenario shipped in configs/, whatever the current folder (the commands' defaults)."""
    return str(CONFIGS_DIR / name)



def load_config(path: str | Path) -> Config:
    """Load and validate a TOML scenario. Raises ConfigError naming the file and key."""
    path = Path(path)
    data = read_input(path, MAX_CONFIG_BYTES, "config", ConfigError)
    try:
        raw = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ConfigError(path, "", f"not UTF-8 text, so not TOML ({e.reason} at byte {e.start})") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(path, "", f"not valid TOML: {e}") from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise ConfigError(path, "", f"not a scenario: values nested deeper than {MAX_TOML_DEPTH} levels") from None
    _check_depth(raw, path, "", 0)
    if not raw:  # most likely the wrong file; a scenario with every default needs no file at all
        raise ConfigError(path, "", "no settings in the file (empty, or comments only)")
    cfg = _asteroids_exact_level(_build(Config, {k: v for k, v in raw.items()}, path, "", skip=("source",)), raw)
    cfg = dataclasses.replace(cfg, source=str(path))
    _check_relations(cfg, path)
    return cfg


def _check_depth(value, file, key: str, depth: int) -> None:
    """No scenario nests deeper than a waypoint's coordinates (script.paths[i].points[j][k]): refuse
    deeper values before anything walks them."""
    if depth > MAX_TOML_DEPTH:
        raise ConfigError(file, key, f"nested deeper than {MAX_TOML_DEPTH} levels: no scenario key takes that")
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in children:
        _check_depth(v, file, f"{key}.{k}" if isinstance(k, str) and key else f"{key}[{k}]" if key else str(k),
                     depth + 1)


def config_from_dict(raw: dict, name: str = "<dict>") -> Config:
    """Build a Config from a nested dict with the same validation as load_config."""
    cfg = _asteroids_exact_level(_build(Config, raw, name, "", skip=("source",)), raw)
    cfg = dataclasses.replace(cfg, source=name)
    _check_relations(cfg, name)
    return cfg


def _asteroids_exact_level(cfg: Config, raw: dict) -> Config:
    """cfg with the exact level 'sphere_leaves' when it has asteroids and the file names no exact level:
    the other strategies are built from the ship models only."""
    named = isinstance(raw.get("collision"), dict) and "exact_method" in raw["collision"]
    if not cfg.asteroids.count or named:
        return cfg
    return dataclasses.replace(cfg, collision=dataclasses.replace(cfg.collision, exact_method="sphere_leaves"))


def check_config(cfg: Config, file) -> Config:
    """The constraints between fields load_config checks, for a config changed in code (a flag
    overriding a field); `file` names where the change came from. Returns cfg."""
    _check_relations(cfg, file)
    return cfg


def _build(cls, raw, file, prefix, skip=()):
    if not isinstance(raw, dict):
        raise ConfigError(file, prefix.rstrip("."), f"expected a table, got {type(raw).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls) if f.name not in skip}
    hints = typing.get_type_hints(cls)
    raw = _renamed_keys(raw, file, prefix)
    for key in raw:
        if key not in fields:
            raise ConfigError(file, prefix + key, f"unknown key (known: {', '.join(fields)})")
    kwargs = {name: _convert(hints[name], raw[name], file, prefix + name, f.metadata)
              for name, f in fields.items() if name in raw}
    return cls(**kwargs)


def _convert(tp, value, file, key, meta):
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        return _build(tp, value, file, key + ".")
    if origin is tuple:
        if not isinstance(value, list):
            raise ConfigError(file, key, f"expected an array, got {type(value).__name__}")
        item_tp = typing.get_args(tp)[0]
        return tuple(_convert(item_tp, v, file, f"{key}[{i}]", {}) for i, v in enumerate(value))
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(file, key, f"expected true/false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(file, key, f"expected an integer, got {value!r}")
    elif tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(file, key, f"expected a number, got {value!r}")
        value = float(value)
        if not math.isfinite(value):
            raise ConfigError(file, key, f"must be finite, got {value!r}")
    elif tp is str:
        if not isinstance(value, str):
            raise ConfigError(file, key, f"expected a string, got {value!r}")
        value = _renamed(value, file, key)
    _check_range(value, file, key, meta)
    return value


def _renamed_keys(raw: dict, file, prefix: str) -> dict:
    """`raw` with renamed keys under their new names, each with a one-line notice on stderr."""
    old = [key for key in raw if prefix + key in RENAMED_KEYS]
    if not old:
        return raw
    raw = dict(raw)
    for key in old:
        new = RENAMED_KEYS[prefix + key]
        if new in raw:
            raise ConfigError(file, prefix + key, f"is the old name of {prefix + new}, which is set too")
        print(f"{file}: {prefix + key} is deprecated and will stop loading in a later release; write "
              f"{prefix + new}", file=sys.stderr)
        raw[new] = raw.pop(key)
    return raw


def _renamed(value: str, file, key: str) -> str:
    """A renamed value's new spelling, with a one-line notice on stderr (the old one still loads)."""
    new = RENAMED_VALUES.get(key, {}).get(value)
    if new is None:
        return value
    print(f"{file}: {key} = {value!r} is deprecated and will stop loading in a later release; "
          f"write {new!r}", file=sys.stderr)
    return new


def _check_range(value, file, key, meta):
    lo, hi, choices = meta.get("lo"), meta.get("hi"), meta.get("choices")
    if choices is not None and value not in choices:
        raise ConfigError(file, key, f"must be one of {', '.join(map(repr, choices))}, got {value!r}")
    if lo is not None and (value < lo or (meta.get("lo_open") and value == lo)):
        rel = ">" if meta.get("lo_open") else ">="
        raise ConfigError(file, key, f"must be {rel} {lo}, got {value!r}")
    if hi is not None and value > hi:
        raise ConfigError(file, key, f"must be <= {hi}, got {value!r}")


def _check_relations(cfg: Config, file):
    """Constraints between fields."""
    i, a = cfg.integrator, cfg.autopilot
    if i.min_step > i.max_step:
        raise ConfigError(file, "integrator.min_step", f"must be <= integrator.max_step ({i.max_step})")
    if a.change_interval_min > a.change_interval_max:
        raise ConfigError(file, "autopilot.change_interval_min",
                          f"must be <= autopilot.change_interval_max ({a.change_interval_max})")
    r = cfg.asteroids
    if r.radius_min > r.radius_max:
        raise ConfigError(file, "asteroids.radius_min", f"must be <= asteroids.radius_max ({r.radius_max})")
    if r.count and r.count + cfg.ships.count > MAX_SWEEP_BODIES:
        raise ConfigError(file, "asteroids.count", f"{r.count} asteroids + {cfg.ships.count} ships exceed "
                          f"{MAX_SWEEP_BODIES} bodies in the asteroids' sweep-and-prune")
    if r.count and 2 * r.radius_max >= cfg.arena.size:
        raise ConfigError(file, "asteroids.radius_max", f"an asteroid {2 * r.radius_max:g} m across does not "
                          f"fit in the {cfg.arena.size:g} m arena")
    if r.count and cfg.collision.exact_method != "sphere_leaves":
        raise ConfigError(file, "collision.exact_method", f"{cfg.collision.exact_method!r} is built from the ship "
                          "models only; with asteroids the exact level must be 'sphere_leaves'")
    if r.count and cfg.collision.tree_method == "ocst":
        raise ConfigError(file, "collision.tree_method", "'ocst' builds the ship models' trees only; with "
                          "asteroids use 'medial' or 'octree'")
    if r.count and (cfg.deform.models or cfg.collision.swept):  # the face octree too
        raise ConfigError(file, "deform.models" if cfg.deform.models else "collision.swept",
                          "deforming ships and the swept test are built from the ship models only; with asteroids "
                          "use neither")
    if cfg.deform.models and cfg.collision.tree_method == "ocst":
        raise ConfigError(file, "collision.tree_method", "flexing hulls are bounded by the prebuilt trees of their "
                          "rest shapes, inflated; with [deform] models use 'medial' or 'octree'")
    if not cfg.ships.models:
        raise ConfigError(file, "ships.models", "must name at least one model")
    _check_work(cfg, file)
    flying = {cfg.ships.user_model, *cfg.ships.models}
    for j, name in enumerate(cfg.deform.models):
        if name not in flying:
            raise ConfigError(file, f"deform.models[{j}]", f"{name!r} is not a ship model of this scenario "
                              f"(ships.user_model, ships.models: {', '.join(sorted(flying))})")
    for j, p in enumerate(cfg.script.paths):
        key = f"script.paths[{j}]"
        if p.ship >= cfg.ships.count:
            raise ConfigError(file, key + ".ship", f"ship {p.ship} does not exist (ships.count = {cfg.ships.count})")
        if not p.points:
            raise ConfigError(file, key + ".points", "needs at least one waypoint")
        for k, pt in enumerate(p.points):
            if len(pt) != 3:
                raise ConfigError(file, f"{key}.points[{k}]", f"expected [x, y, z], got {list(pt)}")


def samples_per_frame(frame_dt: float, min_resolution: float) -> int:
    """Fewest equal detection samples per frame that are each no longer than min_resolution."""
    return max(1, math.ceil(frame_dt / min_resolution - 1e-9))


def tree_nodes(branching: int, depth: int) -> int:
    """Spheres in a full tree: sum of branching^k over levels k = 0..depth."""
    return sum(branching ** k for k in range(depth + 1))


def _check_work(cfg: Config, file):
    """Refuse settings whose work per frame, or per tree, could not finish."""
    sim, c = cfg.sim, cfg.collision
    samples = samples_per_frame(sim.frame_dt, sim.min_temporal_resolution)
    if samples > MAX_SAMPLES_PER_FRAME:
        raise ConfigError(file, "sim.min_temporal_resolution",
                          f"would need {samples:.3g} detection samples per frame (sim.frame_dt {sim.frame_dt:g} s), "
                          f"limit {MAX_SAMPLES_PER_FRAME}")
    nodes = tree_nodes(c.tree_branching, c.tree_depth)
    if nodes > MAX_TREE_NODES:
        raise ConfigError(file, "collision.tree_branching",
                          f"{c.tree_branching} children over collision.tree_depth {c.tree_depth} levels would "
                          f"need {nodes:.3g} spheres per tree, limit {MAX_TREE_NODES}")
    if c.min_level > c.tree_depth + 1:
        raise ConfigError(file, "collision.min_level", f"must be <= collision.tree_depth + 1 = {c.tree_depth + 1} "
                          f"(the exact level), got {c.min_level}")


def describe(cls=Config, prefix="") -> list[str]:
    """Lines documenting every key: `section.key = default  # doc`."""
    lines = []
    for f in dataclasses.fields(cls):
        if f.name == "source":
            continue
        if dataclasses.is_dataclass(f.default):
            lines += describe(type(f.default), prefix + f.name + ".")
        else:
            lines.append(f"{prefix}{f.name} = {f.default!r}  # {f.metadata.get('doc', '')}{_range_text(f.metadata)}")
    return lines


def _range_text(meta) -> str:
    """'; range (0, 1]' from a field's lo/hi (an open end where unbounded or lo_open)."""
    lo, hi = meta.get("lo"), meta.get("hi")
    if lo is None and hi is None:
        return ""
    left = "(" if lo is None or meta.get("lo_open") else "["
    right = ")" if hi is None else "]"
    return f"; range {left}{'-inf' if lo is None else _num(lo)}, {'inf' if hi is None else _num(hi)}{right}"


def _num(x) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)
