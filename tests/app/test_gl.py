"""App tests that need OpenGL: each scenario runs in its own process (headless EGL allows one
GL window per process). Skipped only when no OpenGL at all is available."""
from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@lru_cache(maxsize=1)
def gl_probe() -> tuple[str | None, str]:
    """(None, GL_VERSION string) when a headless EGL context can be made, else (why not, "")."""
    probe = ("import moderngl; ctx = moderngl.create_context(standalone=True, backend='egl'); "
             "print(ctx.info['GL_VERSION'], ctx.info['GL_RENDERER'])")
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        why = (r.stderr.strip().splitlines() or ["?"])[-1]
        return "no OpenGL: a headless EGL context could not be created: " + why, ""
    return None, r.stdout.strip()


def gl_problem() -> str | None:
    return gl_probe()[0]


def scenario(name: str, *args: str, prefix=()) -> dict:
    problem = gl_problem()
    if problem:
        pytest.skip(problem)
    r = subprocess.run([*prefix, sys.executable, str(HERE / "gl_scenarios.py"), name, *args], capture_output=True,
                       text=True, timeout=300, cwd=HERE.parents[1])
    assert r.returncode == 0, f"scenario {name} failed:\n{r.stderr[-4000:]}"
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_screenshot_shows_ships_at_projected_positions_and_overlay():
    out = scenario("screenshot")
    visible = out["ships"]
    assert len(visible) >= 2, f"expected several ships in view, got {visible}"
    for ship in visible:  # stars are sparse single pixels: a ship fills its neighbourhood
        assert ship["non_background"] > 0.2, ship
        assert ship["control"] is None or ship["control"] < 0.1, ship  # and empty space is empty
    assert sum(s["control"] is not None for s in visible) >= 1
    assert out["background_share"] > 0.5  # mostly empty space: the checks above mean something
    # the overlay's timing panel is drawn there: its title bar is opaque, its body (transparent
    # by default) has text and plot lines; nothing is drawn over the middle of the scene
    assert out["timing_title_changed"] > 0.9
    assert out["timing_panel_changed"] > 0.05
    assert out["centre_changed"] < 0.01


def test_key_presses_change_controls_then_velocity():
    out = scenario("keys")
    assert out["before"]["thrust"] == 0.0
    assert out["pressed"]["keys"] == ["thrust_forward"]
    assert out["pressed"]["thrust"] > 0.0
    assert out["held"]["nose_speed"] > out["pressed"]["nose_speed"] + 1.0
    assert out["released"]["keys"] == [] and out["released"]["thrust"] == 0.0
    assert out["paused_frames"] == 0 and out["stepped_frames"] == 1
    k = out["max_level"]
    assert out["tree_levels"] == [*range(k), None]  # T cycles none -> 0 .. k-1 (sphere levels) -> none
    assert out["camera"] == "orbit"
    assert out["applied"] == {"min_level": 2, "target": pytest.approx(1 / 60)}  # controls reach the world
    assert out["closed"]  # Escape closes the window


def test_overlay_model_matches_frame_stats_of_a_real_run():
    out = scenario("overlay")
    s, m = out["stats"], out["model"]
    assert m["frame"] == s["frame"] and m["n_history"] == 10
    assert m["frames_run"] == out["world_frame"] == 10  # the counter shows the frames run
    assert m["series_last"]["frame"] == pytest.approx(1e3 * s["frame_time"])
    assert m["series_last"]["detection"] == pytest.approx(1e3 * s["t_narrow"])
    assert m["series_last"]["response"] == pytest.approx(1e3 * s["t_response"])
    assert m["series_last"]["render"] == pytest.approx(1e3 * s["render_actual"])
    assert m["series_last"]["slack"] == pytest.approx(1e3 * s["slack"])
    assert s["render_actual"] > 0 and s["frame_time"] == pytest.approx(
        s["t_controls"] + s["t_integrate"] + s["t_broad"] + s["t_narrow"] + s["t_response"] + s["t_other"]
        + s["render_actual"])
    assert m["target_ms"] == pytest.approx(1e3 * s["target"])
    assert m["budget_ms"] == pytest.approx(1e3 * s["budget"])
    assert m["render_predicted_ms"] == pytest.approx(1e3 * s["render_predicted"])
    assert m["level_hist"] == list(s["level_hist"])
    assert m["n_pairs"] == out["narrow_colliding"]
    assert not math.isnan(m["render_actual_ms"])
    within, bound = m["accuracy_lines"]  # the overlay's accuracy lines, from the running counts
    assert within.startswith(f"frames within target {m['frames_within']}/10 (")
    assert bound.startswith("median separation bound ") and (m["verdicts"] > 0) == bound.endswith(" radius")


def test_ships_fly_while_kernels_compile_then_switch_to_compiled_stages():
    out = scenario("warming")
    during, after = out["during"], out["after"]
    assert not during["ready"] and "compiling" in during["status"] and "bounding spheres" in during["status"]
    assert during["frame"] == 3 and not during["compiled"] and during["integrator"] == "numpy"
    assert during["drawn"] > 0.01, "ships, stars and overlay are drawn from the first frame"
    assert after["ready"] and after["frame"] == 6 and after["status"] == ""
    assert after["compiled"] and after["integrator"] == "numba"


def test_colliding_spheres_show_in_their_level_colour_over_the_hull_and_the_table_lists_each_pair():
    out = scenario("collision")
    assert out["colliding"] >= 1 and 1 <= out["level"] <= 2  # capped at level 2: spheres are the answer
    towards = out["towards"]
    # sphere centres over the hull, in view: the witness pair's two at least (the depth-first search
    # tests siblings lazily, narrowphase/kernels.py: the witness is the colliding pair it reports)
    assert len(towards) >= 2, out
    # drawn over the hull (seen through it), tinted a good way towards the level's colour
    assert min(towards) > 0.15 and sorted(towards)[len(towards) // 2] > 0.35, towards
    assert out["hull_pixels_outside_spheres"] > 1000 and out["change_outside_spheres"] < 1.0  # only there
    assert out["rows_drawn"] == out["colliding"] == out["model_pairs"]
    assert out["clicks"] == [[[1, 2], "action"], [None, "chase"]]  # a row click follows the pair, again lets go
    disc = out["impostor"]  # a sphere off the view axis: exactly the pixels whose rays hit it (smooth, no facets)
    assert disc["ray_cast"] > 5000 and disc["both"] >= 0.995 * disc["ray_cast"], disc
    assert disc["drawn"] - disc["both"] <= 0.005 * disc["ray_cast"], disc
    far = out["far_ship"]  # a ship too far to make out still outshines every star
    assert far["ship_peak"] > far["star_peak"] + 40, far


def test_asteroids_drawn_with_their_boxes_and_closest_feature_segments_on_request():
    out = scenario("asteroids")
    assert out["asteroids_in_view"] > 100 and out["centres_drawn"] > 0.95, out  # instanced hulls at their poses
    boxes, features = out["boxes"], out["features"]
    assert boxes["changed"] > 5000 and boxes["near_geometry"] > 0.99, boxes  # key B: box edges, nowhere else
    assert out["separated_pairs"] >= 1 and features["changed"] > 20, out  # key L: closest-feature segments...
    assert features["near_geometry"] > 0.99, features                   # ...between the closest points
    assert features["mean_rgb"][1] > 200 and features["mean_rgb"][0] < 120, features  # in the feature colour


def test_tunnel_catch_pauses_the_app_and_is_drawn_and_named():
    out = scenario("tunnel")
    assert out["paused_at"] == 11 and out["caught"] == 1 and out["pairs"] == [[1, 2]]  # the catch of frame 10
    assert out["start_x"] < 32.4 < 34.5 < out["end_x"]  # the fighter's sample straddles the tower
    assert out["fighter_x"] == out["start_x"]  # put back at the sample's start
    assert out["text"].startswith("swept-space hit at frame 10: ships 1-2") and "44.0 m" in out["text"]
    assert out["panel_text_pixels"] > 100 and out["panel_text_pixels_before"] == 0  # the line in the panel
    # the catch's lines change pixels where they project, and only there
    assert out["changed"] > 1000 and out["near_geometry"] > 0.99 and out["geometry_changed"] > 0.2, out


@pytest.mark.skipif(shutil.which("xvfb-run") is None or shutil.which("xdotool") is None,
                    reason="needs xvfb-run and xdotool (apt packages xvfb, xdotool)")
def test_window_keys_and_resize_sent_through_the_x_server(tmp_path):
    out = scenario("window", str(tmp_path), prefix=("xvfb-run", "-a", "-s", "-screen 0 1280x720x24"))
    assert out["title"].startswith("spaceship-sim fly: ") and "ms/frame" in out["title"], out["title"]
    assert out["overlay_before"] > 0.9  # semi-transparent panels change every pixel they cover
    assert out["f1_hid"] and out["overlay_hidden"] == 0.0  # F1: the overlay's pixels are gone
    assert out["f1_showed"]
    shot = out["screenshot"]  # F12: a timestamped PNG of the window with its overlay
    assert out["f12_wrote"] and shot["name"].startswith("spaceship-sim-") and shot["name"].endswith(".png")
    assert (tmp_path / shot["name"]).exists() and shot["size"] == [960, 540] and shot["title_bar_of_keys_panel"] > 0.9
    assert out["resized"]  # xdotool windowsize: rendered at 800x600, panels placed for that size
    after = out["after_resize"]
    assert after["image"] == [600, 800, 3] and after["aspect"] == pytest.approx(800 / 600)
    assert after["overlay"] > 0.9 and after["title_bar_of_keys_panel"] > 0.9
    assert out["f11_fullscreen"] and out["f1_in_fullscreen"]  # F11: the screen's size, keys still arrive
    assert out["f11_back"] and out["size_after_f11"] == [800, 600]
