"""Headless runs of a world: frames stepped with a stand-in render, each frame's stats handed to a
log as they come, nothing half-written. Used by the `run` command, the benches and the tests."""
from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
from pathlib import Path

from ..clock import WALL
from ..files import partial_prefix, uninterrupted


@contextlib.contextmanager
def staged_folder(out: Path):
    """Yield an empty folder beside `out` to write into; its entries move into `out` (replacing
    same-named ones, leaving others) only when the block succeeds, so a failed or interrupted run
    leaves `out` as it was."""
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=out.parent, prefix=partial_prefix(out.name)))
    try:
        yield work
        with uninterrupted():
            _move_entries(work, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _move_entries(work: Path, out: Path) -> None:
    if not out.exists():
        work.rename(out)
        return
    for entry in work.iterdir():
        target = out / entry.name
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif target.exists() or target.is_symlink():
            target.unlink()
        entry.rename(target)


def run_frames(cfg, n_frames: int, render_s: float, realtime: bool, open_log, progress: bool = True,
               on_frame=None, clock=WALL, record=None, exact_only: str | None = None):
    """Run n_frames, handing each frame's FrameStats to `log = open_log(world)` as it comes (no
    frame is kept here); returns (log, world). A failure discards the log's partial files.
    on_frame(world) sees the world after each frame that ran the narrow phase (frame_poses(world):
    its candidate pairs and poses), outside the frame's time, before the log takes its stats. The
    stand-in render and every budget are read from `clock` (spaceship_sim.clock).
    record: a file to record the run into (spaceship_sim.sim.replay; written only if the run ends well).
    exact_only: an exact strategy's name, answering every pair (World.from_config).
    The process's threads ask the scheduler for the config's sim.time_slice while the frames run."""
    from tqdm import tqdm

    from ..machine import short_time_slice
    from .replay import Recorder
    from .world import World

    world = World.from_config(cfg, clock=clock, exact_only=exact_only)
    with short_time_slice(cfg.sim.time_slice):
        recorder = Recorder(record, world, "run") if record else None
        log = open_log(world)
        try:
            for _ in tqdm(range(n_frames), desc="frames", unit="frame", disable=not progress):
                start = time.perf_counter()
                stats = world.step()
                world.end_frame(clock.spend(render_s))
                if on_frame is not None and world.last_narrow is not None:
                    on_frame(world)
                log.add(stats)
                if realtime:
                    time.sleep(max(0.0, stats.target - (time.perf_counter() - start)))
            if recorder is not None:
                recorder.commit(world)
        except BaseException:
            log.discard()
            if recorder is not None:
                recorder.discard()
            raise
    return log, world


def frame_poses(world) -> tuple:
    """(model_id, T, pairs): copies of the last frame's body models, poses and candidate pairs (ships,
    then asteroids if any)."""
    return world.field.model_ids(world.state).copy(), world.field.transforms(world.state), \
        world.last_narrow.pairs.copy()


def tally_intervals(world) -> None:
    """run_frames's on_frame for runs that compare separation intervals: tally those of the frame's
    last sample into its stats, after the frame was timed, where the frame did not make them (a
    verdict-only frame never does: what its caller is spared; a tightening one not when its budget
    had no room), so that every frame's widths are counted."""
    narrow = world.last_narrow
    if not narrow.interval_known:
        world.last_stats.add_intervals(narrow.upper - narrow.lower)
