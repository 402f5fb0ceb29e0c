"""GL scenarios run in their own process (headless pyglet gets one GL window per process).

`python tests/app/gl_scenarios.py NAME` runs one scenario and prints its findings as one JSON
line on stdout; tests/app/test_gl.py makes the assertions. Needs an EGL-capable GL (Mesa).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
SIZE = (1280, 720)


def make_app(mode: str = "fly", ships: int = 6, warm_up=None, headless: bool = True, size=SIZE):
    """warm_up: run in the app's background thread before World.warm_up (holds compiling back).
    headless=False: a real window (run under Xvfb)."""
    import dataclasses

    from spaceship_sim.app.app import App, open_window
    from spaceship_sim.config import load_config
    from spaceship_sim.sim.world import World

    cfg = load_config(REPO / "configs" / ("default.toml" if mode == "fly" else "demo.toml"))
    # brute-force broad phase: same app behaviour, far fewer numba kernels to compile on a cold cache
    cfg = dataclasses.replace(cfg, ships=dataclasses.replace(cfg.ships, count=ships),
                              collision=dataclasses.replace(cfg.collision, broadphase="brute_force"))
    world = World.from_config(cfg, user="keyboard" if mode == "fly" else "autopilot", warm=warm_up is None)
    window, ctx = open_window(size, headless=headless, caption="test")
    if warm_up is not None:
        compile_kernels = world.warm_up
        world.warm_up = lambda: (warm_up(), compile_kernels(notify=None))
    return App(window, ctx, world, mode=mode, pace=False, warm_in_background=warm_up is not None)


def screenshot() -> dict:
    """Ships at their projected positions, overlay present: per ship, the share of pixels
    around its projected centre that differ from the background; per region, the share of
    pixels the overlay changed (compared with the same frame rendered without overlay)."""
    app = make_app("fly")
    from spaceship_sim.app.overlay_model import panel_rects
    from spaceship_sim.app.renderer import BACKGROUND

    app.camera.home = app.camera.mode = "orbit"  # see every ship, not only the one ahead
    app.camera.distance = 140.0
    for _ in range(3):
        app.frame()
    full = app.snapshot()
    state = app.world.state
    app.renderer.render(app.ctx.screen, SIZE, state, app.camera, app.world.last_narrow, app.options)
    scene = app.snapshot()
    px, front = project_ships(app)
    bg = np.round(np.array(BACKGROUND) * 255)
    radii = np.array([projected_radius(app, i) for i in range(state.n)])

    def share(x, y, half):  # share of non-background pixels in a square around (x, y)
        patch = scene[int(y) - half:int(y) + half + 1, int(x) - half:int(x) + half + 1]
        return float(np.mean(np.any(np.abs(patch - bg) > 12, axis=2)))

    def usable(x, y, half):
        return half <= x < SIZE[0] - half and half <= y < SIZE[1] - half and not under_panel(x, y)

    ships = []
    for i in range(state.n):
        x, y = px[i]
        half = max(2, int(radii[i] * 0.25))
        if not front[i] or not usable(x, y, half):
            continue
        # control: a same-sized patch 3 radii away, clear of every ship's disc, should be empty
        control = None
        for angle in np.linspace(0, 2 * np.pi, 12, endpoint=False):
            cx, cy = x + 3 * radii[i] * np.cos(angle), y + 3 * radii[i] * np.sin(angle)
            clear = np.all(np.hypot(px[:, 0] - cx, px[:, 1] - cy) > 1.5 * radii + half + 2)
            if clear and usable(cx, cy, half):
                control = share(cx, cy, half)
                break
        ships.append({"ship": i, "x": float(x), "y": float(y), "radius_px": float(radii[i]),
                      "non_background": share(x, y, half), "control": control})
    x0, y0, w, h = panel_rects(*SIZE)["Frame timing"]
    changed = np.any(full != scene, axis=2)
    return {"ships": ships,
            "timing_panel_changed": float(changed[y0:y0 + h, x0:x0 + w].mean()),
            "timing_title_changed": float(changed[y0 + 2:y0 + 16, x0 + 2:x0 + w - 2].mean()),
            "centre_changed": float(changed[SIZE[1] // 2 - 40:SIZE[1] // 2 + 40,
                                            SIZE[0] // 2 - 40:SIZE[0] // 2 + 40].mean()),
            "background_share": float(np.mean(np.all(np.abs(scene - bg) <= 12, axis=2)))}


def project_ships(app):
    from spaceship_sim.app.camera import project
    return project(app.world.state.pos, app.view_proj, *SIZE)


def projected_radius(app, i: int) -> float:
    """Approximate on-screen radius [px] of ship i's bounding sphere."""
    eye = np.asarray(app.camera.eye)
    d = np.linalg.norm(app.world.state.pos[i] - eye)
    f = SIZE[1] / 2 / np.tan(np.radians(app.camera.fovy) / 2)
    return float(app.world.state.radius[i] * f / max(d, 1e-6))


def under_panel(x: float, y: float) -> bool:
    """Is the pixel under one of the overlay's panels (placed as overlay.py places them)?"""
    from spaceship_sim.app.overlay_model import panel_rects
    return any(rx <= x <= rx + rw and ry <= y <= ry + rh for rx, ry, rw, rh in panel_rects(*SIZE).values())


def keys() -> dict:
    """Inject W (thrust forward) for 20 frames: controls, then velocity along the nose."""
    app = make_app("fly")  # first: it sets up headless pyglet before pyglet.window is imported
    from pyglet.window import key

    from spaceship_sim.state import quat_to_matrix

    win, world = app.window, app.world
    app.frame()
    nose = lambda: float(world.state.vel[0] @ quat_to_matrix(world.state.quat[0])[:, 0])  # noqa: E731
    before = {"thrust": float(world.state.thrust[0]), "nose_speed": nose()}
    win.dispatch_event("on_key_press", key.W, 0)
    app.frame()
    pressed = {"keys": sorted(world.keys), "thrust": float(world.state.thrust[0]), "nose_speed": nose()}
    for _ in range(20):
        app.frame()
    held = {"thrust": float(world.state.thrust[0]), "nose_speed": nose()}
    win.dispatch_event("on_key_release", key.W, 0)
    app.frame()
    released = {"keys": sorted(world.keys), "thrust": float(world.state.thrust[0])}
    frame = world.frame
    win.dispatch_event("on_key_press", key.P, 0)   # pause: the world stops
    app.frame()
    app.frame()
    paused_frames = world.frame - frame
    win.dispatch_event("on_key_press", key.N, 0)   # single step
    app.frame()
    stepped_frames = world.frame - frame - paused_frames
    levels = []
    for _ in range(world.max_level + 1):
        win.dispatch_event("on_key_press", key.T, 0)
        app.frame()
        levels.append(app.options.tree_level)
    win.dispatch_event("on_key_press", key.C, 0)
    app.frame()
    camera = app.camera.mode
    app.controls.min_level, app.controls.target_fps = 2, 60.0  # as the controls panel would
    app.frame()
    applied = {"min_level": world.narrow.min_level, "target": world.target_frame_time}
    win.dispatch_event("on_key_press", key.ESCAPE, 0)
    app.window.dispatch_events()
    return {"before": before, "pressed": pressed, "held": held, "released": released,
            "paused_frames": paused_frames, "stepped_frames": stepped_frames, "tree_levels": levels,
            "max_level": world.max_level, "camera": camera, "applied": applied,
            "closed": bool(app.window.has_exit)}


def overlay() -> dict:
    """The overlay model after real frames, next to the world's last FrameStats."""
    from dataclasses import asdict

    app = make_app("demo", ships=10)
    for _ in range(10):
        app.frame()
    s = app.world.last_stats
    m = app.model
    narrow = app.world.last_narrow
    # the scalar figures (the per-verdict and per-pair arrays are not the overlay's)
    return {"stats": {k: v for k, v in asdict(s).items() if k != "extra" and not isinstance(v, np.ndarray)},
            "model": {"frame": m.frame, "series_last": {k: v[-1] for k, v in m.series.items()},
                      "target_ms": m.target_ms, "budget_ms": m.budget_ms,
                      "render_predicted_ms": m.render_predicted_ms, "render_actual_ms": m.render_actual_ms,
                      "level_hist": m.level_hist, "n_pairs": len(m.pairs),
                      "n_history": len(m.frames), "frames_run": m.frames_run,
                      "frames_within": m.frames_within, "verdicts": m.accuracy.verdicts,
                      "accuracy_lines": m.accuracy_lines()},
            "world_frame": app.world.frame,
            "narrow_colliding": int(np.sum(narrow.colliding)) if narrow is not None else 0}


def warming() -> dict:
    """While the kernels compile in the background the window shows the scene and says so, and
    the world steps on its numpy stages (bounding spheres only); once they are ready it switches
    to the compiled ones."""
    import threading

    from spaceship_sim.app.renderer import BACKGROUND

    release = threading.Event()
    app = make_app("fly", warm_up=lambda: release.wait(60))
    for _ in range(3):
        app.frame()
    image = app.snapshot()
    bg = np.round(np.array(BACKGROUND) * 255)
    during = {"frame": app.world.frame, "status": app.model.status, "ready": app.ready(),
              "compiled": app.world.compiled, "integrator": app.world.integrator.backend,
              "drawn": float(np.mean(np.any(np.abs(image - bg) > 12, axis=2)))}
    release.set()
    app.warming.join()  # however long compiling takes on this machine
    for _ in range(3):
        app.frame()
    return {"during": during, "after": {"frame": app.world.frame, "status": app.model.status,
                                       "ready": app.ready(), "compiled": app.world.compiled,
                                       "integrator": app.world.integrator.backend}}


def collision() -> dict:
    """Two ships placed through each other (the others far away), one frame stepped, then
    paused: per colliding sphere whose centre shows over the hull, how far its pixels moved
    towards the level colour (0: not at all, 1: all the way) when the collision story is drawn;
    the pair table's rows; clicking a row makes the camera follow that pair."""
    app = make_app("fly", ships=6)
    from pyglet.window import mouse

    from spaceship_sim.app.camera import project
    from spaceship_sim.app.geometry import level_color

    state = app.world.state
    state.pos[:] = [[0, 0, 0], [0, 0, 0], [0.3 * state.radius[1], 0, 0], [400, 0, 0], [0, 400, 0], [0, 0, 400]]
    state.pos[0] = [-150, -150, 0]
    state.vel[:] = 0.0
    app.controls.follow_pair = (1, 2)  # as a click in the table would: the action camera on that pair
    app.controls.max_level = 2  # as the controls panel would: spheres, not triangles, are the deepest answer
    app.frame()
    narrow = app.world.last_narrow
    app.command("pause")
    for _ in range(30):  # the camera settles on the pair
        app.frame()
    hit = np.flatnonzero(narrow.colliding)
    level = int(narrow.level[hit[0]])
    exact_level = app.world.max_level
    colour = 255 * np.array(level_color(level, exact_level))
    with_story = app.snapshot()
    dump("collision.png", with_story)
    app.options.show_hits = False
    app.renderer.render(app.ctx.screen, SIZE, state, app.camera, narrow, app.options)
    hull = app.snapshot()
    from spaceship_sim.app.geometry import hit_geometry
    from spaceship_sim.state import quat_to_matrix

    hits = hit_geometry(state, quat_to_matrix(state.quat), app.world.trees, app.world.models, narrow)
    px, front = project(hits.spheres[:, :3], app.view_proj, *SIZE)
    bg = np.round(np.array(BACKGROUND_RGB()) * 255)
    towards = []
    for (x, y), ok in zip(px, front):
        x, y = int(round(x)), int(round(y))
        if not (ok and 0 <= x < SIZE[0] and 0 <= y < SIZE[1]) or under_panel(x, y):
            continue
        under = hull[y, x].astype(float)
        if np.all(np.abs(under - bg) <= 12):  # not over the hull
            continue
        step = colour - under
        towards.append(float((with_story[y, x] - under) @ step / max(step @ step, 1e-9)))
    # control: hull pixels outside every sphere's disc are left as they were
    right = app.camera.view()[0, :3]
    edge, _ = project(hits.spheres[:, :3] + hits.spheres[:, 3:] * right, app.view_proj, *SIZE)
    radius_px = np.linalg.norm(edge - px, axis=1)
    ys, xs = np.nonzero(np.any(np.abs(hull - bg) > 12, axis=2))
    clear = np.all(np.hypot(xs[:, None] - px[:, 0], ys[:, None] - px[:, 1]) > radius_px + 3, axis=1)
    clear &= ~np.array([under_panel(x, y) for x, y in zip(xs, ys)])
    outside = float(np.abs(with_story[ys[clear], xs[clear]].astype(float) - hull[ys[clear], xs[clear]]).mean())
    far_ship = _far_ship_against_stars(app)
    impostor = _impostor_against_ray_casting(app)
    # click the pair's row: follow it; click again: let go
    app.controls.follow_pair = None
    app.frame()
    rows_drawn = app.overlay.rows_drawn
    x0, y0, x1, y1 = app.overlay.row_rects[(1, 2)]
    clicks = []
    for _ in range(2):
        x, y = (x0 + x1) / 2, SIZE[1] - (y0 + y1) / 2  # pyglet counts y from the bottom
        app.window.dispatch_event("on_mouse_motion", x, y, 0, 0)
        app.frame()
        app.window.dispatch_event("on_mouse_press", x, y, mouse.LEFT, 0)
        app.frame()
        app.window.dispatch_event("on_mouse_release", x, y, mouse.LEFT, 0)
        app.frame()
        app.frame()  # the app applies the click before the next frame's camera update
        clicks.append([app.controls.follow_pair, app.camera.mode])
    return {"level": level, "exact_level": exact_level, "colliding": len(hit), "towards": towards,
            "rows_drawn": rows_drawn, "model_pairs": len(app.model.pairs), "clicks": clicks,
            "hull_share": float(np.mean(np.any(np.abs(hull - bg) > 12, axis=2))),
            "hull_pixels_outside_spheres": int(clear.sum()), "change_outside_spheres": outside,
            "far_ship": far_ship, "impostor": impostor}


def _impostor_against_ray_casting(app) -> dict:
    """One sphere off the view axis drawn by the renderer's impostor, against the pixels whose
    centre ray hits that sphere (numpy ray casting): the drawn disc should be that set."""
    import moderngl

    view, proj = app.camera.view(), app.camera.projection(SIZE[0] / SIZE[1])
    centre_view = np.array([9.0, 5.0, -30.0])  # off-axis: the silhouette is an ellipse, not a circle
    radius = 4.0
    centre = np.linalg.inv(view) @ np.r_[centre_view, 1.0]
    r = app.renderer
    r.render(app.ctx.screen, SIZE, app.world.state, app.camera, None, app.options)  # sets the uniforms
    app.ctx.screen.clear(0.0, 0.0, 0.0, 1.0)
    app.ctx.enable_only(moderngl.NOTHING)
    r.sphere.render(np.array([[*centre[:3], radius, 1.0, 1.0, 1.0, 1.0]]))
    drawn = np.any(app.snapshot() > 0, axis=2)
    ys, xs = np.mgrid[0:SIZE[1], 0:SIZE[0]]
    ones = np.ones_like(xs, float)
    ndc = np.stack([(xs + 0.5) / SIZE[0] * 2 - 1, 1 - (ys + 0.5) / SIZE[1] * 2, ones, ones], -1)
    far = ndc @ np.linalg.inv(proj).T
    rays = far[..., :3] / far[..., 3:]  # view-space points on the far plane: the eye is at the origin
    rays /= np.linalg.norm(rays, axis=-1, keepdims=True)
    b = rays @ centre_view
    hit = b * b - centre_view @ centre_view + radius ** 2 >= 0
    return {"drawn": int(drawn.sum()), "ray_cast": int(hit.sum()), "both": int((drawn & hit).sum())}


def _far_ship_against_stars(app) -> dict:
    """The smallest of ships 3-5 put 1.5 km ahead of the camera (a pixel or two): the brightest
    pixel around its projected centre, and the brightest star pixel anywhere (stars alone)."""
    from spaceship_sim.app.camera import project

    state = app.world.state
    eye, target = np.asarray(app.camera.eye), np.asarray(app.camera.target)
    k = 3 + int(np.argmin(state.radius[3:6]))
    state.pos[k] = eye + 1500.0 * (target - eye) / np.linalg.norm(target - eye)
    view_proj, _ = app.renderer.render(app.ctx.screen, SIZE, state, app.camera, None, app.options)
    image = app.snapshot()
    ((x, y),), _ = project(state.pos[k:k + 1], view_proj, *SIZE)
    x, y = int(round(x)), int(round(y))
    saved = state.pos.copy()
    state.pos[:] = eye - 1e6 * (target - eye) / np.linalg.norm(target - eye)  # all behind: the sky alone
    app.renderer.render(app.ctx.screen, SIZE, state, app.camera, None, app.options)
    sky = app.snapshot()
    state.pos[:] = saved
    return {"ship_peak": int(image[y - 2:y + 3, x - 2:x + 3].max()), "star_peak": int(sky.max()),
            "ship_px": [x, y], "radius": float(state.radius[k])}


def window() -> dict:
    """A real window under Xvfb, keys and resizes sent through the X server (xdotool): F1 hides
    and shows the overlay, F12 writes a PNG into the folder named by argv[2], a resize to 800x600
    renders at that size with the panels moved along, F11 toggles fullscreen; the title (read
    back from the X server) shows frame time and mode."""
    import os
    import subprocess
    import time

    from spaceship_sim.app.overlay_model import panel_rects

    app = make_app("fly", headless=False, size=(960, 540))
    os.chdir(sys.argv[2])

    def wid() -> str:
        return str(app.window._window)  # the X window id (fullscreen makes a new window)

    def xdo(*args) -> str:
        r = subprocess.run(["xdotool", *args], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, f"xdotool {args}: {r.stderr}"
        return r.stdout

    def show():
        """One frame; the image it drew (read before the flip)."""
        app.frame()
        image = app.snapshot()
        app.window.flip()
        return image

    def until(done, limit_s: float = 60.0) -> bool:
        """Frames until `done()`: X events arrive asynchronously (the wait is for delivery only)."""
        start = time.perf_counter()
        while not done() and time.perf_counter() - start < limit_s:
            show()
        return bool(done())

    def press(key: str, done) -> bool:
        xdo("windowfocus", "--sync", wid(), "key", key)
        return until(done)

    def overlay_share(image) -> float:
        """Share of the panels' pixels that differ from the scene rendered alone."""
        size = app.window.get_framebuffer_size()
        app.renderer.render(app.ctx.screen, size, app.world.state, app.camera, app.world.last_narrow, app.options)
        scene = app.snapshot()
        changed = np.any(image != scene, axis=2)
        return float(np.mean([changed[y:y + h, x:x + w].mean() for x, y, w, h in panel_rects(*size).values()]))

    for _ in range(3):
        show()
    out = {"overlay_before": overlay_share(show())}
    out["title"] = xdo("getwindowname", wid()).strip()
    out["f1_hid"] = press("F1", lambda: not app.controls.overlay_visible)
    out["overlay_hidden"] = overlay_share(show())
    out["f1_showed"] = press("F1", lambda: app.controls.overlay_visible)
    out["f12_wrote"] = press("F12", lambda: app.last_screenshot is not None)
    from PIL import Image
    shot = np.asarray(Image.open(app.last_screenshot).convert("RGB"))
    out["screenshot"] = {"name": app.last_screenshot, "size": [shot.shape[1], shot.shape[0]],
                         "title_bar_of_keys_panel": _title_bar(shot, "Keys")}
    xdo("windowsize", wid(), "800", "600")
    out["resized"] = until(lambda: app.window.get_framebuffer_size() == (800, 600))
    image = show()
    out["after_resize"] = {"image": list(image.shape), "overlay": overlay_share(image),
                           "aspect": app.camera.aspect, "title_bar_of_keys_panel": _title_bar(image, "Keys")}
    out["f11_fullscreen"] = press("F11", lambda: app.window.get_framebuffer_size() == (1280, 720))
    out["f1_in_fullscreen"] = press("F1", lambda: not app.controls.overlay_visible)
    out["f11_back"] = press("F11", lambda: app.window.get_framebuffer_size() != (1280, 720))
    out["size_after_f11"] = list(app.window.get_framebuffer_size())
    return out


def _title_bar(image, panel: str) -> float:
    """Share of a panel's title-bar pixels (where panel_rects puts it) that are not background."""
    from spaceship_sim.app.overlay_model import panel_rects
    x, y, w, _ = panel_rects(image.shape[1], image.shape[0])[panel]
    bg = np.round(np.array(BACKGROUND_RGB()) * 255)
    bar = image[y + 2:y + 16, x + 2:x + w - 2]
    return float(np.mean(np.any(np.abs(bar - bg) > 12, axis=2)))


def dump(name: str, image) -> None:
    """Keep a scenario's image for a person to look at (SCENARIO_DUMP=folder)."""
    import os
    if os.environ.get("SCENARIO_DUMP"):
        from spaceship_sim.app.app import save_png
        save_png(Path(os.environ["SCENARIO_DUMP"]) / name, image)


def BACKGROUND_RGB():
    from spaceship_sim.app.renderer import BACKGROUND
    return BACKGROUND


def asteroids() -> dict:
    """configs/asteroids.toml with 400 asteroids in a 300 m arena, seen from 330 m (orbit camera),
    paused: where the boxes (key B) and the closest-feature segments (key L) change pixels, against
    their projected geometry; and whether the asteroids show at their projected centres."""
    import dataclasses

    from spaceship_sim.app.app import App, open_window
    from spaceship_sim.app.asteroids import box_edges
    from spaceship_sim.app.camera import project
    from spaceship_sim.config import load_config
    from spaceship_sim.sim.world import World

    cfg = load_config(REPO / "configs" / "asteroids.toml")
    cfg = dataclasses.replace(cfg, arena=dataclasses.replace(cfg.arena, size=300.0),
                              asteroids=dataclasses.replace(cfg.asteroids, count=400))
    world = World.from_config(cfg, user="keyboard", notify=None)
    window, ctx = open_window(SIZE, headless=True, caption="test")
    app = App(window, ctx, world, pace=False)
    app.controls.overlay_visible = False
    app.camera.home = app.camera.mode = "orbit"
    app.camera.distance = 330.0
    for _ in range(20):  # until some asteroid pairs' boxes overlap
        app.frame()
        if (~world.field.last.colliding).sum() >= 3:
            break
    app.command("pause")
    app.frame()
    plain = app.snapshot()
    f = world.field
    found = {"active_pairs": int(len(f.last.pairs)), "separated_pairs": int((~f.last.colliding).sum())}
    for key, segments in (("boxes", box_edges(f.box_lo, f.box_hi)), ("features", f.last.points[~f.last.colliding])):
        app.command(key)
        app.frame()
        image = app.snapshot()
        app.command(key)
        changed = np.abs(image.astype(int) - plain.astype(int)).max(axis=2) > 24
        near = _near_segments(np.asarray(segments, float).reshape(-1, 2, 3), app.view_proj, radius=4)
        ys, xs = np.nonzero(changed)
        found[key] = {"changed": int(changed.sum()), "near_geometry": float(near[ys, xs].mean()) if len(ys) else 0.0,
                      "mean_rgb": image[changed].mean(axis=0).tolist() if len(ys) else []}
        dump(f"asteroids_{key}.png", image)
    px, front = project(f.pos, app.view_proj, *SIZE)
    bg = np.round(np.array(BACKGROUND_RGB()) * 255)
    inside = front & (px[:, 0] >= 2) & (px[:, 0] < SIZE[0] - 2) & (px[:, 1] >= 2) & (px[:, 1] < SIZE[1] - 2)
    centre = plain[px[inside, 1].astype(int), px[inside, 0].astype(int)]
    found["asteroids_in_view"] = int(inside.sum())
    found["centres_drawn"] = float((np.abs(centre - bg).max(axis=1) > 20).mean())
    return found


def tunnel() -> dict:
    """configs/tunnel.toml with --pause-on-catch: the frame at which the app pauses, what the
    overlay says, and where the drawn catch (the fighter's hull at the sample's end, its path, the
    hit face hull) changes pixels against the same paused frame drawn without it."""
    import dataclasses

    from spaceship_sim.app.app import App, open_window
    from spaceship_sim.app.overlay_model import panel_rects
    from spaceship_sim.app.swept import SWEPT_FACE_COLOR, crossing_lines
    from spaceship_sim.config import load_config
    from spaceship_sim.sim.world import World

    # exact-only: the swept test looks at pairs the narrow phase finds apart, and a time-critical
    # frame's budget depends on how long this machine takes to render (a busy core left the pair at
    # level 1, "maybe colliding", and nothing to catch)
    cfg = load_config(REPO / "configs" / "tunnel.toml")
    cfg = dataclasses.replace(cfg, collision=dataclasses.replace(cfg.collision, time_critical=False))
    world = World.from_config(cfg, notify=None)
    window, ctx = open_window(SIZE, headless=True, caption="test")
    app = App(window, ctx, world, mode="demo", pace=False, pause_on_catch=True)
    x, y, w, h = panel_rects(*SIZE)["Collisions"]

    def text_pixels(image):  # the catch's line in the collisions panel, in its colour
        panel = image[y:y + h, x:x + w].astype(int)
        return int((np.abs(panel - np.round(np.array(SWEPT_FACE_COLOR[:3]) * 255)).max(axis=2) < 40).sum())

    before = 0
    for _ in range(30):
        app.frame()
        if app.controls.paused:
            break
        before = max(before, text_pixels(app.snapshot()))
    paused_at = world.frame
    for _ in range(3):  # paused: nothing moves but the camera settling
        app.frame()
    shown = app.snapshot()
    dump("tunnel.png", shown)
    lines = crossing_lines(world.swept.last, world.models, world.state.model_id)
    scene = {}
    for name, drawn in (("with", lines), ("without", [])):  # the same camera, the scene alone
        app.renderer.render(app.ctx.screen, SIZE, world.state, app.camera, world.last_narrow, app.options, drawn)
        scene[name] = app.snapshot().astype(int)
    changed = np.abs(scene["with"] - scene["without"]).max(axis=2) > 24
    near = _near_segments(np.concatenate([v for v, *_ in lines]).astype(float).reshape(-1, 2, 3), app.view_proj,
                          radius=3)
    ys, xs = np.nonzero(changed)
    last = world.swept.last
    return {"paused_at": paused_at, "caught": world.swept.caught, "pairs": last.pairs.tolist(),
            "end_x": float(last.end[0, 1, 0, 3]), "start_x": float(last.start[0, 1, 0, 3]),
            "fighter_x": float(world.state.pos[2, 0]), "text": app.model.swept, "changed": int(changed.sum()),
            "near_geometry": float(near[ys, xs].mean()) if len(ys) else 0.0,
            "geometry_changed": float(changed[near].mean()), "panel_text_pixels": text_pixels(shown),
            "panel_text_pixels_before": before}


def _near_segments(segments, view_proj, radius: int) -> np.ndarray:
    """(H, W) bool: pixels within `radius` of a projected world segment (k, 2, 3) in front of the camera."""
    from spaceship_sim.app.camera import project

    mask = np.zeros(SIZE[::-1], bool)
    t = np.linspace(0.0, 1.0, 200)[:, None, None]
    points = (segments[None, :, 0] * (1 - t) + segments[None, :, 1] * t).reshape(-1, 3)
    px, front = project(points, view_proj, *SIZE)
    px = np.round(px[front]).astype(int)
    for dx in range(-radius, radius + 1):
        for dy in range(-radius, radius + 1):
            x, y = px[:, 0] + dx, px[:, 1] + dy
            ok = (x >= 0) & (x < SIZE[0]) & (y >= 0) & (y < SIZE[1])
            mask[y[ok], x[ok]] = True
    return mask


if __name__ == "__main__":
    print(json.dumps(globals()[sys.argv[1]]()))
