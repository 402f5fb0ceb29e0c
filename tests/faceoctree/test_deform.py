"""Deforming ships: the flexed shape's bound, and a world whose lamps pulse, tested frame by frame
against brute force on the shapes of each sample."""
import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from spaceship_sim.clock import TickClock
from spaceship_sim.config import DeformConfig, config_from_dict
from spaceship_sim.faceoctree.deform import flexed
from spaceship_sim.meshes import load_model
from spaceship_sim.narrowphase.exact import BruteForceExact
from spaceship_sim.spheretree.geometry import MeshQuery
from spaceship_sim.state import transforms
from spaceship_sim.sim.world import World

CROWDED = {"arena": {"size": 44.0}, "ships": {"count": 8, "models": ["lamp", "fighter"], "user_model": "fighter",
                                             "initial_speed": 12.0, "spacing": 1.0},
           "sim": {"seed": 3}, "collision": {"tree_method": "octree", "time_critical": False},
           "deform": {"models": ["lamp"], "amplitude": 0.2, "frequency": 1.0, "wavelength": 5.0}}


@settings(max_examples=20, deadline=None)
@given(st.floats(0, 100), st.floats(0, 0.5), st.floats(0.01, 10), st.floats(0.5, 50))
def test_flexed_hull_stays_in_the_scaled_sphere_and_is_periodic(t, a, f, wavelength):
    rest = load_model("lamp").vertices
    d = DeformConfig(models=("lamp",), amplitude=a, frequency=f, wavelength=wavelength)
    v = flexed(rest, t, d)
    assert np.all(np.linalg.norm(v, axis=1) <= (1 + a) * np.linalg.norm(rest, axis=1) + 1e-12)
    assert np.array_equal(v[:, 0], rest[:, 0])
    assert np.allclose(flexed(rest, t + 1 / f, d), v, atol=1e-9 * max(1.0, t * f))


def test_pulsing_lamps_match_brute_force_frame_by_frame():
    world = World.from_config(config_from_dict(CROWDED, "crowded"), clock=TickClock(), notify=None)
    lamp = world.models.index(next(m for m in world.models if m.name == "lamp"))
    flexing = seen = 0
    for _ in range(30):
        world.step()
        narrow, state = world.last_narrow, world.state
        rows = np.flatnonzero((state.model_id[narrow.pairs] == lamp).any(1))
        if not len(rows):
            continue
        now = world.deforming.shapes(world.deforming.last_t)
        shapes = [dataclasses.replace(m, vertices=now.get(i, m.vertices)) for i, m in enumerate(world.models)]
        ia, ib = narrow.pairs[rows, 0], narrow.pairs[rows, 1]
        T = transforms(state)
        want = BruteForceExact(shapes).collide(state.model_id[ia], state.model_id[ib], T[ia], T[ib])
        assert np.array_equal(narrow.colliding[rows], want.colliding)
        assert narrow.certain[rows].all()
        for j, i in enumerate(rows):  # all contacts: exactly the intersecting triangle pairs
            got = {tuple(x) for x in narrow.tri_pairs[i].tolist()}
            assert got == {tuple(x) for x in want.pairs_of(j).tolist()}
        flexing += len(rows)
        seen += int(want.colliding.sum())
    assert flexing >= 5 and seen >= 1  # the scenario does exercise both verdicts


def test_flexing_pairs_within_a_budget_miss_no_contact_frame_by_frame():
    """Time-critical: each sample's flexing pairs refined again, on deadlines from one clock read
    away (TickClock) to none — every contact brute force finds is reported colliding, at whatever
    level; every pair answered exactly (found apart, or by the face octree) agrees with brute force."""
    world = World.from_config(config_from_dict(CROWDED, "crowded"), clock=TickClock(), notify=None)
    lamp = world.models.index(next(m for m in world.models if m.name == "lamp"))
    short = exact_hits = 0
    for _ in range(30):
        world.step()
        state, pairs = world.state, world.last_narrow.pairs
        pairs = pairs[(state.model_id[pairs] == lamp).any(1)]
        if not len(pairs):
            continue
        T = transforms(state)
        now = world.deforming.shapes(world.deforming.last_t)
        shapes = [dataclasses.replace(m, vertices=now.get(i, m.vertices)) for i, m in enumerate(world.models)]
        ia, ib = pairs[:, 0], pairs[:, 1]
        want = BruteForceExact(shapes).collide(state.model_id[ia], state.model_id[ib], T[ia], T[ib]).colliding
        for reads in (1, 8, 64, np.inf):
            clock = TickClock(tick=1e-4)
            got = world.narrow(world.bank, state.model_id, T, pairs, deadline=clock() + 1e-4 * reads, clock=clock)
            assert got.colliding[want].all()  # conservative: no contact missed
            assert np.array_equal(got.colliding[got.certain], want[got.certain])
            assert np.all(got.level[got.colliding] >= 1)  # min_level, deadline or not
            short += int((got.colliding & ~got.certain).sum())
            exact_hits += int((got.colliding & got.certain).sum())
    assert short >= 1 and exact_hits >= 1  # the budget bites, and not always


def test_the_time_a_mixed_sample_reports_includes_joining_its_rigid_and_flexing_answers(monkeypatch):
    """A sample with rigid and flexing pairs reports as time_used everything up to its joined answer,
    the join too (its every-contact lists of two deep overlaps took up to 12 ms), so that the
    budget's overrun prediction sees it: here the join costs 5 s of the clock."""
    from spaceship_sim.faceoctree import deform

    world = World.from_config(config_from_dict(CROWDED, "crowded"), clock=TickClock(), notify=None)
    clock = TickClock(tick=1e-6)
    join = deform._csr

    def slow_join(*args):
        clock.spend(2.5)  # two joins a merge (spheres, triangles)
        return join(*args)

    monkeypatch.setattr(deform, "_csr", slow_join)
    for _ in range(60):
        world.step()
        pairs, model_id = world.last_narrow.pairs, world.state.model_id
        flex = world.deforming.is_deforming[model_id[pairs]].any(1)
        if flex.any() and not flex.all():
            start = clock()
            got = world.narrow(world.bank, model_id, transforms(world.state), pairs, deadline=np.inf, clock=clock)
            assert 5.0 <= got.time_used <= clock() - start
            return
    pytest.fail("no sample mixed rigid and flexing pairs")


@settings(max_examples=25, deadline=None)
@given(st.floats(0, 100), st.floats(0, 0.5), st.floats(0.01, 10), st.floats(0.5, 50), st.integers(0, 2**32 - 1))
def test_flexed_surface_points_move_at_most_their_triangles_vertices(t, a, f, wavelength, seed):
    mesh = load_model("lamp")
    d = DeformConfig(models=("lamp",), amplitude=a, frequency=f, wavelength=wavelength)
    rng = np.random.default_rng(seed)
    tri = rng.integers(0, len(mesh.faces), 500)
    bary = rng.dirichlet(np.ones(3), 500)
    now = flexed(mesh.vertices, t, d)
    rest_points = np.einsum("nj,njk->nk", bary, mesh.vertices[mesh.faces[tri]])
    now_points = np.einsum("nj,njk->nk", bary, now[mesh.faces[tri]])
    moved = np.linalg.norm(now - mesh.vertices, axis=1)[mesh.faces[tri]].max(axis=1)
    assert np.all(np.linalg.norm(now_points - rest_points, axis=1) <= moved * (1 + 1e-12) + 1e-12)


def test_grown_tree_covers_the_flexed_hull_with_witnesses_on_it():
    """Every level of the grown tree covers sampled points of the flexed surface, each within a
    sphere of every level grown for its own face, its errors bound the distance from points of
    its spheres to it, and the witnesses lie on it."""
    world = World.from_config(config_from_dict(CROWDED, "crowded"), clock=TickClock(), notify=None)
    ships, lamp = world.deforming, world.models.index(next(m for m in world.models if m.name == "lamp"))
    bank = ships.bank(world.bank)
    tree, mesh = bank.trees[lamp], world.models[lamp]
    s, e = bank.node_offset[lamp], bank.node_offset[lamp + 1]
    rng = np.random.default_rng(5)
    for t in (0.0, 0.37, 1.2):
        ships.flex_to(t, bank)
        radius, error = bank.radius[s:e], bank.error[s:e]
        assert np.all(radius >= tree.radius) and radius.max() > tree.radius.max()  # grown, for this shape
        v = ships.shapes(t)[lamp]
        tris = v[mesh.faces]
        points = np.einsum("nj,njk->nk", rng.dirichlet(np.ones(3), 2000), tris[rng.integers(0, len(tris), 2000)])
        for level in range(tree.depth + 1):
            nodes = np.arange(tree.level_start[level], tree.level_start[level + 1])
            gap = np.linalg.norm(points[:, None] - tree.center[nodes][None], axis=2) - radius[nodes][None]
            assert gap.min(axis=1).max() <= 1e-9, level
        assert chains_hold_flexed_points(tree, mesh, v, radius, rng)
        query = MeshQuery(v, mesh.faces, tree.closed)
        assert query.query(bank.witness[s:e])[0].max() <= 1e-9  # real points of the flexed surface
        nodes = rng.integers(0, tree.n_nodes, 300)  # a random point of each sphere is within its error
        inside = tree.center[nodes] + rng.uniform(-1, 1, (300, 3)) * radius[nodes, None] / np.sqrt(3)
        assert np.all(query.solid_distance(inside) <= error[nodes] + 1e-9)


def chains_hold_flexed_points(tree, mesh, flexed_vertices, radius, rng, n=400) -> bool:
    """For sampled rest surface points: a chain of rest spheres holds the point from the root to a
    leaf listing its face (what the refinement needs), and the grown spheres (radius) of that chain
    hold the flexed point with the same barycentric coordinates."""
    tri = rng.integers(0, len(mesh.faces), n)
    bary = rng.dirichlet(np.ones(3), n)
    rest = np.einsum("nj,njk->nk", bary, mesh.vertices[mesh.faces[tri]])
    now = np.einsum("nj,njk->nk", bary, flexed_vertices[mesh.faces[tri]])
    inside = np.linalg.norm(rest[:, None] - tree.center[None], axis=2) <= tree.radius[None] + 1e-12
    grown = np.linalg.norm(now[:, None] - tree.center[None], axis=2) <= radius[None] + 1e-9
    for i in range(n):
        chains = []
        for leaf in np.flatnonzero((tree.child_count == 0) & inside[i]):
            chain = [leaf]
            while tree.parent[chain[-1]] >= 0:
                chain.append(tree.parent[chain[-1]])
            faces = tree.leaf_tri_idx[tree.leaf_tri_ptr[leaf]:tree.leaf_tri_ptr[leaf + 1]]
            if inside[i, chain].all() and tri[i] in faces:
                chains.append(chain)
        if not chains or not any(grown[i, chain].all() for chain in chains):
            return False
    return True
