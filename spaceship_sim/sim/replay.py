"""Recorded runs and their exact replay: `--record FILE` (run, fly, demo), `run --replay FILE`.

Design. Besides the seeded config, a frame depends only on inputs the world is told of through
its `recorder` hooks (spaceship_sim.sim.world): the user's keys held while it stepped, setting
changes and resets (the app's controls), whether it ran the compiled stages (the app compiles
them in the background and switches when they are ready), its render time (World.end_frame),
and every reading of its clock. The time-critical narrow phase decides how deep to refine —
each sample's budget, each batch's size, where refinement stops — from clock readings alone
(pipeline.detection_budget, narrowphase.refine), so a replay whose clock serves back the
recorded readings (clock.ReplayClock) makes the same decisions and ends in the same state, bit
for bit, on any machine at any speed, with no change to the refinement code. The recording
holds the readings rather than the cut-offs they led to: the code that turns one into the other
is the same in both runs, and a replay that reads the clock more or fewer times than recorded
has diverged, which it reports. Every frame carries a digest of the state it left, so a replay
that reaches another state stops at the first frame that differs and names it.

File (VERSION 6): gzip-compressed JSON lines; floats are written with repr, which reads back
exactly.
  header  {"format": FORMAT, "version": VERSION, "command": "run" | "fly" | "demo", "user": "autopilot" |
           "keyboard", "config": every config key, "source": the config's file, "models": names,
           "trees": sha-256 of the models' sphere trees and triangles, "clock": the recorded clock}
  frame   {"frame": index, "clock": [readings, s], "render": render time [s], "compiled": bool,
           "keys": [held actions] (absent: none), "events": [["set", {knob: value}] | ["reset"]]
           (absent: none; applied before the step, in order), "digest": the first DIGEST_CHARS
           of the state hash after the frame}
  end     {"end": {"frames": count, "state_hash": hash after the last frame, "checksum": sha-256 of
           the file's text before the end line (a recording altered or damaged after it was
           written is refused)}}
The recorder writes a temporary file beside FILE and renames it over FILE when the run ends
well (all or nothing); memory stays flat (a frame's line is written when the frame ends).
"""
from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import math
import os
import tempfile
import zlib
from pathlib import Path

import numpy as np

from ..clock import RecordingClock, ReplayClock, ReplayClockError
from ..config import BROADPHASE_NAMES, ConfigError, config_from_dict
from ..dynamics.controllers import KeyState
from ..errors import InputError
from ..files import check_input, partial_prefix
from ..progress import to_stderr

FORMAT = "spaceship-sim recording"
VERSION = 6  # 6: the narrowing's upper bound takes each node's point toward the other, and the distances of
#             pairs found apart end where the narrowing must (5's readings diverge where a sample narrowed)
MAX_RECORDING_BYTES = 16_000_000_000  # compressed: about 5 kB a frame, so ~3 million frames (a day at 30 Hz)
MAX_LINE_CHARS = 16_000_000  # one record decompressed (a frame with 5,000 clock readings: ~100 kB): a
#                              compressed file of one endless line would otherwise fill the memory
MAX_RENDER_S = 10.0  # a recorded render time, as `run --render-ms` allows
MAX_TARGET_S = 10.0  # a target frame time set while recording, as the config's sim.target_frame_time allows
MAX_LEVEL = 64       # a tree level set while recording
DIGEST_CHARS = 16  # of a frame's state hash kept in its record
SETTINGS = {"min_level": int, "max_level": int, "broadphase": str, "target_frame_time": float,
            "time_critical": bool}  # World.set_collision's knobs and their types


class ReplayError(InputError):
    """A recording that cannot be replayed (damaged, another version, another config or trees),
    or a replay that left the recorded run: one line naming the file and the field."""


def config_dict(cfg) -> dict:
    """Every key of a Config as plain JSON values (config_from_dict reads it back)."""
    d = dataclasses.asdict(cfg)
    d.pop("source")
    return json.loads(json.dumps(d))  # tuples -> lists


def _line(record: dict) -> str:
    return json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n"


def sealed_lines(records: list[dict]) -> list[str]:
    """The file's text lines of `records` as the Recorder writes them; a last record that is an end
    record gets the checksum of the lines before it."""
    lines = [_line(r) for r in records[:-1]]
    last = records[-1] if records else None
    if isinstance(last, dict) and isinstance(last.get("end"), dict):
        last["end"]["checksum"] = hashlib.sha256("".join(lines).encode()).hexdigest()
    return lines + ([_line(last)] if records else [])


def trees_fingerprint(bank) -> str:
    """sha-256 over a TreeBank's arrays: the models' sphere trees and triangles as the run uses them
    (an OcstBank's: what its trees are built from, see OcstBank.defining_arrays)."""
    h = hashlib.sha256()
    arrays = ({f.name: getattr(bank, f.name) for f in dataclasses.fields(bank)} if dataclasses.is_dataclass(bank)
              else bank.defining_arrays())
    for name, a in arrays.items():
        if isinstance(a, np.ndarray):
            h.update(name.encode() + str(a.dtype).encode() + str(a.shape).encode())
            h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


class Recorder:
    """Records `world` from its next frame into `path` (see the module docstring): wraps the
    world's clock in a RecordingClock and becomes its `recorder`. `commit()` after the last
    frame; `discard()` on failure (FILE is then left as it was)."""

    def __init__(self, path, world, command: str):
        self.path = Path(path)
        self.clock = world.clock = RecordingClock(world.clock)
        world.recorder = self
        fd, self.tmp = tempfile.mkstemp(dir=self.path.parent, prefix=partial_prefix(self.path.name))
        os.close(fd)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(self.tmp, 0o666 & ~umask)  # as an ordinary new file (mkstemp makes it private)
        self.file = gzip.open(self.tmp, "wt", encoding="utf-8")
        self.events, self.frame, self.frames = [], None, 0
        self.checksum = hashlib.sha256()  # of every line before the end record
        self._write({"format": FORMAT, "version": VERSION, "command": command, "user": world.user,
                     "config": config_dict(world.config), "source": world.config.source,
                     "models": [m.name for m in world.models], "trees": trees_fingerprint(world.bank),
                     "clock": repr(self.clock.inner)})

    def _write(self, record: dict) -> None:
        line = _line(record)
        self.checksum.update(line.encode())
        self.file.write(line)

    # --- World's hooks ---------------------------------------------------------------------
    def event(self, kind: str, data: dict | None = None) -> None:
        """A setting change ("set", World.set_collision's arguments) or a "reset"."""
        self.events.append([kind] if data is None else [kind, {k: SETTINGS[k](v) for k, v in data.items()}])

    def begin_frame(self, world) -> None:
        self.frame = {"frame": world.frame, "compiled": world.compiled}
        if world.keys:
            self.frame["keys"] = sorted(world.keys)
        if self.events:
            self.frame["events"], self.events = self.events, []

    def end_frame(self, world, render_time: float) -> None:
        record, self.frame = self.frame, None
        record["clock"], record["render"] = self.clock.take(), float(render_time)
        record["digest"] = world.state_hash()[:DIGEST_CHARS]
        self._write(record)
        self.frames += 1

    # --- the file ----------------------------------------------------------------------------
    def commit(self, world) -> str:
        """Finish the file and move it to `path`; returns the final state hash."""
        state_hash = world.state_hash()
        try:
            self._write({"end": {"frames": self.frames, "state_hash": state_hash,
                                 "checksum": self.checksum.hexdigest()}})
            self.file.close()
            os.replace(self.tmp, self.path)
        finally:
            self.discard()
        world.recorder = None
        return state_hash

    def discard(self) -> None:
        self.file.close()
        if os.path.exists(self.tmp):
            os.unlink(self.tmp)


class Recording:
    """A recording file, checked whole in one streaming pass when opened (`Recording(path)`):
    header, every frame record, the end record. `frames()` then reads the frames again."""

    def __init__(self, path):
        self.path = Path(path)
        check_input(self.path, MAX_RECORDING_BYTES, "recording", ReplayError)
        lines = self._lines()
        self.header = self._header(next(lines, None))
        self.config = self._config()
        self.end, self.n_frames, previous = None, 0, None
        for i, line in enumerate(lines, start=2):
            if self.end is not None:
                raise self.error(f"line {i}", "data after the end record")
            if set(line) == {"end"}:
                self.end = self._end(line["end"], f"line {i}")
                continue
            previous = self._frame(line, previous, f"line {i}")
            self.n_frames += 1
        if self.end is None:
            raise self.error("end", f"no end record after {self.n_frames} frames: the recording was cut short")
        if self.end["frames"] != self.n_frames:
            raise self.error("end.frames", f"says {self.end['frames']} frames, the file holds {self.n_frames}")
        if self.end.get("checksum") != self._sealed:
            raise self.error("end.checksum", "missing or not the checksum of the file's contents: the recording "
                             "was altered or damaged after it was written")

    def error(self, field: str, problem: str) -> ReplayError:
        return ReplayError(self.path, field, problem)

    def _lines(self):
        """Each line as a JSON object; a damaged file raises ReplayError naming the line."""
        i, checksum = 0, hashlib.sha256()
        try:
            with gzip.open(self.path, "rt", encoding="utf-8") as f:
                for i, text in enumerate(iter(lambda: f.readline(MAX_LINE_CHARS + 1), ""), start=1):
                    if len(text) > MAX_LINE_CHARS:
                        raise self.error(f"line {i}", f"damaged: longer than {MAX_LINE_CHARS:,} characters")
                    self._sealed = checksum.hexdigest()  # of the lines before this one (the end's)
                    checksum.update(text.encode())
                    try:
                        line = json.loads(text)
                    except json.JSONDecodeError as e:
                        raise self.error(f"line {i}", f"damaged: not JSON ({e.msg} at column {e.colno})") from None
                    except RecursionError:
                        raise self.error(f"line {i}", "damaged: values nested too deeply") from None
                    if not isinstance(line, dict):
                        raise self.error(f"line {i}", f"damaged: expected a JSON object, got {type(line).__name__}")
                    yield line
        except FileNotFoundError:
            raise self.error("", "file not found") from None
        except IsADirectoryError:
            raise self.error("", "is a folder, not a recording") from None
        except (gzip.BadGzipFile, EOFError, zlib.error, UnicodeDecodeError) as e:
            where = f"after line {i}" if i else "at the start"
            raise self.error("", f"damaged or not a recording ({where}: {e})") from None
        except OSError as e:
            raise self.error("", f"cannot read ({e.strerror or e})") from None

    def _header(self, h) -> dict:
        if h is None or h.get("format") != FORMAT:
            raise self.error("format", f"not a {FORMAT} (line 1 is {str(h)[:60]})")
        if h.get("version") != VERSION:
            raise self.error("version", f"recorded in format version {h.get('version')!r}, this program replays "
                             f"version {VERSION}: record the run again")
        for key, kind in (("command", str), ("user", str), ("config", dict), ("source", str), ("models", list),
                          ("trees", str), ("clock", str)):
            if not isinstance(h.get(key), kind):
                raise self.error(key, f"missing or not a {kind.__name__} in the header")
        if h["user"] not in ("autopilot", "keyboard"):
            raise self.error("user", f"must be 'autopilot' or 'keyboard', got {h['user']!r}")
        return h

    def _config(self):
        try:
            return config_from_dict(self.header["config"], str(self.path))
        except ConfigError as e:  # the recorded config no longer validates (renamed keys, new limits)
            raise self.error(f"config.{e.key}", e.problem) from None

    def _frame(self, f: dict, previous: dict | None, where: str) -> dict:
        unknown = set(f) - {"frame", "clock", "render", "compiled", "keys", "events", "digest"}
        if unknown:
            raise self.error(f"{where}: {sorted(unknown)[0]}", "unknown field: damaged, or another version")
        if not _is_int(f.get("frame")) or f["frame"] < 0:
            raise self.error(f"{where}: frame", f"expected a frame index >= 0, got {f.get('frame')!r}")
        clock = f.get("clock")
        if not isinstance(clock, list) or not all(_is_number(x) and math.isfinite(x) for x in clock):
            raise self.error(f"{where}: clock", "expected a list of finite clock readings [s]")
        if not _is_number(f.get("render")) or not 0 <= f["render"] <= MAX_RENDER_S:
            raise self.error(f"{where}: render", f"expected a render time in 0..{MAX_RENDER_S:g} s, "
                             f"got {f.get('render')!r}")
        if not isinstance(f.get("compiled"), bool) or (previous and previous["compiled"] and not f["compiled"]):
            raise self.error(f"{where}: compiled", "expected true/false, never false after true")
        keys = f.get("keys", [])
        if not isinstance(keys, list) or not set(keys) <= set(KeyState.ACTIONS):
            raise self.error(f"{where}: keys", f"expected a list of {', '.join(KeyState.ACTIONS)}")
        resets = self._events(f.get("events", []), f"{where}: events")
        follows = (previous is None or f["frame"] == previous["frame"] + 1) if not resets else f["frame"] == 0
        if not follows:
            raise self.error(f"{where}: frame", f"frame {f['frame']} does not follow frame "
                             f"{previous and previous['frame']}" + (" after a reset" if resets else ""))
        if not (isinstance(f.get("digest"), str) and len(f["digest"]) == DIGEST_CHARS):
            raise self.error(f"{where}: digest", f"expected the first {DIGEST_CHARS} characters of a state hash")
        return f

    def _events(self, events, where: str) -> int:
        """Check a frame's events; returns how many are resets."""
        if not isinstance(events, list):
            raise self.error(where, "expected a list")
        for e in events:
            if e == ["reset"]:
                continue
            if not (isinstance(e, list) and len(e) == 2 and e[0] == "set" and isinstance(e[1], dict)
                    and all(k in SETTINGS and _fits(v, SETTINGS[k]) for k, v in e[1].items())
                    and e[1].get("broadphase", BROADPHASE_NAMES[0]) in BROADPHASE_NAMES
                    and all(0 <= e[1].get(k, 0) <= MAX_LEVEL for k in ("min_level", "max_level"))
                    and 0 < e[1].get("target_frame_time", 1.0) <= MAX_TARGET_S):
                raise self.error(where, f"expected [\"reset\"] or [\"set\", {{knob: value}}] with knobs "
                                 f"{', '.join(SETTINGS)}, got {str(e)[:80]}")
        return sum(e == ["reset"] for e in events)

    def _end(self, end, where: str) -> dict:
        if not (isinstance(end, dict) and _is_int(end.get("frames")) and isinstance(end.get("state_hash"), str)):
            raise self.error(f"{where}: end", "expected {\"frames\": count, \"state_hash\": hash}")
        return end

    def frames(self):
        """The frame records, in order (the file was checked when opened)."""
        return (line for line in self._lines() if "frame" in line)


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _fits(value, kind) -> bool:
    return _is_number(value) if kind is float else _is_int(value) if kind is int else isinstance(value, kind)


def first_difference(a: dict, b: dict, prefix: str = "") -> str | None:
    """The first dotted key where two config dicts differ, with both values (None if equal)."""
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key), b.get(key)
        if isinstance(x, dict) and isinstance(y, dict):
            found = first_difference(x, y, f"{prefix}{key}.")
            if found:
                return found
        elif x != y:
            return f"{prefix}{key} (recorded {x!r}, now {y!r})"
    return None


def replay(recording: Recording, open_log, config=None, notify=to_stderr, progress: bool = True):
    """Step a World through `recording` (a Recording), handing each frame's FrameStats to
    `log = open_log(world)` as run_frames does; returns (log, world). `config`: a Config the
    recording must have been made with (else ReplayError naming the first differing key).
    Raises ReplayError when the models' trees differ from the recorded ones, or the replay
    leaves the recorded run (reads the clock more or fewer times, or reaches another state after
    a frame: the first such frame is named)."""
    from tqdm import tqdm

    from .world import World

    rec, path = recording, recording.path
    if config is not None:
        diff = first_difference(rec.header["config"], config_dict(config))
        if diff:
            raise rec.error("config", f"the recording was made with another config than {config.source}: {diff}")
    clock = ReplayClock()
    world = World.from_config(rec.config, user=rec.header["user"], warm=False, clock=clock, notify=notify)
    if [m.name for m in world.models] != rec.header["models"] or trees_fingerprint(world.bank) != rec.header["trees"]:
        raise rec.error("trees", "the models' meshes or sphere trees differ from the recorded ones (assets or tree "
                        "builder changed since): the replay would not be the recorded run")
    log = open_log(world)
    try:
        for f in tqdm(rec.frames(), total=rec.n_frames, desc="replay", unit="frame", disable=not progress):
            _replay_frame(world, clock, f, log, rec, notify)
        if world.state_hash() != rec.end["state_hash"]:
            raise rec.error("end.state_hash", f"the replay ended in state {world.state_hash()[:16]}..., the "
                            f"recording in {rec.end['state_hash'][:16]}...: the replay diverged")
    except BaseException:
        log.discard()
        raise
    return log, world


def _replay_frame(world, clock: ReplayClock, f: dict, log, rec: Recording, notify) -> None:
    where = f"frame {f['frame']}"
    for event in f.get("events", []):
        if event[0] == "reset":
            world.reset()
        else:
            world.set_collision(**event[1])
    if f["compiled"] and not world.compiled:
        world.warm_up(notify)  # as World(warm=True) and the app's background warm-up do
        world.use_compiled_stages()
    world.keys.clear()
    world.keys.update(f.get("keys", []))
    clock.load(f["clock"])
    try:
        stats = world.step()
    except ReplayClockError as e:
        raise rec.error(f"{where}: clock", f"the replay diverged: it {e}") from None
    if clock.left():
        raise rec.error(f"{where}: clock", f"the replay diverged: it read the clock {clock.next} times, "
                        f"{len(clock.readings)} readings recorded")
    world.end_frame(f["render"])
    log.add(stats)
    if world.state_hash()[:DIGEST_CHARS] != f["digest"]:
        raise rec.error(f"{where}: digest", "the replay diverged here: the first frame whose state differs from "
                        "the recorded one")
