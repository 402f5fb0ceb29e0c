"""bench threads: does a parallel stage ever lose to its serial form, quiet and with the cores taken?

For each --cpu-load N (N busy processes beside the bench) and each query — SSV collide (first
contact, all contacts) and SSV exact distance on a batch of poses of one model, and the integrator's
step of many ships — the bench times, in turn call by call (so that all three meet the same load):
the serial form (one thread), the parallel form (numba's threads), and the adaptive choice the
stages make (threads.ThreadChoice: serial or parallel per batch, from what it measured). It reports
each one's median and p99 over --repeats calls (slowdowns under load are intermittent: a best-of-3
hides them, a frame pays them) and the ratios to serial. Targets: adaptive / serial <= 1.05 at every
load, at the median and the p99; parallel / serial <= 0.7 quiet where the batch splits. A p99 over
200 calls is set by two or three slow ones, so after each load's queries one line says how often the
machine itself ran a fixed kernel slow at that load (bench stalls): on a shared VM both forms' p99s
may be its stalls.

numba's threading layer is chosen per process: run the bench under NUMBA_THREADING_LAYER=workqueue,
omp or tbb (tbb: pip install tbb) to compare them; the report names the one in use.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..cli.args import integer
from ..config import SimConfig
from ..machine import short_time_slice
from .bench_stalls import machine_line
from .cpu_load import cpu_load, load_levels

TARGET_ADAPTIVE, TARGET_PARALLEL_QUIET = 1.05, 0.7
FORMS = ("serial", "parallel", "adaptive")


def register(sub) -> None:
    p = sub.add_parser("threads", help="serial against parallel against the adaptive thread choice, per query "
                                       "and CPU load: median and p99 ratios")
    p.add_argument("--model", default="lamp", help="model for the SSV queries (default: lamp)")
    p.add_argument("--poses", type=integer(64, 100_000), default=256, help="poses per SSV batch")
    p.add_argument("--ships", type=integer(1000, 10_000_000), default=20_000, help="ships in the integrator's step")
    p.add_argument("--repeats", type=integer(5, 100_000), default=200, help="timed calls per form and query")
    p.add_argument("--cpu-load", default="0,1,2", help="busy processes beside the bench, comma-separated")
    p.add_argument("--seed", type=integer(0, 2**63 - 1), default=0)
    p.set_defaults(func=run)


def run(args) -> int:
    import numba

    levels = load_levels(args.cpu_load)
    queries = make_queries(args)
    print(f"{numba.config.NUMBA_NUM_THREADS} numba threads; {args.repeats} calls per form, timed in turn")
    ok = True
    for n in levels:  # the cores taken by other programs; the threads wake as the frame loop's do
        with cpu_load(n), short_time_slice(SimConfig().time_slice):
            for name, forms in queries.items():
                times = time_in_turn(forms, args.repeats)
                ok &= report(name, n, times)
            print(machine_line(n))  # a p99 is a few calls: is the machine itself steady at this load?
    print(f"numba threading layer: {_layer()} (NUMBA_THREADING_LAYER chooses another)")
    return 0 if ok else 1


def _layer() -> str:
    import numba
    try:
        return numba.threading_layer()
    except ValueError:  # no parallel region has run yet
        return "(not yet chosen)"


def make_queries(args) -> dict:
    """{query: {form: call()}}: every form of a query does the same work (answers equal)."""
    from ..bench.bench_narrowphase import load_tree, make_poses, resolve_model
    from ..config import Config
    from ..dynamics import Integrator
    from ..narrowphase import TreeBank
    from ..threads import ThreadChoice
    from .bench_dynamics import bench_state
    from ..ssv.exact import SSVExact

    model = resolve_model(args.model)
    bank = TreeBank.from_trees([load_tree(model, "medial", 3)])  # cached where bench narrowphase caches it
    args.poses_kind = "deep"
    T = make_poses("deep", args, bank.trees[0], bank, None)[0]
    z, Ta, Tb = np.zeros(len(T) // 2, np.int64), T[0::2], T[1::2]
    ssv = {form: SSVExact([model.mesh], cache_dir=model.cache_dir, threads=None if form != "serial" else 1,
                          adaptive_threads=form == "adaptive") for form in FORMS}
    queries = {
        f"ssv collide, first contact ({len(z)} poses)": {f: (lambda s=s: s.collide(z, z, Ta, Tb, False, False))
                                                          for f, s in ssv.items()},
        f"ssv collide, all contacts ({len(z)} poses)": {f: (lambda s=s: s.collide(z, z, Ta, Tb, True, False))
                                                         for f, s in ssv.items()},
        f"ssv distance ({len(z)} poses)": {f: (lambda s=s: s.distance(z, z, Ta, Tb)) for f, s in ssv.items()},
    }
    cfg = dataclasses.replace(Config(), ships=dataclasses.replace(Config().ships, count=args.ships))
    state = bench_state(cfg, np.random.default_rng(args.seed))
    steps = {}
    for form in FORMS:
        integrator = Integrator(cfg, state.n)
        integrator.threads = ThreadChoice(1 if form == "serial" else None, adaptive=form == "adaptive")
        steps[form] = (lambda i=integrator, s=state.copy(): i.step(s, cfg.sim.frame_dt))
    queries[f"integrator step ({args.ships} ships)"] = steps
    return queries


def time_in_turn(forms: dict, repeats: int) -> dict:
    """{form: (repeats,) seconds}: each form called once per round, in turn, after one warm call each."""
    import time
    for call in forms.values():
        call()
    out = {f: np.empty(repeats) for f in forms}
    for i in range(repeats):
        for form, call in forms.items():
            t0 = time.perf_counter()
            call()
            out[form][i] = time.perf_counter() - t0
    return out


def report(name: str, load: int, times: dict) -> bool:
    """Print one query's line at one load; True when its targets hold."""
    med = {f: float(np.median(t)) for f, t in times.items()}
    p99 = {f: float(np.percentile(t, 99)) for f, t in times.items()}
    adaptive = max(med["adaptive"] / med["serial"], p99["adaptive"] / p99["serial"])
    ok = adaptive <= TARGET_ADAPTIVE
    line = (f"load {load}: {name}: serial {1e6 * med['serial']:.0f} us (p99 {1e6 * p99['serial']:.0f}), "
            f"parallel / serial {med['parallel'] / med['serial']:.2f} (p99 {p99['parallel'] / p99['serial']:.2f}), "
            f"adaptive / serial {med['adaptive'] / med['serial']:.2f} (p99 {p99['adaptive'] / p99['serial']:.2f})")
    if load == 0:
        line += f"; parallel quiet target <= {TARGET_PARALLEL_QUIET}"
    print(line + ("" if ok else f"  [adaptive over {TARGET_ADAPTIVE}x serial]"))
    return ok
