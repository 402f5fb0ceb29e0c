"""`spaceship-sim bench ocst`, memory part: one lamps run per stand-in render load beside the prebuilt
octree's reference, the footprint section (resident spheres as % of the full tree, why they are
held), what a single contact builds, and the csv and plot. The runs read a TickClock, so the levels
reached and the resident spheres are the same on any machine."""
import csv

from spaceship_sim.bench import bench_ocst
from spaceship_sim.cli.main import build_parser
from spaceship_sim.clock import TickClock


def test_memory_part_reports_a_footprint_per_render_load(tmp_path, capsys):
    out = tmp_path / "o"
    args = build_parser().parse_args(["bench", "ocst", "--part", "memory", "--frames", "12", "--render-ms", "31,0",
                                      "--depth", "3", "--evict-after", "0.2", "--out", str(out)])
    assert args.render_ms == [31.0, 0.0] and args.depth == 3
    assert bench_ocst.run(args, clock=TickClock(1e-5)) == 0
    printed = capsys.readouterr().out
    for load in ("31", "0"):
        assert f"render {load} ms, depth 3, prebuilt octree (reference)" in printed
        assert f"render {load} ms, depth 3, ocst, evict after 0.2 s" in printed
    assert printed.count("ms a frame; frame time median") == 2  # the time spent building, per ocst run
    table = printed[printed.index("footprint:"):].splitlines()
    assert "depth 3" in table[0] and "12 frames" in table[0]
    loads = [line.split() for line in table[2:4]]
    assert [row[0] for row in loads] == ["31", "0"] and all(row[-1] in ("met", "missed") for row in loads)
    single = printed[printed.index("one lamp pair, each on a fresh bank"):].splitlines()[1:7]
    assert all("of the full tree" in line for line in single)
    assert "deep contact, then to the triangles" in single[3] and "colliding True" in single[3]
    assert "deep contact, first only, then to the triangles" in single[5] and "colliding True" in single[5]
    spheres = [int(line.split(" spheres resident")[0].split()[-1]) for line in single]
    assert spheres[5] < spheres[3]  # one contact wanted: depth-first from the witness builds less
    rows = list(csv.DictReader(open(out / "ocst_resident.csv")))
    assert len(rows) == 24 and {r["render_ms"] for r in rows} == {"31.0", "0.0"}
    for r in rows:  # every resident sphere has one reason
        parts = sum(int(r[k]) for k in ("roots", "in_use", "kept", "never_used"))
        assert parts == int(r["resident"]) <= int(r["full"])
    assert (out / "ocst_resident.png").stat().st_size > 0


def _capped_run(tmp_path, *cap):
    """The peak resident spheres of each frame of a 12-frame lamps run at render 0 ms, depth 3, under `cap`."""
    args = build_parser().parse_args(["bench", "ocst", "--part", "memory", "--frames", "12", "--render-ms", "0",
                                      "--depth", "3", "--evict-after", "2", "--out", str(tmp_path), *cap])
    assert bench_ocst.run(args, clock=TickClock(1e-5)) == 0
    rows = list(csv.DictReader(open(tmp_path / "ocst_resident.csv")))
    assert all(int(r["peak"]) >= int(r["resident"]) for r in rows)  # the peak is within the frame
    return [int(r["peak"]) for r in rows]


def test_max_nodes_and_max_share_cap_the_ocst_runs(tmp_path, capsys):
    """--max-nodes and --max-share reach the on-collide banks: the runs hold fewer spheres than
    without a cap (past it only by spheres the sample's pairs hold: test_ocst's tests), and the
    table gives the cap as a share of the full tree."""
    free = _capped_run(tmp_path / "free", "--max-share", "1")
    assert "  0        2   none" in capsys.readouterr().out
    nodes = _capped_run(tmp_path / "nodes", "--max-nodes", "16")
    assert "ocst, evict after 2 s, cap 16 (10.5%):" in capsys.readouterr().out
    share = _capped_run(tmp_path / "share", "--max-share", "0.1")  # 153 spheres: a cap of 15
    assert "ocst, evict after 2 s, cap 15 (9.8%):" in capsys.readouterr().out
    assert max(nodes) < max(free) and max(share) < max(free)
