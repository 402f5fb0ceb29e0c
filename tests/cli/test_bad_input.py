"""Every bad input gets one clear line and exit 2, nothing half-written.

Each case runs the real CLI (`python -m spaceship_sim.cli.main ...`) in a subprocess, in a folder of
its own, and must end with exit code 2 and exactly one stderr line

    error: <file or "command line" or "environment">: <key or flag>: <problem>

and leave that folder exactly as it found it (no output folder, no half-written file, a file
already there unchanged). The cases run concurrently in one session fixture (each subprocess is
mostly interpreter start-up); every case is still its own test.
"""
from __future__ import annotations

import functools
import gzip
import hashlib
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from spaceship_sim.sim.replay import VERSION

REPO = Path(__file__).resolve().parents[2]
DEFAULT = str(REPO / "configs/default.toml")
LAMPS = str(REPO / "configs/lamps.toml")
CL = "command line"
TIMEOUT = 600  # [s] per case: a hang guard, not a speed test (cases take 1-16 s with four at a time on
#                two loaded cores; pinned to one busy core that grows past the old 60 s and failed the fixture)
NO_DISPLAY = ":59123"  # an X display number nobody serves (xvfb-run -a starts at :99)


@dataclass(frozen=True)
class Case:
    """argv: CLI arguments, "{tmp}" standing for the case's folder (also its working directory).
    where, key: what the message must name first and second ("" key: a problem of the whole file).
    says: a phrase of the problem. files: created in the folder first (str/bytes content, or a
    function returning it, called when the case runs)."""
    id: str
    argv: tuple
    where: str
    key: str
    says: str
    files: dict = field(default_factory=dict)
    env: dict = field(default_factory=dict)


def flag(id, argv, key, says, **kw):
    """A refused command-line flag."""
    return Case(id, tuple(argv), CL, key, says, **kw)


def toml(id, text, key, says, command=("run", "--frames", "2", "--out", "{tmp}/out")):
    """A refused scenario file {tmp}/s.toml, run through `command` (default: `run`)."""
    return Case(id, (*command, "--config", "{tmp}/s.toml"), "{tmp}/s.toml", key, says, files={"s.toml": text})


def mesh(id, name, content, key, says):
    """A refused mesh file given to build-trees."""
    return Case(id, ("build-trees", "{tmp}/" + name, "--cache-dir", "{tmp}/cache"), "{tmp}/" + name, key, says,
                files={name: content})


def ply(vertices, faces) -> str:
    head = (f"ply\nformat ascii 1.0\nelement vertex {len(vertices)}\nproperty float x\nproperty float y\n"
            f"property float z\nelement face {len(faces)}\nproperty list uchar int vertex_indices\nend_header\n")
    return head + "".join(f"{x} {y} {z}\n" for x, y, z in vertices) + "".join(f"3 {a} {b} {c}\n" for a, b, c in faces)


@functools.cache
def recorded_header() -> dict:
    """The header spaceship_sim.sim.replay.Recorder writes for `run` on configs/default.toml."""
    from spaceship_sim.config import load_config
    from spaceship_sim.sim.replay import FORMAT, VERSION, config_dict, trees_fingerprint
    from spaceship_sim.sim.world import World

    world = World.from_config(load_config(DEFAULT), warm=False, notify=None)
    return {"format": FORMAT, "version": VERSION, "command": "run", "user": "autopilot",
            "config": config_dict(world.config), "source": DEFAULT, "models": [m.name for m in world.models],
            "trees": trees_fingerprint(world.bank), "clock": "WallClock()"}


def recording(change=lambda lines: None, cut: int | None = None):
    """A function making a two-frame recording of `run` on configs/default.toml as Recorder
    writes it (the frames on the numpy stages, with no clock readings), after change(lines)
    edits its records; cut: keep only its first `cut` bytes."""
    def make() -> bytes:
        header = json.loads(json.dumps(recorded_header()))  # a deep copy: cases edit it
        from spaceship_sim.sim.replay import sealed_lines

        frames = [{"frame": i, "compiled": False, "clock": [], "render": 0.0, "digest": "0" * 16} for i in (0, 1)]
        lines = [header, *frames, {"end": {"frames": 2, "state_hash": "0" * 64}}]
        change(lines)
        data = gzip.compress("".join(sealed_lines(lines)).encode())
        return data[:cut] if cut else data
    return make


def replayed(id, key, says, change=lambda lines: None, cut=None, more=()):
    """A refused recording {tmp}/r.gz given to `run --replay`."""
    return Case(id, (*REPLAY, *more), "{tmp}/r.gz", key, says, files={"r.gz": recording(change, cut)})


def edit(**fields):
    """change(lines) for `recording`: set header fields, or fields of line i given as _i={...}."""
    def change(lines):
        for k, v in fields.items():
            lines[int(k[1:]) if k.startswith("_") else 0].update(v if k.startswith("_") else {k: v})
    return change


RUN = ("run", "--config", DEFAULT, "--frames", "2")
REPLAY = ("run", "--out", "{tmp}/out", "--no-progress", "--replay", "{tmp}/r.gz")
RUN_OUT = (*RUN, "--out", "{tmp}/out")
FLY = ("fly", "--headless", "--frames", "1", "--config", DEFAULT)
HUBBARD = ("bench", "hubbard", "--config", LAMPS, "--frames", "10", "--out", "{tmp}/h")
BUILD = ("build-trees", "lamp", "--cache-dir", "{tmp}/cache")
TRIANGLE = [(0, 0, 0), (1, 0, 0), (0, 1, 0)]

CASES = [
    # ---- run: output folder, checked while parsing (root passes os.access, so "under a file")
    flag("run-out-under-a-file", (*RUN, "--out", "{tmp}/somefile/sub"), "--out", "which is a file, not a folder",
         files={"somefile": "keep me"}),
    flag("run-out-is-a-file", (*RUN, "--out", "{tmp}/somefile"), "--out", "exists and is not a folder",
         files={"somefile": "keep me"}),
    flag("run-out-empty", (*RUN, "--out", ""), "--out", "empty path"),
    flag("run-out-missing", RUN, "", "the following arguments are required: --out"),
    # ---- run: numbers
    flag("run-render-inf", (*RUN_OUT, "--render-ms", "inf"), "--render-ms", "must be finite"),
    flag("run-render-nan", (*RUN_OUT, "--render-ms", "nan"), "--render-ms", "must be finite"),
    flag("run-render-1e9", (*RUN_OUT, "--render-ms", "1e9"), "--render-ms", "at most 10 s"),
    flag("run-render-negative", (*RUN_OUT, "--render-ms", "-1"), "--render-ms", "must be in [0, 10000]"),
    flag("run-render-garbage", (*RUN_OUT, "--render-ms", "fast"), "--render-ms", "expected a number"),
    flag("run-frames-huge", ("run", "--config", DEFAULT, "--out", "{tmp}/out", "--frames", "99999999999999999999"),
         "--frames", "must be in 1..10000000"),
    flag("run-frames-zero", ("run", "--config", DEFAULT, "--out", "{tmp}/out", "--frames", "0"), "--frames",
         "must be in 1..10000000"),
    flag("run-frames-float", ("run", "--config", DEFAULT, "--out", "{tmp}/out", "--frames", "2.5"), "--frames",
         "expected an integer"),
    flag("run-warmup-not-below-frames", ("run", "--config", DEFAULT, "--out", "{tmp}/out", "--frames", "10",
                                         "--warmup", "50"), "--warmup", "must be < --frames (10)"),
    flag("run-warmup-negative", (*RUN_OUT, "--warmup", "-1"), "--warmup", "must be in 0.."),
    flag("run-unknown-flag", (*RUN_OUT, "--fast"), "", "unrecognized arguments: --fast"),
    # ---- run: the scenario file itself
    Case("config-missing", ("run", "--frames", "2", "--out", "{tmp}/out", "--config", "{tmp}/nope.toml"),
         "{tmp}/nope.toml", "", "file not found"),
    Case("config-is-a-folder", ("run", "--frames", "2", "--out", "{tmp}/out", "--config", "{tmp}/cfg"),
         "{tmp}/cfg", "", "is a folder, not a file", files={"cfg/x": ""}),
    toml("config-not-utf8", b"[arena]\nsize = 3\xff\xfe\n", "", "not UTF-8 text"),
    toml("config-empty", "# nothing here\n", "", "no settings in the file"),
    toml("config-not-toml", "[arena\nsize = 3\n", "", "not valid TOML"),
    toml("config-unknown-section", "[arenna]\nsize = 300.0\n", "arenna", "unknown key"),
    toml("config-unknown-key", "[sim]\nfps = 30\n", "sim.fps", "unknown key"),
    toml("config-wrong-type", "[arena]\nsize = 'big'\n", "arena.size", "expected a number"),
    toml("config-section-not-a-table", "sim = [1, 2]\n", "sim", "expected a table"),
    toml("config-arena-1e308", "[arena]\nsize = 1e308\n", "arena.size", "must be <= 1000000.0"),
    toml("config-arena-inf", "[arena]\nsize = inf\n", "arena.size", "must be finite"),
    toml("config-nan", "[collision]\nsafety_margin = nan\n", "collision.safety_margin", "must be finite"),
    toml("config-negative-time", "[sim]\ntarget_frame_time = -0.01\n", "sim.target_frame_time", "must be > 0"),
    toml("config-ships-too-many", "[ships]\ncount = 10000000\n", "ships.count", "must be <= 100000"),
    toml("config-thrust-1e300", "[controls]\nmax_thrust = 1e300\n", "controls.max_thrust", "must be <= 10000.0"),
    toml("config-speed-1e300", "[ships]\ninitial_speed = 1e300\n", "ships.initial_speed", "must be <= 10000.0"),
    toml("config-drag-zero", "[controls]\ndrag = 0.0\n", "controls.drag", "must be >= 0.001"),
    toml("config-waypoint-speed-1e300", "[[script.paths]]\nship = 0\npoints = [[0.0, 0.0, 0.0]]\nspeed = 1e300\n",
         "script.paths[0].speed", "must be <= 10000.0"),
    toml("config-steps-1e-300", "[integrator]\nmin_step = 1e-300\nmax_step = 1e-300\n", "integrator.min_step",
         "must be >= 1e-06"),
    toml("config-samples-per-frame", "[sim]\nframe_dt = 1.0\nmin_temporal_resolution = 1e-5\n",
         "sim.min_temporal_resolution", "would need 1e+05 detection samples per frame"),
    toml("config-tree-64-pow-6", "[collision]\ntree_branching = 64\ntree_depth = 6\n", "collision.tree_branching",
         "would need 6.98e+10 spheres per tree, limit 100000"),
    toml("config-exact-method-unknown", '[collision]\nexact_method = "gjk"\n', "collision.exact_method",
         "must be one of 'sphere_leaves', 'bsp'"),
    toml("config-exact-method-number", "[collision]\nexact_method = 3\n", "collision.exact_method", "expected a string"),
    flag("narrowphase-threads-zero", ("bench", "narrowphase", "--threads", "0,1"), "--threads", "each must be in 1.."),
    flag("narrowphase-threads-garbage", ("bench", "narrowphase", "--threads", "1,x"), "--threads",
         "must be comma-separated integers"),
    toml("config-min-level-99", "[collision]\nmin_level = 99\n", "collision.min_level",
         "must be <= collision.tree_depth + 1 = 4"),
    toml("config-asteroid-boxes", "[asteroids]\ncount = 10\nboxes = 'round'\n", "asteroids.boxes",
         "must be one of 'dynamic', 'fixed'"),
    toml("config-asteroid-radii-crossed", "[asteroids]\nradius_min = 5.0\nradius_max = 2.0\n",
         "asteroids.radius_min", "must be <= asteroids.radius_max"),
    toml("config-asteroids-exact-method", "[asteroids]\ncount = 10\n[collision]\nexact_method = 'ssv'\n",
         "collision.exact_method", "with asteroids the exact level must be 'sphere_leaves'"),
    toml("config-asteroids-too-many", "[asteroids]\ncount = 1000000\n", "asteroids.count", "must be <= 5000"),
    toml("config-asteroids-do-not-fit", "[arena]\nsize = 100.0\n[ships]\ncount = 1\nuser_model = 'lamp'\n"
         "[asteroids]\ncount = 3000\n", "asteroids.count",
         "cannot place 3000 asteroids"),
    toml("config-ocst-asteroids", "[asteroids]\ncount = 10\n[collision]\ntree_method = 'ocst'\n",
         "collision.tree_method", "'ocst' builds the ship models' trees only"),
    toml("config-ocst-evict-negative", "[collision]\ntree_method = 'ocst'\nocst_evict_after = -1\n",
         "collision.ocst_evict_after", "must be > 0"),
    toml("config-ocst-max-nodes-float", "[collision]\nocst_max_nodes = 1.5\n", "collision.ocst_max_nodes",
         "expected an integer"),
    toml("config-ocst-max-nodes-tiny", "[collision]\nocst_max_nodes = 3\n", "collision.ocst_max_nodes",
         "must be >= 16"),
    toml("config-render-average-1e12", "[collision]\nrender_average_frames = 1000000000000\n",
         "collision.render_average_frames", "must be <= 10000"),
    toml("config-missing-user-model", "[ships]\nuser_model = 'battlestar'\n", "ships.user_model",
         "unknown model 'battlestar'"),
    toml("config-missing-model-in-list", "[ships]\nmodels = ['lamp', 'battlestar']\n", "ships.models[1]",
         "unknown model 'battlestar'"),
    toml("config-arena-too-small", "[arena]\nsize = 20.0\n", "ships.count", "cannot place 12 ships"),
    # ---- run --record / --replay: the recording file
    flag("run-record-missing-folder", (*RUN_OUT, "--record", "{tmp}/missing/r.gz"), "--record", "does not exist"),
    flag("demo-record-is-a-folder", ("demo", "--headless", "--frames", "1", "--record", "{tmp}/r.gz"), "--record",
         "is a folder, not a file", files={"r.gz/keep": "x"}),
    flag("replay-with-frames", (*REPLAY, "--frames", "3"), "--frames", "cannot be combined with --replay",
         files={"r.gz": recording()}),
    Case("replay-missing", REPLAY, "{tmp}/r.gz", "", "file not found"),
    Case("replay-not-gzip", REPLAY, "{tmp}/r.gz", "", "damaged or not a recording", files={"r.gz": "plain text"}),
    replayed("replay-truncated", "", "damaged", cut=300),
    Case("replay-not-json", REPLAY, "{tmp}/r.gz", "line 1", "damaged: not JSON",
         files={"r.gz": gzip.compress(b"{oops\n")}),
    replayed("replay-not-a-recording", "format", "not a spaceship-sim recording", edit(format="a diary")),
    replayed("replay-other-version", "version", f"format version 1, this program replays version {VERSION}",
             edit(version=1)),
    replayed("replay-no-end", "end", "cut short", lambda lines: lines.pop()),
    replayed("replay-end-count", "end.frames", "says 5 frames, the file holds 2", edit(_3={"end": {
        "frames": 5, "state_hash": "0"}})),
    replayed("replay-frame-gap", "line 3: frame", "frame 3 does not follow frame 0", edit(_2={"frame": 3})),
    replayed("replay-render-negative", "line 2: render", "expected a render time in 0..10 s", edit(_1={"render": -1.0})),
    replayed("replay-unknown-key", "line 2: keys", "expected a list of thrust_forward", edit(_1={"keys": ["warp"]})),
    replayed("replay-config-unknown-key", "config.sim.fps", "unknown key",
             lambda lines: lines[0]["config"]["sim"].update(fps=30)),
    replayed("replay-config-mismatch", "config", "made with another config than", more=("--config", LAMPS)),
    replayed("replay-trees-differ", "trees", "sphere trees differ from the recorded ones", edit(trees="0" * 64)),
    replayed("replay-clock-runs-out", "frame 0: clock", "the replay diverged: it read 1 times, 0 readings"),
    replayed("replay-clock-leftovers", "frame 0: clock", "5000 readings recorded",
             edit(_1={"clock": [0.0] * 5000})),
    toml("config-deform-not-flying", "[deform]\nmodels = ['lamp', 'shuttle']\n", "deform.models[1]",
         "'shuttle' is not a ship model of this scenario"),
    toml("config-deform-with-asteroids", "[asteroids]\ncount = 3\n[deform]\nmodels = ['lamp']\n", "deform.models",
         "with asteroids use neither"),
    toml("config-swept-not-bool", "[collision]\nswept = 'yes'\n", "collision.swept", "expected true/false"),
    toml("config-deform-ocst", "[collision]\ntree_method = 'ocst'\n[deform]\nmodels = ['lamp']\n",
         "collision.tree_method", "prebuilt trees of their rest shapes"),
    toml("config-deform-amplitude", "[deform]\nmodels = ['lamp']\namplitude = 3.0\n", "deform.amplitude",
         "must be <= 0.5"),
    # ---- check-config: the same validation as run
    Case("check-missing-model", ("check-config", "{tmp}/s.toml"), "{tmp}/s.toml", "ships.user_model",
         "unknown model", files={"s.toml": "[ships]\nuser_model = 'battlestar'\n"}),
    Case("check-arena-too-small", ("check-config", "{tmp}/s.toml"), "{tmp}/s.toml", "ships.count", "cannot place",
         files={"s.toml": "[arena]\nsize = 20.0\n"}),
    flag("check-config-no-file", ("check-config",), "FILE", "name at least one config file"),
    # ---- fly / demo
    flag("fly-ships-10-million", (*FLY, "--ships", "10000000"), "--ships", "must be in 1..100000"),
    flag("demo-ships-zero", ("demo", "--headless", "--frames", "1", "--ships", "0"), "--ships", "must be in 1.."),
    flag("fly-ships-no-room", (*FLY, "--ships", "100000"), "--ships", "cannot place 100000 ships"),
    flag("fly-tree-level-99", (*FLY, "--tree-level", "99"), "--tree-level", "must be in -1..64"),
    flag("fly-tree-level-below-tree", (*FLY, "--tree-level", "4"), "--tree-level",
         "must be <= collision.tree_depth = 3"),
    flag("fly-frames-zero", ("fly", "--headless", "--frames", "0"), "--frames", "must be in 1.."),
    flag("fly-headless-without-frames", ("fly", "--headless"), "--frames", "--headless needs --frames N"),
    flag("fly-size-garbage", (*FLY, "--size", "12x"), "--size", "expected WxH"),
    flag("fly-size-too-small", (*FLY, "--size", "0x100"), "--size", "16..8192 pixels"),
    flag("fly-broadphase-unknown", (*FLY, "--broadphase", "octree"), "--broadphase", "invalid choice"),
    flag("demo-screenshot-missing-folder", ("demo", "--headless", "--frames", "1", "--screenshot",
                                            "{tmp}/missing/shot.png"), "--screenshot", "does not exist"),
    flag("demo-screenshot-is-a-folder", ("demo", "--headless", "--frames", "1", "--screenshot", "{tmp}/shot.png"),
         "--screenshot", "is a folder, not a file", files={"shot.png/keep": "x"}),
    flag("fly-screenshot-not-png", (*FLY, "--screenshot", "{tmp}/shot.jpg"), "--screenshot", "must name a .png"),
    toml("fly-config-missing-model", "[ships]\nmodels = ['battlestar']\n", "ships.models[0]", "unknown model",
         command=FLY),
    Case("fly-display-unreachable", ("fly", "--frames", "1", "--config", DEFAULT), "environment", "DISPLAY",
         f"cannot connect to '{NO_DISPLAY}'", env={"DISPLAY": NO_DISPLAY}),
    # ---- bench hubbard: every argument checked before anything runs
    flag("hubbard-sweep-render-inf", (*HUBBARD, "--sweep-render", "20,inf"), "--sweep-render", "must be finite"),
    flag("hubbard-budgets-inf", (*HUBBARD, "--budgets", "1,inf"), "--budgets", "must be finite"),
    flag("hubbard-budgets-zero", (*HUBBARD, "--budgets", "0,1"), "--budgets", "must be > 0"),
    flag("hubbard-budgets-garbage", (*HUBBARD, "--budgets", "1,,2"), "--budgets", "expected a number"),
    flag("hubbard-render-1e9", (*HUBBARD, "--render-ms", "1e9"), "--render-ms", "at most 10 s"),
    flag("hubbard-warmup-not-below-frames", (*HUBBARD, "--warmup", "10"), "--warmup", "must be < --frames (10)"),
    flag("hubbard-detector-unknown", (*HUBBARD, "--detectors", "bsp,kdtree"), "--detectors",
         "unknown detector 'kdtree'"),
    flag("hubbard-scene-unknown", (*HUBBARD, "--scene", "trucks"), "--scene", "invalid choice"),
    flag("hubbard-cpu-load-negative", (*HUBBARD, "--cpu-load", "-1"), "--cpu-load", "must be in 0.."),
    flag("hubbard-exact-frames-zero", (*HUBBARD, "--exact-frames", "0"), "--exact-frames", "must be in 1.."),
    toml("config-all-contacts-not-bool", "[collision]\nall_contacts = 1\n", "collision.all_contacts",
         "expected true/false"),
    flag("hubbard-out-is-a-file", ("bench", "hubbard", "--config", LAMPS, "--out", "{tmp}/somefile"), "--out",
         "exists and is not a folder", files={"somefile": "keep me"}),
    toml("hubbard-config-missing-model", "[ships]\nuser_model = 'battlestar'\n", "ships.user_model",
         "unknown model", command=("bench", "hubbard", "--frames", "10", "--out", "{tmp}/h")),
    # ---- other benches
    flag("dynamics-n-10-million", ("bench", "dynamics", "--n", "10000000"), "--n", "would need about 12 GB"),
    flag("dynamics-tolerance-nan", ("bench", "dynamics", "--tolerance", "nan"), "--tolerance", "must be finite"),
    flag("dynamics-frames-zero", ("bench", "dynamics", "--frames", "0"), "--frames", "must be in 1.."),
    flag("dynamics-n-zero", ("bench", "dynamics", "--n", "0"), "--n", "must be in 1.."),
    flag("dynamics-tolerance-negative", ("bench", "dynamics", "--tolerance", "-1"), "--tolerance", "must be in (0,"),
    toml("dynamics-config-samples", "[sim]\nmin_temporal_resolution = 1e-6\n", "sim.min_temporal_resolution",
         "detection samples per frame", command=("bench", "dynamics")),
    flag("broadphase-n-garbage", ("bench", "broadphase", "--n", "0,abc"), "--n", "expected comma-separated integers"),
    flag("broadphase-n-one", ("bench", "broadphase", "--n", "1,10"), "--n", "must be in 2..100000"),
    flag("broadphase-n-10-million", ("bench", "broadphase", "--n", "10000000"), "--n", "must be in 2..100000"),
    flag("broadphase-dt-inf", ("bench", "broadphase", "--dt", "inf"), "--dt", "must be finite"),
    flag("broadphase-fraction-2", ("bench", "broadphase", "--fraction", "2"), "--fraction", "must be in (0, 0.5]"),
    flag("broadphase-speed-1e300", ("bench", "broadphase", "--speed", "1e300"), "--speed", "must be in [0, 10000]"),
    flag("narrowphase-unknown-model", ("bench", "narrowphase", "--model", "battlestar"), "--model",
         "unknown model 'battlestar'"),
    flag("narrowphase-depth-zero", ("bench", "narrowphase", "--depth", "0"), "--depth", "must be in 1..5"),
    flag("narrowphase-poses-zero", ("bench", "narrowphase", "--poses", "0"), "--poses/--pairs", "must be in 1.."),
    flag("narrowphase-method-unknown", ("bench", "narrowphase", "--method", "bsp"), "--method", "invalid choice"),
    flag("ocst-render-ms-garbage", ("bench", "ocst", "--render-ms", "31,x"), "--render-ms",
         "expected a number, got 'x' (in '31,x')"),
    flag("ocst-render-ms-negative", ("bench", "ocst", "--render-ms", "-1"), "--render-ms", "must be in [0, 10000]"),
    flag("ocst-depth-seven", ("bench", "ocst", "--depth", "7"), "--depth", "must be in 1..6"),
    Case("ocst-depth-below-min-level", ("bench", "ocst", "--config", "{tmp}/s.toml", "--depth", "1", "--out",
                                         "{tmp}/o"), CL, "--depth",
         "collision.min_level must be <= collision.tree_depth", files={"s.toml": "[collision]\nmin_level = 4\n"}),
    flag("bench-without-what", ("bench",), "", "the following arguments are required: WHAT"),
    flag("unknown-command", ("launch",), "COMMAND", "invalid choice: 'launch'"),
    # ---- build-trees
    Case("mesh-missing-path", ("build-trees", "{tmp}/nope.stl", "--cache-dir", "{tmp}/cache"), "{tmp}/nope.stl", "",
         "file not found"),
    Case("mesh-is-a-folder", ("build-trees", "{tmp}/meshes", "--cache-dir", "{tmp}/cache"), "{tmp}/meshes", "",
         "not a file", files={"meshes/a.ply": ply(TRIANGLE, [(0, 1, 2)])}),
    mesh("mesh-empty-file", "empty.ply", "", "", "cannot read PLY file"),
    mesh("mesh-garbage-stl", "junk.stl", "solid junk\nthis is not a facet\nendsolid\n", "",
         "not a valid STL mesh"),
    mesh("mesh-garbage-binary-stl", "junk2.stl", bytes(range(256)) * 2, "", "not a valid STL mesh"),
    mesh("mesh-nan-vertex", "nan.ply", ply([(0, 0, 0), ("nan", 0, 0), (0, 1, 0)], [(0, 1, 2)]), "vertices[1]",
         "not finite"),
    mesh("mesh-zero-area", "flat.ply", ply([(0, 0, 0), (1, 0, 0), (2, 0, 0)], [(0, 1, 2)]), "faces[0]",
         "degenerate (zero area)"),
    mesh("mesh-index-out-of-range", "idx.ply", ply(TRIANGLE, [(0, 1, 7)]), "faces[0]", "vertex index out of range"),
    mesh("mesh-unsupported-format", "ship.txt", "v 0 0 0\n", "format", "unsupported mesh format"),
    flag("build-unknown-model", ("build-trees", "battlestar", "--cache-dir", "{tmp}/cache"), "MESH",
         "unknown model 'battlestar'"),
    flag("build-tree-64-pow-6", (*BUILD, "--branching", "64", "--depth", "6"), "--branching",
         "would need 6.98e+10 spheres per tree, limit 100000"),
    flag("build-depth-garbage", (*BUILD, "--depth", "deep"), "--depth", "invalid int value"),
    flag("build-picture-missing-folder", (*BUILD, "--picture", "{tmp}/missing/trees.png"), "--picture",
         "does not exist"),
    flag("build-method-unknown", (*BUILD, "--method", "bsp"), "--method", "invalid choice"),
    flag("build-ssv-picture-not-png", (*BUILD, "--method", "ssv", "--picture", "{tmp}/ssv.jpg"), "--picture",
         "must name a .png file"),
]


def snapshot(folder: Path) -> dict:
    """{relative path: content hash, or 'dir'} of everything under folder."""
    return {str(p.relative_to(folder)): "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*"))}


def run_case(case: Case, folder: Path) -> dict:
    for name, content in case.files.items():
        content = content() if callable(content) else content
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)
    before = snapshot(folder)
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")} | case.env
    argv = [a.replace("{tmp}", str(folder)) for a in case.argv]
    r = subprocess.run([sys.executable, "-m", "spaceship_sim.cli.main", *argv], capture_output=True, text=True,
                       cwd=folder, env=env, timeout=TIMEOUT)
    return dict(returncode=r.returncode, stderr=r.stderr, changed=before != snapshot(folder), folder=folder)


@pytest.fixture(scope="session")
def results(request, tmp_path_factory) -> dict:
    """Run the selected cases, a few at a time (two cores; each is mostly interpreter start-up)."""
    wanted = {item.callspec.params["case"].id for item in request.session.items
              if item.originalname == "test_bad_input_is_refused_in_one_line"}
    cases = [c for c in CASES if c.id in wanted]
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {c.id: pool.submit(run_case, c, tmp_path_factory.mktemp(c.id)) for c in cases}
        return {k: f.result() for k, f in futures.items()}


def test_case_ids_are_unique():
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_refused_in_one_line(case, results):
    assert_refused_in_one_line(case, results[case.id])


def assert_refused_in_one_line(case, r) -> None:
    """run_case's result `r`: exit 2, one line naming the case's file and field and saying what it
    says, and nothing written or changed."""
    lines = r["stderr"].splitlines()
    assert r["returncode"] == 2 and len(lines) == 1, r["stderr"][-3000:]
    where = case.where.replace("{tmp}", str(r["folder"]))
    head = f"error: {where}: {case.key}: " if case.key else f"error: {where}: "
    line = lines[0]
    assert line.startswith(head), line
    assert case.says in line[len(head):], line
    assert not r["changed"], f"{case.id} left files behind or changed one: {sorted(r['folder'].rglob('*'))}"


def test_staged_output_folder_is_all_or_nothing(tmp_path):
    """bench hubbard's output folder: a run that fails midway leaves it as it was, with no
    temporary folder beside it; a run that succeeds replaces its files and keeps unrelated ones."""
    from spaceship_sim.sim.runs import staged_folder

    out = tmp_path / "h"
    out.mkdir()
    (out / "accuracy.csv").write_text("old")
    (out / "notes.txt").write_text("mine")
    with pytest.raises(KeyboardInterrupt):
        with staged_folder(out) as work:
            (work / "accuracy.csv").write_text("half")
            raise KeyboardInterrupt
    assert snapshot(tmp_path) == {"h": "dir", "h/accuracy.csv": sha("old"), "h/notes.txt": sha("mine")}
    with staged_folder(out) as work:
        (work / "time_critical").mkdir()
        (work / "accuracy.csv").write_text("new")
    assert snapshot(tmp_path) == {"h": "dir", "h/accuracy.csv": sha("new"), "h/notes.txt": sha("mine"),
                                  "h/time_critical": "dir"}


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
