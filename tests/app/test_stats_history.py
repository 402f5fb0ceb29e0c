"""`--stats` figures from the app's bounded timing history (no GL needed)."""
import re
from collections import deque
from types import SimpleNamespace

import numpy as np

from spaceship_sim.app.app import TIMING_HISTORY
from spaceship_sim.cli.fly import format_stats

TARGET = 0.020  # [s] a target the drawn frame times (4..30 ms) miss now and then


def app_after(frames: int, seed: int = 0) -> tuple[SimpleNamespace, np.ndarray, np.ndarray]:
    """An app-like object that recorded `frames` frames as App.frame does; returns it with every
    frame's frame time and render time [s] (what an unbounded history would have held)."""
    rng = np.random.default_rng(seed)
    frame, render = rng.uniform(0.004, 0.030, frames), rng.uniform(0.001, 0.004, frames)
    app = SimpleNamespace(frames_timed=frames, split_timing=False, first_frame_at=None, first_step_at=None,
                          compiled_at=None, world=SimpleNamespace(target_frame_time=TARGET),
                          **{k: deque(maxlen=TIMING_HISTORY) for k in
                             ("frame_times", "render_times", "scene_times", "loop_times", "on_target")})
    app.frame_times.extend(frame)
    app.on_target.extend(frame <= TARGET)  # FrameStats.overrun's complement
    app.render_times.extend(render)
    app.scene_times.extend(render)
    app.loop_times.extend(frame)
    return app, frame, render


def figures(text: str, line: str) -> tuple[float, float]:
    m = re.search(line + r": median ([\d.]+) ms, p99 ([\d.]+) ms", text)
    return float(m[1]), float(m[2])


def test_short_session_figures_are_those_of_every_frame_but_the_first_five():
    app, frame, render = app_after(300)
    text = format_stats(app, "llvmpipe", (640, 480), 6, empty=0.001)
    assert "300 frames (first 5 skipped)" in text
    median, p99 = figures(text, r"frame time \(sim \+ render\)")
    assert median == round(1e3 * np.median(frame[5:]), 2) and p99 == round(1e3 * np.percentile(frame[5:], 99), 2)
    assert f"sim {1e3 * np.median(frame[5:] - render[5:]):.2f} ms" in text


def test_long_session_keeps_a_bounded_history_and_reports_its_last_frames():
    n = 3 * TIMING_HISTORY
    app, frame, _ = app_after(n)
    assert len(app.frame_times) == TIMING_HISTORY
    text = format_stats(app, "llvmpipe", (640, 480), 6, empty=0.001)
    assert f"{n} frames (figures over the last {TIMING_HISTORY})" in text
    median, p99 = figures(text, r"loop time \(with events, flip\)")
    last = frame[-TIMING_HISTORY:]
    assert median == round(1e3 * np.median(last), 2) and p99 == round(1e3 * np.percentile(last, 99), 2)


def within_target(text: str) -> tuple[float, float]:
    m = re.search(r"frame time within target \(20\.00 ms\): ([\d.]+)% of frames \(median ([\d.]+) ms\)", text)
    return float(m[1]), float(m[2])


def test_share_of_frames_within_target_skips_the_warm_up_and_follows_the_history():
    app, frame, _ = app_after(300)
    share, median = within_target(format_stats(app, "llvmpipe", (640, 480), 6, empty=0.001))
    assert 0 < share < 100 and share == round(100 * np.mean(frame[5:] <= TARGET), 1)
    assert median == round(1e3 * np.median(frame[5:]), 2)
    app, frame, _ = app_after(3 * TIMING_HISTORY, seed=1)
    share, _ = within_target(format_stats(app, "llvmpipe", (640, 480), 6, empty=0.001))
    assert share == round(100 * np.mean(frame[-TIMING_HISTORY:] <= TARGET), 1)
