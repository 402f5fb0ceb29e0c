"""Separation-distance intervals (narrowphase/intervals.py): lower <= true surface distance <= upper on
random poses of every shipped model pair and of meshes the project did not make, both bounds monotone
in the work given, width 0 only where the distance is known exactly, and the narrowing inside
refine_frame held to its deadline on a TickClock."""
import itertools
import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from spaceship_sim.clock import TickClock
from spaceship_sim.geometry.poses import relative_poses
from spaceship_sim.meshes import load_model
from spaceship_sim.narrowphase import TreeBank, refine_frame
from spaceship_sim.narrowphase.intervals import (DIRECTIONS, NO_KEPT, NO_LEVEL_CAP, NULL_DIRECTION, TAN_EIGHTH, BankParts,
                                                 CarriedIntervals, _direction_of, _reach, _verdict_bounds, bank_parts,
                                                 carry_rows, kept_of, narrow_rows, opened, pose_motion,
                                                 row_poses)
from spaceship_sim.narrowphase.kernels import min_distance_all_pairs
from spaceship_sim.spheretree import build_tree, load_or_build

SHIPPED = ["lamp", "fighter", "freighter"]
POPS = [0, 1, 4, 16, 64, 256]
ALL = 1 << 40  # node pairs: every row closes


def world_distance(mesh_a, mesh_b, R, t):
    """Brute force: the least triangle distance, B's triangles moved into A's frame."""
    ta = np.ascontiguousarray(mesh_a[0][mesh_a[1]])
    tb = np.ascontiguousarray(mesh_b[0][mesh_b[1]] @ R.T + t)
    return min_distance_all_pairs(ta, tb)


def random_rows(rng, n_models, k, radius):
    """k pair rows of random models: random orientations, B's origin near A's (deep, near-touching
    and apart poses)."""
    ma, mb = rng.integers(0, n_models, k), rng.integers(0, n_models, k)
    Ta, Tb = np.tile(np.eye(4), (k, 1, 1)), np.tile(np.eye(4), (k, 1, 1))
    for i in range(k):
        Ta[i, :3, :3] = Rotation.random(random_state=int(rng.integers(1 << 31))).as_matrix()
        Tb[i, :3, :3] = Rotation.random(random_state=int(rng.integers(1 << 31))).as_matrix()
        Tb[i, :3, 3] = rng.normal(size=3) * radius
    return ma, mb, Ta, Tb


def narrowed(bank, ma, mb, R, t, pops, lower=None, upper=None, max_level=NO_LEVEL_CAP):
    k = len(ma)
    lower = np.zeros(k) if lower is None else lower.copy()
    upper = np.full(k, np.inf) if upper is None else upper.copy()
    narrow_rows(bank_parts(bank), bank_parts(bank), R, t, np.arange(k), bank.node_offset[ma].astype(np.int64),
                bank.node_offset[mb].astype(np.int64), pops, max_level, lower, upper)
    return lower, upper


@pytest.fixture(scope="module")
def shipped():
    meshes = [load_model(n) for n in SHIPPED]
    return [(m.vertices, m.faces) for m in meshes], {
        method: TreeBank.from_trees([load_or_build(m, method=method) for m in meshes]) for method in ("medial",
                                                                                                     "octree")}


@pytest.fixture(scope="module")
def foreign(meshes):
    """Trimesh's meshes (not the project's), with medial trees."""
    names = ["torus", "ico", "box"]
    return [meshes[n] for n in names], TreeBank.from_trees([build_tree(*meshes[n], method="medial", depth=3)
                                                             for n in names])


def check_rows(models, bank, rng, k, radius):
    ma, mb, Ta, Tb = random_rows(rng, len(models), k, radius)
    R, t = relative_poses(Ta, Tb)
    truth = np.array([world_distance(models[a], models[b], R[i], t[i]) for i, (a, b) in enumerate(zip(ma, mb))])
    previous = None
    for pops in POPS + [ALL]:
        lower, upper = narrowed(bank, ma, mb, R, t, pops)
        assert np.all(lower <= truth + 1e-9) and np.all(truth <= upper + 1e-9), f"pops {pops}"
        assert np.all(lower >= 0) and np.all(lower <= upper)
        if previous is not None:  # more work: never wider
            assert np.all(lower >= previous[0]) and np.all(upper <= previous[1]), f"pops {pops}"
        previous = lower, upper
    np.testing.assert_allclose(lower, truth, atol=1e-9)
    np.testing.assert_allclose(upper, truth, atol=1e-9)
    return truth


@pytest.mark.parametrize("method", ["medial", "octree"])
@pytest.mark.parametrize("seed", [0, 1])
def test_every_shipped_model_pair_is_bracketed_then_closed_on_its_distance(shipped, method, seed):
    models, banks = shipped
    truth = check_rows(models, banks[method], np.random.default_rng(seed), 24, 10.0)
    assert (truth == 0).any() and (truth > 0).any()  # deep and apart poses both drawn


def test_meshes_the_project_did_not_make_are_bracketed_then_closed(foreign):
    models, bank = foreign
    truth = check_rows(models, bank, np.random.default_rng(2), 40, 1.5)
    assert (truth == 0).any() and (truth > 0).any()


def test_a_call_keeps_the_tighter_of_the_bounds_it_is_given(shipped):
    """A caller's bounds (the verdict's, an earlier call's) are never loosened."""
    models, banks = shipped
    rng = np.random.default_rng(3)
    ma, mb, Ta, Tb = random_rows(rng, len(models), 12, 10.0)
    R, t = relative_poses(Ta, Tb)
    lower, upper = narrowed(banks["medial"], ma, mb, R, t, 4)
    again = narrowed(banks["medial"], ma, mb, R, t, 1, lower, upper)
    assert np.all(again[0] >= lower) and np.all(again[1] <= upper)


def frame(models, bank, rng, n=10):
    model_id = rng.integers(0, len(models), n)
    T = np.tile(np.eye(4), (n, 1, 1))
    for i in range(n):
        T[i, :3, :3] = Rotation.random(random_state=int(rng.integers(1 << 31))).as_matrix()
        T[i, :3, 3] = rng.uniform(-12, 12, 3)
    pairs = np.array(list(itertools.combinations(range(n), 2)))
    truth = np.array([world_distance(models[model_id[a]], models[model_id[b]],
                                     *(x[0] for x in relative_poses(T[a:a + 1], T[b:b + 1]))) for a, b in pairs])
    return model_id, T, pairs, truth


@pytest.mark.parametrize("budget_us", [0, 30, 300, 3000])
def test_refine_frame_tightens_until_its_deadline_and_every_interval_holds(shipped, budget_us):
    """Verdict-then-tighten on a TickClock: every interval brackets the distance, the deadline holds
    to within one batch's probe, width 0 only where the distance is exact, and with time the
    median width falls well below the verdict-only one."""
    models, banks = shipped
    bank = banks["medial"]
    model_id, T, pairs, truth = frame(models, bank, np.random.default_rng(4))
    widths = {}
    for tighten in (False, True):
        clock = TickClock(1e-7)
        start = clock()
        r = refine_frame(bank, model_id, T, pairs, deadline=start + budget_us * 1e-6, clock=clock, tighten=tighten)
        assert np.all(r.lower <= truth + 1e-9) and np.all(truth <= r.upper + 1e-9)
        closed = r.lower == r.upper
        assert np.allclose(r.lower[closed], truth[closed], atol=1e-9)
        widths[tighten] = np.median(r.upper - r.lower)
        # the verdicts the intervals settle: certain ones right, the histogram the colliding pairs'
        assert np.array_equal(r.colliding[r.certain], truth[r.certain] == 0)
        assert np.all(r.colliding[truth == 0]) and not np.any(r.colliding & (r.lower > 0))
        assert np.array_equal(np.bincount(r.level[r.colliding], minlength=len(r.level_histogram)),
                              r.level_histogram)
    if budget_us >= 3000:
        assert widths[True] * 3 <= widths[False]


def test_the_narrowing_stops_at_its_own_deadline_and_leaves_the_verdicts_as_they_were(shipped):
    """tighten_until ends the narrowing before the deadline (within a round's last row) and takes
    nothing from the verdicts: they are those of a narrowing given the whole deadline, and every
    interval still brackets the distance."""
    models, banks = shipped
    model_id, T, pairs, truth = frame(models, banks["medial"], np.random.default_rng(4))
    runs = {}
    for until_us in (math.inf, 200.0):
        clock = TickClock(4e-6)  # the whole narrowing takes ~110 readings, the verdicts ~13
        start = clock()
        r = refine_frame(banks["medial"], model_id, T, pairs, deadline=start + 3e-3, clock=clock, tighten=True,
                         tighten_until=start + until_us * 1e-6)
        assert np.all(r.lower <= truth + 1e-9) and np.all(truth <= r.upper + 1e-9)
        runs[until_us] = r, clock.now - start
    (whole, t_whole), (short, t_short) = runs[math.inf], runs[200.0]
    assert t_short <= 200e-6 + 2 * 4e-6 < t_whole
    assert np.sum(short.upper - short.lower) > np.sum(whole.upper - whole.lower)
    for name in ("colliding", "level", "certain", "level_histogram"):
        assert np.array_equal(getattr(short, name), getattr(whole, name)), name


class PythonTickClock(TickClock):
    """A TickClock no kernel reads: the narrowing reads it in Python (as a recording's clock)."""

    kernel_kind = None


@pytest.mark.parametrize("budget_us", [0, 100, 150, 300, 30000])
def test_the_narrowing_kernel_makes_its_python_references_decisions(shipped, budget_us):
    """Verdict-then-tighten with the rounds in one kernel call each (a TickClock) and with the clock
    read in Python between the rows (narrow_round_reference): the same readings, the same
    intervals and verdicts, on random frames and budgets from none to every interval closed (a
    tick of 4 µs: a row's reading costs about what narrowing it does)."""
    models, banks = shipped
    for seed in (4, 5):
        model_id, T, pairs, _ = frame(models, banks["medial"], np.random.default_rng(seed))
        runs = []
        for clock in (TickClock(4e-6), PythonTickClock(4e-6), TickClock(4e-6)):
            r = refine_frame(banks["medial"], model_id, T, pairs, deadline=clock() + budget_us * 1e-6, clock=clock,
                             tighten=len(runs) < 2)
            runs.append((clock.now, r.lower, r.upper, r.colliding, r.certain))
        assert all(np.array_equal(a, b) for a, b in zip(*runs[:2]))
        widths = [np.mean(run[2] - run[1]) for run in runs]
        assert widths[0] < widths[2] if budget_us >= 150 else widths[0] == widths[2]
        assert np.all(runs[0][1] == runs[0][2]) == (budget_us == 30000)  # all closed only with time for all


def test_an_unlimited_verdict_only_frame_closes_what_it_knows(shipped):
    """Without a deadline every pair reaches its triangles: the colliding ones are [0, 0]."""
    models, banks = shipped
    model_id, T, pairs, truth = frame(models, banks["medial"], np.random.default_rng(5))
    r = refine_frame(banks["medial"], model_id, T, pairs, deadline=np.inf)
    assert np.all(r.lower <= truth + 1e-9) and np.all(truth <= r.upper + 1e-9)
    assert np.all(r.upper[r.colliding] == 0) and np.all(truth[r.colliding] == 0)


@pytest.mark.parametrize("max_level", [0, 1, 2, 3])
def test_what_the_spheres_down_to_a_level_know_brackets_the_distance(shipped, max_level):
    """A level cap: no node of that level is split, pairs there count with their gap and witnesses."""
    models, banks = shipped
    rng = np.random.default_rng(6)
    ma, mb, Ta, Tb = random_rows(rng, len(models), 16, 10.0)
    R, t = relative_poses(Ta, Tb)
    truth = np.array([world_distance(models[a], models[b], R[i], t[i]) for i, (a, b) in enumerate(zip(ma, mb))])
    for method in ("medial", "octree"):
        lower, upper = narrowed(banks[method], ma, mb, R, t, ALL, max_level=max_level)
        assert np.all(lower <= truth + 1e-9) and np.all(truth <= upper + 1e-9)
        assert np.all(np.isfinite(upper))


def leaf_vertices_below(bank, node):
    """The vertices (n, 3) of every leaf triangle in node's subtree, by walking it."""
    todo, found = [node], []
    while todo:
        i = todo.pop()
        found.append(bank.tri_verts[bank.tri_idx[bank.tri_ptr[i]:bank.tri_ptr[i + 1]]].reshape(-1, 3))
        todo.extend(range(bank.first_child[i], bank.first_child[i] + bank.child_count[i]))
    return np.concatenate(found)


def test_each_nodes_points_toward_the_directions_are_its_farthest_leaf_vertices(shipped):
    """BankParts.toward against a walk of each node's subtree: along every direction, a vertex of a
    triangle below the node, and none lies farther along it."""
    for bank in shipped[1].values():
        toward = BankParts(*bank_parts(bank)).toward
        rng = np.random.default_rng(3)
        for node in rng.choice(len(bank.first_child), 60, replace=False):
            verts = leaf_vertices_below(bank, node)
            along = verts @ DIRECTIONS.T  # (n, 27)
            assert np.allclose(np.einsum("dk,dk->d", toward[node], DIRECTIONS), along.max(axis=0), rtol=0, atol=1e-12)
            assert all((verts == p).all(axis=1).any() for p in toward[node])


def test_the_direction_toward_a_vector_rounds_each_component_by_its_share_of_the_largest():
    """_direction_of against numpy: signs of the components at least tan(pi/8) of the largest; each
    of the 26 directions maps to itself, and a zero vector to the null direction."""
    rng = np.random.default_rng(4)
    v = rng.normal(size=(2000, 3)) * rng.choice([1e-9, 1.0, 1e6], size=(2000, 1))
    v[rng.random((2000, 3)) < 0.2] = 0.0
    keep = np.abs(v) > TAN_EIGHTH * np.abs(v).max(axis=1, keepdims=True)
    want = np.where(keep, np.sign(v), 0.0) @ np.array([9, 3, 1]) + NULL_DIRECTION
    assert [_direction_of(*x) for x in v] == list(want.astype(int))
    assert [_direction_of(*d) for d in DIRECTIONS] == list(range(len(DIRECTIONS)))


def test_row_poses_and_verdict_bounds_match_their_numpy_references(shipped):
    """The set-up kernels against the plain numpy they replace: poses bit for bit, and the verdict's
    bounds from the roots' gap and witnesses with colliding, touching and measured rows masked in."""
    bank, rng = shipped[1]["medial"], np.random.default_rng(7)
    n, k = 9, 40
    T = np.tile(np.eye(4), (n, 1, 1))
    T[:, :3, :3] = Rotation.random(n, random_state=3).as_matrix()
    T[:, :3, 3] = rng.normal(size=(n, 3)) * 20.0
    pairs = rng.integers(0, n, (k, 2)).astype(np.int32)
    R, t = row_poses(T, pairs)
    R0, t0 = relative_poses(np.ascontiguousarray(T[pairs[:, 0]]), np.ascontiguousarray(T[pairs[:, 1]]))
    assert np.array_equal(R, R0) and np.array_equal(t, t0)
    ra, rb = bank.node_offset[rng.integers(0, 3, k)].astype(np.int64), bank.node_offset[rng.integers(0, 3, k)].astype(np.int64)
    colliding, certain = rng.random(k) < 0.5, rng.random(k) < 0.3
    bound = np.where(rng.random(k) < 0.5, rng.random(k) * 30.0, np.inf)
    distance = np.where(rng.random(k) < 0.3, rng.random(k) * 5.0, np.nan)
    lower, upper = np.zeros(k), np.full(k, np.inf)
    narrow_rows(bank_parts(bank), bank_parts(bank), R, t, np.arange(k), ra, rb, 0, NO_LEVEL_CAP, lower, upper)
    upper[colliding] = np.minimum(upper[colliding], bound[colliding])
    lower[colliding] = 0.0
    known = np.isfinite(distance)
    lower[known] = upper[known] = distance[known]
    lower[colliding & certain] = upper[colliding & certain] = 0.0
    got = _verdict_bounds(bank_parts(bank), bank_parts(bank), R, t, ra, rb, colliding, certain, bound, distance)
    assert np.array_equal(got[0], lower) and np.array_equal(got[1], upper)
    assert (colliding & certain).any() and (known & ~colliding).any() and np.isfinite(upper[~colliding]).all()


def test_pose_motion_bounds_every_point_within_reach_and_is_reached():
    """|T1 p - T0 p| <= pose_motion(T0, T1, |p|) for random poses and points, and the bound is
    |t1 - t0| + ||R1 - R0||_2 reach, reached by a point at the reach on the rotation's equator
    turned along the shift: it is no looser than it must be."""
    rng = np.random.default_rng(11)
    for angle in (1e-9, 1e-4, 0.01, 0.5, 3.0):
        for _ in range(40):
            T0, T1 = np.eye(4), np.eye(4)
            T0[:3, :3] = Rotation.random(random_state=int(rng.integers(1 << 31))).as_matrix()
            axis = rng.normal(size=3)
            T1[:3, :3] = Rotation.from_rotvec(axis / np.linalg.norm(axis) * angle).as_matrix() @ T0[:3, :3]
            T0[:3, 3], T1[:3, 3] = rng.normal(size=3), rng.normal(size=3)
            reach = rng.uniform(0.1, 30.0)
            bound = pose_motion(T0, T1, reach)
            p = rng.normal(size=(50, 3))
            p *= (reach * rng.uniform(0, 1, 50) / np.linalg.norm(p, axis=1))[:, None]
            moved = np.linalg.norm(p @ (T1[:3, :3] - T0[:3, :3]).T + T1[:3, 3] - T0[:3, 3], axis=1)
            assert np.all(moved <= bound)
            spectral = np.linalg.norm(T1[:3, :3] - T0[:3, :3], ord=2)
            shift = np.linalg.norm(T1[:3, 3] - T0[:3, 3])
            assert bound == pytest.approx(shift + spectral * reach, rel=1e-6, abs=1e-6 * reach)


def test_a_model_reaches_no_further_than_its_root_sphere_says(shipped):
    models, banks = shipped
    for bank in banks.values():
        for m, (v, _) in enumerate(models):
            assert np.linalg.norm(v, axis=1).max() <= _reach(bank.spheres, bank.node_offset[m]) + 1e-9


def moving_frames(models, rng, n=6, frames=8, step=0.15):
    """n bodies of random models drifting and turning a little each frame; per frame (T, truth)."""
    model_id = rng.integers(0, len(models), n)
    T = np.tile(np.eye(4), (n, 1, 1))
    T[:, :3, :3] = Rotation.random(n, random_state=int(rng.integers(1 << 31))).as_matrix()
    T[:, :3, 3] = rng.uniform(-6, 6, (n, 3))
    velocity, spin = rng.normal(size=(n, 3)) * step, rng.normal(size=(n, 3)) * step * 0.1
    pairs = np.array(list(itertools.combinations(range(n), 2)))
    out = []
    for _ in range(frames):
        T = T.copy()
        T[:, :3, 3] += velocity
        T[:, :3, :3] = Rotation.from_rotvec(spin).as_matrix() @ T[:, :3, :3]
        truth = np.array([world_distance(models[model_id[a]], models[model_id[b]],
                                         *(x[0] for x in relative_poses(T[a:a + 1], T[b:b + 1]))) for a, b in pairs])
        out.append((T, truth))
    return model_id, pairs, out


def test_an_interval_carried_to_new_poses_holds_and_is_as_wide_as_the_motion(shipped):
    """Intervals closed at one frame's poses, carried to the next: each brackets the new distance,
    lies inside the new frame's own interval, and is at most twice its bodies' motion wide."""
    models, banks = shipped
    bank = banks["medial"]
    model_id, pairs, ((T0, _), (T1, truth)) = moving_frames(models, np.random.default_rng(12), frames=2)
    carried, clock = CarriedIntervals(), TickClock(1e-7)
    first = refine_frame(bank, model_id, T0, pairs, deadline=clock() + 1.0, clock=clock, tighten=True)
    assert np.all(first.lower == first.upper)  # time enough: every interval closed
    carried.remember(bank, first, model_id, T0)
    fresh = refine_frame(bank, model_id, T1, pairs, deadline=np.inf, max_level=1, triangle_tests=False)
    lower, upper = fresh.lower.copy(), fresh.upper.copy()
    carried.carry(bank, fresh, model_id, T1)
    assert np.all(fresh.lower <= truth + 1e-9) and np.all(truth <= fresh.upper + 1e-9)
    assert np.all(fresh.lower >= lower) and np.all(fresh.upper <= upper)
    roots = bank.node_offset[model_id].astype(np.int64)
    motion = np.array([pose_motion(T0[a], T1[a], _reach(bank.spheres, roots[a]))
                       + pose_motion(T0[b], T1[b], _reach(bank.spheres, roots[b])) for a, b in pairs])
    was_open = lower < upper
    assert np.all((fresh.upper - fresh.lower)[was_open] <= 2 * motion[was_open] + 1e-12)
    assert np.median(fresh.upper - fresh.lower) < np.median(upper - lower) / 3


def test_carried_intervals_hold_over_moving_frames_on_small_budgets(shipped):
    """Verdict-then-tighten over moving frames on a TickClock, budgets too small to close every
    pair, intervals carried from frame to frame: every interval brackets the distance, and width 0
    only where it is exact."""
    models, banks = shipped
    bank = banks["medial"]
    model_id, pairs, frames = moving_frames(models, np.random.default_rng(12))
    carried = CarriedIntervals()
    for budget in (1e-6, 1.5e-6):
        for T, truth in frames:
            clock = TickClock(1e-7)
            r = refine_frame(bank, model_id, T, pairs, deadline=clock() + budget, clock=clock, tighten=True,
                             carried=carried)
            assert np.all(r.lower <= truth + 1e-9) and np.all(truth <= r.upper + 1e-9)
            closed = r.lower == r.upper
            assert np.allclose(r.lower[closed], truth[closed], atol=1e-9)
            assert not closed.all()


def test_a_sample_with_no_time_to_narrow_still_carries_when_its_intervals_are_read(shipped):
    """A sample whose budget is spent by its verdicts does not narrow, and reads no clock for it;
    its intervals, read after it, are the verdict's narrowed by the intervals carried from the last
    sample that narrowed: they bracket the distance and are narrower; its verdicts are the same, and
    what is carried is unchanged, so the next sample does not depend on the read."""
    models, banks = shipped
    bank = banks["medial"]
    model_id, pairs, ((T0, _), (T1, truth)) = moving_frames(models, np.random.default_rng(12), frames=2)
    carried = CarriedIntervals()
    clock = TickClock(1e-7)
    refine_frame(bank, model_id, T0, pairs, deadline=clock() + 1.0, clock=clock, tighten=True, carried=carried)
    kept = carried.kept
    runs = {}
    for name, with_carried in (("alone", None), ("carried", carried)):
        clock = TickClock(1e-7)
        r = refine_frame(bank, model_id, T1, pairs, deadline=clock() + 1e-7, clock=clock, tighten=True,
                         carried=with_carried)
        assert not r.interval_known
        runs[name] = (r, clock.now)
    (alone, reads_alone), (got, reads) = runs["alone"], runs["carried"]
    assert reads == reads_alone and np.array_equal(got.colliding, alone.colliding)
    assert np.all(got.lower <= truth + 1e-9) and np.all(truth <= got.upper + 1e-9)
    assert np.all(got.lower >= alone.lower) and np.all(got.upper <= alone.upper)
    assert np.median(got.upper - got.lower) < np.median(alone.upper - alone.lower) / 3
    assert carried.kept is kept


def test_a_tightening_samples_set_up_and_keep_match_the_steps_they_fuse(shipped):
    """opened (poses, the verdict's bounds and the carried intervals in one call) against the three
    calls it fuses, and kept_of against numpy's stable sort and gathers, on moving random frames:
    bit for bit, carried or not."""
    models, banks = shipped
    bank = banks["medial"]
    model_id, pairs, frames = moving_frames(models, np.random.default_rng(14), frames=3)
    rng, A = np.random.default_rng(15), bank_parts(bank)
    kept, carried = NO_KEPT, 0
    for T, _ in frames:
        first = refine_frame(bank, model_id, T, pairs, deadline=np.inf, max_level=1, triangle_tests=False)
        roots = first._spheres[3], first._spheres[4]
        verdict = first.colliding, first.certain, first.separation_bound, first.distance
        R, t, lower, upper = opened(A, A, T, pairs, model_id, *roots, *verdict, kept)
        R0, t0 = row_poses(T, pairs)
        lower0, upper0 = _verdict_bounds(A, A, R0, t0, *roots, *verdict)
        alone = upper0.copy()
        carry_rows(kept, pairs, model_id, T, bank.spheres, *roots, lower0, upper0)
        carried += not np.array_equal(upper0, alone)
        for got, want in ((R, R0), (t, t0), (lower, lower0), (upper, upper0)):
            assert np.array_equal(got, want)
        shuffled = pairs[rng.permutation(len(pairs))]
        lower, upper = rng.random(len(pairs)), 1.0 + rng.random(len(pairs))
        kept = kept_of(shuffled, model_id, T, lower, upper)
        keys = (shuffled[:, 0].astype(np.int64) << 32) | shuffled[:, 1]
        order = np.argsort(keys, kind="stable")
        in_order = shuffled[order]
        want = (keys[order], model_id[in_order], T[in_order[:, 0]], T[in_order[:, 1]], lower[order], upper[order])
        assert all(np.array_equal(got, w) for got, w in zip(kept, want))
    assert carried == len(frames) - 1  # every frame after the first carried something


def test_intervals_are_not_carried_to_another_model_or_bank(shipped):
    """A pair whose bodies' models changed, or a frame over another bank, starts afresh."""
    models, banks = shipped
    model_id, pairs, frames = moving_frames(models, np.random.default_rng(13), frames=2)
    (T0, _), (T1, _) = frames
    carried = CarriedIntervals()
    first = refine_frame(banks["medial"], model_id, T0, pairs, deadline=np.inf, tighten=True)
    carried.remember(banks["medial"], first, model_id, T0)
    swapped = (model_id + 1) % len(models)
    for bank, ids in ((banks["medial"], swapped), (banks["octree"], model_id)):
        clock = TickClock(1e-7)
        fresh = refine_frame(bank, ids, T1, pairs, deadline=clock() + 30e-6, clock=clock, tighten=True)
        clock = TickClock(1e-7)
        again = refine_frame(bank, ids, T1, pairs, deadline=clock() + 30e-6, clock=clock, tighten=True,
                             carried=carried)
        assert np.array_equal(fresh.lower, again.lower) and np.array_equal(fresh.upper, again.upper)


def test_a_narrowing_priced_past_the_deadline_does_not_start_and_probes_to_recover(shipped):
    """After set-ups measured far too slow (a stall), no narrowing starts on a small budget; after
    probe_after refusals one runs and measures afresh, and within a few probes the estimate has
    recovered."""
    from spaceship_sim.narrowphase.refine import _tighten_cost

    models, banks = shipped
    model_id, T, pairs, _ = frame(models, banks["medial"], np.random.default_rng(14))
    clock = TickClock(1e-7)
    set_up, _ = _tighten_cost(clock)
    for _ in range(5):
        set_up.observe(1.0)  # a stall: 1 s a set-up
    ran = []
    for _ in range(4 * (set_up.probe_after + 1)):
        start = clock()
        r = refine_frame(banks["medial"], model_id, T, pairs, deadline=start + 50e-6, clock=clock, tighten=True)
        ran.append(r.interval_known)
    assert ran[:set_up.probe_after + 1] == [False] * set_up.probe_after + [True]
    assert all(ran[-5:]) and set_up.predict() < 50e-6  # the stall forgotten: every sample narrows again


def test_a_round_priced_past_the_deadline_pops_nothing_until_its_probe(shipped):
    """Node pairs measured far too slow: the narrowing makes the intervals but no round starts a
    row (they stay as the verdict left them); after probe_after refusals one row runs to measure."""
    from spaceship_sim.narrowphase.refine import _pop_cost

    models, banks = shipped
    model_id, T, pairs, truth = frame(models, banks["medial"], np.random.default_rng(15))
    clock = TickClock(1e-7)
    per_pop = _pop_cost(clock)
    for _ in range(5):
        per_pop.observe(1.0, 1)  # a stall: 1 s a node pair
    verdict = refine_frame(banks["medial"], model_id, T, pairs, deadline=clock() + 1e-3, clock=TickClock(1e-7))
    narrowed_any = []
    for _ in range(per_pop.probe_after + 1):
        r = refine_frame(banks["medial"], model_id, T, pairs, deadline=clock() + 1e-3, clock=clock, tighten=True)
        assert r.interval_known and np.all(r.lower <= truth + 1e-9) and np.all(truth <= r.upper + 1e-9)
        narrowed_any.append(bool(np.any(r.upper - r.lower < verdict.upper - verdict.lower)))
    assert narrowed_any == [False] * per_pop.probe_after + [True]
