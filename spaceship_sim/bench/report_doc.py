"""What `spaceship-sim bench report` writes, rendered from its saved data alone (report.json): the
README's headline-figures block, docs/BENCHMARKS.md and the ratio plot. Rendering the same file twice
gives the same text, so a test can hold the README's table to the report it was copied from.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from .bench_narrowphase import EXACT_ROWS
from .report_figures import KIND_WORDS, holds, num

# the README's block between these lines is the report's: replaced whole on every run
START = "<!-- headline figures: written by `spaceship-sim bench report`; edit the report, not this table -->"
END = "<!-- end of headline figures -->"
RULE_SIGNS = {">=": "≥", "<=": "≤"}


def cell(text: str) -> str:
    return str(text).replace("|", "\\|")


def table(head: list[str], rows: list[list]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + \
        ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]


def headline_table(report: dict) -> list[str]:
    """One row per figure: target, figure, verdict, peer, command (`the same command` when repeated)."""
    rows, last = [], None
    for f in report["figures"]:
        command = "the same command" if f["command"] == last else f"`{f['command']}`"
        rows.append([f["target"], f["figure"], f"**{f['verdict']}**", f["peer"], command])
        last = f["command"]
    return table(["target", "figure", "verdict", "peer, same run", "command"], rows)


def measured_line(report: dict) -> str:
    m = report["machine"]
    return (f"Measured {report['date']} on {m['cpu']} ({m['cores']} cores{pinning(m)}), load average "
            f"{load(m['load_before'])} before and {load(m['load_after'])} after; Python {m['python']}, "
            f"numba {report['packages'].get('numba')} ({report['threading_layer']}), python-fcl "
            f"{report['packages'].get('python-fcl')}; `{report['command']}`.")


def pinning(machine: dict) -> str:
    cpus = machine["cpus_allowed"]
    return "" if len(cpus) == machine["cores"] else f", run on CPU {', '.join(map(str, cpus))}"


def load(values) -> str:
    """A load average (1, 5, 15 minutes), or 'unknown' where the OS has none."""
    return " / ".join(f"{x:.2f}" for x in values) if values else "unknown"


def readme_block(report: dict, link: str) -> str:
    """The lines between START and END: when and where, the table, a link to the whole report."""
    return "\n".join([START, measured_line(report) + " Every figure is against its peer measured in the same "
                      f"run; the whole report, with its plots: [{Path(link).name}]({link}).", "",
                      *headline_table(report), END])


def readme_span(text: str, readme: Path) -> tuple[int, int]:
    """Where the block starts and ends in the README's text; InputError unless it has one of each marker."""
    if text.count(START) != 1 or text.count(END) != 1 or text.index(START) > text.index(END):
        raise InputError(readme, "headline figures", f"needs one line {START!r} and, after it, one line {END!r}")
    return text.index(START), text.index(END) + len(END)


def with_block(text: str, readme: Path, block: str) -> str:
    start, end = readme_span(text, readme)
    return text[:start] + block + text[end:]


def readme_block_of(text: str, readme: Path) -> str:
    start, end = readme_span(text, readme)
    return text[start:end]


# ---------------------------------------------------------------- docs/BENCHMARKS.md

def document(report: dict, pictures: list[str]) -> str:
    """docs/BENCHMARKS.md; pictures: the plots' paths relative to it, by name."""
    lines = ["# Benchmarks", "",
             f"Written by `{report['command']}` on {report['date']} ({report['profile']} profile). Do not edit by "
             "hand: run the command again, on a quiet machine (`taskset -c 1` pins it to one core). The README's "
             "headline figures are copied from this report's data (`report.json` beside the plots).", "",
             "## Machine", "", *machine_table(report), "",
             "## Headline figures", "", *headline_table(report), "", *agreement(report)]
    for f in report["figures"]:
        lines += figure_section(f)
    lines += strategy_section(report)
    lines += sweep_section(report["benches"], pictures)
    lines += ["## Plots", "", "Each narrow-phase figure against its target, and every method's µs per pair:", "",
              *[f"![{Path(p).stem}]({p})" for p in pictures if Path(p).stem in ("ratios", "narrowphase")]]
    return "\n".join(lines) + "\n"


def agreement(report: dict) -> list[str]:
    """A line on whether the verdicts are those of the report this one replaced (none: no line)."""
    prev = report.get("previous")
    if not prev:
        return []
    changed = [f"{f['target']}: {prev['verdicts'][f['key']]} → {f['verdict']}" for f in report["figures"]
               if prev["verdicts"].get(f["key"], f["verdict"]) != f["verdict"]]
    return [f"Against the report this one replaced ({prev['date']}, {prev['profile']} profile): "
            + ("every verdict the same." if not changed else "verdicts changed — " + "; ".join(changed) + "."), ""]


def machine_table(report: dict) -> list[str]:
    m = report["machine"]
    rows = [["date", f"{report['date']}, the benches took {report['minutes']:g} min"], ["CPU", m["cpu"]],
            ["cores", f"{m['cores']}{pinning(m)}"],
            ["load average (1, 5, 15 min)", f"before {load(m['load_before'])}, after {load(m['load_after'])}"],
            ["times the OS preempted the report", f"{m['preempted']:,}"],
            ["system", m["system"]], ["Python", m["python"]], ["numba threading layer", report["threading_layer"]]]
    rows += [[name, version] for name, version in report["packages"].items()]
    return table(["", ""], rows)


def figure_section(f: dict) -> list[str]:
    head = [k for k in f["values"][0] if k != "value"] if f["values"] else []
    rows = [[v[k] for k in head] + [num(v["value"])] for v in f["values"]]
    limit = "" if f["limit"] is None else f" (each value {RULE_SIGNS[f['rule']]} {f['limit']:g})"
    return [f"### {f['target']}", "", f"- command: `{f['command']}`", f"- peer, same run: {f['peer']}",
            f"- figure: {f['figure']}", f"- verdict: **{f['verdict']}**{limit}", "",
            *(table([*head, "value"], rows) if rows else []), ""]


def strategy_section(report: dict) -> list[str]:
    """Every exact strategy's µs per pair and its ratio to fcl's, per model and pose kind, first and
    all contacts (bench narrowphase's rows; ocst is timed with its trees built, first contact only)."""
    bench = report["benches"]["narrowphase"]
    us = {(r["model"], r["poses_kind"], r["method"]): float(r["us_per_pair"]) for r in bench["rows"]}
    sets = list(dict.fromkeys((r["model"], r["poses_kind"]) for r in bench["rows"]))
    names = [f"{m} (default)" if m == report["default_exact_level"] else m for m in EXACT_ROWS]
    lines = ["## Every exact strategy against fcl", "",
             f"µs per pair (÷ fcl's, same run), `{bench['command']}`; "
             + ("every verdict agreed with fcl's and brute force's." if bench["checks_ok"] else
                "**a verdict check failed** (the command prints which)."), ""]
    for contacts in ("first contact", "all contacts"):
        row_of = {m: row.replace("first contact", contacts) for m, row in EXACT_ROWS.items()}
        rows = [[model, KIND_WORDS.get(kind, kind)]
                + [per_pair(us.get((model, kind, row)), us.get((model, kind, row_of["fcl"]))) for row in row_of.values()]
                for model, kind in sets]
        lines += [f"{contacts}:", "", *table(["model", "poses", *names], rows), ""]
    return lines


def per_pair(us: float | None, peer: float | None) -> str:
    if us is None:
        return "—"
    return num(us) + (f" ({num(us / peer)}×)" if peer else "")


def sweep_section(benches: dict, pictures: list[str]) -> list[str]:
    lines = []
    for key, title in (("hubbard", "Lamps: frames within target against render load"),
                       ("hubbard_load", "The same under load")):
        if key not in benches:
            continue
        b = benches[key]
        rows = [[f"{r['render_ms']:g}", f"{r['slack_ms']:.3g}", pct(r["time_critical_within_target"]),
                 pct(r["exact_only_within_target"]), f"{r['time_critical_sim_median_ms']:.3g}"] for r in b["sweep"]]
        lines += [f"## {title}", "", f"`{b['command']}`", "",
                  *table(["render [ms]", "slack [ms]", "time-critical", "exact-only", "simulation median [ms]"], rows),
                  "", *[f"![{Path(p).stem}]({p})" for p in pictures
                        if Path(p).stem in (f"{key}_render_sweep", f"{key}_profiles")], ""]
    return lines


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


# ---------------------------------------------------------------- plot

def stem_colour(f: dict, x: float) -> str:
    if f["rule"] is None:
        return "#4c72b0"
    return "#55a868" if holds(x, f["limit"], f["rule"]) else "#c44e52"


def plot_ratios(path: Path, report: dict) -> None:
    """One panel per narrow-phase figure: its ratio per model and pose kind as a stem from 1 (as fast as
    the peer) on a log scale, green where it meets the target, red where not, and the target's line."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figs = [f for f in report["figures"] if f["values"] and "methods" in f["values"][0]]
    fig, axes = plt.subplots(len(figs), 1, figsize=(9, 0.25 * sum(len(f["values"]) for f in figs) + 1.1 * len(figs)),
                             squeeze=False)
    for ax, f in zip(axes[:, 0], figs):
        values = [v["value"] for v in f["values"]]
        several = len({v["methods"] for v in f["values"]}) > 1
        labels = [f"{v['model']} {v['kind']}" + (f" ({v['methods'].split(' ÷ ')[0]})" if several else "")
                  for v in f["values"]]
        colours = [stem_colour(f, x) for x in values]
        y = range(len(values))
        ax.hlines(y, 1.0, values, colors=colours, lw=2)
        ax.scatter(values, y, c=colours, zorder=3, s=18)
        ax.axvline(1.0, color="grey", lw=0.8)
        if f["limit"] is not None:
            ax.axvline(f["limit"], color="k", ls="--", lw=1, label=f"target {RULE_SIGNS[f['rule']]} {f['limit']:g}")
            ax.legend(fontsize=7, loc="best")
        ax.set_xscale("log")
        ax.set_yticks(y, labels, fontsize=7)
        ax.set_ylim(len(values) - 0.4, -0.6)  # first row on top, no stem on the frame
        ax.set_title(f"{f['figure'].split(':')[0]} ({f['target']}): {f['verdict']}", fontsize=8)
        ax.grid(axis="x", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
