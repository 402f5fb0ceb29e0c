"""On-collide sphere trees (narrowphase/ocst.py): verdicts equal brute force, coverage and error
bounds hold for every group built, also after evictions and re-creations, and building counts
against the frame's deadline."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from narrow_helpers import random_rotation
from spaceship_sim.clock import TickClock
from spaceship_sim.meshes import load_model, validate_mesh_arrays
from spaceship_sim.narrowphase import TreeBank, refine_frame
from spaceship_sim.narrowphase.exact import BruteForceExact
from spaceship_sim.registry import EXACT_METHODS
from spaceship_sim.narrowphase.kernels import min_distance_all_pairs
from spaceship_sim.narrowphase.ocst import ALL_PENDING, OcstBank
from spaceship_sim.spheretree.finish import centre_error_bounds, error_bounds
from spaceship_sim.spheretree.geometry import MeshQuery

DEPTH = 3


@pytest.fixture(scope="module")
def models(meshes):
    """An asset (the lamp, concave, 802 triangles) and a generated torus."""
    return [load_model("lamp"), validate_mesh_arrays(*meshes["torus"], "torus")]


@pytest.fixture(scope="module")
def bank(models):
    """One bank for the module: it keeps growing from test to test, as in a long run."""
    return OcstBank(models, depth=DEPTH)


def poses(rng, models, mid, n, reach=1.1):
    """(n, 4, 4) transforms of ships with models mid: pair (2i, 2i+1) has centres at most
    reach x (sum of bounding radii) apart, random orientations."""
    T = np.tile(np.eye(4), (n, 1, 1))
    for i in range(n):
        T[i, :3, :3] = random_rotation(rng)
    radius = np.array([m.bounding_radius for m in models])[mid]
    for i in range(0, n, 2):
        d = rng.normal(size=3)
        T[i + 1, :3, 3] = T[i, :3, 3] + d / np.linalg.norm(d) * rng.uniform(0, reach) * (radius[i] + radius[i + 1])
    return T


def check_coverage(bank, rng, samples=20):
    """Every interior node's children cover its cell: points sampled on the triangles of the
    node's list that lie in its cell lie in some built child sphere, or in an octant still pending
    (the kernels build it before any pair can need it); every point lies in its root."""
    tris = bank.tri_verts
    for m in range(bank.n_models):
        tm = tris[bank.tri_offset[m]:bank.tri_offset[m + 1]]
        w = rng.dirichlet(np.ones(3), size=(len(tm), 4))
        pts = np.einsum("tsk,tkc->tsc", w, tm).reshape(-1, 3)
        assert (np.linalg.norm(pts - bank.center[m], axis=1) <= bank.radius[m] * (1 + 1e-9)).all()
    origin_side = bank._cube
    for p in bank.built_nodes():
        if bank.child_count[p] <= 0:
            continue
        origin, side = origin_side[bank.model[p]]
        size = side / 2 ** bank.level[p]
        lo = origin + bank.cell[p] * size
        ids = bank.tri_idx[bank.tri_ptr[p]:bank.tri_ptr[p + 1]]
        w = rng.dirichlet(np.ones(3), size=(len(ids), samples))
        pts = np.einsum("tsk,tkc->tsc", w, tris[ids]).reshape(-1, 3)
        pts = pts[((pts >= lo) & (pts <= lo + size)).all(axis=1)]
        octant = (np.clip(np.floor((pts - lo) / (size / 2)), 0, 1).astype(np.int64) * [4, 2, 1]).sum(axis=1)
        pts = pts[(bank.pending[p] >> octant & 1) == 0]  # in a pending octant: nothing built yet
        kids = np.arange(bank.first_child[p], bank.first_child[p] + bank.child_count[p])
        kids = kids[~np.isnan(bank.radius[kids])]
        d = np.linalg.norm(pts[:, None] - bank.center[kids][None], axis=2)
        assert (d <= bank.radius[kids][None] * (1 + 1e-9)).any(axis=1).all(), f"children of node {p} miss a point"


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), all_contacts=st.booleans())
def test_exact_verdicts_equal_brute_force(bank, models, seed, all_contacts):
    rng = np.random.default_rng(seed)
    mid = rng.integers(0, 2, 8)
    T = poses(rng, models, mid, 8)
    pairs = np.arange(8).reshape(-1, 2)
    r = refine_frame(bank, mid, T, pairs, deadline=np.inf, min_level=0, all_contacts=all_contacts)
    want = BruteForceExact(models).collide(mid[pairs[:, 0]], mid[pairs[:, 1]], T[pairs[:, 0]], T[pairs[:, 1]])
    assert r.certain.all()
    assert np.array_equal(r.colliding, want.colliding)
    for k in range(len(pairs)):
        got = {tuple(x) for x in r.tri_pairs[k].tolist()}
        if all_contacts:
            assert got == {tuple(x) for x in want.pairs_of(k).tolist()}
        else:
            assert got <= {tuple(x) for x in want.pairs_of(k).tolist()} and len(got) == want.colliding[k]


def test_first_contacts_go_depth_first_and_build_less(models, monkeypatch):
    """First contacts on on-collide trees go on depth-first from a witness whose triangles miss, leaf
    pair by leaf pair: the same verdicts as testing the whole leaf frontier, the contact found in the
    witness reported, and never more spheres built (each pair on fresh banks)."""
    from spaceship_sim.narrowphase import refine

    rng = np.random.default_rng(11)
    mid = np.zeros(40, np.int64)
    T = poses(rng, models, mid, 40, reach=0.8)
    built, verdicts = {}, {}
    for way in ("depth-first", "whole frontier"):
        if way == "whole frontier":
            monkeypatch.setitem(refine.LEAF_PAIRS_TRIED, "on-collide", 0)
        built[way], verdicts[way] = [], []
        for i in range(0, 40, 2):
            bank = OcstBank(models[:1], depth=4)
            r = refine_frame(bank, mid[:2], T[i:i + 2], np.array([[0, 1]]), deadline=np.inf, min_level=0,
                             all_contacts=False)
            built[way].append(bank.resident_nodes)
            verdicts[way].append(bool(r.colliding[0]))
            if way == "depth-first" and r.colliding[0]:
                (na, nb), (ta, tb) = r.sphere_pairs[0][-1], r.tri_pairs[0][0]  # one model: local ids = bank ids
                for node, tri in ((na, ta), (nb, tb)):
                    assert bank.child_count[node] == 0
                    assert tri in bank.tri_idx[bank.tri_ptr[node]:bank.tri_ptr[node + 1]]
    assert verdicts["depth-first"] == verdicts["whole frontier"] and sum(verdicts["depth-first"]) >= 5
    assert all(a <= b for a, b in zip(built["depth-first"], built["whole frontier"]))
    assert sum(built["depth-first"]) < sum(built["whole frontier"])


def test_registered_exact_strategy_answers_like_the_oracle(models):
    rng = np.random.default_rng(2)
    ma, mb = np.array([0, 1, 0, 1]), np.array([0, 1, 1, 0])
    T = poses(rng, models, np.ravel(np.stack([ma, mb], 1)), 8)
    Ta, Tb = T[0::2], T[1::2]
    got = EXACT_METHODS["ocst"](models).collide(ma, mb, Ta, Tb)
    want = BruteForceExact(models).collide(ma, mb, Ta, Tb)
    assert np.array_equal(got.colliding, want.colliding) and want.colliding.any()
    for i in range(4):
        assert {tuple(p) for p in got.pairs_of(i).tolist()} == {tuple(p) for p in want.pairs_of(i).tolist()}


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), level=st.integers(1, DEPTH))
def test_separation_bound_at_least_exact_distance(bank, models, seed, level):
    rng = np.random.default_rng(seed)
    mid = rng.integers(0, 2, 6)
    T = poses(rng, models, mid, 6, reach=0.9)
    pairs = np.arange(6).reshape(-1, 2)
    r = refine_frame(bank, mid, T, pairs, deadline=np.inf, min_level=0, max_level=level, triangle_tests=False)
    for k in np.flatnonzero(r.colliding):
        a, b = pairs[k]
        ta = models[mid[a]].vertices @ T[a, :3, :3].T + T[a, :3, 3]
        tb = models[mid[b]].vertices @ T[b, :3, :3].T + T[b, :3, 3]
        exact = min_distance_all_pairs(ta[models[mid[a]].faces], tb[models[mid[b]].faces])
        assert r.separation_bound[k] >= exact - 1e-9
    # apart at a sphere level is certain: brute force agrees
    want = BruteForceExact(models).collide(mid[pairs[:, 0]], mid[pairs[:, 1]], T[pairs[:, 0]], T[pairs[:, 1]])
    assert not (want.colliding & ~r.colliding).any()


def test_error_bounds_and_witnesses_are_finish_py_s(bank, models):
    """Error bounds are the centre's (finish.centre_error_bounds) on the whole mesh, so true bounds:
    at least the branch and bound's less its slack (it may exceed the true maximum by 3% of r, the
    centre's bound never falls below it); witnesses are the closest surface points."""
    built = bank.built_nodes()
    assert len(built) > bank.n_models, "earlier tests built nodes"
    for m, mesh in enumerate(models):
        nodes = built[bank.model[built] == m][:40]
        whole = MeshQuery(mesh.vertices, mesh.faces, mesh.closed)
        c, r = bank.center[nodes], bank.radius[nodes]
        assert np.allclose(bank.error[nodes], centre_error_bounds(whole, c, r), rtol=1e-12, atol=1e-12)
        assert (bank.error[nodes] >= error_bounds(whole, c, r) - 0.03 * r - 1e-12).all()
        d, _, _, _ = whole.query(bank.center[nodes])
        assert np.allclose(np.linalg.norm(bank.witness[nodes] - bank.center[nodes], axis=1), d, atol=1e-12)


def test_coverage_survives_evictions_and_re_creation(models):
    """Groups evicted by age and by the cap, then rebuilt: coverage holds at every step, the cap is
    met after each maintain, and a rebuilt group equals the first one built for the same cell."""
    rng = np.random.default_rng(3)
    models = models[1:]  # the torus: small enough to rebuild often
    bank = OcstBank(models, depth=DEPTH, evict_after=0.5, max_nodes=40)
    first = {}
    mid = np.zeros(4, np.int64)
    for step in range(6):
        bank.maintain(0.3 * step)
        assert bank.resident_nodes <= 40 or step == 0
        T = poses(rng, models, mid, 4, reach=0.8)
        refine_frame(bank, mid, T, np.arange(4).reshape(-1, 2), deadline=np.inf, min_level=0)
        check_coverage(bank, rng)
        for s in bank.built_nodes():
            key = (int(bank.model[s]), int(bank.level[s]), *bank.cell[s].tolist())
            got = (bank.center[s].tolist(), float(bank.radius[s]), float(bank.error[s]))
            assert first.setdefault(key, got) == got
    assert bank.evicted_spheres > 0
    bank.maintain(100.0)  # nothing used for far longer than evict_after: back to the roots
    assert bank.resident_nodes == bank.n_models
    assert (bank.pending[:bank.n_models] == ALL_PENDING).all()
    r = refine_frame(bank, mid, poses(rng, models, mid, 4, reach=0.8), np.arange(4).reshape(-1, 2),
                     deadline=np.inf, min_level=0)
    assert r.certain.all()
    check_coverage(bank, rng)


def test_cap_evicts_least_recently_used_deepest_first(models):
    torus = models[1:]
    bank = OcstBank(torus, depth=DEPTH)
    T = poses(np.random.default_rng(4), torus, np.zeros(2, np.int64), 2, reach=0.3)
    refine_frame(bank, np.zeros(2, np.int64), T, np.array([[0, 1]]), deadline=np.inf, min_level=0)
    assert bank.resident_nodes > 9
    levels = np.sort(bank.level[bank.built_nodes()])
    bank.max_nodes = 9  # everything was used at the same time: the 9 shallowest spheres stay
    bank.maintain(bank.now)
    assert bank.resident_nodes == 9
    assert np.array_equal(np.sort(bank.level[bank.built_nodes()]), levels[:9])
    check_coverage(bank, np.random.default_rng(4))


class BuildClock(TickClock):
    """A TickClock that also advances by `cost` per sphere the bank builds (building is work the
    deadline must see, as the wall clock sees it)."""

    def __init__(self, bank, cost):
        super().__init__(1e-6)
        build = bank.build

        def timed_build(nodes):
            before = bank.built_spheres
            build(nodes)
            self.spend(cost * (bank.built_spheres - before))
        bank.build = timed_build


def test_building_counts_against_the_deadline_and_min_level_holds(models):
    rng = np.random.default_rng(11)
    mid = np.zeros(16, np.int64)
    T = poses(rng, models, mid, 16, reach=0.5)
    pairs = np.arange(16).reshape(-1, 2)
    fresh = OcstBank(models, depth=DEPTH)
    clock = BuildClock(fresh, cost=1.0)  # one second per sphere: far past any deadline
    r = refine_frame(fresh, mid, T, pairs, deadline=clock() + 0.01, min_level=2, clock=clock)
    assert (r.level[r.colliding] == 2).all() and not r.certain[r.colliding].any()
    # the same deadline on trees already built reaches deeper (less is spent)
    ticks = TickClock(1e-6)
    warm = refine_frame(fresh, mid, T, pairs, deadline=ticks() + 0.01, min_level=2, clock=ticks)
    assert warm.level[warm.colliding].max() > 2


def _lamps_at_their_leaves(models, seed, **bank_args):
    """8 lamp pairs (many grazing) refined to their sphere leaves, not further, on a fresh bank;
    returns (bank, refine_frame's model ids, poses, pairs) and brute force's answer."""
    lamp = models[:1]
    mid = np.zeros(16, np.int64)
    T = poses(np.random.default_rng(seed), lamp, mid, 16, reach=0.9)
    pairs = np.arange(16).reshape(-1, 2)
    bank = OcstBank(lamp, depth=DEPTH, **bank_args)
    refine_frame(bank, mid, T, pairs, deadline=np.inf, min_level=0, max_level=DEPTH, triangle_tests=False)
    return (bank, mid, T, pairs), BruteForceExact(lamp).collide(mid[pairs[:, 0]], mid[pairs[:, 1]], T[pairs[:, 0]],
                                                                 T[pairs[:, 1]])


def check_cut_rows(r, want, bank, args):
    """Rows the exact level left undone are colliding at their sphere leaves (conservative), the
    rest answer as brute force; the bank is left consistent: no deadline then gives brute force's
    answer for every pair."""
    assert np.array_equal(r.colliding[r.certain], want.colliding[r.certain]) and r.colliding[want.colliding].all()
    cut = r.colliding & ~r.certain
    assert cut.any() and (r.level[cut] == DEPTH).all()
    free = refine_frame(*args, deadline=np.inf, min_level=0, all_contacts=False)
    assert free.certain.all() and np.array_equal(free.colliding, want.colliding)


@pytest.mark.parametrize("seed", [1, 3])
def test_first_contacts_start_no_build_round_past_the_deadline(models, seed):
    """First contacts on trees being built take many build rounds a row (pairs apart at the
    triangles visit every colliding leaf pair). Under a deadline none starts past it (they used to
    run a row to its end, 22-24 rounds past a 5 ms deadline here: 40-76 ms over)."""
    args, want = _lamps_at_their_leaves(models, seed)
    bank = args[0]
    clock = BuildClock(bank, cost=1e-3)
    starts, build = [], bank.build

    def recorded(nodes):
        t0 = clock.now
        build(nodes)
        starts.append((t0, clock.now - t0))
    bank.build = recorded
    deadline = clock() + 0.005
    r = refine_frame(*args, deadline=deadline, min_level=DEPTH, all_contacts=False, clock=clock)
    assert starts and all(t < deadline for t, _ in starts)
    assert clock.now - deadline <= max(cost for _, cost in starts)  # what one round started in time may take
    check_cut_rows(r, want, bank, args)


def test_first_contacts_under_a_deadline_keep_the_cap(models):
    """Under a deadline, the first contacts' builds stay within the cap even where the spheres the
    sample holds fill it (they used to pass it: those cannot be evicted); the rows that would need
    more stay at their sphere leaves."""
    args, want = _lamps_at_their_leaves(models, 1, evict_after=1e6)
    bank = args[0]
    bank.max_nodes = cap = bank.resident_nodes + 4  # everything resident is held: built in this sample
    bank.take_peak()
    clock = TickClock(1e-6)
    r = refine_frame(*args, deadline=clock() + 10.0, min_level=DEPTH, all_contacts=False, clock=clock)
    assert bank.take_peak() <= cap and bank.resident_nodes > cap - 4  # it built what fitted
    check_cut_rows(r, want, bank, args)


def test_prebuilt_and_on_collide_trees_agree_level_by_level(models):
    """Same octree geometry: the sphere levels reached and their verdicts equal the prebuilt
    octree's (built through the project's builder) when both refine without deadline."""
    from spaceship_sim.spheretree.build import build_tree

    lamp = models[0]
    tree = build_tree(lamp.vertices, lamp.faces, method="octree", depth=2, closed=lamp.closed)
    pre, on = TreeBank.from_trees([tree]), OcstBank([lamp], depth=2)
    rng = np.random.default_rng(5)
    T = poses(rng, [lamp], np.zeros(12, np.int64), 12, reach=1.0)
    pairs = np.arange(12).reshape(-1, 2)
    mid = np.zeros(12, np.int64)
    for level in (1, 2):
        a = refine_frame(pre, mid, T, pairs, deadline=np.inf, min_level=0, max_level=level, triangle_tests=False)
        b = refine_frame(on, mid, T, pairs, deadline=np.inf, min_level=0, max_level=level, triangle_tests=False)
        assert np.array_equal(a.colliding, b.colliding) and np.array_equal(a.level, b.level)
    assert on.resident_nodes <= tree.n_nodes


def test_world_flies_the_same_on_prebuilt_and_on_collide_octrees():
    """The lamps scenario, every pair refined to the triangles (time_critical off): OCST and the
    prebuilt octree have the same geometry, so verdicts, contacts and the state hash agree — also
    while spheres are evicted and rebuilt."""
    import dataclasses

    from spaceship_sim.config import load_config, shipped_config
    from spaceship_sim.sim.world import World

    cfg = load_config(shipped_config("lamps.toml"))
    hashes, hits = {}, {}
    for method in ("octree", "ocst"):
        c = dataclasses.replace(cfg, collision=dataclasses.replace(cfg.collision, tree_method=method,
                                                                   time_critical=False, ocst_evict_after=0.3))
        world = World.from_config(c, clock=TickClock(1e-5), notify=None)
        hits[method] = sum(world.step().colliding_pairs for _ in range(80))
        hashes[method] = world.state.hash()
    assert hits["ocst"] == hits["octree"] > 0
    assert hashes["ocst"] == hashes["octree"]
    assert world.bank.evicted_spheres > 0 and world.bank.built_spheres > world.bank.evicted_spheres


def test_resident_reasons_account_for_every_sphere(models):
    """Every resident sphere has one reason; a pair's frontier is in use in its sample, kept in the
    next ones until evict_after, then evicted with everything else."""
    torus = models[1:]
    bank = OcstBank(torus, depth=DEPTH, evict_after=1.0)
    T = poses(np.random.default_rng(6), torus, np.zeros(2, np.int64), 2, reach=0.6)
    refine_frame(bank, np.zeros(2, np.int64), T, np.array([[0, 1]]), deadline=np.inf, min_level=0)
    used = bank.resident_reasons()
    assert sum(used.values()) == bank.resident_nodes and used["roots"] == 1
    assert used["in_use"] > 0 and used["kept"] == 0
    kids = bank.built_nodes()[1:]
    never = kids[bank.touched[kids] == -np.inf]
    assert len(never) == used["never_used"] and (bank.stamp[never] == 0.0).all()
    bank.maintain(0.5)  # nothing refined since: all of it kept
    assert bank.resident_reasons() == dict(used, in_use=0, kept=used["in_use"])
    bank.maintain(2.0)
    assert bank.resident_reasons() == {"roots": 1, "in_use": 0, "kept": 0, "never_used": 0}


def test_octants_are_built_only_where_a_pair_needs_them(models):
    """Octants built one at a time: on fresh banks, each pair's verdict equals brute force and
    coverage holds (pending octants excused), while occupied siblings of built children stay
    pending — spheres a whole group would have built. Pending bits are left only on occupied
    octants of a node once one of its octants is built (empty ones are struck)."""
    lamp = models[:1]
    rng = np.random.default_rng(8)
    mid = np.zeros(2, np.int64)
    saved = 0
    for _ in range(12):
        bank = OcstBank(lamp, depth=4)
        T = poses(rng, lamp, mid, 2, reach=0.9)
        for all_contacts in (False, True):
            r = refine_frame(bank, mid, T, np.array([[0, 1]]), deadline=np.inf, min_level=0,
                             all_contacts=all_contacts)
            want = BruteForceExact(lamp).collide(mid[:1], mid[1:], T[:1], T[1:])
            assert r.certain[0] and r.colliding[0] == want.colliding[0]
            check_coverage(bank, rng)
        nodes = bank.built_nodes()
        inner = nodes[bank.child_count[nodes] > 0]
        kids = bank.first_child[inner][:, None] + np.arange(8)[None]
        grown = ~np.isnan(bank.radius[kids]).all(axis=1)  # nodes with a child built
        saved += sum(bin(int(p)).count("1") for p in bank.pending[inner[grown]])
        origin, side = bank._cube[0]
        for p in inner[grown]:  # every pending octant of a grown node is occupied
            size = side / 2 ** (bank.level[p] + 1)
            ids = bank.tri_idx[bank.tri_ptr[p]:bank.tri_ptr[p + 1]]
            for j in range(8):
                if bank.pending[p] >> j & 1:
                    lo = origin + (2 * bank.cell[p] + [j >> 2, j >> 1 & 1, j & 1]) * size
                    assert _meets_box(bank.tri_verts[ids], lo, lo + size)
    assert saved > 0


def _meets_box(tris, lo, hi):
    """Whether a triangle of tris (n, 3, 3) meets the cube [lo, hi] (the octree's own SAT test)."""
    from spaceship_sim.geometry.triangles import triangle_meets_box

    c, half = (lo + hi) / 2, float((hi - lo)[0]) / 2
    v, e = np.empty((3, 3)), np.empty((3, 3))
    tris = np.ascontiguousarray(tris)
    return any(triangle_meets_box(tris, i, c[0], c[1], c[2], half, v, e) for i in range(len(tris)))


def test_a_generous_deadline_refines_as_far_as_no_deadline(models):
    """Rows that the forced levels leave waiting for octants, all of them, are resumed after the
    kernel has ended its level: the search must go on from there (it used to stop, every row at
    min_level, well before the deadline)."""
    rng = np.random.default_rng(12)
    mid = np.zeros(8, np.int64)
    T = poses(rng, models, mid, 8, reach=0.6)
    pairs = np.arange(8).reshape(-1, 2)
    clock = TickClock(1e-6)
    r = refine_frame(OcstBank(models[:1], depth=DEPTH), mid, T, pairs, deadline=clock() + 10.0, min_level=1,
                     clock=clock)
    free = refine_frame(OcstBank(models[:1], depth=DEPTH), mid, T, pairs, deadline=np.inf, min_level=0)
    assert r.certain.all() and np.array_equal(r.level, free.level) and np.array_equal(r.colliding, free.colliding)


def _held(bank):
    """Roots and every sphere used or built in the sample (bank.now) or whose parent a continuation
    holds: what a build inside the sample may not evict (OcstBank._evict_lru)."""
    kids = bank.built_nodes()[bank.n_models:]
    return bank.n_models + int(np.count_nonzero((bank.stamp[kids] >= bank.now) |
                                                (bank.scanned[bank.parent[kids]] >= bank.now)))


def check_cap_at_every_build(bank):
    """After every build: resident within the cap, or past it by no more than the held spheres and
    the build's own new ones; and the counter equals the spheres there are."""
    build = bank.build

    def checked(nodes):
        before = bank.built_spheres
        build(nodes)
        assert bank.resident_nodes == len(bank.built_nodes())
        assert bank.resident_nodes <= max(bank.max_nodes, _held(bank) + bank.built_spheres - before)
    bank.build = checked


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), all_contacts=st.booleans(), cap=st.integers(30, 150))
def test_the_cap_holds_inside_a_sample_and_verdicts_stay_exact(models, seed, all_contacts, cap):
    """A cap the samples' pairs overrun: builds inside a sample evict least recently used spheres
    of earlier samples, never what the sample's pairs hold (their stacks' nodes, the octants their
    continuations will scan), so verdicts and contacts still equal brute force, coverage holds, and
    the peak stays within the cap unless the spheres held alone fill it."""
    rng = np.random.default_rng(seed)
    bank = OcstBank(models, depth=DEPTH, evict_after=1e6, max_nodes=cap)  # the cap evicts, age never does
    check_cap_at_every_build(bank)
    pairs = np.arange(12).reshape(-1, 2)
    evicted_inside = 0
    for step in range(4):
        bank.maintain(float(step))
        assert bank.resident_nodes <= cap
        mid = rng.integers(0, 2, 12)
        T = poses(rng, models, mid, 12, reach=0.8)
        before = bank.evicted_spheres
        r = refine_frame(bank, mid, T, pairs, deadline=np.inf, min_level=0, all_contacts=all_contacts)
        evicted_inside += bank.evicted_spheres - before
        want = BruteForceExact(models).collide(mid[pairs[:, 0]], mid[pairs[:, 1]], T[pairs[:, 0]], T[pairs[:, 1]])
        assert r.certain.all() and np.array_equal(r.colliding, want.colliding)
        for k in range(len(pairs)):
            got = {tuple(x) for x in r.tri_pairs[k].tolist()}
            assert got == {tuple(x) for x in want.pairs_of(k).tolist()} if all_contacts else len(got) == want.colliding[k]
        check_coverage(bank, rng, samples=5)
    assert evicted_inside > 0  # the case the test is for: evictions while a sample's pairs are live


def test_the_cap_holds_exactly_when_the_sample_holds_less(models):
    """Earlier samples' spheres fill the cap; a new sample's pair needs fewer than the cap: its builds
    evict old spheres first, and the resident count never passes the cap."""
    torus = models[1:]
    mid = np.zeros(2, np.int64)
    rng = np.random.default_rng(21)
    one = OcstBank(torus, depth=DEPTH)
    T_new = poses(rng, torus, mid, 2, reach=0.5)
    refine_frame(one, mid, T_new, np.array([[0, 1]]), deadline=np.inf, min_level=0)
    need = one.resident_nodes  # what the new pair builds on its own
    bank = OcstBank(torus, depth=DEPTH, evict_after=1e6)
    refine_frame(bank, np.zeros(8, np.int64), poses(rng, torus, np.zeros(8, np.int64), 8, reach=0.5),
                 np.arange(8).reshape(-1, 2), deadline=np.inf, min_level=0)
    bank.max_nodes = cap = need + 2
    bank.maintain(1.0)
    assert bank.resident_nodes == cap
    bank.take_peak()
    before = bank.evicted_spheres
    r = refine_frame(bank, mid, T_new, np.array([[0, 1]]), deadline=np.inf, min_level=0)
    assert bank.take_peak() <= cap and bank.evicted_spheres > before
    assert r.certain[0] and r.colliding[0] == BruteForceExact(torus).collide(mid[:1], mid[1:], T_new[:1], T_new[1:]).colliding[0]


def test_rebuilt_spheres_count_cells_built_again(models):
    """A sphere built for a cell built before (and evicted since) is a rebuild; a first build is not."""
    torus = models[1:]
    mid = np.zeros(2, np.int64)
    T = poses(np.random.default_rng(9), torus, mid, 2, reach=0.5)
    bank = OcstBank(torus, depth=DEPTH, evict_after=1.0)
    refine_frame(bank, mid, T, np.array([[0, 1]]), deadline=np.inf, min_level=0)
    first = bank.built_spheres
    assert first > 0 and bank.rebuilt_spheres == 0 and bank.resident_nodes == 1 + first
    bank.maintain(10.0)  # all evicted
    assert bank.resident_nodes == len(bank.built_nodes()) == 1
    refine_frame(bank, mid, T, np.array([[0, 1]]), deadline=np.inf, min_level=0)
    assert bank.built_spheres == 2 * first and bank.rebuilt_spheres == first


def test_a_capped_run_is_deterministic():
    """Same config and seed, same state hash, with the share cap evicting inside samples (time-critical,
    on a TickClock: the same budgets each run)."""
    import dataclasses

    from spaceship_sim.config import load_config, shipped_config
    from spaceship_sim.sim.world import World

    cfg = load_config(shipped_config("lamps.toml"))
    cfg = dataclasses.replace(cfg, collision=dataclasses.replace(cfg.collision, tree_method="ocst", tree_depth=4,
                                                                 ocst_max_share=0.05, ocst_evict_after=2.0))
    runs = []
    for _ in range(2):
        world = World.from_config(cfg, clock=TickClock(1e-5), notify=None)
        for _ in range(40):
            world.step()
            world.end_frame(world.clock.spend(0.0))
        b = world.bank
        runs.append((world.state.hash(), b.built_spheres, b.rebuilt_spheres, b.evicted_spheres))
    assert runs[0] == runs[1]
    assert runs[0][2] > 0 and world.bank.max_nodes == int(0.05 * world.bank.full_nodes)  # the cap bound
