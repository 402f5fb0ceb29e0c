"""`spaceship-sim bench dynamics`: the batched numba integrator against the numpy reference.

n ships under the random autopilot (placed uniformly in the arena, random orientations and
speeds) are integrated frame by frame exactly as the pipeline does (sim.frame_dt cut into
samples no longer than sim.min_temporal_resolution). Both backends advance copies of the same
state in lockstep with the same controls; the numba kernel runs twice, on all numba threads
and on one (on a loaded shared machine one thread can win). Only `Integrator.step` is timed,
and the first frame (numba compilation or cache load) is left out. Prints the median ms per
frame of each, the ratios against the reference, the sub-steps taken, and how far apart the
numba and numpy states ended.
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np

from ..cli.args import MAX_FRAMES, integer, number
from ..config import MAX_SHIPS, Config, load_config, samples_per_frame

TARGET_MS = 2.0  # per frame for 10,000 ships: the dynamics' target
BYTES_PER_SHIP = 1200  # memory of the states, integrators and autopilot (measured: 12 GB at 1e7 ships)


def register(sub) -> None:
    p = sub.add_parser("dynamics", help="numba vs numpy integrator, ms per frame")
    p.add_argument("--n", type=integer(1, MAX_SHIPS, cost=lambda n: f"about {n * BYTES_PER_SHIP / 1e9:.3g} GB"),
                   default=10_000, help="number of ships")
    p.add_argument("--frames", type=integer(1, MAX_FRAMES), default=60, help="timed frames of the numba step")
    p.add_argument("--reference-frames", type=integer(1, MAX_FRAMES), default=10,
                   help="timed frames of the numpy reference (it is slow)")
    p.add_argument("--tolerance", type=number(0.0, 1e3, lo_open=True), default=None,
                   help="override integrator.tolerance [m, m/s]")
    p.add_argument("--config", default=None, help="scenario TOML for controls/integrator/sim (default: built-in)")
    p.set_defaults(func=run)


def run(args) -> int:
    import numba

    cfg = load_config(args.config) if args.config else Config()
    cfg = dataclasses.replace(cfg, ships=dataclasses.replace(cfg.ships, count=args.n))
    if args.tolerance is not None:
        cfg = dataclasses.replace(cfg, integrator=dataclasses.replace(cfg.integrator, tolerance=args.tolerance))
    samples = samples_per_frame(cfg.sim.frame_dt, cfg.sim.min_temporal_resolution)
    threads = numba.get_num_threads()
    res = measure(cfg, args.frames, args.reference_frames, samples, threads)
    ms = {k: np.median(v) * 1e3 for k, v in res["seconds"].items()}
    print(f"dynamics: {args.n} ships, frame {cfg.sim.frame_dt * 1e3:.1f} ms of simulation time in {samples} "
          f"sample(s), tolerance {cfg.integrator.tolerance:g}")
    print(f"  sub-steps per ship per frame: mean {res['substeps'] / (args.n * args.frames):.2f}, "
          f"rejected per frame {res['rejected'] / args.frames:.0f}, capped ships per frame {res['capped'] / args.frames:.0f}")
    print(f"  {'backend':22s} {'ms/frame (median)':>18s} {'numpy / it':>11s} {'frames':>7s}")
    for name, frames in ((f"numba, {threads} thread(s)", args.frames), ("numba, 1 thread", args.frames),
                         ("numpy reference", args.reference_frames)):
        print(f"  {name:22s} {ms[name]:18.3f} {ms['numpy reference'] / ms[name]:10.1f}x {frames:7d}")
    print(f"  max |state difference| numba vs numpy after {args.reference_frames} frames: {res['difference']:.2e}")
    best = min(ms[f"numba, {threads} thread(s)"], ms["numba, 1 thread"])
    verdict = "met" if best <= TARGET_MS * args.n / 10_000 else "NOT met"
    print(f"  target {TARGET_MS:g} ms/frame per 10,000 ships: {verdict} (best numba {best:.3f} ms/frame)")
    return 0


def bench_state(cfg: Config, rng) -> ShipState:
    """n ships uniform in the arena (overlap is irrelevant here), random orientation and speed."""
    from ..state import ShipState

    n, half = cfg.ships.count, 0.5 * cfg.arena.size
    s = ShipState.zeros(n)
    s.pos[:] = rng.uniform(-half, half, (n, 3))
    q = rng.normal(size=(n, 4))
    s.quat[:] = q / np.linalg.norm(q, axis=1, keepdims=True)
    d = rng.normal(size=(n, 3))
    s.vel[:] = d / np.linalg.norm(d, axis=1, keepdims=True) * rng.uniform(0, cfg.ships.initial_speed, (n, 1))
    return s


def measure(cfg: Config, frames: int, ref_frames: int, samples: int, threads: int) -> dict:
    """Seconds per frame of each variant, sub-step tallies of the numba run and the max
    difference between the numba and numpy states after the reference's frames."""
    import numba

    from ..dynamics import Integrator, RandomAutopilot

    n = cfg.ships.count
    base = bench_state(cfg, np.random.default_rng(cfg.sim.seed))
    # (name, backend, numba threads, frames timed)
    variants = [(f"numba, {threads} thread(s)", "numba", threads, frames), ("numba, 1 thread", "numba", 1, frames),
                ("numpy reference", "numpy", threads, ref_frames)]
    states = [base.copy() for _ in variants]
    integrators = [Integrator(cfg, n, backend) for _, backend, _, _ in variants]
    pilot = RandomAutopilot(cfg, np.arange(n), cfg.sim.seed)
    out = dict(seconds={name: [] for name, *_ in variants}, substeps=0, rejected=0, capped=0, difference=np.nan)
    h = cfg.sim.frame_dt / samples
    for frame in range(frames + 1):  # frame 0: warm-up (compilation or cache load), not counted
        pilot.update(frame * cfg.sim.frame_dt, states[0])
        for (name, _backend, nthreads, limit), state, integ in zip(variants, states, integrators):
            if frame > limit:
                continue
            state.thrust[:], state.omega_cmd[:] = states[0].thrust, states[0].omega_cmd
            numba.set_num_threads(nthreads)
            start = time.perf_counter()
            stats = [integ.step(state, h) for _ in range(samples)]
            elapsed = time.perf_counter() - start
            numba.set_num_threads(threads)
            if frame > 0:
                out["seconds"][name].append(elapsed)
        if frame > 0:  # tallies of the last variant run this frame (all take the same steps)
            out["substeps"] += sum(s.substeps_total for s in stats)
            out["rejected"] += sum(s.rejected for s in stats)
            out["capped"] += sum(s.capped for s in stats)
        if frame == ref_frames:
            out["difference"] = max(float(np.abs(getattr(states[0], k) - getattr(states[2], k)).max())
                                    for k in ("pos", "vel", "quat", "omega"))
    return out
