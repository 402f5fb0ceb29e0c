"""`spaceship-sim bench compile`: where a first start's numba compile time goes, kernel family by
kernel family (the module a kernel lives in), from numba's own compile events.

Every compile numba makes fires a "numba:compile" event around it, nested when a kernel compiles the
kernels it calls: a kernel's own time is its event's span less its callees'. A kernel compiled for
more than one signature (another dtype, layout or literal) is listed: each is a second compile a
first start pays. Loads from numba's cache fire no event and cost ~0.3 s a kernel at most.

By default the world's warm-up (World.from_config with warm=True: every kernel a frame of the
config uses) runs in a child process on an empty numba cache (a fresh folder in NUMBA_CACHE_DIR),
so the figures are a first start's whatever this machine has cached; `--cache current` keeps the
cache as it is and shows what is left to compile.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict

from ..cli.args import integer
from ..config import load_config, shipped_config


def register(sub) -> None:
    p = sub.add_parser("compile", help="numba compile time of a first start, per kernel family, and second compiles")
    p.add_argument("--config", default=shipped_config("default.toml"),
                   help="scenario whose kernels are compiled (default: configs/default.toml)")
    p.add_argument("--cache", choices=("cold", "current"), default="cold",
                   help="cold: an empty numba cache in a child process (a first start); current: this machine's cache")
    p.add_argument("--top", type=integer(1, 10_000), default=10, help="slowest kernels listed [-]")
    p.set_defaults(func=run)


class CompileLog:
    """numba compile events as records (module, qualified name, signature, own seconds, span seconds).
    Nested compiles (a kernel's callees) are taken out of their caller's own time."""

    def __init__(self):
        self.records, self._stacks, self._lock = [], defaultdict(list), threading.Lock()

    def notify(self, event) -> None:
        stack = self._stacks[threading.get_ident()]
        if event.is_start:
            stack.append([time.perf_counter(), 0.0])
            return
        start, inner = stack.pop()
        span = time.perf_counter() - start
        if stack:
            stack[-1][1] += span
        d = event.data["dispatcher"]
        with self._lock:
            self.records.append((d.py_func.__module__, d.py_func.__qualname__, str(tuple(event.data["args"])),
                                 span - inner, span))

    def __enter__(self) -> "CompileLog":
        from numba.core import event  # numba loads when a log starts, not when the command line is built

        class Relay(event.Listener):
            on_start = on_end = staticmethod(self.notify)
        self._relay = Relay()
        event.register("numba:compile", self._relay)
        return self

    def __exit__(self, *exc) -> None:
        from numba.core import event
        event.unregister("numba:compile", self._relay)


def family(module: str) -> str:
    """A kernel family: its module without the package name ('ssv.query')."""
    return module.removeprefix("spaceship_sim.")


def summarize(records) -> dict:
    """{'families': [(family, kernels, signatures, own seconds)], slowest first, 'second': [(kernel,
    signatures)], 'kernels': [(kernel, own seconds)], slowest first, 'total': seconds}."""
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
                total=sum(r[3] for r in records))


def warm_world(config_path: str) -> dict:
    """Compile (or load) every kernel the scenario's frames use, recording the compiles: the summary
    plus 'wall' (seconds the warm-up took, trees and loads included)."""
    from ..sim.world import World

    cfg = load_config(config_path)
    t0 = time.perf_counter()
    with CompileLog() as log:
        World.from_config(cfg, warm=True, notify=None)
    return dict(summarize(log.records), wall=time.perf_counter() - t0)


def _cold(config_path: str) -> dict:
    """warm_world in a child process on an empty numba cache."""
    with tempfile.TemporaryDirectory(prefix="spaceship-sim-numba-") as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        code = ("import json, sys; from spaceship_sim.bench.bench_compile import warm_world; "
                "print(json.dumps(warm_world(sys.argv[1])))")
        done = subprocess.run([sys.executable, "-c", code, config_path], env=env, capture_output=True, text=True)
    if done.returncode:
        sys.stderr.write(done.stderr)
        raise SystemExit(done.returncode)
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(args) -> int:
    load_config(args.config)  # a bad scenario: one line, exit 2, before any child starts
    print(f"compiling the kernels of {args.config} ({'empty numba cache' if args.cache == 'cold' else 'cache as is'})")
    got = _cold(args.config) if args.cache == "cold" else warm_world(args.config)
    print(f"warm-up {got['wall']:.1f} s, of which compiling {got['total']:.1f} s "
          f"({sum(f[2] for f in got['families'])} signatures)")
    print(f"  {'family':28s} {'kernels':>8s} {'signatures':>11s} {'compile [s]':>12s} {'share':>7s}")
    for name, kernels, signatures, own in got["families"]:
        print(f"  {name:28s} {kernels:8d} {signatures:11d} {own:12.2f} {own / max(got['total'], 1e-9):7.1%}")
    print(f"slowest kernels ({min(args.top, len(got['kernels']))}):")
    for name, own in got["kernels"][:args.top]:
        print(f"  {name:60s} {own:7.2f} s")
    print(f"kernels compiled for more than one signature: {len(got['second'])}")
    for name, sigs in got["second"]:
        print(f"  {name}: " + " | ".join(sigs))
    return 0
