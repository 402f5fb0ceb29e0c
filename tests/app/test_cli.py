"""fly/demo command line (bad arguments: tests/cli/test_bad_input.py): the no-display message, registration without GL,
and end-to-end runs (headless EGL; a real window under Xvfb when xvfb-run exists)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .test_gl import gl_probe, gl_problem

REPO = Path(__file__).resolve().parents[2]


def cli(*args, env=None, timeout=300, prefix=()):
    return subprocess.run([*prefix, sys.executable, "-m", "spaceship_sim.cli.main", *args], capture_output=True,
                          text=True, cwd=REPO, env=env, timeout=timeout)


def test_registration_imports_no_gl():
    code = ("import sys, spaceship_sim.cli.main as c; c.build_parser(); "
            "bad = [m for m in ('pyglet', 'moderngl', 'imgui_bundle', 'OpenGL') if m in sys.modules]; "
            "assert not bad, bad")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr


def test_no_display_gives_one_clear_message():
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    r = cli("fly", "--frames", "2", env=env)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "no display" in lines[0] and "--headless" in lines[0], r.stderr


def test_headless_demo_writes_a_screenshot_and_prints_stats(tmp_path):
    if gl_problem():
        pytest.skip(gl_problem())
    shot = tmp_path / "demo.png"
    r = cli("demo", "--headless", "--frames", "8", "--size", "320x240", "--screenshot", str(shot), "--stats",
            "--broadphase", "brute_force")
    assert r.returncode == 0, r.stderr
    from PIL import Image
    assert Image.open(shot).size == (320, 240)
    assert "median" in r.stdout and "p99" in r.stdout and "first frame" in r.stdout
    assert "frame time within target (33.33 ms): " in r.stdout


@pytest.mark.skipif(shutil.which("xvfb-run") is None, reason="xvfb-run not installed (apt package xvfb)")
def test_window_under_xvfb(tmp_path):
    if gl_problem():
        pytest.skip(gl_problem())
    shot = tmp_path / "fly.png"
    r = cli("fly", "--frames", "5", "--size", "400x300", "--screenshot", str(shot), "--broadphase", "brute_force",
            prefix=("xvfb-run", "-a"))
    assert r.returncode == 0, r.stderr
    assert shot.exists()


def test_gl_older_than_3_3_gives_a_clear_message_with_the_renderer():
    if gl_problem():
        pytest.skip(gl_problem())
    if "Mesa" not in gl_probe()[1]:
        pytest.skip(f"needs Mesa to fake an old GL version, have {gl_probe()[1]}")
    env = dict(os.environ, MESA_GL_VERSION_OVERRIDE="3.0")  # Mesa then offers no 3.3 core context
    r = cli("fly", "--headless", "--frames", "1", env=env)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "OpenGL 3.3" in lines[0] and "renderer:" in lines[0], r.stderr
