"""bench threads on a tiny run: a line per query with the three forms' ratios, and the layer named;
bad load lists refused with one line."""
import re

from spaceship_sim.cli.main import main


def test_bench_threads_prints_every_query_with_its_ratios(capsys):
    code = main(["bench", "threads", "--repeats", "5", "--cpu-load", "0", "--poses", "64", "--ships", "1000",
                 "--model", "torus"])
    out = capsys.readouterr().out
    assert code in (0, 1)  # 1: a ratio over its target (a benchmark's verdict, not an error)
    lines = [line for line in out.splitlines() if line.startswith("load 0: ")]
    assert len(lines) == 4 and all(re.search(r"adaptive / serial [\d.]+ \(p99 [\d.]+\)", line) for line in lines)
    assert "numba threading layer:" in out
    assert re.search(r"machine at load 0, a fixed 1 ms kernel back to back \(bench stalls\): median [\d.]+ ms", out)


def test_bench_threads_refuses_a_bad_load_list(capsys):
    assert main(["bench", "threads", "--cpu-load", "x"]) == 2
    assert "--cpu-load" in capsys.readouterr().err
