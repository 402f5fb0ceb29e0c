"""`spaceship-sim fly` and `spaceship-sim demo`: the desktop app.

Registration imports nothing from GL; pyglet/moderngl/imgui load inside `run_app`.
"""
from __future__ import annotations

import dataclasses
import re
import time

from .args import COMMAND_LINE, MAX_FRAMES, integer, new_file, png_file
from ..config import BROADPHASE_NAMES, MAX_SHIPS, ConfigError, shipped_config
from ..errors import InputError

T0 = time.perf_counter()  # for "first frame after ..." (close to process start: imported at CLI start)


def register(sub) -> None:
    fly = sub.add_parser("fly", help="fly the user's ship among autopilot ships (window, ImGui overlay)")
    fly.add_argument("--config", default=shipped_config("default.toml"),
                     help="scenario TOML (default: the shipped configs/default.toml)")
    _common(fly)
    fly.set_defaults(func=lambda args: run_app(args, "fly"))
    demo = sub.add_parser("demo", help="scripted autopilot demo: ships fly waypoint paths that cross")
    demo.add_argument("--config", default=shipped_config("demo.toml"),
                      help="scenario TOML (default: the shipped configs/demo.toml)")
    _common(demo)
    demo.set_defaults(func=lambda args: run_app(args, "demo"))


def _common(p) -> None:
    p.add_argument("--headless", action="store_true", help="render offscreen through EGL (no display needed)")
    p.add_argument("--frames", type=integer(1, MAX_FRAMES), default=None,
                   help="step exactly N frames, then quit and print the state hash (default: run until closed); "
                        "the simulation waits for the compiled kernels, so the same config steps the same frames")
    p.add_argument("--screenshot", metavar="PATH", type=png_file, help="save the last frame as PNG")
    p.add_argument("--stats", action="store_true",
                   help="print at exit the share of frames within the target frame time, median and p99 frame time")
    p.add_argument("--size", default="1280x720", help="window size WxH in pixels (default: %(default)s)")
    p.add_argument("--ships", type=integer(1, MAX_SHIPS), default=None, help="override the config's ship count")
    p.add_argument("--split", action="store_true",
                   help="with --stats: also time the scene without the overlay (adds a GPU sync per frame)")
    p.add_argument("--tree-level", type=integer(-1, 64), default=-1,
                   help="sphere-tree level to draw for every ship from the start, at most collision.tree_depth "
                        "(default: -1, none)")
    p.add_argument("--bounds", action="store_true", help="draw the broad-phase bounding spheres")
    p.add_argument("--boxes", action="store_true", help="draw the asteroids' sweep-and-prune boxes (key B)")
    p.add_argument("--features", action="store_true",
                   help="draw the asteroid pairs' closest-feature segments (key L)")
    p.add_argument("--broadphase", choices=BROADPHASE_NAMES,
                   help="override the config's broad phase")
    p.add_argument("--realtime", action="store_true",
                   help="hold the target frame rate when headless too (a window always does)")
    p.add_argument("--pause-on-catch", action="store_true",
                   help="pause when the swept-space test catches a ship crossing another between samples "
                        "(collision.swept; P resumes)")
    p.add_argument("--record", metavar="FILE", type=new_file,
                   help="record the session (keys, controls, render times, clock readings) into FILE; "
                        "`spaceship-sim run --replay FILE` replays it exactly")


def parse_size(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+)[xX](\d+)", text.strip())
    if not m or not (16 <= int(m[1]) <= 8192 and 16 <= int(m[2]) <= 8192):
        raise InputError("command line", "--size", f"expected WxH with 16..8192 pixels each, got {text!r}")
    return int(m[1]), int(m[2])


def check_args(args) -> tuple[int, int]:
    """Every flag acts or is refused: the ones that would do nothing here are named."""
    if args.headless and args.frames is None:
        raise InputError("command line", "--frames", "--headless needs --frames N (nothing can close the window)")
    if args.split and not args.stats:
        raise InputError(COMMAND_LINE, "--split", "acts only with --stats (it splits the printed frame times)")
    if args.realtime and not args.headless:
        raise InputError(COMMAND_LINE, "--realtime", "acts only with --headless (a window always holds the "
                         "target frame rate)")
    return parse_size(args.size)


def check_scenario_flags(args, cfg) -> None:
    """The flags that need something in the scenario to act on."""
    if args.pause_on_catch and not cfg.collision.swept:
        raise InputError(COMMAND_LINE, "--pause-on-catch", f"acts only with collision.swept = true, which "
                         f"{cfg.source} does not set")
    for flag, on in (("--boxes", args.boxes), ("--features", args.features)):
        if on and not cfg.asteroids.count:
            raise InputError(COMMAND_LINE, flag, f"draws asteroids, and {cfg.source} has none (asteroids.count = 0)")


def load_scenario(args):
    """The config with the command line's overrides, validated (cheap: no trees, no kernels)."""
    from ..config import load_config
    from ..sim.scenario import validate_scenario

    cfg = load_config(args.config)
    if args.tree_level > cfg.collision.tree_depth:
        raise InputError(COMMAND_LINE, "--tree-level", f"must be <= collision.tree_depth = {cfg.collision.tree_depth}"
                         f" of {cfg.source} (-1: none), got {args.tree_level}")
    check_scenario_flags(args, cfg)
    if args.ships is not None:
        cfg = dataclasses.replace(cfg, ships=dataclasses.replace(cfg.ships, count=args.ships))
    if args.broadphase is not None:
        cfg = dataclasses.replace(cfg, collision=dataclasses.replace(cfg.collision, broadphase=args.broadphase))
    try:
        validate_scenario(cfg)
    except ConfigError as e:
        if args.ships is None or e.key != "ships.count":
            raise
        raise InputError(COMMAND_LINE, "--ships", e.problem) from None  # the flag's count, not the file's
    return cfg


def run_app(args, mode: str) -> int:
    size = check_args(args)
    cfg = load_scenario(args)  # a bad scenario is reported before any window opens
    from ..app.app import App, open_window

    # window next: a missing display or old GL is reported before seconds of loading
    window, ctx = open_window(size, args.headless, caption=f"spaceship-sim {mode}")
    from ..sim.world import World

    world = World.from_config(cfg, user="keyboard" if mode == "fly" else "autopilot", warm=False, background_trees=True)
    recorder = None
    if args.record:
        from ..sim.replay import Recorder
        recorder = Recorder(args.record, world, mode)
    app = App(window, ctx, world, mode=mode, pace=args.realtime or not args.headless, split_timing=args.split,
              warm_in_background=True, hold_until_compiled=cfg.collision.swept or args.frames is not None,
              pause_on_catch=args.pause_on_catch)
    app.controls.tree_level = min(args.tree_level, world.max_level - 1)
    app.controls.show_bounds = args.bounds
    app.options.show_boxes, app.options.show_features = args.boxes, args.features
    renderer = ctx.info.get("GL_RENDERER", "?")
    try:
        app.run(frames=args.frames, screenshot=args.screenshot)
        if recorder is not None:
            state_hash = recorder.commit(world)
            print(f"recording: {args.record} ({recorder.frames} frames); state hash {state_hash}")
    except BaseException:
        if recorder is not None:
            recorder.discard()
        raise
    if args.frames is not None:
        print(f"{mode}: {app.frames_timed} frames stepped; state hash {world.state_hash()}")
    if args.stats:
        print(format_stats(app, renderer, size, world.state.n, app.empty_frame_time()))
    window.close()
    if args.screenshot:
        print(f"screenshot: {args.screenshot}")
    return 0


def format_stats(app, renderer: str, size, n_ships: int, empty: float, warmup: int = 5) -> str:
    """Median / p99 of frame time (stages + render) and of the whole loop over the app's timing
    history (its last frames), the first `warmup` frames skipped while they are still in it, next
    to the empty-frame reference measured in the same run."""
    import numpy as np

    skip = max(0, warmup - (app.frames_timed - len(app.frame_times)))  # warm-up frames still held

    def recent(xs):
        xs = np.asarray(xs)
        return xs[skip:] if len(xs) > skip else xs

    def ms(xs):
        return recent(xs) * 1e3

    def pct(xs):
        xs = ms(xs)
        return f"median {np.median(xs):.2f} ms, p99 {np.percentile(xs, 99):.2f} ms" if len(xs) else "n/a"

    frame, scene = ms(app.frame_times), ms(app.scene_times)
    sim = frame - ms([s for s in app.render_times])
    first, first_step, compiled = (t - T0 if t else float("nan")
                                   for t in (app.first_frame_at, app.first_step_at, app.compiled_at))
    return "\n".join([
        f"{n_ships} ships, {size[0]}x{size[1]}, {renderer}; {app.frames_timed} frames ("
        + (f"first {warmup} skipped)" if app.frames_timed == len(app.frame_times) else
           f"figures over the last {len(app.frame_times)})"),
        f"frame time (sim + render): {pct(app.frame_times)}",
        f"frame time within target ({1e3 * app.world.target_frame_time:.2f} ms): "
        f"{np.mean(recent(app.on_target)):.1%} of frames (median {np.median(frame):.2f} ms)",
        f"  medians: sim {np.median(sim):.2f} ms, render {np.median(ms(app.render_times)):.2f} ms"
        + (f" (scene alone {np.median(scene):.2f} ms)" if app.split_timing else ""),
        f"loop time (with events, flip): {pct(app.loop_times)}",
        f"reference: empty frame (clear + finish) {1e3 * empty:.2f} ms; "
        f"frame time median / empty frame = {np.median(frame) / max(1e3 * empty, 1e-9):.1f}",
        f"first frame {first:.2f} s after the command started; simulation running from {first_step:.2f} s"
        + (f"; full collision detection from {compiled:.2f} s (first start: numba compiled the kernels in the "
           "background, detection used bounding spheres meanwhile)" if compiled - first_step > 1.0 else ""),
    ])
