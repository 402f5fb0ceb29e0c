"""bench compile: numba's compile events summed per kernel family, callees out of their callers'
own time, kernels compiled twice listed, a helper process's compiles counted, the time to full
detection stated."""
from pathlib import Path

import numpy as np
from numba import njit

from spaceship_sim.bench.bench_compile import CompileLog, family, summarize
from spaceship_sim.cli.main import main
from spaceship_sim.compile_log import LOG_ENV, read_shared, shared_log

REPO = Path(__file__).resolve().parents[2]


def test_compile_log_counts_each_signature_once_and_callees_apart():
    @njit(cache=False)
    def inner(x):
        return x * 2

    @njit(cache=False)
    def outer(x):
        return inner(x) + 1

    with CompileLog() as log:
        outer(np.arange(3))          # outer and, nested, inner
        outer(np.arange(3))          # compiled already: no event
        outer(np.arange(3.0))        # a second signature of both
    ours = [r for r in log.records if r[0] == __name__]  # numba compiles its own helpers too
    names = [(name.rsplit(".", 1)[-1], sig) for _, name, sig, _, _ in ours]
    assert sorted(n for n, _ in names) == ["inner", "inner", "outer", "outer"]
    assert all(0 <= own <= span for *_, own, span in log.records)
    spans = {(n.rsplit(".", 1)[-1], s): (own, span) for _, n, s, own, span in ours}
    for sig in {s for n, s in names if n == "outer"}:  # the caller's span holds its callee's
        assert spans["outer", sig][1] >= spans["outer", sig][0] + spans["inner", sig][1] * 0.999
    got = summarize(log.records)
    mine = [f for f in got["families"] if f[0] == family(__name__)]
    assert mine == [(family(__name__), 2, 4, sum(own for *_, own, _ in ours))]
    assert sorted(k.rsplit(".", 1)[-1] for k, _ in got["second"]) == ["inner", "outer"]
    assert abs(got["total"] - sum(own for *_, own, _ in log.records)) < 1e-12


def test_family_is_the_module_inside_the_package():
    assert family("spaceship_sim.ssv.query") == "ssv.query" and family("other.mod") == "other.mod"


def test_a_helper_process_appends_its_compiles_to_the_shared_log(tmp_path, monkeypatch):
    @njit(cache=False)
    def twice(x):
        return 2 * x

    path = tmp_path / "compiles.jsonl"
    monkeypatch.setenv(LOG_ENV, str(path))
    with shared_log("helper"):
        twice(1.5)
    got = [r for r in read_shared(str(path)) if r[2].endswith("twice")]
    assert len(got) == 1 and got[0][:2] == ("helper", __name__) and 0 <= got[0][4] <= got[0][5]
    monkeypatch.delenv(LOG_ENV)
    assert shared_log("helper") is None and read_shared(str(tmp_path / "none.jsonl")) == []


def test_the_report_states_the_time_to_full_detection_and_every_signature(capsys):
    assert main(["bench", "compile", "--cache", "current", "--config", str(REPO / "configs/lamps.toml"),
                 "--signatures", "--top", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("compiling the kernels of") and "load average" in out[0]
    assert out[1].startswith("full detection ") and out[1].endswith(" s after the call")
    assert out[2].startswith("warm-up ") and any(line.startswith("every signature (") for line in out)
