"""Acceptance tests of the time-critical narrow phase on random poses: the exact level equals a
brute-force all-triangle-pairs test, sphere levels never miss a contact, the separation bound is
never below the true distance, and the frame-level refinement honours deadline and min_level."""
import time

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from spaceship_sim.clock import RecordingClock, TickClock
from spaceship_sim.narrowphase import TreeBank, TreeError, collide_pair, refine, refine_frame, refine_roots
from spaceship_sim.narrowphase.kernels import Leaves, complete_pairs, min_distance_all_pairs
from spaceship_sim.narrowphase.refine import tree_of
from spaceship_sim.narrowphase.reference import brute_force_pair, frontiers_ref, world_triangles

from narrow_helpers import hand_octree, random_pose, random_rotation

SETTINGS = settings(max_examples=20, deadline=None)


def build(vertices, faces, depth):
    """The project's octree builder when it exists, else the tests' own."""
    try:
        from spaceship_sim.spheretree import build_tree
    except ImportError:
        return hand_octree(vertices, faces, depth)
    return build_tree(vertices, faces, method="octree", branching=8, depth=depth)


@pytest.fixture(scope="module")
def trees(meshes):
    out = {name: build(v, f, 2) for name, (v, f) in meshes.items()}
    out["torus_hand3"] = hand_octree(*meshes["torus"], depth=3)
    out["box_hand1"] = hand_octree(*meshes["box"], depth=1)
    from spaceship_sim.spheretree import build_tree
    out["torus_medial"] = build_tree(*meshes["torus"], method="medial", branching=8, depth=2)
    try:
        from spaceship_sim.meshes import load_model
        lamp = load_model("lamp")
        out["lamp"] = build(lamp.vertices, lamp.faces, 2)
    except Exception:  # assets not there yet: generated meshes only
        pass
    return out


def sorted_pairs(p):
    p = np.asarray(p).reshape(-1, 2)
    return p[np.lexsort((p[:, 1], p[:, 0]))]


def true_distances(ta, Ta, tb, Tb):
    """(surface, solid) separation of the two placed ships: the smallest triangle–triangle
    distance (brute force over all pairs), and the same but 0 when one closed ship holds a
    vertex of the other (the trees' errors are measured to the solid for closed meshes)."""
    import trimesh
    TA, TB = world_triangles(ta.vertices, ta.faces, Ta), world_triangles(tb.vertices, tb.faces, Tb)
    d = min_distance_all_pairs(TA, TB)
    for t, T, other in ((ta, Ta, TB), (tb, Tb, TA)):
        m = trimesh.Trimesh(t.vertices @ T[:3, :3].T + T[:3, 3], t.faces, process=False)
        if m.is_watertight and m.contains(other[:, 0]).any():
            return d, 0.0
    return d, d


def pose_pair(rng, ta, tb, spread=1.0):
    """Poses whose bounding spheres overlap: centre distance up to spread x (r_a + r_b)."""
    ra, rb = ta.radius[0], tb.radius[0]
    Ta, Tb = random_pose(rng, 0.0), random_pose(rng, spread * (ra + rb))
    return Ta, Tb


NAMES = ["ico", "box", "torus", "torus_hand3", "box_hand1", "torus_medial", "lamp"]


@pytest.mark.parametrize("all_contacts", [True, False])
@SETTINGS
@given(st.integers(0, 2**32 - 1), st.sampled_from(NAMES), st.sampled_from(NAMES))
def test_exact_level_equals_brute_force_and_levels_cover_contacts(trees, all_contacts, seed, name_a, name_b):
    if name_a not in trees or name_b not in trees:
        pytest.skip("asset not available")
    ta, tb = trees[name_a], trees[name_b]
    rng = np.random.default_rng(seed)
    for _ in range(3):
        Ta, Tb = pose_pair(rng, ta, tb, spread=0.8)
        r = collide_pair(ta, Ta, tb, Tb, all_contacts=all_contacts)
        want = brute_force_pair(ta.vertices, ta.faces, Ta, tb.vertices, tb.faces, Tb)
        if all_contacts:
            assert np.array_equal(sorted_pairs(r.tri_pairs), want)
        else:  # first contact: one of the intersecting pairs, and only when there is one
            assert len(r.tri_pairs) == (len(want) > 0)
            assert {tuple(x) for x in r.tri_pairs} <= {tuple(x) for x in want}
        assert r.colliding == (len(want) > 0) and r.certain
        assert r.level == max(ta.depth, tb.depth) + 1 or not r.colliding
        if len(want):
            assert r.separation_bound == 0.0
            for L in range(max(ta.depth, tb.depth) + 1):  # coverage: every level sees the contact
                s = collide_pair(ta, Ta, tb, Tb, max_level=L, triangle_tests=False)
                assert s.colliding and s.level == L and not s.certain and len(s.sphere_pairs)


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.sampled_from(NAMES), st.sampled_from(NAMES))
def test_separation_bound_never_below_true_distance(trees, seed, name_a, name_b):
    if name_a not in trees or name_b not in trees:
        pytest.skip("asset not available")
    ta, tb = trees[name_a], trees[name_b]
    rng = np.random.default_rng(seed)
    Ta, Tb = pose_pair(rng, ta, tb, spread=1.0)
    surface, solid = true_distances(ta, Ta, tb, Tb)
    for L in range(max(ta.depth, tb.depth) + 1):
        r = collide_pair(ta, Ta, tb, Tb, max_level=L, triangle_tests=False)
        if r.colliding:
            assert r.separation_bound >= solid - 1e-9, (L, r.separation_bound, solid)
        else:  # "apart" is never wrong: the surfaces really are apart
            assert np.isinf(r.separation_bound) and surface > 0


def test_bound_is_tighter_than_error_sum(trees):
    """Witness points make the bound no worse than e_a + e_b of any colliding sphere pair."""
    ta = trees["torus"]
    rng = np.random.default_rng(3)
    seen = 0
    for _ in range(30):
        Ta, Tb = pose_pair(rng, ta, ta, spread=0.9)
        r = collide_pair(ta, Ta, ta, Tb, max_level=ta.depth, triangle_tests=False)
        if r.colliding:
            sp = r.sphere_pairs
            assert r.separation_bound <= (ta.error[sp[:, 0]] + ta.error[sp[:, 1]]).min() + 1e-12
            seen += 1
    assert seen > 5


@pytest.mark.parametrize("max_level", [0, 1, 2])
def test_bound_pairs_name_the_overlapping_pair_the_bound_comes_from(trees, max_level):
    rng = np.random.default_rng(8)
    bank, model_id, T, pairs = random_scene(trees, rng, 16, ["torus", "ico", "box"])
    r = refine_frame(bank, model_id, T, pairs, deadline=np.inf, max_level=max_level, triangle_tests=False)
    assert r.colliding.any() and np.all((r.bound_pairs[:, 0] >= 0) == r.colliding)
    for k in np.flatnonzero(r.colliding):
        (i, j), (a, b) = pairs[k], r.bound_pairs[k]
        ta, tb = bank.trees[model_id[i]], bank.trees[model_id[j]]
        ca, cb = (T[s][:3, :3] @ tree.center[n] + T[s][:3, 3] for s, tree, n in ((i, ta, a), (j, tb, b)))
        assert np.linalg.norm(ca - cb) <= ta.radius[a] + tb.radius[b] + 1e-9  # the pair overlaps
        wa, wb = (T[s][:3, :3] @ tree.witness[n] + T[s][:3, 3] for s, tree, n in ((i, ta, a), (j, tb, b)))
        assert r.separation_bound[k] == pytest.approx(min(ta.error[a] + tb.error[b], np.linalg.norm(wa - wb)),
                                                      rel=1e-9, abs=1e-12)


def random_scene(trees, rng, n, names):
    bank = TreeBank.from_trees([trees[k] for k in names])
    model_id = rng.integers(0, len(names), n)
    T = np.stack([random_pose(rng, 2.0) for _ in range(n)])
    pairs = np.array([(i, j) for i in range(n) for j in range(i + 1, n)])
    return bank, model_id, T, pairs


@pytest.mark.parametrize("seed", [0, 1])
def test_refine_frame_with_time_equals_collide_pair(trees, seed):
    rng = np.random.default_rng(seed)
    names = ["torus", "box_hand1", "torus_hand3", "ico"]  # unequal depths in one bank
    bank, model_id, T, pairs = random_scene(trees, rng, 14, names)  # 91 pairs: more than one batch
    clock = TickClock(1e-6)  # a deadline of 60 s is a million clock reads: never reached
    r = refine_frame(bank, model_id, T, pairs, deadline=clock() + 60, min_level=1, clock=clock)
    assert r.colliding.any() and (~r.colliding).any()
    hist = np.bincount(r.level[r.colliding], minlength=len(r.level_histogram))
    assert np.array_equal(hist, r.level_histogram)
    for k, (i, j) in enumerate(pairs):
        ta, tb = bank.trees[model_id[i]], bank.trees[model_id[j]]
        p = collide_pair(ta, T[i], tb, T[j])
        assert (r.colliding[k], r.level[k], r.certain[k]) == (p.colliding, p.level, p.certain)
        assert r.separation_bound[k] == p.separation_bound
        assert np.array_equal(sorted_pairs(r.tri_pairs[k]), sorted_pairs(p.tri_pairs))
        assert np.array_equal(sorted_pairs(r.sphere_pairs[k]), sorted_pairs(p.sphere_pairs))
        if p.colliding:
            assert np.allclose(r.contact_point[k], p.contact_point)
            assert np.isclose(np.linalg.norm(r.contact_normal[k]), 1.0)


@pytest.mark.parametrize("tries", [1, refine.LEAF_PAIRS_TRIED["prebuilt"], -1])
def test_first_contact_mode_agrees_with_all_contacts(trees, monkeypatch, tries):
    """First-contact mode tests the witness's leaves, then more colliding leaf pairs depth-first,
    `tries` in all (-1: to the end), then the rest of the leaf frontier whole; 1: the witness, then
    the whole frontier."""
    monkeypatch.setitem(refine.LEAF_PAIRS_TRIED, "prebuilt", tries)
    rng = np.random.default_rng(5)
    bank, model_id, T, pairs = random_scene(trees, rng, 24, ["torus", "ico", "box"])  # > 64 hits in one call
    full = refine_frame(bank, model_id, T, pairs, deadline=np.inf)
    first = refine_frame(bank, model_id, T, pairs, deadline=np.inf, all_contacts=False)
    assert full.colliding.any()
    assert np.array_equal(first.colliding, full.colliding) and np.array_equal(first.level, full.level)
    for f, a in zip(first.tri_pairs, full.tri_pairs):
        assert len(f) == (len(a) > 0) and {tuple(x) for x in f} <= {tuple(x) for x in a}
    # the rest of the answer does not depend on the mode (response reads contact_normal), except
    # where the witness's leaves held no contact and the search went on depth-first: the witness
    # reported is then a later colliding leaf pair (the one holding the contact, unless the row ran
    # out of tries and its whole frontier was tested)
    assert np.array_equal(first.certain, full.certain)
    assert np.array_equal(first.separation_bound, full.separation_bound)
    assert np.allclose(first.contact_normal, full.contact_normal)
    moved = 0
    for k, (f, a) in enumerate(zip(first.sphere_pairs, full.sphere_pairs)):
        if np.array_equal(sorted_pairs(f), sorted_pairs(a)):
            assert np.allclose(first.contact_point[k], full.contact_point[k], equal_nan=True)
            continue
        moved += 1
        (na, nb), (ta, tb) = f[-1], first.tri_pairs[k][0]
        tree_a, tree_b = (bank.trees[model_id[i]] for i in pairs[k])
        for tree, node, tri in ((tree_a, na, ta), (tree_b, nb, tb)):
            assert tree.child_count[node] == 0
            if tries == -1:
                assert tri in tree.leaf_tri_idx[tree.leaf_tri_ptr[node]:tree.leaf_tri_ptr[node + 1]]
    assert moved == 0 if tries == 1 else moved > 0  # the scene has contacts past the first witness


@pytest.mark.parametrize("min_level", [0, 1, 2])
def test_past_deadline_still_reaches_min_level(trees, min_level):
    rng = np.random.default_rng(7)
    bank, model_id, T, pairs = random_scene(trees, rng, 12, ["torus", "ico", "torus_hand3"])
    late = refine_frame(bank, model_id, T, pairs, deadline=time.perf_counter() - 1.0, min_level=min_level)
    full = refine_frame(bank, model_id, T, pairs, deadline=np.inf, min_level=min_level)
    hit = late.colliding
    assert hit.any()
    assert np.all(late.level[hit] == min_level) and not late.certain[hit].any()
    # a late answer may only err on the side of contact: everything apart is really apart
    assert not np.any(~late.colliding & full.colliding)
    assert np.all(late.separation_bound[full.colliding] >= 0)


@pytest.mark.parametrize("min_level", [1, 2])
def test_a_refinement_begun_past_its_deadline_reads_the_clock_at_its_ends_only(trees, min_level):
    """The forced levels run whatever the clock says; past them nothing can fit, so the clock is
    read where the refinement starts and where its summary ends, and nowhere between — on a
    TickClock, the answer of a deadline long past and of one just past are the same."""
    rng = np.random.default_rng(7)
    bank, model_id, T, pairs = random_scene(trees, rng, 12, ["torus", "ico", "torus_hand3"])
    clock = RecordingClock(TickClock(1.0))
    late = refine_frame(bank, model_id, T, pairs, deadline=clock(), min_level=min_level, clock=clock)
    assert late.colliding.any() and np.all(late.level[late.colliding] == min_level)
    assert clock.take() == [1.0, 2.0, 3.0], "the deadline's reading, the start and the summary's end"
    refine_frame(bank, model_id, T, pairs, deadline=clock() + 2.0, min_level=min_level, clock=clock)
    assert len(clock.take()) > 3, "a deadline not yet passed at the start is checked between levels"


@pytest.mark.parametrize("ticks", [2, 4, 8, 16, 24])
def test_any_deadline_gives_a_conservative_answer(trees, ticks):
    """Whatever the budget: nothing truly in contact is reported apart, every colliding pair is
    at min_level or deeper, and its bound is no tighter than the full answer allows. The budget
    is counted in clock reads (TickClock), so each case cuts refinement at the same place on
    any machine."""
    rng = np.random.default_rng(11)
    bank, model_id, T, pairs = random_scene(trees, rng, 16, ["torus_medial", "torus_hand3", "ico"])
    full = refine_frame(bank, model_id, T, pairs, deadline=np.inf)
    clock = TickClock(1.0)
    part = refine_frame(bank, model_id, T, pairs, deadline=clock() + ticks, min_level=1, clock=clock)
    assert not np.array_equal(part.level, full.level), "the budget cuts refinement short"
    assert np.all(part.colliding[full.colliding])
    assert np.all(part.level[part.colliding] >= 1)
    assert np.array_equal(np.bincount(part.level[part.colliding], minlength=len(part.level_histogram)),
                          part.level_histogram)
    sure = part.certain & part.colliding
    assert np.array_equal(part.colliding[part.certain], full.colliding[part.certain])
    assert np.all(part.separation_bound[sure] == 0.0)


def assert_held_to_the_budget(part, full, bank, some_tested):
    """A refinement cut short by its budget: the rows it tested agree with the full answer, every
    colliding row stays colliding (the untested at their sphere leaves); some_tested: this budget
    tests some colliding rows, not all."""
    tested, hit = part.certain, full.colliding
    assert np.array_equal(part.colliding[tested], full.colliding[tested])
    assert np.all(part.colliding[hit]) and np.all(part.level[hit & ~tested] <= bank.depth.max())
    if some_tested:
        assert 0 < np.sum(tested & hit) < np.sum(full.certain & hit)


@pytest.mark.parametrize("budget_us", [5, 60, 250, 1000, 4000])
def test_exact_rows_start_only_when_predicted_to_finish(trees, monkeypatch, budget_us):
    """One row's triangle tests cannot be cut, so the exact level starts a row only when its
    predicted cost fits the time left. On a clock where the triangle tests cost exactly what the
    cost model says (refine.CALL_UNITS + leaf triangles, at refine.EXACT_UNIT_COST), no budget is
    overrun; the rows left untested stay at their sphere leaves (a conservative answer), and the
    rows tested are exact."""
    clock = TickClock(1e-9)
    real = refine.exact_pairs

    def costly(*args):  # exact_pairs(leaves_a, leaves_b, pose, rows, ptr, fa, fb, first)
        tpa, tpb, fa, fb = Leaves(*args[0]).tri_ptr, Leaves(*args[1]).tri_ptr, args[5], args[6]
        units = refine.CALL_UNITS + np.sum(tpa[fa + 1] - tpa[fa] + tpb[fb + 1] - tpb[fb])
        clock.spend(refine.EXACT_UNIT_COST * units)
        return real(*args)

    monkeypatch.setattr(refine, "exact_pairs", costly)
    rng = np.random.default_rng(5)
    bank, model_id, T, pairs = random_scene(trees, rng, 12, ["torus", "torus_hand3", "ico"])
    full = refine_frame(bank, model_id, T, pairs, deadline=np.inf)
    start = clock()
    part = refine_frame(bank, model_id, T, pairs, deadline=start + budget_us * 1e-6, min_level=1, clock=clock)
    assert clock() - start <= budget_us * 1e-6
    assert_held_to_the_budget(part, full, bank, some_tested=budget_us == 1000)


@pytest.mark.parametrize("budget_us", [60, 250, 1000, 4000, 10000])
def test_an_exact_strategys_rows_start_only_when_predicted_to_finish(trees, meshes, monkeypatch, budget_us):
    """An exact strategy at the exact level (collision.exact_method) is held to the deadline as the
    leaves are: each call measures its cost per unit (refine.CALL_UNITS + leaf triangles) and the
    next call prices its rows at that rate. On a clock where the strategy costs ten times the
    leaves' prior per unit, a first call learns the rate and a second overruns no budget; the rows
    it tests agree with the full answer, the others stay at their sphere leaves."""
    from types import SimpleNamespace

    from spaceship_sim.narrowphase.exact import BruteForceExact

    clock = TickClock(1e-9)
    names = ["torus", "torus_hand3", "ico"]
    shapes = [SimpleNamespace(vertices=meshes[n.split("_")[0]][0], faces=meshes[n.split("_")[0]][1]) for n in names]
    detector, oracle = BruteForceExact(shapes), BruteForceExact(shapes)
    real = refine._Search._detector_hits

    def costly(self, strategy, front, take, all_contacts):
        if strategy is detector:
            clock.spend(10 * refine.EXACT_UNIT_COST * (refine.CALL_UNITS + self._leaf_triangles(front)[:take].sum()))
        return real(self, strategy, front, take, all_contacts)

    monkeypatch.setattr(refine._Search, "_detector_hits", costly)
    bank, model_id, T, pairs = random_scene(trees, np.random.default_rng(5), 12, names)
    full = refine_frame(bank, model_id, T, pairs, deadline=np.inf, detector=oracle)
    refine_frame(bank, model_id, T, pairs, deadline=clock() + 1.0, clock=clock, detector=detector)
    assert refine._UNIT_COST[detector][clock].rate() == pytest.approx(10 * refine.EXACT_UNIT_COST, rel=0.05)
    start = clock()
    part = refine_frame(bank, model_id, T, pairs, deadline=start + budget_us * 1e-6, min_level=1, clock=clock,
                        detector=detector)
    assert clock() - start <= budget_us * 1e-6
    assert_held_to_the_budget(part, full, bank, some_tested=budget_us == 10000)


def test_an_exact_strategy_priced_out_by_one_outlier_is_probed_back(trees, meshes, monkeypatch):
    """One call of an exact strategy 1000x slower than usual (the process descheduled in it) must
    not lock the strategy out: the refused rows count, a probe of one row runs within
    refine.EXACT_PROBE_AFTER + 1 samples, its ordinary cost re-enters the estimate, and the
    probe overruns the deadline by no more than its one row's cost."""
    from types import SimpleNamespace

    from spaceship_sim.narrowphase.exact import BruteForceExact

    clock = TickClock(1e-9)
    names = ["torus", "torus_hand3", "ico"]
    shapes = [SimpleNamespace(vertices=meshes[n.split("_")[0]][0], faces=meshes[n.split("_")[0]][1]) for n in names]
    detector = BruteForceExact(shapes)
    real, factor, calls = refine._Search._detector_hits, [1000.0], []

    def costly(self, strategy, front, take, all_contacts):
        cost = factor[0] * refine.EXACT_UNIT_COST * (refine.CALL_UNITS + self._leaf_triangles(front)[:take].sum())
        clock.spend(cost)
        calls.append((take, cost))
        factor[0] = 1.0  # the outlier was the first call only
        return real(self, strategy, front, take, all_contacts)

    monkeypatch.setattr(refine._Search, "_detector_hits", costly)
    bank, model_id, T, pairs = random_scene(trees, np.random.default_rng(5), 12, names)
    refine_frame(bank, model_id, T, pairs, deadline=np.inf, clock=clock, detector=detector)
    assert refine._UNIT_COST[detector][clock].rate() == pytest.approx(1000 * refine.EXACT_UNIT_COST, rel=0.05)
    budget, tested_at = 1e-3, []
    for sample in range(1, 2 * refine.EXACT_PROBE_AFTER + 2):
        calls.clear()
        start = clock()
        part = refine_frame(bank, model_id, T, pairs, deadline=start + budget, min_level=1, clock=clock,
                            detector=detector)
        probe = max((cost for take, cost in calls if take == 1), default=0.0)
        assert clock() - start <= budget + probe
        if np.any(part.certain & part.colliding):
            tested_at.append(sample)
    assert tested_at and tested_at[0] <= refine.EXACT_PROBE_AFTER + 1
    assert refine._UNIT_COST[detector][clock].rate() == pytest.approx(refine.EXACT_UNIT_COST, rel=0.05)
    assert tested_at == list(range(tested_at[0], 2 * refine.EXACT_PROBE_AFTER + 2))  # used in every later sample


@pytest.mark.parametrize("n_forced", [0, 3])
@pytest.mark.parametrize("first_cost", [0.0, 5.0])
def test_batches_stop_before_one_that_would_overrun(n_forced, first_cost):
    """_run_batches starts no batch past the forced rows whose probe (at the measured time per row,
    or first_cost before any is measured) would end past the deadline; forced rows always run."""
    clock = TickClock(1e-9)
    ran = []

    def kernel(s, e):  # every row costs exactly 1 s
        clock.spend(e - s)
        ran.append((s, e))
        return e, (np.zeros(e - s + 1, np.int64),)

    done, pieces, _ = refine._run_batches(kernel, 20, clock() + 4.5, n_forced, clock, probe=1, first_cost=first_cost)
    assert done >= n_forced and len(pieces) == len(ran)
    assert clock.now <= 4.5 + 1e-6  # rows 0-3 end by 4 s; a fifth would end at 5 s
    assert done == (0 if first_cost > 4.5 and not n_forced else 4)


def test_a_remembered_row_cost_keeps_rows_from_starting_past_the_deadline_and_probes_to_recover():
    """With a cost model, _run_batches starts no row it prices past the deadline (the model learned
    from earlier calls), counts the refusal, and after EXACT_PROBE_AFTER refusals runs one row as a
    probe (an overrun of one row's cost at most), whose measurement lets a cheaper rate back in."""
    from spaceship_sim.cost import CostModel

    clock, row_cost = TickClock(1e-9), [3.0]

    def kernel(s, e):
        clock.spend(row_cost[0] * (e - s))
        return e, (np.zeros(e - s + 1, np.int64),)

    cost = CostModel(1.0, probe_after=refine.EXACT_PROBE_AFTER)
    done = [refine._run_batches(kernel, 5, clock() + 10.0, 0, clock, probe=1, cost=cost)[0]]
    assert done == [3] and cost.rate() == pytest.approx(3.0, rel=1e-6)  # a 4th row would end past 10 s
    row_cost[0] = 0.5  # the rows got cheaper; the model does not know yet
    for _ in range(refine.EXACT_PROBE_AFTER + 1):
        start = clock()
        done.append(refine._run_batches(kernel, 5, start + 2.0, 0, clock, probe=1, cost=cost)[0])
        assert clock.now <= start + 2.0 + row_cost[0] + 1e-6
    assert done[1:] == [0] * refine.EXACT_PROBE_AFTER + [3]  # refused, then the probe and rows at its rate
    assert refine._run_batches(kernel, 5, clock() + 2.0, 0, clock, probe=1, cost=cost)[0] == 3


def test_min_level_past_the_leaves_forces_exact(trees):
    rng = np.random.default_rng(8)
    bank, model_id, T, pairs = random_scene(trees, rng, 10, ["torus", "ico"])
    late = refine_frame(bank, model_id, T, pairs, deadline=time.perf_counter() - 1.0, min_level=99)
    full = refine_frame(bank, model_id, T, pairs, deadline=np.inf)
    assert np.array_equal(late.colliding, full.colliding) and late.certain.all()


def test_contact_normal_points_from_a_to_b(trees):
    t = trees["ico"]
    for sign in (1, -1):
        Ta, Tb = np.eye(4), np.eye(4)
        Tb[:3, :3] = random_rotation(np.random.default_rng(1))
        Tb[:3, 3] = [sign * 1.9, 0.1, 0.0]  # unit spheres just touching along x
        r = collide_pair(t, Ta, t, Tb, max_level=t.depth, triangle_tests=False)
        assert r.colliding and r.contact_normal[0] * sign > 0.9
        assert 0.5 < r.contact_point[0] * sign < 1.5


def test_empty_frame_and_far_pairs(trees):
    bank = TreeBank.from_trees([trees["ico"]])
    r = refine_frame(bank, np.zeros(2, int), np.stack([np.eye(4)] * 2), np.zeros((0, 2), int), deadline=0.0)
    assert len(r.colliding) == 0 and r.sphere_pairs == [] and r.tri_pairs == []
    T = np.stack([np.eye(4)] * 2)
    T[1, :3, 3] = [10, 0, 0]
    r = refine_frame(bank, np.zeros(2, int), T, [[0, 1]], deadline=np.inf)
    assert not r.colliding[0] and r.level[0] == 0 and r.certain[0] and np.isinf(r.separation_bound[0])


def test_reused_stack_scratch_never_changes_an_answer(trees):
    """The stacks live in scratch reused from call to call (refine._SCRATCH): stale entries left by
    other calls must not leak into an answer, and a call nested in another gets its own."""
    from spaceship_sim.narrowphase import refine as refine_module

    bank = TreeBank.from_trees([trees["torus"], trees["ico"]])
    rng = np.random.default_rng(11)
    T = np.stack([random_pose(rng, 1.5) for _ in range(40)])
    model_id, pairs = rng.integers(0, 2, 40), np.stack([np.arange(20), np.arange(20, 40)], 1)

    def answer():
        r = refine_frame(bank, model_id, T, pairs, deadline=np.inf, max_level=2, triangle_tests=False)
        return r.colliding, r.level, r.separation_bound, r.contact_point, r.sphere_pairs

    pool = refine_module._SCRATCH
    pool._free.clear()
    fresh = answer()
    stale = refine_module.Scratch(40, 1 << 16)
    stale.stacks[:] = 7  # stale node ids in every slot
    pool._free[:] = [stale]
    for got, want in zip(answer(), fresh):
        np.testing.assert_array_equal(np.concatenate(got) if isinstance(got, list) else got,
                                      np.concatenate(want) if isinstance(want, list) else want)
    first, second = pool.take(5, 2), pool.take(5, 2)
    assert not np.shares_memory(first.stacks, second.stacks)
    pool.give_back(first), pool.give_back(second)


def test_time_in_batches_is_part_of_the_time_used(trees):
    """The per-call overhead instrument: wall time inside kernel batches, within the call's own
    wall time (both perf_counter), so time_used - time_in_batches is the overhead bench hubbard
    reports; no batch, no time."""
    bank = TreeBank.from_trees([trees["torus"]])
    rng = np.random.default_rng(5)
    T = np.stack([random_pose(rng, 1.5) for _ in range(40)])
    pairs = np.stack([np.arange(20), np.arange(20, 40)], 1)
    r = refine_frame(bank, np.zeros(40, int), T, pairs, deadline=np.inf)
    assert 0.0 < r.time_in_batches <= r.time_used
    far = refine_frame(bank, np.zeros(2, int), np.stack([np.eye(4), np.eye(4) + np.eye(4, k=3) * 50]), [[0, 1]],
                       deadline=np.inf)
    assert far.time_in_batches == 0.0 and far.time_used > 0.0


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.sampled_from(NAMES), st.sampled_from(NAMES))
def test_depth_first_levels_match_breadth_first_descent(trees, seed, name_a, name_b):
    """The witness search gives the verdict and level of a full breadth-first descent, and the
    sphere pairs it reports collide at that level."""
    if name_a not in trees or name_b not in trees:
        pytest.skip("asset not available")
    ta, tb = trees[name_a], trees[name_b]
    rng = np.random.default_rng(seed)
    depth = max(ta.depth, tb.depth)
    for _ in range(3):
        Ta, Tb = pose_pair(rng, ta, tb, spread=rng.uniform(0.3, 1.0))
        R, t = relative_pose(Ta, Tb)
        fronts = frontiers_ref(ta, tb, R, t, depth)
        for L in range(depth + 1):
            r = collide_pair(ta, Ta, tb, Tb, max_level=L, triangle_tests=False)
            want_level = min(L, len(fronts) - 1)
            assert (r.colliding, r.level) == (bool(fronts[want_level]), want_level)
            assert {tuple(map(int, p)) for p in r.sphere_pairs} <= fronts[want_level]
            assert len(r.sphere_pairs) > 0 or not r.colliding


@SETTINGS
@given(st.integers(0, 2**32 - 1))
def test_complete_kernel_gives_the_breadth_first_leaf_frontier(trees, seed):
    rng = np.random.default_rng(seed)
    ta, tb = trees["torus_hand3"], trees["torus"]
    bank = TreeBank.from_trees([ta, tb])
    depth = max(ta.depth, tb.depth)
    Ta, Tb = np.stack([pose_pair(rng, ta, tb, spread=0.7) for _ in range(3)], 1)
    poses = [relative_pose(a, b) for a, b in zip(Ta, Tb)]
    R, t = np.stack([p[0] for p in poses]), np.stack([p[1] for p in poses])
    rows, ptr = np.arange(3), np.arange(4, dtype=np.int64)
    roots_a, roots_b = np.zeros(3, np.int64), np.full(3, ta.n_nodes, np.int64)  # B's nodes follow A's
    tree = tree_of(bank)
    out_ptr, oa, ob, _ = complete_pairs(tree, tree, (Ta, Tb, R, t), rows, ptr, roots_a, roots_b)
    for row in range(3):
        fronts = frontiers_ref(ta, tb, R[row], t[row], depth)
        if len(fronts) <= depth:  # apart above the leaves: the kernel starts from overlapping roots
            continue
        got = {(int(a), int(b) - ta.n_nodes) for a, b in
               zip(oa[out_ptr[row]:out_ptr[row + 1]], ob[out_ptr[row]:out_ptr[row + 1]])}
        assert got == fronts[depth]


def relative_pose(Ta, Tb):
    """B's body frame in A's: x_A = R x_B + t."""
    R = Ta[:3, :3].T @ Tb[:3, :3]
    return R, Ta[:3, :3].T @ (Tb[:3, 3] - Ta[:3, 3])


def test_inconsistent_tree_is_refused_naming_the_field(trees):
    import dataclasses
    t = trees["ico"]
    bad = dataclasses.replace(t, leaf_tri_idx=t.leaf_tri_idx + len(t.faces))
    with pytest.raises(TreeError, match="leaf_tri_idx"):
        TreeBank.from_trees([bad])


@pytest.mark.parametrize("seed", [0, 1])
def test_root_level_fallback_equals_compiled_level_0(trees, seed):
    """refine_roots (numpy, for the first frames of a cold start) answers as refine_frame at level 0."""
    rng = np.random.default_rng(seed)
    bank, model_id, T, pairs = random_scene(trees, rng, 12, ["torus", "ico", "box_hand1"])
    want = refine_frame(bank, model_id, T, pairs, deadline=np.inf, min_level=0, max_level=0)
    got = refine_roots(bank, model_id, T, pairs)
    assert want.colliding.any() and (~want.colliding).any()
    for name in ("colliding", "level", "certain", "level_histogram", "bound_pairs"):
        assert np.array_equal(getattr(got, name), getattr(want, name)), name
    assert np.allclose(got.separation_bound, want.separation_bound)
    assert np.allclose(got.contact_point, want.contact_point, equal_nan=True)
    assert np.allclose(got.contact_normal, want.contact_normal)
    for g, w in zip(got.sphere_pairs, want.sphere_pairs):
        assert np.array_equal(g, w)


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.sampled_from(NAMES), st.sampled_from(NAMES))
def test_lazy_stacks_hold_colliding_pairs_and_complete_to_the_leaf_frontier(trees, seed, name_a, name_b):
    """Lazy sibling testing (kernels.py): after the search stops at any level, every stack entry
    names a colliding pair — a tested pair of its level's breadth-first frontier, or a
    continuation's parent, of the level above — the witness is on top, the stack fits
    stack_width, and the exact level's completion of the stack (continuations resumed) is the
    breadth-first leaf frontier."""
    from spaceship_sim.clock import WALL
    from spaceship_sim.narrowphase import refine as refine_module
    from spaceship_sim.narrowphase.kernels import stack_pairs_b, stack_width

    if name_a not in trees or name_b not in trees:
        pytest.skip("asset not available")
    ta, tb = trees[name_a], trees[name_b]
    bank = TreeBank.from_trees([ta, tb])
    rng = np.random.default_rng(seed)
    depth = max(ta.depth, tb.depth)
    poses = [pose_pair(rng, ta, tb, spread=rng.uniform(0.3, 1.0)) for _ in range(4)]
    T = np.stack([p for pose in poses for p in pose])
    pairs = np.arange(len(T)).reshape(-1, 2)
    model_id = np.tile([0, 1], len(poses))
    for L in range(depth + 1):
        search = refine_module._Search(bank, bank, model_id, T, pairs, L, WALL, WALL())
        try:
            search.levels(np.inf, L)
            assert search.sa.shape[1] == stack_width(bank, bank, L) == 1 + 2 * L
            rows = np.arange(len(pairs))
            front = search.stacks(rows)
            leaves = search._all_leaves(rows) if L == depth else None
            for row, (Ta, Tb) in enumerate(poses):
                fronts = frontiers_ref(ta, tb, *relative_pose(Ta, Tb), depth)
                want_level = min(L, len(fronts) - 1)
                assert (bool(~search.apart[row]), search.level[row]) == (bool(fronts[want_level]), want_level)
                s, e = front.ptr[row], front.ptr[row + 1]
                fa, fb, fl = front.fa[s:e], front.fb[s:e], front.fl[s:e]
                assert e - s == (0 if search.apart[row] else search.height[row])
                if e == s:
                    continue
                assert fb[-1] >= 0 and fl[-1] == L  # the witness on top
                assert np.all(np.diff(fl) >= 0)
                for a, b, raw, level in zip(fa, stack_pairs_b(fb), fb, fl):
                    pair = (int(a), int(b) - ta.n_nodes)
                    assert pair in fronts[level - 1 if raw < 0 else level], (pair, level, raw < 0)
                if leaves is not None:
                    s, e = leaves.ptr[row], leaves.ptr[row + 1]
                    got = {(int(a), int(b) - ta.n_nodes) for a, b in zip(leaves.fa[s:e], leaves.fb[s:e])}
                    assert got == fronts[depth]
        finally:
            refine_module._SCRATCH.give_back(search.scratch)
