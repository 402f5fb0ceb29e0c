"""`spaceship-sim bench compile`: where a first start's numba compile time goes, kernel family by
kernel family (the module a kernel lives in), from numba's own compile events (compile_log.py), and
how long a first start takes to reach full collision detection.

A kernel's own time is its compile event's span less its callees'. A kernel compiled for more than
one signature (another dtype, layout or literal) is listed: each is a second compile a first start
pays. Loads from numba's cache fire no event and cost ~0.3 s a kernel at most.

By default the world's warm-up (World.from_config with warm=True: every kernel a frame of the
config uses, and the exact level's strategy) runs in a child process on an empty kernel cache (a
fresh $SPACESHIP_SIM_CACHE_DIR), so the figures are a first start's whatever this machine has cached;
the warm-up's helper process (sim/compile_ahead.py) reports its compiles to the same log.
`--cache current` keeps the cache as it is and shows what is left to compile. "Full detection" is
the time from the start of that process (Python's start, imports, trees and warm-up) until every
kernel a frame uses is ready: what `spaceship-sim fly` waits for on a first start before it drops
the bounding spheres, without the window's own work.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

from ..cli.args import integer
from ..compile_log import LOG_ENV, CompileLog, read_shared  # noqa: F401 (CompileLog: the bench's log)
from ..config import load_config, shipped_config
from ..kernel_cache import CACHE_ENV


def register(sub) -> None:
    p = sub.add_parser("compile", help="numba compile time of a first start, per kernel family, and second compiles")
    p.add_argument("--config", default=shipped_config("default.toml"),
                   help="scenario whose kernels are compiled (default: configs/default.toml)")
    p.add_argument("--cache", choices=("cold", "current"), default="cold",
                   help="cold: an empty numba cache in a child process (a first start); current: this machine's cache")
    p.add_argument("--top", type=integer(1, 10_000), default=10, help="slowest kernels listed [-]")
    p.add_argument("--signatures", action="store_true", help="also list every signature compiled, slowest first")
    p.set_defaults(func=run)


def family(module: str) -> str:
    """A kernel family: its module without the package name ('ssv.query')."""
    return module.removeprefix("spaceship_sim.")


def summarize(records) -> dict:
    """{'families': [(family, kernels, signatures, own seconds)], slowest first, 'second': [(kernel,
    signatures)], 'kernels': [(kernel, own seconds)], slowest first, 'signatures': [(kernel, signature,
    own seconds)], slowest first, 'total': seconds}."""
    fams, sigs = defaultdict(lambda: [set(), 0, 0.0]), defaultdict(list)
    for module, name, sig, own, _ in records:
        f = fams[family(module)]
        f[0].add(name)
        f[1] += 1
        f[2] += own
        sigs[f"{family(module)}.{name}"].append((sig, own))
    return dict(families=sorted(((k, len(v[0]), v[1], v[2]) for k, v in fams.items()), key=lambda r: -r[3]),
                second=sorted((k, [s for s, _ in v]) for k, v in sigs.items() if len(v) > 1),
                kernels=sorted(((k, sum(t for _, t in v)) for k, v in sigs.items()), key=lambda r: -r[1]),
                signatures=sorted(((k, s, t) for k, v in sigs.items() for s, t in v), key=lambda r: -r[2]),
                total=sum(r[3] for r in records))


def warm_world(config_path: str, since: float | None = None) -> dict:
    """Compile (or load) every kernel the scenario's frames use, recording the compiles (this
    process's and, through $SPACESHIP_SIM_COMPILE_LOG, its helper's): the summary plus 'wall'
    (seconds the warm-up took, trees and loads included), 'ready' (seconds from `since`, a
    time.time() reading — default: the call — until full detection) and 'helper' (compile
    seconds in helper processes)."""
    from ..sim.world import World

    t_ready = time.time() if since is None else since
    cfg = load_config(config_path)
    shared = os.environ.get(LOG_ENV)
    t0 = time.perf_counter()
    with CompileLog() as log:
        World.from_config(cfg, warm=True, notify=None)
    wall, ready = time.perf_counter() - t0, time.time() - t_ready
    helper = [r[1:] for r in read_shared(shared)] if shared else []
    return dict(summarize(log.records + helper), wall=wall, ready=ready, helper=sum(r[3] for r in helper))


def _cold(config_path: str) -> dict:
    """warm_world in a child process on an empty kernel cache, 'ready' counted from its start."""
    with tempfile.TemporaryDirectory(prefix="spaceship-sim-cold-") as cache:
        env = dict(os.environ, **{CACHE_ENV: cache, LOG_ENV: os.path.join(cache, "compiles.jsonl")})
        code = ("import json, sys; from spaceship_sim.bench.bench_compile import warm_world; "
                "print(json.dumps(warm_world(sys.argv[1], float(sys.argv[2]))))")
        done = subprocess.run([sys.executable, "-c", code, config_path, repr(time.time())], env=env,
                              capture_output=True, text=True)
    if done.returncode:
        sys.stderr.write(done.stderr)
        raise SystemExit(done.returncode)
    return json.loads(done.stdout.strip().splitlines()[-1])


def load_line() -> str:
    """The machine's load, for the record: timings on a shared machine are only comparable within one."""
    try:
        one, five, _ = os.getloadavg()
    except OSError:
        return "load average unknown"
    return f"load average {one:.1f} (1 min), {five:.1f} (5 min) on {os.cpu_count()} CPUs"


def run(args) -> int:
    load_config(args.config)  # a bad scenario: one line, exit 2, before any child starts
    cold = args.cache == "cold"
    print(f"compiling the kernels of {args.config} ({'empty kernel cache' if cold else 'cache as is'}); {load_line()}")
    got = _cold(args.config) if cold else warm_world(args.config)
    print(f"full detection {got['ready']:.1f} s after the "
          + ("start (a first start: Python, imports, trees and every kernel of a frame)" if cold else "call"))
    print(f"warm-up {got['wall']:.1f} s, of which compiling {got['total']:.1f} s "
          f"({sum(f[2] for f in got['families'])} signatures"
          + (f"; {got['helper']:.1f} s of it in the warm-up's helper process, meanwhile)" if got["helper"] else ")"))
    print(f"  {'family':28s} {'kernels':>8s} {'signatures':>11s} {'compile [s]':>12s} {'share':>7s}")
    for name, kernels, signatures, own in got["families"]:
        print(f"  {name:28s} {kernels:8d} {signatures:11d} {own:12.2f} {own / max(got['total'], 1e-9):7.1%}")
    print(f"slowest kernels ({min(args.top, len(got['kernels']))}):")
    for name, own in got["kernels"][:args.top]:
        print(f"  {name:60s} {own:7.2f} s")
    if args.signatures:
        print(f"every signature ({len(got['signatures'])}):")
        for name, sig, own in got["signatures"]:
            print(f"  {own:7.2f} s  {name}{sig}")
    print(f"kernels compiled for more than one signature: {len(got['second'])}")
    for name, sigs in got["second"]:
        print(f"  {name}: " + " | ".join(sigs))
    return 0
