"""`spaceship-sim bench report`: the headline benchmarks, each against its peer in the same run, written
as docs/BENCHMARKS.md, its plots and its data (docs/benchmarks/: *.png, report.json), and the README's
headline-figures table, copied from that data.

The report runs the benches themselves in this process — `bench narrowphase` (sphere level 2, every
exact strategy and python-fcl on deep and near-touching poses, the project's meshes and trimesh's),
`bench intervals` (how tight the separation intervals are per sphere level, medial against octree trees)
and `bench hubbard` (the lamps' frames within target, time-critical against exact-only, over a sweep of
stand-in render loads; optionally again beside busy processes) — with the command lines it shows, and
reads back what they wrote. Beside the figures it records the machine (CPU, cores, the CPUs it may run
on, load average before and after), the date, the package versions and numba's threading layer.

Profiles: quick (under 10 minutes on a 2-core machine) and full (every model, 1,000 poses, 600 frames
and seven render loads). Figures are only comparable on a quiet machine: run it with nothing else
running, pinned to one core (`taskset -c 1 spaceship-sim bench report`).
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import platform
import shlex
import shutil
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

from ..cli.args import integer, new_file, output_folder
from ..config import CollisionConfig
from ..errors import InputError
from ..files import partial_prefix, read_input
from ..machine import LoadWatch, cpu_model
from ..sim.runs import staged_folder
from . import bench_hubbard, bench_intervals, bench_narrowphase
from .report_doc import document, plot_ratios, readme_block, readme_span, with_block
from .report_figures import as_dicts, figures

README_LIMIT = 1_000_000  # [bytes] a README to rewrite: the project's is 20 kB
REPORT_LIMIT = 50_000_000  # [bytes] a report.json to compare with: a full report's is ~0.2 MB
PACKAGES = ("spaceship_sim", "numpy", "numba", "scipy", "trimesh", "python-fcl", "matplotlib")


@dataclass(frozen=True)
class Profile:
    name: str
    narrowphase: tuple[str, ...]  # bench narrowphase's arguments (the report adds --csv and --plot)
    hubbard: tuple[str, ...]      # bench hubbard's (the report adds --out); must include --sweep-render
    intervals: tuple[str, ...]    # bench intervals' (the report adds --csv)


PROFILES = {p.name: p for p in (
    Profile("quick", ("--model", "lamp,fighter,torus,capsules", "--poses", "300", "--poses-kind", "both",
                      "--brute-poses", "1", "--repeat", "3", "--threads", "1"),
            ("--frames", "300", "--detectors", "medial,sphere_leaves", "--calls", "0", "--budgets", "0.1,1",
             "--sweep-render", "28,30,31,32.3", "--intervals-ab"),
            ("--model", "lamp,fighter,torus,capsules", "--poses", "200")),
    Profile("full", ("--poses", "1000", "--poses-kind", "both", "--brute-poses", "1", "--repeat", "3",
                     "--threads", "1"),
            ("--frames", "600", "--detectors", "medial,sphere_leaves", "--calls", "0",
             "--sweep-render", "20,26,28,30,31,32,32.3", "--intervals-ab"),
            ("--model", "lamp,fighter,torus,capsules", "--poses", "1000")),
)}


def register(sub) -> None:
    p = sub.add_parser("report", help="run the headline benchmarks, each against its peer, and write "
                                      "docs/BENCHMARKS.md, its plots and the README's headline figures",
                       description="Runs bench narrowphase (sphere level 2 and every exact strategy against "
                                   "python-fcl, deep and near-touching poses) and bench hubbard (lamps: frames "
                                   "within target, time-critical against exact-only, over render loads) in this "
                                   "process, and writes each figure with its command, its peer, its target and a "
                                   "verdict. Run it on a quiet machine, pinned to one core: "
                                   "taskset -c 1 spaceship-sim bench report")
    p.add_argument("--profile", choices=sorted(PROFILES), default="quick",
                   help="quick: four models, 300 poses, four render loads, meant to take under 10 minutes on 2 cores; "
                        "full: every model, 1,000 poses, seven render loads (the report says how long it took) "
                        "(default: %(default)s)")
    p.add_argument("--cpu-load", type=integer(0, 64), default=0, metavar="N",
                   help="also run the lamps sweep beside N busy processes (default: not)")
    p.add_argument("--out", type=output_folder, default="docs",
                   help="folder of BENCHMARKS.md and benchmarks/ (default: %(default)s)")
    p.add_argument("--readme", type=readme_path, default="README.md",
                   help="README whose headline-figures block is replaced; '' for none (default: %(default)s)")
    p.set_defaults(func=run)


def run(args, clock=None) -> int:
    """clock: what bench hubbard's frames read (tests pass a TickClock; default: the wall clock)."""
    command = "spaceship-sim bench report" + (f" --profile {args.profile}" if args.profile != "quick" else "") \
        + (f" --cpu-load {args.cpu_load}" if args.cpu_load else "")
    return make(PROFILES[args.profile], command, Path(args.out), readme_file(args.readme), args.cpu_load, clock)


def readme_path(text: str) -> str:
    """--readme: '' or an existing .md file that can be rewritten (its markers are checked in readme_file)."""
    if text and not Path(text).is_file():
        raise argparse.ArgumentTypeError(f"{text} is not a file")
    return new_file(text) if text else text


def readme_file(text: str) -> Path | None:
    """The README to update (None for ''), its markers checked before any bench runs."""
    if not text:
        return None
    path = Path(text)
    readme_span(read_input(path, README_LIMIT, "README").decode(errors="replace"), path)
    return path


def make(profile: Profile, command: str, out: Path, readme: Path | None, cpu_load: int = 0, clock=None) -> int:
    """Run the profile's benches, write the report under `out` and the README's block; 1 when a bench's
    verdict check failed (the report is written all the same), else 0."""
    previous = previous_verdicts(out / "benchmarks" / "report.json")
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        report = measure(profile, command, cpu_load, Path(tmp), clock) | dict(previous=previous)
        write(report, Path(tmp), out, readme)
    print(f"wrote {out / 'BENCHMARKS.md'}, {out / 'benchmarks'}" + (f" and {readme}'s headline figures" if readme else ""))
    for f in report["figures"]:
        print(f"  {f['verdict']:>12s}: {f['target']}")
    return 0 if report["benches"]["narrowphase"]["checks_ok"] else 1


def previous_verdicts(path: Path) -> dict | None:
    """{date, profile, verdicts: {figure key: verdict}} of the report at `path`, if there is a readable one:
    a second run on a quiet machine should give the same verdicts, and the new report says whether it did."""
    try:
        old = json.loads(read_input(path, REPORT_LIMIT, "report").decode())
        return dict(date=old["date"], profile=old["profile"], verdicts={f["key"]: f["verdict"] for f in old["figures"]})
    except (InputError, ValueError, KeyError, TypeError):
        return None


def measure(profile: Profile, command: str, cpu_load: int, work: Path, clock=None) -> dict:
    """The report's data: the benches' rows, the machine, the packages, and the figures taken from them."""
    watch, date, t0 = LoadWatch(), datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), time.monotonic()
    steps = [("narrowphase", lambda: run_narrowphase(profile.narrowphase, work)),
             ("intervals", lambda: run_intervals(profile.intervals, work)),
             ("hubbard", lambda: run_hubbard(profile.hubbard, work / "hubbard", clock))]
    if cpu_load:
        steps.append(("hubbard_load", lambda: run_hubbard((*profile.hubbard, "--cpu-load", str(cpu_load)),
                                                         work / "hubbard_load", clock)))
    benches = {}
    for i, (key, step) in enumerate(steps, 1):
        print(f"bench report [{i}/{len(steps)}]: {key}", flush=True)
        benches[key] = step()
    report = dict(command=command, profile=profile.name, date=date, machine=machine(watch),
                  packages=packages(), threading_layer=threading_layer(),
                  default_exact_level=CollisionConfig().exact_method, minutes=round((time.monotonic() - t0) / 60, 1),
                  benches=benches)
    report["figures"] = as_dicts(figures(benches))
    return report


def shown(argv) -> str:
    return "spaceship-sim " + shlex.join(argv)


def run_narrowphase(argv, work: Path) -> dict:
    """bench narrowphase in this process; its rows from its --csv."""
    from ..cli.main import build_parser
    line = ("bench", "narrowphase", *argv)
    args = build_parser().parse_args([*line, "--csv", str(work / "narrowphase.csv"), "--plot", str(work / "narrowphase.png")])
    code = bench_narrowphase.run(args)
    return dict(command=shown(line), rows=read_csv(work / "narrowphase.csv"), checks_ok=code == 0)


def run_intervals(argv, work: Path) -> dict:
    """bench intervals in this process; its rows from its --csv."""
    from ..cli.main import build_parser
    line = ("bench", "intervals", *argv)
    code = bench_intervals.run(build_parser().parse_args([*line, "--csv", str(work / "intervals.csv")]))
    return dict(command=shown(line), rows=read_csv(work / "intervals.csv"), targets_met=code == 0)


def run_hubbard(argv, folder: Path, clock=None) -> dict:
    """bench hubbard in this process; its render sweep and main runs from its render_sweep.csv and runs.csv."""
    from ..cli.main import build_parser
    line = ("bench", "hubbard", *argv)
    args = build_parser().parse_args([*line, "--out", str(folder)])
    bench_hubbard.run(args, clock=clock)
    return dict(command=shown(line), sweep=read_csv(folder / "render_sweep.csv"), runs=read_csv(folder / "runs.csv"),
                cpu_load=args.cpu_load)


def read_csv(path: Path) -> list[dict]:
    """The rows with numbers as numbers (NaN as None: JSON has no NaN)."""
    with open(path, newline="") as f:
        return [{k: number_or_text(v) for k, v in row.items()} for row in csv.DictReader(f)]


def number_or_text(text: str):
    if text in ("True", "False"):
        return text == "True"
    try:
        x = float(text)
    except ValueError:
        return text
    return None if math.isnan(x) else x


# ---------------------------------------------------------------- where and with what

def machine(watch: LoadWatch) -> dict:
    """The CPU, its cores and those this process may run on (taskset), and the load over the benches."""
    load = watch.figures()
    cores = load["cores"]
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(cores))
    return dict(cpu=cpu_model(), cores=cores, cpus_allowed=allowed, load_before=load["load_average_start"],
                load_after=load["load_average_end"], preempted=load["preempted"], system=platform.platform(),
                python=platform.python_version())


def packages() -> dict:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def threading_layer() -> str:
    import numba
    try:
        layer = numba.threading_layer()
    except ValueError:  # no parallel kernel has run in this process
        layer = f"not started ({numba.config.THREADING_LAYER} configured)"
    return f"{layer}, {numba.config.NUMBA_NUM_THREADS} threads"


# ---------------------------------------------------------------- writing

def pictures(work: Path, benches: dict) -> dict[str, Path]:
    """Name in docs/benchmarks/ -> the bench's own plot."""
    out = {"narrowphase.png": work / "narrowphase.png"}
    for key in ("hubbard", "hubbard_load"):
        if key in benches:
            out |= {f"{key}_render_sweep.png": work / key / "render_sweep.png",
                    f"{key}_profiles.png": work / key / "profiles.png"}
    return out


def write(report: dict, work: Path, out: Path, readme: Path | None) -> None:
    """docs/benchmarks/ all or nothing, then BENCHMARKS.md, then the README's block (each file replaced whole)."""
    names = pictures(work, report["benches"])
    with staged_folder(out / "benchmarks") as stage:
        stage.chmod(0o755)  # a temporary folder is private; this one is for every reader of the docs
        for name, source in names.items():
            shutil.copyfile(source, stage / name)
        plot_ratios(stage / "ratios.png", report)
        (stage / "report.json").write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
        doc = document(report, [f"benchmarks/{n}" for n in ("ratios.png", *names)])
    replace_text(out / "BENCHMARKS.md", doc)
    if readme is not None:
        link = Path(os.path.relpath(out / "BENCHMARKS.md", readme.parent)).as_posix()
        replace_text(readme, with_block(readme.read_text(), readme, readme_block(report, link)))


def replace_text(path: Path, text: str) -> None:
    """Write beside, then rename over: a reader sees the old file or the new one, never half of it
    (an interrupted write leaves a partial file that files.sweep_partials recognises)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=partial_prefix(path.name))
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
