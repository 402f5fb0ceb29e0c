"""bench intervals on a tiny run: a table per model, levels from 1 to the tree's depth, and the targets'
verdict line; bounds are never below the true distance (the medians are not negative)."""
import re

from spaceship_sim.cli.main import main


def test_bench_intervals_prints_a_table_per_model_and_the_verdicts(capsys):
    code = main(["bench", "intervals", "--model", "torus", "--poses", "4", "--depth", "2"])
    out = capsys.readouterr().out
    assert code in (0, 1)  # 1: a target not met (a benchmark's verdict, not an error)
    rows = [line.split() for line in out.splitlines() if re.match(r"\s+\d+\s", line)]
    assert [int(r[0]) for r in rows] == [1, 2]
    assert all(float(x) >= -1e-9 for r in rows for x in r[1:])
    assert re.search(r"torus: level 3 medial nan R \(target <= 0.05 R\) NOT met", out)


def test_bench_intervals_refuses_an_unknown_model(capsys):
    assert main(["bench", "intervals", "--model", "no-such-model"]) == 2
    assert "--model" in capsys.readouterr().err
