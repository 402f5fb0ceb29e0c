"""Nothing corrupt is used: compiled kernels, tree caches and recordings carry checksums; a damaged
kernel is dropped and compiled again with one line, a crash in compiled code names clear-cache, an
altered tree is rebuilt (and `build-trees --verify` catches one that was sealed again), an altered
recording is refused and a replay stops at the first frame that differs; `demo --frames N` steps
N frames to the same hash every time."""
from __future__ import annotations

import dataclasses
import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from spaceship_sim.clock import TickClock
from spaceship_sim.config import config_from_dict
from spaceship_sim.kernel_cache import CACHE_ENV

REPO = Path(__file__).resolve().parents[1]
SORT = ("import numpy as np; from spaceship_sim.sorting import argsort_stable as f; "
        "print(f(np.array([3.0, 1.0, 2.0, 1.0])).tolist(), f._cache.cache_path)")


def python(code: str, cache: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, **{CACHE_ENV: str(cache)})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env,
                          timeout=timeout)


def cli(*args, cache: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    return python(f"import sys; from spaceship_sim.cli.main import main; sys.exit(main({list(args)!r}))", cache,
                  timeout)


# ---------------------------------------------------------------- compiled kernels

@pytest.fixture(scope="module")
def kernel_cache(tmp_path_factory) -> Path:
    """A cache root holding the compiled argsort kernel (compiled once, in a fresh process)."""
    root = tmp_path_factory.mktemp("kernels")
    r = python(SORT, root)
    assert r.returncode == 0, r.stderr
    return root


def _files(root: Path, suffix: str) -> list[Path]:
    return sorted(p for p in root.rglob(f"sorting.argsort_stable-*{suffix}"))


def test_kernels_cache_in_the_per_user_folder_not_beside_the_sources(kernel_cache):
    r = python(SORT, kernel_cache)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    out, where = r.stdout.rsplit("] ", 1)
    assert out + "]" == "[1, 3, 2, 0]"
    assert Path(where.strip()).is_relative_to(kernel_cache / "kernels")
    assert _files(kernel_cache, ".nbi") and _files(kernel_cache, ".nbc")


def _flip(p: Path, at: int) -> None:
    b = bytearray(p.read_bytes())
    b[at % len(b)] ^= 0xFF
    p.write_bytes(bytes(b))


@pytest.mark.parametrize("suffix, damage", [
    (".nbc", lambda p: p.write_bytes(p.read_bytes()[:100])),
    (".nbc", lambda p: _flip(p, -200)),            # inside the machine code: once a silent segfault
    (".nbc", lambda p: p.write_bytes(b"")),
    (".nbi", lambda p: p.write_bytes(p.read_bytes()[:30])),
    (".nbi", lambda p: _flip(p, 60)),
    (".nbc", lambda p: p.write_bytes(b"\x80\x04garbage that is not a sealed file")),
], ids=["data-cut", "data-flipped", "data-empty", "index-cut", "index-flipped", "data-foreign"])
def test_a_damaged_kernel_cache_is_dropped_and_compiled_again_with_one_line(kernel_cache, tmp_path, suffix, damage):
    root = tmp_path / "cache"
    shutil.copytree(kernel_cache, root)
    damage(_files(root, suffix)[0])
    r = python(SORT, root)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("[1, 3, 2, 0]")
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "damaged compiled-kernel cache" in lines[0] and "compiling this kernel again" in lines[0]
    again = python(SORT, root)  # healed: loads silently
    assert again.returncode == 0 and again.stderr == "" and again.stdout.startswith("[1, 3, 2, 0]")


def test_a_crash_in_compiled_code_prints_the_stack_and_names_clear_cache(kernel_cache):
    r = python("from spaceship_sim import fault_hint; fault_hint.install(); import ctypes; ctypes.string_at(0)",
               kernel_cache)
    assert r.returncode == -11
    assert "Fatal Python error: Segmentation fault" in r.stderr and "string_at" in r.stderr
    assert r.stderr.strip().splitlines()[-1] == "a damaged compiled-kernel cache can cause this: run " \
                                                "`spaceship-sim clear-cache`"


def _tree_file(folder: Path, name: str) -> Path:
    from spaceship_sim.spheretree.tree import write_npz_atomic

    path = folder / name
    write_npz_atomic(path, center=np.zeros((1, 3)), radius=np.ones(1))
    return path


def test_clear_cache_lists_then_clears_kernels_and_damaged_trees_then_all_trees(tmp_path, monkeypatch, capsys):
    from spaceship_sim.cli.main import main

    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "user"))
    old = tmp_path / "user" / "kernels" / "0.0.1-numba0.1-py30-x-y"
    old.mkdir(parents=True)
    (old / "f.nbi").write_bytes(b"x" * 1000)
    trees = tmp_path / "trees"
    trees.mkdir()
    sound = _tree_file(trees, "box-octree-0123456789ab.npz")
    damaged = _tree_file(trees, "box-medial-0123456789ab.npz")
    _flip(damaged, -300)
    other = trees / "notes.npz"
    other.write_bytes(b"not ours")
    assert main(["clear-cache", "--list", "--cache-dir", str(trees)]) == 0
    listed = capsys.readouterr().out
    assert str(old) in listed and "1 files" in listed and "trees " + str(trees) + ": 2 files" in listed
    assert f"{damaged.name}: unreadable" in listed or f"{damaged.name}: checksum mismatch" in listed
    assert old.exists() and damaged.exists()
    assert main(["clear-cache", "--cache-dir", str(trees)]) == 0
    cleared = capsys.readouterr().out
    assert not old.exists() and not damaged.exists() and sound.exists() and other.exists()
    assert f"removed {damaged.name}" in cleared and f"removed {sound.name}" not in cleared
    assert main(["clear-cache", "--trees", "--cache-dir", str(trees)]) == 0
    assert not sound.exists() and other.exists()
    assert main(["clear-cache", "--cache-dir", str(sound.parent / "notes.npz")]) == 2


# ---------------------------------------------------------------- tree caches

BOX_V = np.array([[x, y, z] for x in (-1.0, 1.0) for y in (-2.0, 2.0) for z in (-0.5, 0.5)])
BOX_F = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1], [2, 3, 7], [2, 7, 6],
                  [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])


def _box():
    from spaceship_sim.meshes import validate_mesh_arrays

    return validate_mesh_arrays(BOX_V, BOX_F, "box.ply")


def _ply(path: Path) -> Path:
    head = (f"ply\nformat ascii 1.0\nelement vertex {len(BOX_V)}\nproperty float x\nproperty float y\n"
            f"property float z\nelement face {len(BOX_F)}\nproperty list uchar int vertex_indices\nend_header\n")
    path.write_text(head + "".join(f"{x} {y} {z}\n" for x, y, z in BOX_V)
                    + "".join(f"3 {a} {b} {c}\n" for a, b, c in BOX_F))
    return path


def _altered(tree):
    """What the altered file held: radii halved and errors zeroed, under the same key."""
    return dataclasses.replace(tree, radius=tree.radius / 2, error=np.zeros_like(tree.error))


@pytest.mark.parametrize("how", ["resaved-without-checksum", "stale-checksum"])
def test_a_tree_cache_altered_under_its_key_is_rebuilt_not_used(tmp_path, how):
    from spaceship_sim.spheretree import load_or_build, tree_path

    mesh = _box()
    tree = load_or_build(mesh, method="octree", depth=2, cache_dir=tmp_path)
    path = tree_path(mesh, "octree", tree.key, tmp_path)
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["radius"], arrays["error"] = arrays["radius"] / 2, np.zeros_like(arrays["error"])
    if how == "resaved-without-checksum":
        arrays.pop("checksum")
    with open(path, "wb") as f:
        np.savez(f, **arrays)
    with pytest.warns(UserWarning, match="checksum"):
        again = load_or_build(mesh, method="octree", depth=2, cache_dir=tmp_path)
    assert np.array_equal(again.radius, tree.radius) and np.array_equal(again.error, tree.error)
    assert np.array_equal(load_or_build(mesh, method="octree", depth=2, cache_dir=tmp_path).radius, tree.radius)


def test_verify_finds_a_resealed_altered_tree_rebuilds_it_then_passes(tmp_path, kernel_cache):
    from spaceship_sim.spheretree import load_or_build, tree_path

    mesh_file = _ply(tmp_path / "box.ply")
    cache = tmp_path / "trees"
    args = ("build-trees", str(mesh_file), "--method", "octree", "--depth", "2", "--cache-dir", str(cache), "--verify")
    first = cli(*args, cache=kernel_cache)
    assert first.returncode == 0 and "box octree: verified" in first.stdout, first.stderr
    mesh = _box()
    tree = load_or_build(mesh, method="octree", depth=2, cache_dir=cache)
    _altered(tree).save(tree_path(mesh, "octree", tree.key, cache))  # sealed again: the checksum holds
    caught = cli(*args, cache=kernel_cache)
    assert caught.returncode == 1, caught.stderr
    verdict = [line for line in caught.stdout.splitlines() if line.startswith("box octree: FAILED")]
    assert len(verdict) == 1 and "uncovered" in verdict[0] and "errors are below" in verdict[0]
    assert "box octree: rebuilt" in caught.stdout
    healed = cli(*args, cache=kernel_cache)
    assert healed.returncode == 0 and "box octree: verified" in healed.stdout


def test_verify_reports_each_broken_promise():
    from spaceship_sim.spheretree import build_tree
    from spaceship_sim.spheretree.verify import verify_tree

    tree = build_tree(BOX_V, BOX_F, method="medial", depth=2)
    assert verify_tree(tree) == []
    assert any("errors are below" in p for p in verify_tree(dataclasses.replace(tree, error=tree.error * 0.5)))
    moved = tree.witness.copy()
    moved[3] += 0.3
    assert any("witness points lie off the surface" in p for p in verify_tree(dataclasses.replace(tree, witness=moved)))
    assert any("chain" in p or "uncovered" in p for p in verify_tree(_altered(tree)))
    short = dataclasses.replace(tree, leaf_tri_idx=tree.leaf_tri_idx[:-1], leaf_tri_ptr=np.minimum(
        tree.leaf_tri_ptr, len(tree.leaf_tri_idx) - 1))
    assert any("missing from its list" in p for p in verify_tree(short))


def test_verify_refuses_ssv_trees_with_one_line(tmp_path, kernel_cache):
    r = cli("build-trees", "lamp", "--method", "ssv", "--verify", "--cache-dir", str(tmp_path), cache=kernel_cache)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "--verify" in r.stderr


# ---------------------------------------------------------------- recordings

LAMPS = config_from_dict({"arena": {"size": 20.0}, "ships": {"count": 5, "models": ["lamp"], "user_model": "lamp",
                                                            "initial_speed": 6.0},
                          "sim": {"seed": 3}, "collision": {"time_critical": True}}, "five lamps")


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> tuple[Path, str]:
    from spaceship_sim.sim import frame_log
    from spaceship_sim.sim.runs import run_frames

    path = tmp_path_factory.mktemp("rec") / "lamps.rec.gz"
    _, world = run_frames(LAMPS, 30, 0.029, False, lambda w: frame_log.FrameLog(None, 30, 0, w.max_level),
                          progress=False, clock=TickClock(tick=1e-4), record=path)
    return path, world.state_hash()


def _records(path: Path) -> list[dict]:
    with gzip.open(path, "rt") as f:
        return [json.loads(t) for t in f]


def _write(path: Path, lines: list[str]) -> Path:
    with gzip.open(path, "wt") as f:
        f.writelines(lines)
    return path


def test_a_recording_with_one_clock_reading_changed_is_refused_with_exit_2(recording, tmp_path, capsys):
    from spaceship_sim.cli.main import main

    src, _ = recording
    text = gzip.open(src, "rt").read().splitlines(keepends=True)
    frame = json.loads(text[5])
    frame["clock"][0] += 1e-6
    text[5] = json.dumps(frame, separators=(",", ":")) + "\n"
    changed = _write(tmp_path / "changed.rec.gz", text)
    assert main(["run", "--replay", str(changed), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{changed}: end.checksum:" in err[0] and "altered" in err[0]
    assert not (tmp_path / "out" / "frames.csv").exists()


@pytest.mark.parametrize("frame", [0, 17, 29])
def test_a_replay_stops_at_the_first_frame_whose_state_differs_and_names_it(recording, tmp_path, frame):
    """A recording sealed again after its state digests were edited from `frame` on: the replay
    reaches another state there, whatever follows."""
    from spaceship_sim.sim.replay import ReplayError, Recording, replay, sealed_lines
    from spaceship_sim.sim import frame_log

    records = _records(recording[0])
    for r in records[1 + frame:-1]:
        r["digest"] = "f" * 16
    path = _write(tmp_path / "edited.rec.gz", sealed_lines(records))
    with pytest.raises(ReplayError) as e:
        replay(Recording(path), lambda w: frame_log.FrameLog(None, 30, 0, w.max_level), progress=False, notify=None)
    assert e.value.key == f"frame {frame}: digest" and "first frame whose state differs" in e.value.problem


def test_every_frame_of_a_recording_carries_its_state_digest(recording):
    from spaceship_sim.sim.replay import DIGEST_CHARS, Recording

    path, state = recording
    rec = Recording(path)
    frames = list(rec.frames())
    assert len(frames) == 30 and all(len(f["digest"]) == DIGEST_CHARS for f in frames)
    assert frames[-1]["digest"] == state[:DIGEST_CHARS] == rec.end["state_hash"][:DIGEST_CHARS]
    assert len({f["digest"] for f in frames}) == 30  # the ships move: every frame's state is its own


def test_a_recording_without_its_checksum_is_refused(recording, tmp_path):
    from spaceship_sim.sim.replay import ReplayError, Recording

    records = _records(recording[0])
    del records[-1]["end"]["checksum"]
    path = _write(tmp_path / "unsealed.rec.gz", [json.dumps(r, separators=(",", ":")) + "\n" for r in records])
    with pytest.raises(ReplayError) as e:
        Recording(path)
    assert e.value.key == "end.checksum" and "missing" in e.value.problem


# ---------------------------------------------------------------- demo

def _egl() -> str | None:
    probe = "import moderngl; moderngl.create_context(standalone=True, backend='egl')"
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    return None if r.returncode == 0 else "no headless EGL context: " + (r.stderr.strip().splitlines() or ["?"])[-1]


def test_headless_demo_steps_exactly_n_frames_to_the_same_hash_every_time(tmp_path):
    """The simulation waits for the kernels (compiled in the background): every counted frame runs
    on them, and two runs end in the same state."""
    from spaceship_sim.sim.replay import Recording

    if _egl():
        pytest.skip(_egl())
    hashes = []
    for i in range(2):
        rec = tmp_path / f"demo{i}.rec.gz"
        r = subprocess.run([sys.executable, "-m", "spaceship_sim", "demo", "--headless", "--frames", "12", "--size",
                            "160x120", "--record", str(rec)], capture_output=True, text=True, cwd=REPO, timeout=600)
        assert r.returncode == 0, r.stderr
        said = [line for line in r.stdout.splitlines() if line.startswith("demo: ")]
        assert len(said) == 1 and said[0].startswith("demo: 12 frames stepped; state hash ")
        frames = list(Recording(rec).frames())
        assert len(frames) == 12 and all(f["compiled"] for f in frames)
        hashes.append(said[0].rsplit(" ", 1)[1])
    assert hashes[0] == hashes[1]
