"""The window and its frame loop: input -> world.step -> render (timed) -> overlay -> flip.

Each frame the scene and overlay are rendered, `ctx.finish()` waits for the GPU, and the
measured render time goes to `world.end_frame`, which feeds the render-time predictor that
sizes the next frame's detection budget. Imports pyglet/moderngl: call `open_window` only from
the app commands (it sets pyglet's headless option before pyglet.window is imported).
"""
from __future__ import annotations

import os
import sys
import threading
import time
from collections import deque

import numpy as np

from ..errors import InputError
from ..machine import short_time_slice
from .asteroids import ASTEROID_COLOR, field_lines
from .camera import Camera
from .keys import resolve
from .overlay_model import OverlayModel, collision_changes
from .swept import crossing_lines, crossing_text

TIMING_HISTORY = 10_000  # frames of per-frame times kept for --stats (5.5 min at 30 Hz)
CROSSING_SHOWN_S = 2.0   # [s] of simulated time a swept-space catch stays drawn
# [s] between frames while the simulation waits for its kernels: nothing moves, and each frame drawn
# takes the interpreter from the compiling thread (a few a second show the progress line)
HELD_FRAME_TIME = 0.25




def _pyglet_headless() -> bool:
    import pyglet
    return bool(pyglet.options.headless)


class AppError(InputError):
    """The app cannot start here (no display, GL too old): an InputError naming what to fix."""


def display_error(unreachable: bool = False) -> AppError:
    """unreachable: $DISPLAY is set but no X server answers there."""
    why = f"cannot connect to {os.environ.get('DISPLAY', '')!r}" if unreachable else "$DISPLAY is not set"
    return AppError("environment", "DISPLAY", no_display_message(why))


def gl_error(problem: str) -> AppError:
    return AppError("graphics driver", "OpenGL", problem)


def open_window(size: tuple[int, int], headless: bool, caption: str):
    """A pyglet window with a GL 3.3 core, 8-bit RGBA context and a moderngl context on it.

    headless: EGL without any display (pyglet.options.headless). Raises AppError when there is
    no display, or the driver cannot give OpenGL 3.3 core (message names the renderer)."""
    check_display(headless)
    if headless:
        os.environ.setdefault("PYOPENGL_PLATFORM", "egl")  # imgui's backend makes its textures with PyOpenGL
    import pyglet
    pyglet.options.headless = headless
    pyglet.options.shadow_window = False
    import moderngl
    try:
        import pyglet.window
        config = pyglet.gl.Config(major_version=3, minor_version=3, forward_compatible=True,
                                  red_size=8, green_size=8, blue_size=8, alpha_size=8,
                                  depth_size=24, double_buffer=True)
        window = pyglet.window.Window(width=size[0], height=size[1], caption=caption, config=config,
                                      vsync=False, resizable=not headless)
    except _no_display_exceptions(pyglet):
        raise display_error(unreachable=True) from None
    except (pyglet.window.NoSuchConfigException, pyglet.gl.ContextException):
        raise gl_error(f"OpenGL 3.3 core is not available here (renderer: {probe_renderer(headless)}); "
                       "update the graphics driver or use Mesa (llvmpipe)") from None
    ctx = moderngl.create_context()
    if ctx.version_code < 330:
        renderer = ctx.info.get("GL_RENDERER", "?")
        window.close()
        raise gl_error(f"OpenGL 3.3 core is required, this context offers {ctx.version_code / 100:.1f} "
                       f"(renderer: {renderer})")
    return window, ctx


def check_display(headless: bool) -> None:
    """Raise AppError early (before any loading) when a window is wanted and no display exists."""
    if not headless and sys.platform.startswith("linux") and not os.environ.get("DISPLAY") \
            and not os.environ.get("WAYLAND_DISPLAY"):
        raise display_error()


def _no_display_exceptions(pyglet) -> tuple:
    """pyglet raises its xlib display module's own NoSuchDisplayException (not the one in
    pyglet.window) when $DISPLAY names a display nobody serves."""
    import importlib

    found = [pyglet.window.NoSuchDisplayException]
    try:
        found.append(importlib.import_module("pyglet.display.xlib").NoSuchDisplayException)
    except (ImportError, AttributeError):
        pass  # not an X11 platform
    return tuple(found)


def no_display_message(why: str) -> str:
    return (f"no display to open a window on ({why}). Run with --headless to render offscreen through EGL "
            "(with --frames N --screenshot PATH), or start a virtual screen: xvfb-run -a spaceship-sim ...")


def probe_renderer(headless: bool) -> str:
    """GL_RENDERER of whatever context the driver gives by default ('unknown' if none)."""
    try:
        import moderngl
        ctx = moderngl.create_context(standalone=True, **({"backend": "egl"} if headless else {}))
        name = f"{ctx.info.get('GL_RENDERER', '?')}, OpenGL {ctx.version_code / 100:.1f}"
        ctx.release()
        return name
    except Exception as e:  # any failure here only degrades the message
        return f"unknown ({e})"


class App:
    """One window showing one World; `run()` is the frame loop."""

    def __init__(self, window, ctx, world, mode: str = "fly", pace: bool = True, split_timing: bool = False,
                 warm_in_background: bool = False, hold_until_compiled: bool = False, pause_on_catch: bool = False):
        """split_timing: also time the scene alone (one more GPU sync per frame).
        warm_in_background: the world was made with warm=False; compile its kernels in a thread
        while the window already shows the scene (numba's first compile takes seconds), and
        start stepping when they are ready.
        hold_until_compiled: with warm_in_background, the simulation waits for the kernels (else
        it steps on bounding spheres meanwhile) — the swept test runs only on compiled kernels, so
        a crossing in the first frames would pass unseen.
        pause_on_catch: pause the simulation when the swept-space test catches a crossing."""
        from pyglet.window import key, mouse

        from .overlay import Controls, Overlay
        from .renderer import Renderer, SceneOptions

        self.window, self.ctx, self.world, self.mode, self.pace = window, ctx, world, mode, pace
        self.split_timing = split_timing
        self.hold_until_compiled, self.pause_on_catch = hold_until_compiled, pause_on_catch
        self.caught_seen = 0  # the world's swept catches already shown
        self.crossing, self.crossing_t = None, -float("inf")  # the latest catch drawn, its simulation time [s]
        self.edges: dict = {}  # mesh edges per model, for drawing a caught ship's hull
        self.renderer = Renderer(ctx, *scene_models(world))
        self.drawn_trees = world.trees  # replaced when the world takes trees built in the background
        self.overlay = Overlay(window, ctx)
        self.model = OverlayModel(target_ms=1e3 * world.target_frame_time)
        self.camera = Camera("chase" if mode == "fly" else "action")
        self.options = SceneOptions()
        self.controls = Controls(title=mode, camera_mode=self.camera.mode)
        self._sync_controls_from_world()
        self.flight_keys, self.command_keys = resolve(key)
        self.mouse_left = mouse.LEFT
        # per stepped frame, the last TIMING_HISTORY of them (memory stays flat in long sessions) [s]:
        self.frame_times: deque[float] = deque(maxlen=TIMING_HISTORY)   # FrameStats.frame_time
        self.render_times: deque[float] = deque(maxlen=TIMING_HISTORY)  # measured render (scene + overlay)
        self.scene_times: deque[float] = deque(maxlen=TIMING_HISTORY)   # its scene part
        self.on_target: deque[bool] = deque(maxlen=TIMING_HISTORY)      # frame time within the target then
        self.loop_times: deque[float] = deque(maxlen=TIMING_HISTORY)    # the loop iteration's wall time
        self.frames_timed = 0  # stepped frames, all of them
        self.first_frame_at: float | None = None  # perf_counter when the first frame was shown
        self.first_step_at: float | None = None   # ... when the first simulated frame was shown
        self.compiled_at: float | None = None     # ... when the world first ran its compiled kernels
        self.view_proj = np.eye(4)
        self.headless = _pyglet_headless()
        self.screenshot_requested = False
        self.last_screenshot: str | None = None  # path F12 wrote last
        self.title_at = -1.0                     # perf_counter of the last title change
        self.warming = threading.Thread(target=world.warm_up, daemon=True) if warm_in_background else None
        self.warm_start = time.perf_counter()
        if self.warming is not None:
            self.warming.start()
        window.push_handlers(on_key_press=self.on_key_press, on_key_release=self.on_key_release,
                             on_mouse_drag=self.on_mouse_drag, on_mouse_scroll=self.on_mouse_scroll)

    # --- input -----------------------------------------------------------------------------
    def on_key_press(self, symbol, modifiers):
        if symbol in self.flight_keys:
            self.world.keys.press(self.flight_keys[symbol])
        elif symbol in self.command_keys and self.command_keys[symbol] != "fullscreen":
            self.command(self.command_keys[symbol])
        # return nothing: Escape still reaches pyglet's default handler, which closes the window

    def on_key_release(self, symbol, modifiers):
        if symbol in self.flight_keys:
            self.world.keys.release(self.flight_keys[symbol])
        elif self.command_keys.get(symbol) == "fullscreen":
            # on release: switching makes a new X window, which never sees this key's release;
            # pyglet would then take the next press for a held key's repeat and drop it
            self.command("fullscreen")

    def on_mouse_drag(self, x, y, dx, dy, buttons, modifiers):
        if buttons & self.mouse_left and not self.overlay.wants_mouse():
            self.camera.drag(dx, dy)

    def on_mouse_scroll(self, x, y, scroll_x, scroll_y):
        if not self.overlay.wants_mouse():
            self.camera.zoom(scroll_y)

    def command(self, name: str) -> None:
        c = self.controls
        if name == "pause":
            c.paused = not c.paused
        elif name == "step":
            c.paused, c.step_requested = True, True
        elif name == "reset":
            self.world.reset()
            self.model = OverlayModel(target_ms=1e3 * self.world.target_frame_time)
            self.crossing = None
            self.camera.eye = None
        elif name == "camera":
            self.camera.toggle()
        elif name == "tree_level":  # none, 0, 1, ..., deepest sphere level, none, ...
            c.tree_level = c.tree_level + 1 if c.tree_level + 1 < c.level_limit else -1
        elif name == "overlay":
            c.overlay_visible = not c.overlay_visible
        elif name == "fullscreen" and not self.headless:
            self.window.set_fullscreen(not self.window.fullscreen)
        elif name == "screenshot":
            self.screenshot_requested = True
        elif name == "boxes":
            self.options.show_boxes = not self.options.show_boxes
        elif name == "features":
            self.options.show_features = not self.options.show_features

    # --- controls <-> world --------------------------------------------------------------
    def _sync_controls_from_world(self) -> None:
        w, c = self.world, self.controls
        c.target_fps = 1.0 / w.target_frame_time
        c.min_level = w.narrow.min_level
        c.level_limit = c.max_level = w.max_level
        c.broadphase = w.broadphase_name
        self._applied = (c.target_fps, c.min_level, c.max_level, c.broadphase)

    def apply_controls(self) -> None:
        """Push control-panel changes into the world and the scene options."""
        c = self.controls
        c.max_level = max(c.max_level, c.min_level)  # the minimum level wins when they cross
        now = (c.target_fps, c.min_level, c.max_level, c.broadphase)
        changes = collision_changes(self._applied, now)
        if changes:
            self.world.set_collision(**changes)
            self._applied = now
        self.options.tree_level = None if c.tree_level < 0 else c.tree_level
        self.options.show_hits, self.options.show_bounds = c.show_hits, c.show_bounds
        if c.follow_pair != self.camera.follow:  # a table row was clicked: look at that pair
            self.camera.follow = c.follow_pair
            self.camera.mode = "action" if c.follow_pair is not None else self.camera.home
        c.camera_mode = self.camera.mode

    # --- frame loop --------------------------------------------------------------------------
    def frame(self) -> None:
        """One iteration: events, maybe a simulation step, render + overlay (timed), flip."""
        start = time.perf_counter()
        self.window.dispatch_events()
        self.apply_controls()
        stepping = not self.controls.paused or self.controls.step_requested
        self.controls.step_requested = self.controls.step_requested and not stepping
        stepping = stepping and (self.ready() or not self.hold_until_compiled)
        self.model.status = self._waiting_status()
        stats = self.world.step() if stepping else None
        if self.world.trees is not self.drawn_trees:  # trees built in the background are in
            self.drawn_trees = self.world.trees
            self.renderer.set_trees(scene_models(self.world)[1])
            self._sync_controls_from_world()
        if stats is not None:
            self._note_crossing(stats.frame)
        state, narrow = self.world.field.body_state(self.world.state), self.world.last_narrow  # ships, asteroids
        hits = narrow.pairs[narrow.colliding] if narrow is not None and len(narrow.pairs) else None
        self.camera.aspect = self.window.width / max(self.window.height, 1)
        self.camera.update(state.pos, state.quat, state.radius, self.world.config.arena.size,
                           self.world.config.sim.frame_dt, hits)
        render_start = time.perf_counter()
        if self.world.deforming:  # flexing hulls: this frame's vertices
            self.renderer.set_shapes(self.world.deforming.shapes())
        size = self.window.get_framebuffer_size()
        lines = field_lines(self.world.field, self.options.show_boxes, self.options.show_features)
        if self.world.t - self.crossing_t <= CROSSING_SHOWN_S:
            lines += crossing_lines(self.crossing, self.world.models, self.world.state.model_id, self.edges)
        self.view_proj, labels = self.renderer.render(self.ctx.screen, size, state, self.camera, narrow, self.options,
                                                      lines)
        if self.split_timing:  # an extra GPU sync: only when asked, it costs a flush
            self.ctx.finish()
        scene_time = time.perf_counter() - render_start
        if self.controls.overlay_visible:
            self.overlay.width, self.overlay.height = self.window.get_size()
            self.model.frames_run = self.world.frame
            self.model.show_sample(narrow)  # the table shows the pairs the scene labels
            self.overlay.draw(self.model, self.controls, self._screen_labels(labels))
        self.ctx.finish()  # wait for the GPU so the measured time is the real render cost
        render_time = time.perf_counter() - render_start
        if stats is not None:
            self.world.end_frame(render_time)
            self.model.update(stats, self.world.last_narrow)
            self.frames_timed += 1
            self.frame_times.append(stats.frame_time)
            self.render_times.append(render_time)
            self.scene_times.append(scene_time)
            self.on_target.append(not stats.overrun)
        if self.first_frame_at is None:
            self.first_frame_at = time.perf_counter()
        if self.world.compiled:
            self.compiled_at = self.compiled_at or time.perf_counter()
        if stats is not None:
            self.first_step_at = self.first_step_at or time.perf_counter()
            self.loop_times.append(time.perf_counter() - start)
        self._window_chores(render_time)

    def _note_crossing(self, frame: int) -> None:
        """After a step: a new swept-space catch is drawn, named in the overlay, and pauses the
        simulation when asked to."""
        swept = self.world.swept
        if swept is None or swept.caught == self.caught_seen:
            return
        self.caught_seen = swept.caught
        self.crossing, self.crossing_t = swept.last, self.world.t
        self.model.swept = crossing_text(swept.last, frame)
        if self.pause_on_catch:
            self.controls.paused = True

    def _screen_labels(self, labels) -> list:
        """Scene labels [(world point, text, rgb)] -> [(x, y, text, rgb)] in window pixels."""
        if not labels:
            return []
        from .camera import project

        w, h = self.window.get_size()
        px, front = project(np.array([p for p, _, _ in labels]), self.view_proj, w, h)
        return [(x + 14, y - 8, text, rgb) for (x, y), ok, (_, text, rgb) in zip(px, front, labels) if ok]

    def _window_chores(self, render_time: float) -> None:
        """F12's screenshot (the frame just drawn, before the flip) and the title: frame time and
        mode, a few times a second (each caption change is a round trip to the window system)."""
        if self.screenshot_requested:
            self.screenshot_requested = False
            self.last_screenshot = time.strftime("spaceship-sim-%Y%m%d-%H%M%S") + f"-{self.world.frame}.png"
            save_png(self.last_screenshot, self.snapshot())
        now = time.perf_counter()
        if not self.headless and now - self.title_at > 0.5:
            self.title_at = now
            ms = 1e3 * (self.frame_times[-1] if self.frame_times else render_time)
            self.window.set_caption(f"spaceship-sim {self.mode}: {ms:.1f} ms/frame, camera {self.camera.mode}"
                                    + (", paused" if self.controls.paused else ""))

    def ready(self) -> bool:
        """Whether the world's kernels are compiled and its trees built (until then it steps on numpy
        references and bounding spheres)."""
        kernels = self.warming is None or not self.warming.is_alive()
        return kernels and (self.world.building is None or self.world.building.ready.is_set())

    def _wait_ready(self, timeout: float) -> None:
        """Wait up to `timeout` [s] on what ready() waits for: the compiling thread (it needs the
        interpreter, so sleeping would hand it less), else the trees building."""
        if self.warming is not None and self.warming.is_alive():
            self.warming.join(timeout)
        elif self.world.building is not None:
            self.world.building.ready.wait(timeout)

    def _waiting_status(self) -> str:
        """The overlay's status line while detection waits: for the kernels compiling, for the trees
        of models seen for the first time building ("" once neither)."""
        if self.world.compiled:
            return ""
        compiling = self.warming is not None and self.warming.is_alive()
        waits = ["compiling collision kernels (numba, first start only)"] if compiling else []
        if self.world.building is not None and not self.world.building.ready.is_set():
            waits.append(self.world.building.status())
        waiting = "the simulation waits for them" if self.hold_until_compiled else \
            "detection uses bounding spheres until then"
        return f"{', '.join(waits) or 'switching to full detection'}: {time.perf_counter() - self.warm_start:.0f} s; {waiting}"

    def snapshot(self) -> np.ndarray:
        """The window's current back buffer: (height, width, 3) uint8, top row first."""
        w, h = self.window.get_framebuffer_size()
        data = self.ctx.screen.read(viewport=(0, 0, w, h), components=3)
        _ = self.ctx.error  # reading the default framebuffer leaves a GL error flag; clear it
        return np.frombuffer(data, np.uint8).reshape(h, w, 3)[::-1].copy()

    def run(self, frames: int | None = None, screenshot: str | None = None) -> None:
        """Loop until the window closes or `frames` frames are stepped (frames shown while the
        simulation waits, for the kernels or paused, do not count); save the last frame."""
        with short_time_slice(self.world.config.sim.time_slice):
            self._loop(frames, screenshot)

    def _loop(self, frames: int | None, screenshot: str | None) -> None:
        while not self.window.has_exit:
            start = time.perf_counter()
            self.frame()
            last = frames is not None and self.frames_timed >= frames
            if screenshot and (last or self.window.has_exit):
                save_png(screenshot, self.snapshot())
            self.window.flip()
            if last:
                break
            if not self.ready():
                period = HELD_FRAME_TIME if self.hold_until_compiled else self.world.target_frame_time
                self._wait_ready(max(0.0, period - (time.perf_counter() - start)))
            elif self.pace:  # hold the target frame rate
                time.sleep(max(0.0, self.world.target_frame_time - (time.perf_counter() - start)))

    def empty_frame_time(self, frames: int = 30) -> float:
        """Median time [s] to clear the window and wait for the GPU: the GL floor, measured
        in the same run as a reference for the frame times (software GL shares the CPU)."""
        times = []
        for _ in range(frames):
            t0 = time.perf_counter()
            self.ctx.screen.clear(0.0, 0.0, 0.0, 1.0)
            self.ctx.finish()
            times.append(time.perf_counter() - t0)
        return float(np.median(times))


def scene_models(world):
    """(models, trees, colours, coarse meshes, faceted) of every body the renderer draws: the ships'
    models, then the asteroid shapes (if any) in rock colour, lit per face (convex), with their
    coarse stand-ins for far away."""
    from .renderer import MODEL_COLORS

    shapes = world.asteroid_shapes
    colors = [MODEL_COLORS[m % len(MODEL_COLORS)] for m in range(len(world.models))]
    if shapes is None:
        return world.models, world.trees, colors, None, None
    ships, rocks = [None] * len(world.models), [None] * len(shapes.meshes)
    return (list(world.models) + shapes.meshes, list(world.trees) + shapes.trees,
            colors + [ASTEROID_COLOR] * len(rocks), ships + shapes.coarse,
            [False] * len(ships) + [True] * len(rocks))


def save_png(path, image: np.ndarray) -> None:
    """Write an (h, w, 3) uint8 image (top row first)."""
    from PIL import Image
    Image.fromarray(image).save(path)
