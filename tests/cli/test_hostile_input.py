"""Hostile input: devices, FIFOs and oversized files as inputs, paths that cannot be written as
outputs, signals in the middle of a run, stale partial files, options that would do nothing.

Refusals run the real CLI as test_bad_input does (one stderr line naming the file and the field,
exit 2, the folder left as it was); what needs a FIFO, a symlink or a signal is set up here.
"""
from __future__ import annotations

import dataclasses
import gzip
import hashlib
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from test_bad_input import (CL, DEFAULT, FLY, LAMPS, REPLAY, RUN, Case, assert_refused_in_one_line, edit, flag, ply,
                            recording, run_case, snapshot)

from spaceship_sim import files
from spaceship_sim.cli.main import main

LONG = "n" * 300  # a file name over NAME_MAX
BOX = ply([(x, y, z) for x in (0, 1) for y in (0, 1) for z in (0, 1)],
          [(0, 2, 3), (0, 3, 1), (4, 5, 7), (4, 7, 6), (0, 1, 5), (0, 5, 4),
           (2, 6, 7), (2, 7, 3), (0, 4, 6), (0, 6, 2), (1, 3, 7), (1, 7, 5)])  # a closed unit cube, 12 triangles
NARROW = ("bench", "narrowphase", "--poses", "1")


def endless_line() -> bytes:
    """A small gzip file that decompresses to one line of 20 MB."""
    return gzip.compress(b"x" * 20_000_000)


CASES = [
    # ---- inputs that are not regular files, or too big
    Case("config-dev-zero", (*RUN, "--out", "{tmp}/out", "--config", "/dev/zero"), "/dev/zero", "",
         "is a character device, not a config file"),
    Case("check-config-dev-urandom", ("check-config", "/dev/urandom"), "/dev/urandom", "",
         "is a character device, not a config file"),
    Case("config-over-1-mb", ("check-config", "{tmp}/big.toml"), "{tmp}/big.toml", "",
         "1,000,007 bytes, over the 1 MB limit for a config file", files={"big.toml": "[sim]\n" + "#" * 1_000_000 + "\n"}),
    Case("config-nested-5000-deep", ("check-config", "{tmp}/deep.toml"), "{tmp}/deep.toml", "",
         "nested deeper than 8 levels", files={"deep.toml": "a = " + "[" * 5000 + "]" * 5000 + "\n"}),
    Case("config-nested-under-a-key", ("check-config", "{tmp}/deep.toml"), "{tmp}/deep.toml", "sim.x[0][0][0][0][0][0][0]",
         "nested deeper than 8 levels", files={"deep.toml": "[sim]\nx = " + "[" * 10 + "1" + "]" * 10 + "\n"}),
    Case("replay-dev-zero", ("run", "--out", "{tmp}/out", "--replay", "/dev/zero"), "/dev/zero", "",
         "is a character device, not a recording file"),
    Case("replay-endless-line", REPLAY, "{tmp}/r.gz", "line 1", "damaged: longer than 16,000,000 characters",
         files={"r.gz": endless_line}),
    Case("replay-nested-json", REPLAY, "{tmp}/r.gz", "line 1", "damaged: values nested too deeply",
         files={"r.gz": gzip.compress(b"[" * 100_000 + b"\n")}),
    Case("replay-render-1e300", REPLAY, "{tmp}/r.gz", "line 2: render", "expected a render time in 0..10 s",
         files={"r.gz": recording(edit(_1={"render": 1e300}))}),
    Case("replay-target-1e300", REPLAY, "{tmp}/r.gz", "line 2: events", "with knobs",
         files={"r.gz": recording(edit(_1={"events": [["set", {"target_frame_time": 1e300}]]}))}),
    Case("replay-max-level-huge", REPLAY, "{tmp}/r.gz", "line 2: events", "with knobs",
         files={"r.gz": recording(edit(_1={"events": [["set", {"max_level": 10**30}]]}))}),
    Case("mesh-dev-zero", ("build-trees", "/dev/zero", "--cache-dir", "{tmp}/c"), "/dev/zero", "",
         "is a character device, not a mesh file"),
    flag("narrowphase-model-dev-zero", (*NARROW, "--model", "/dev/zero"), "--model",
         "/dev/zero: is a character device, not a mesh file"),
    Case("mesh-over-triangle-limit", ("build-trees", "{tmp}/box.ply", "--cache-dir", "{tmp}/c"), "{tmp}/box.ply",
         "faces", "12 triangles, over the limit of 4: its sphere trees would take about 5 s to build",
         files={"box.ply": BOX}, env={"SPACESHIP_SIM_MAX_TRIANGLES": "4"}),
    Case("triangle-limit-garbage", ("build-trees", "{tmp}/box.ply", "--cache-dir", "{tmp}/c"), "environment",
         "SPACESHIP_SIM_MAX_TRIANGLES", "must be an integer in 1..1000000000, got 'many'",
         files={"box.ply": BOX}, env={"SPACESHIP_SIM_MAX_TRIANGLES": "many"}),
    # ---- output paths, checked before any work
    flag("run-out-name-too-long", (*RUN, "--out", "{tmp}/" + LONG), "--out", "is 300 bytes long, over the 255-byte"),
    flag("run-out-path-too-long", (*RUN, "--out", "{tmp}/" + "d/" * 2500), "--out", "over the 4095-byte limit"),
    flag("run-record-name-too-long", (*RUN, "--out", "{tmp}/o", "--record", "{tmp}/" + LONG + ".gz"), "--record",
         "is 303 bytes long"),
    flag("demo-screenshot-name-too-long", ("demo", "--headless", "--frames", "1", "--screenshot",
                                           "{tmp}/" + LONG + ".png"), "--screenshot", "is 304 bytes long"),
    flag("build-cache-dir-name-too-long", ("build-trees", "lamp", "--cache-dir", "{tmp}/" + LONG), "--cache-dir",
         "is 300 bytes long"),
    flag("build-cache-dir-is-a-file", ("build-trees", "lamp", "--cache-dir", "{tmp}/f"), "--cache-dir",
         "exists and is not a folder", files={"f": "keep me"}),
    flag("narrowphase-model-name-too-long", (*NARROW, "--model", "{tmp}/" + LONG + ".stl"), "--model",
         "cannot read (File name too long)"),
    flag("narrowphase-model-bare-name-too-long", (*NARROW, "--model", LONG), "--model", "unknown model"),
    flag("build-model-name-too-long", ("build-trees", LONG, "--cache-dir", "{tmp}/c"), "MESH", "unknown model"),
    flag("narrowphase-csv-in-proc", (*NARROW, "--csv", "/proc/x.csv"), "--csv", "cannot write in /proc"),
    flag("multibody-csv-in-proc", ("bench", "multibody", "--csv", "/proc/x.csv"), "--csv", "cannot write in /proc"),
    flag("hubbard-out-in-proc", ("bench", "hubbard", "--out", "/proc/h"), "--out", "cannot write in /proc"),
    flag("multibody-csv-not-csv", ("bench", "multibody", "--csv", "{tmp}/x.txt"), "--csv", "must name a .csv file"),
    # ---- every option acts or is refused
    flag("hubbard-scene-and-config", ("bench", "hubbard", "--scene", "heavy", "--config", LAMPS, "--frames", "2",
                                      "--out", "{tmp}/h"), "--scene", "cannot be combined with --config"),
    flag("fly-split-without-stats", (*FLY, "--split"), "--split", "acts only with --stats"),
    flag("fly-realtime-with-a-window", ("fly", "--config", DEFAULT, "--realtime"), "--realtime",
         "acts only with --headless"),
    flag("fly-pause-on-catch-not-swept", (*FLY, "--pause-on-catch"), "--pause-on-catch",
         "acts only with collision.swept = true"),
    flag("fly-boxes-without-asteroids", (*FLY, "--boxes"), "--boxes", "has none (asteroids.count = 0)"),
    flag("build-branching-with-octree", ("build-trees", "lamp", "--method", "octree", "--branching", "4",
                                         "--cache-dir", "{tmp}/c"), "--branching", "does nothing with --method octree"),
    flag("build-seed-with-ssv", ("build-trees", "lamp", "--method", "ssv", "--seed", "3", "--cache-dir", "{tmp}/c"),
         "--seed", "does nothing with --method ssv"),
    flag("demo-features-without-asteroids", ("demo", "--headless", "--frames", "1", "--features"), "--features",
         "has none (asteroids.count = 0)"),
]


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict:
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {c.id: pool.submit(run_case, c, tmp_path_factory.mktemp(c.id)) for c in CASES}
        return {k: f.result() for k, f in futures.items()}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_input_is_refused_in_one_line(case, results):
    assert_refused_in_one_line(case, results[case.id])


# ---------------------------------------------------------------- FIFOs and symlinks

def refused(argv, capsys) -> str:
    """The one stderr line of a refused in-process command (exit 2)."""
    assert main(argv) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize("what, command", [
    ("config", ("check-config", "{p}")), ("config", ("run", "--frames", "1", "--out", "{o}", "--config", "{p}")),
    ("recording", ("run", "--out", "{o}", "--replay", "{p}")), ("mesh", ("build-trees", "{p}"))])
def test_a_fifo_is_refused_without_blocking(tmp_path, capsys, what, command):
    fifo = tmp_path / "in.stl"
    os.mkfifo(fifo)
    argv = [a.replace("{p}", str(fifo)).replace("{o}", str(tmp_path / "o")) for a in command]
    assert refused(argv, capsys) == f"error: {fifo}: is a FIFO, not a {what} file"
    assert [p.name for p in tmp_path.iterdir()] == [fifo.name]


@pytest.mark.parametrize("target, says", [("nowhere", "is a symlink to nothing (nowhere does not exist)"),
                                          ("loop", "is a symlink that cannot be followed")])
@pytest.mark.parametrize("outputs", [("--out", "link"), ("--out", "o", "--record", "link")])
def test_a_dangling_or_looping_symlink_is_refused_before_the_run(tmp_path, capsys, monkeypatch, target, says,
                                                                 outputs):
    monkeypatch.chdir(tmp_path)
    os.symlink(target, "link")
    if target == "loop":
        os.symlink("link", "loop")
    line = refused(["run", "--config", DEFAULT, "--frames", "1", *outputs], capsys)
    assert line.startswith(f"error: {CL}: {outputs[-2]}: link {says}"), line
    assert not Path("o").exists()


def test_a_symlink_to_a_folder_is_an_output_folder(tmp_path):
    (tmp_path / "real").mkdir()
    os.symlink("real", tmp_path / "link")
    assert files.check_output(str(tmp_path / "link"), "folder") == tmp_path / "link"


# ---------------------------------------------------------------- the output check itself

def test_the_output_check_probes_by_writing_and_changes_nothing(tmp_path):
    (tmp_path / "old.csv").write_text("earlier results")
    before = snapshot(tmp_path)
    files.check_output(str(tmp_path / "old.csv"), "file", ".csv")
    files.check_output(str(tmp_path / "new" / "deeper"), "folder")
    assert snapshot(tmp_path) == before
    with pytest.raises(files.OutputPathError, match="cannot write in /proc"):
        files.check_output("/proc/results", "folder")  # os.access says yes to root here
    with pytest.raises(files.OutputPathError, match="cannot write in /sys"):
        files.check_output("/sys/x.png", "file", ".png")


# ---------------------------------------------------------------- stale partial files

def dead_pid() -> int:
    """The id of a process that has ended."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_the_output_check_sweeps_stale_partial_files_and_keeps_live_ones(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "frames.csv").write_text("earlier results")
    dead, old = dead_pid(), files.process_start() - 60
    stale = [out / f".partial-{dead}-abc", tmp_path / f".out.partial-{dead}-def", out / ".partial-xyz",
             tmp_path / f".r.gz.partial-{dead}-ghi"]
    stale[0].mkdir()
    (stale[0] / "frames.csv").write_text("half")
    for p in stale[1:]:
        p.write_text("half")
    live = [out / f".partial-{os.getppid()}-old", out / f".partial-{dead}-new", tmp_path / ".notes.partial"]
    for p in live:
        p.write_text("someone's")
    for p in stale + live[:1]:
        os.utime(p, (old, old))
    said = []
    files.check_output(str(out), "folder", notify=said.append)
    files.check_output(str(tmp_path / "r.gz"), "file", notify=said.append)
    assert sorted(said) == sorted(f"removed {p}: a partial output left by an interrupted run" for p in stale)
    assert not any(p.exists() for p in stale) and all(p.exists() for p in live)
    assert (out / "frames.csv").read_text() == "earlier results"


def test_partial_files_carry_the_writers_process_id():
    prefix = files.partial_prefix("r.gz")
    assert prefix == f".r.gz.partial-{os.getpid()}-" and files.PARTIAL.match(prefix + "x").group(1) == str(os.getpid())


# ---------------------------------------------------------------- signals

def wait_for(predicate, proc, what: str):
    """Poll until predicate() (no deadline on the machine's speed: the process ending first fails)."""
    while not predicate():
        assert proc.poll() is None, f"ended before {what}: {proc.communicate()[1][-2000:]}"
        time.sleep(0.2)


@pytest.mark.parametrize("signum, code, line", [(signal.SIGTERM, 143, "terminated"),
                                                (signal.SIGINT, 130, "interrupted")])
def test_a_signal_mid_run_removes_partial_files_and_keeps_earlier_outputs(tmp_path, signum, code, line):
    out = tmp_path / "out"
    out.mkdir()
    (out / "frames.csv").write_text("earlier results")
    (tmp_path / "r.gz").write_bytes(b"an earlier recording")
    proc = subprocess.Popen([sys.executable, "-m", "spaceship_sim", "run", "--config", DEFAULT, "--frames",
                             "10000000", "--out", str(out), "--record", str(tmp_path / "r.gz"), "--no-progress"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # (ignored in background jobs)
    try:
        def partial_rows() -> bool:  # frames are being written into the partial folder
            return any(p.stat().st_size > 0 for p in out.glob(".partial-*/frames.csv"))
        wait_for(partial_rows, proc, "writing frames")
        assert list(tmp_path.glob(".r.gz.partial-*"))
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=600)
    finally:
        proc.kill()
    assert proc.returncode == code and err.splitlines()[-1] == line, err[-3000:]
    assert "Traceback" not in err
    assert snapshot(tmp_path) == {"out": "dir", "out/frames.csv": sha(b"earlier results"),
                                  "r.gz": sha(b"an earlier recording")}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_signals_wait_while_finished_files_move_into_place():
    # Python's own SIGINT handler, whatever this process inherited (a shell's background job starts
    # with SIGINT ignored, and an ignored signal is rightly ignored after the block too)
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    moved = []
    try:
        with pytest.raises(KeyboardInterrupt):
            with files.uninterrupted():
                signal.raise_signal(signal.SIGINT)
                moved.append("all")  # the block ran to its end before the interrupt
        assert moved == ["all"]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        with files.uninterrupted():
            signal.raise_signal(signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # ignored before, ignored after
    finally:
        signal.signal(signal.SIGINT, inherited)


def test_an_interrupt_wrapped_by_compiled_code_is_found():
    try:
        try:
            raise files.Terminated()
        except KeyboardInterrupt as e:
            raise SystemError("returned a result with an exception set") from e
    except SystemError as wrapped:
        assert isinstance(files.interruption(wrapped), files.Terminated)
    assert files.interruption(ValueError("plain")) is None


# ---------------------------------------------------------------- a render longer than the frame

def test_a_render_not_below_the_target_warns_once(tmp_path, capsys):
    assert main(["run", "--config", DEFAULT, "--frames", "3", "--render-ms", "40", "--out", str(tmp_path / "o"),
                 "--no-progress"]) == 0
    warnings = [x for x in capsys.readouterr().err.splitlines() if x.startswith("warning:")]
    assert warnings == [f"warning: --render-ms 40 ms is not below the target frame time 33.3 ms "
                        f"(sim.target_frame_time of {DEFAULT}): no frame can be within target"]


def test_a_replay_accepts_the_render_times_and_targets_a_run_can_record():
    from spaceship_sim.cli.args import MAX_MS
    from spaceship_sim.config import SimConfig
    from spaceship_sim.sim.replay import MAX_RENDER_S, MAX_TARGET_S

    target = {f.name: f for f in dataclasses.fields(SimConfig)}["target_frame_time"].metadata["hi"]
    assert MAX_RENDER_S == MAX_MS / 1e3 and MAX_TARGET_S == target  # a replay accepts what a run can record
