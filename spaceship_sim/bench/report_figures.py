"""The headline targets of `spaceship-sim bench report` and their verdicts, from the report's saved data.

A figure is a target, the figure measured for it, the peer it was measured against in the same run,
the command that measured it and a verdict: "met", "not met", "not measured" (its peer or its rows
missing, e.g. without python-fcl) or "no target" (shown beside its peer, nothing promised). Every
function here reads only the saved data (docs/benchmarks/report.json's "benches"), so a figure can be
recomputed from the file at any time and the README's table checked against it.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from .bench_intervals import TARGET_FRACTION, TARGET_LEVEL
from .bench_narrowphase import FclPair

MET, NOT_MET, NOT_MEASURED, NO_TARGET = "met", "not met", "not measured", "no target"
KIND_WORDS = {"deep": "deep", "shallow": "near-touching"}  # bench narrowphase's pose kinds, as the docs say them
FCL_FIRST, FCL_ALL = FclPair.FIRST, FclPair.ALL  # bench narrowphase's rows of the peer
WITHIN = 0.99            # share of frames within target the lamps target asks for
SLACK_MS = 1.0           # ... at every stand-in render up to the target frame time minus this
TOLERANCE_MS = 1e-6      # a render of 32.3 ms counts as target - 1 ms (33.33 - 1 = 32.33 ms)
NARROWER = 3.0           # verdict-then-tighten's interval width this many times narrower than verdict-only ...
NARROWER_RENDER_MS = 31  # ... on the lamps at this stand-in render,
SAME_FRAMES = 0.005      # with frames within target within this share of each other (~one frame in 300)


@dataclass(frozen=True)
class Figure:
    key: str
    target: str
    figure: str
    peer: str
    command: str
    verdict: str
    limit: float | None  # the number each value is held to (None: no target)
    rule: str | None     # how: ">=" or "<="
    values: list  # a dict per measured set (its "value" and where it was measured): what the verdict read


@dataclass(frozen=True)
class RatioTarget:
    """us[numerator] / us[denominator] per model and pose kind, for each (numerator, denominator) pair;
    met when every ratio is >= at_least (or <= at_most); neither: no target."""
    key: str
    target: str
    label: str
    peer: str
    pairs: tuple
    at_least: float | None = None
    at_most: float | None = None

    @property
    def limit(self) -> float | None:
        return self.at_least if self.at_least is not None else self.at_most

    @property
    def rule(self) -> str | None:
        return ">=" if self.at_least is not None else "<=" if self.at_most is not None else None

    def holds(self, ratio: float) -> bool:
        return holds(ratio, self.limit, self.rule)


RATIO_TARGETS = (
    RatioTarget("level2_vs_fcl", "sphere level 2 ≥ 10× faster than fcl's first-contact collide, every model and "
                "pose kind", "fcl ÷ level 2", "python-fcl `collide` (OBBRSS), first contact",
                ((FCL_FIRST, "sphere level 2"),), at_least=10.0),
    RatioTarget("ssv_first_vs_fcl", "SSV exact first contact ≤ 1× fcl's time, every model and pose kind",
                "SSV ÷ fcl", "python-fcl `collide`, first contact", (("ssv collide, first contact", FCL_FIRST),),
                at_most=1.0),
    RatioTarget("ssv_all_vs_fcl", "SSV all contacts ≤ 0.5× fcl's all contacts, every model and pose kind",
                "SSV ÷ fcl", "python-fcl `collide`, all contacts", (("ssv collide, all contacts", FCL_ALL),),
                at_most=0.5),
    RatioTarget("faceoctree_vs_leaves", "face-octree exact level within 2× of the sphere leaves' (first and all "
                "contacts)", "face octree ÷ sphere leaves", "the sphere leaves' exact level",
                (("faceoctree, first contact", "exact, first contact"),
                 ("faceoctree, all contacts", "exact, all contacts")), at_most=2.0),
    RatioTarget("leaves_vs_fcl", "the sphere trees' own exact level (`sphere_leaves`) against fcl", "sphere_leaves ÷ fcl",
                "python-fcl `collide`, first contact", (("exact, first contact", FCL_FIRST),)),
)


def holds(x: float, limit: float, rule: str) -> bool:
    return x >= limit if rule == ">=" else x <= limit


def verdict(oks: list[bool], has_target: bool = True) -> str:
    if not has_target:
        return NO_TARGET
    if not oks:
        return NOT_MEASURED
    return MET if all(oks) else NOT_MET


def ratio_values(spec: RatioTarget, rows: list[dict]) -> list[dict]:
    """{model, kind, methods, value: the ratio} per model, pose kind and method pair in bench
    narrowphase's rows (a pair missing from a set, e.g. fcl's without python-fcl, gives no value)."""
    us = {(r["model"], r["poses_kind"], r["method"]): float(r["us_per_pair"]) for r in rows}
    values = []
    for model, kind in dict.fromkeys((r["model"], r["poses_kind"]) for r in rows):
        for num, den in spec.pairs:
            if (model, kind, num) in us and (model, kind, den) in us:
                values.append(dict(model=model, kind=KIND_WORDS.get(kind, kind), methods=f"{num} ÷ {den}",
                                   value=us[model, kind, num] / us[model, kind, den]))
    return values


def ratio_figure(spec: RatioTarget, bench: dict) -> Figure:
    values = ratio_values(spec, bench["rows"])
    text = spans(values) if values else "not measured"
    return Figure(spec.key, spec.target, f"{spec.label}: {text}", spec.peer, bench["command"],
                  verdict([spec.holds(v["value"]) for v in values] if spec.rule else [], spec.rule is not None),
                  spec.limit, spec.rule, values)


def spans(values: list[dict]) -> str:
    """'deep 7.2× (fighter) – 15.6× (lamp); near-touching 32× (torus) – 63× (lamp)': per pose kind, the
    smallest and the largest ratio and where they were measured."""
    return "; ".join(f"{kind} " + extremes([v for v in values if v["kind"] == kind], lambda v: v["model"], "×")
                     for kind in dict.fromkeys(v["kind"] for v in values))


def num(x: float) -> str:
    """Three significant digits, never an exponent: 0.251, 3.24, 882, 14,100."""
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def percent(x: float) -> str:
    return f"{100 * x:.1f}".removesuffix(".0")


def sweep_figure(bench: dict, key: str, with_target: bool) -> Figure:
    """Frames within target, time-critical against exact-only, per stand-in render (bench hubbard's
    render_sweep rows); the target counts the renders up to target - SLACK_MS."""
    rows = bench["sweep"]
    counted = [r for r in rows if r["slack_ms"] >= SLACK_MS - TOLERANCE_MS]
    renders = " / ".join(f"{r['render_ms']:g}" for r in rows)
    load = f", {bench['cpu_load']} busy processes beside" if bench.get("cpu_load") else ""
    target = (f"lamps: time-critical ≥ {percent(WITHIN)}% of frames within target at every stand-in render up to "
              f"target − {SLACK_MS:g} ms" if with_target else "lamps under load: frames within target") + load
    return Figure(key, target,
                  "time-critical " + " / ".join(percent(r["time_critical_within_target"]) for r in rows)
                  + f"% at {renders} ms", "exact-only " + " / ".join(percent(r["exact_only_within_target"]) for r in rows)
                  + "%", bench["command"],
                  verdict([holds(r["time_critical_within_target"], WITHIN, ">=") for r in counted], with_target),
                  WITHIN if with_target else None, ">=" if with_target else None,
                  [dict(render_ms=r["render_ms"], value=r["time_critical_within_target"]) for r in counted])


def interval_figures(bench: dict) -> list[Figure]:
    """The separation intervals' targets from bench intervals' rows (per model, tree method and level:
    medians over near-touching poses of (upper - true distance) / R, "spheres"): at the target level,
    medial trees, every model within the target fraction of R; and medial's bound over octree's at
    most 1 at every level both trees have."""
    spheres = {(r["model"], r["method"], int(r["level"])): float(r["spheres"]) for r in bench["rows"]}
    models = list(dict.fromkeys(r["model"] for r in bench["rows"]))
    at = [dict(model=m, value=spheres[m, "medial", TARGET_LEVEL]) for m in models
          if (m, "medial", TARGET_LEVEL) in spheres]
    ratios = [dict(model=m, level=k, value=v / spheres[m, "octree", k]) for (m, method, k), v in spheres.items()
              if method == "medial" and spheres.get((m, "octree", k), 0.0) > 0.0]
    return [
        Figure("intervals_level", f"separation intervals: median (upper − true) ≤ {TARGET_FRACTION:g} R at sphere "
               f"level {TARGET_LEVEL}, medial trees, near-touching poses, every model",
               f"(upper − true) / R: {extremes(at, lambda v: v['model'])}", "the true distance, same poses",
               bench["command"], verdict([holds(v["value"], TARGET_FRACTION, "<=") for v in at]),
               TARGET_FRACTION, "<=", at),
        Figure("intervals_medial_vs_octree", "separation intervals: medial trees' upper bound tighter than the "
               "octree's at every level, every model",
               f"medial ÷ octree: {extremes(ratios, model_level)}",
               "octree trees, same poses", bench["command"], verdict([holds(v["value"], 1.0, "<=") for v in ratios]),
               1.0, "<=", ratios)]


def narrowing_figure(bench: dict) -> Figure:
    """Verdict-then-tighten against verdict-only (bench hubbard --intervals-ab) at NARROWER_RENDER_MS:
    the median interval width narrower by NARROWER at least, frames within target the same within
    SAME_FRAMES; not measured without the A/B's columns."""
    rows = [r for r in bench["sweep"] if r["render_ms"] == NARROWER_RENDER_MS
            and r.get("time_critical_verdict_width_median_m") and r.get("time_critical_width_median_m")]
    values = [dict(render_ms=r["render_ms"], value=r["time_critical_verdict_width_median_m"] / r["time_critical_width_median_m"],
                   frames=r["time_critical_within_target"], frames_verdict_only=r["time_critical_verdict_within_target"])
              for r in rows]
    shown = "; ".join(f"{num(v['value'])}× narrower ({percent(v['frames'])}% of frames within target)" for v in values)
    return Figure("intervals_narrower", f"lamps at a {NARROWER_RENDER_MS} ms stand-in render: separation intervals "
                  f"≥ {NARROWER:g}× narrower with verdict-then-tighten (the default) than verdict-only, frames "
                  "within target unchanged", f"median width {shown or 'not measured'}",
                  "verdict-only: " + "; ".join(f"{percent(v['frames_verdict_only'])}% of frames within target"
                                               for v in values),
                  bench["command"], verdict([holds(v["value"], NARROWER, ">=")
                                             and abs(v["frames"] - v["frames_verdict_only"]) <= SAME_FRAMES
                                             for v in values]), NARROWER, ">=", values)


def model_level(value: dict) -> str:
    return f"{value['model']} level {value['level']}"


def extremes(values: list[dict], where, unit: str = "") -> str:
    """'0.029 (torus) – 0.049 (lamp)': the smallest and the largest value (ties: by where) and where
    each was measured; 'not measured' where there is none."""
    if not values:
        return "not measured"
    lo, hi = (pick(values, key=lambda v: (v["value"], where(v))) for pick in (min, max))
    return f"{num(lo['value'])}{unit} ({where(lo)})" + (f" – {num(hi['value'])}{unit} ({where(hi)})" if hi is not lo else "")


def figures(benches: dict) -> list[Figure]:
    """Every headline figure of the saved bench data, in the order the tables list them."""
    out = [ratio_figure(spec, benches["narrowphase"]) for spec in RATIO_TARGETS]
    if "intervals" in benches:
        out += interval_figures(benches["intervals"])
    out.append(sweep_figure(benches["hubbard"], "lamps_sweep", True))
    out.append(narrowing_figure(benches["hubbard"]))
    if "hubbard_load" in benches:
        out.append(sweep_figure(benches["hubbard_load"], "lamps_sweep_load", False))
    return out


def as_dicts(figs: list[Figure]) -> list[dict]:
    return [asdict(f) for f in figs]
