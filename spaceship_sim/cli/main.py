"""`spaceship-sim` command line: one subcommand per job.

Each command lives in its own module exposing `register(subparsers)`, which adds an argparse
parser whose `func(args) -> int` runs it. Modules are imported here only for registration;
GL libraries are imported inside the app commands' functions, never at registration time.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from .args import COMMAND_LINE
from .. import fault_hint
from ..errors import InputError
from ..files import Terminated, interruption, terminate_as_interrupt

# (module, attribute) pairs, in the order `--help` lists them
COMMANDS = [
    ("spaceship_sim.cli.run", "register"),            # run: headless frame-timing run
    ("spaceship_sim.cli.check_config", "register"),   # check-config
    ("spaceship_sim.cli.build_trees", "register"),    # build-trees
    ("spaceship_sim.cli.sweep", "register"),          # sweep: a grid of runs on dask
    ("spaceship_sim.cli.fly", "register"),            # fly, demo
    ("spaceship_sim.cli.clear_cache", "register"),    # clear-cache
]
BENCHES = [
    "spaceship_sim.bench.bench_dynamics",
    "spaceship_sim.bench.bench_broadphase",
    "spaceship_sim.bench.bench_narrowphase",
    "spaceship_sim.bench.bench_intervals",  # separation intervals per sphere level, medial against octree
    "spaceship_sim.bench.bench_threads",  # serial, parallel and the adaptive thread choice under CPU load
    "spaceship_sim.bench.bench_stalls",  # how often the machine itself runs a fixed kernel slow
    "spaceship_sim.bench.bench_hubbard",
    "spaceship_sim.bench.bench_multibody",
    "spaceship_sim.bench.bench_ocst",
    "spaceship_sim.bench.bench_sweep",  # sweep cells and tree builds: serial vs dask workers
    "spaceship_sim.bench.bench_compile",
    "spaceship_sim.bench.report",  # runs bench narrowphase and bench hubbard: the headline figures
]


class Parser(argparse.ArgumentParser):
    """argparse whose errors are InputErrors: one line naming the flag, exit 2 through `main`
    (argparse's own error prints the usage too and exits from deep inside parsing)."""

    def error(self, message: str):
        head, sep, problem = message.partition(": ")
        if sep and head.startswith("argument "):
            raise InputError(COMMAND_LINE, head.removeprefix("argument "), problem)
        raise InputError(COMMAND_LINE, "", message)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="spaceship-sim", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module, attr in COMMANDS:
        _register(module, attr, sub)
    bench = sub.add_parser("bench", help="benchmarks that print ratios against a reference measured in the same run")
    bench_sub = bench.add_subparsers(dest="bench", required=True, metavar="WHAT")
    for module in BENCHES:
        _register(module, "register", bench_sub)
    return parser


def _register(module: str, attr: str, sub) -> None:
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name != module:  # a real missing dependency inside the module: surface it
            raise
        return  # command not built yet
    getattr(mod, attr)(sub)


def main(argv: list[str] | None = None) -> int:
    fault_hint.install()  # a crash in compiled code names clear-cache
    terminate_as_interrupt()  # SIGTERM cleans up as Ctrl-C does: no partial file stays behind
    try:
        args = build_parser().parse_args(argv)
        return int(args.func(args) or 0)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        return _interrupted(e)
    except Exception as e:
        signal = interruption(e)
        if signal is None:
            raise
        return _interrupted(signal)


def _interrupted(signal: KeyboardInterrupt) -> int:
    """Ctrl-C or SIGTERM: the partial files are gone by now (each writer discards its own)."""
    terminated = isinstance(signal, Terminated)
    print("terminated" if terminated else "interrupted", file=sys.stderr)
    return 143 if terminated else 130


if __name__ == "__main__":
    sys.exit(main())
