"""Asteroids in the simulator: the field's pairs against brute force, response, budget, determinism."""
import copy

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from spaceship_sim.clock import TickClock
from spaceship_sim.config import config_from_dict
from spaceship_sim.convex.closest import MAX_ITER, PENETRATING, walk_pairs, walk_scratch
from spaceship_sim.convex.field import _sphere_pairs
from spaceship_sim.convex.sweep import BOX_PAD_REL, box_pairs_brute, sorted_pairs
from spaceship_sim.narrowphase.reference import brute_force_pair
from spaceship_sim.sim.world import World

# a crowded little field: a few lamps among 120 small asteroids, so pairs of every kind happen
FIELD = {"arena": {"size": 70.0}, "ships": {"count": 4, "models": ["lamp"], "user_model": "lamp",
                                             "initial_speed": 8.0},
         "sim": {"seed": 5}, "collision": {"tree_method": "octree"},
         "asteroids": {"count": 120, "faces": 12, "shapes": 3, "radius_min": 1.5, "radius_max": 3.0,
                       "speed_max": 4.0, "spin_max": 1.0}}


def field_world(clock=None, **over):
    raw = {k: dict(v) for k, v in FIELD.items()}
    for k, v in over.items():
        raw.setdefault(k, {}).update(v)
    kw = {} if clock is None else {"clock": clock}
    return World.from_config(config_from_dict(raw, "field"), notify=None, **kw)


@pytest.fixture(scope="module")
def run40():
    """An exact-only world and, per frame, what its last sample saw."""
    w = field_world(collision={"time_critical": False})
    frames = []
    for _ in range(40):
        w.step()
        f = w.field
        frames.append(dict(pos=f.pos.copy(), rot=f.rot.copy(), vel=f.vel.copy(), convex=f.last,
                           ships=w.state.copy(), narrow=w.last_narrow))
    return w, frames


def test_asteroid_pairs_colliding_exactly_when_brute_force_says_so(run40):
    w, frames = run40
    f, n = w.field, w.state.n
    seen = 0
    for fr in frames:
        a, b = np.triu_indices(f.count, 1)
        near = ((fr["pos"][a] - fr["pos"][b]) ** 2).sum(1) <= (f.radius[a] + f.radius[b]) ** 2
        pairs = np.stack([a[near], b[near]], 1).astype(np.int32)
        k = len(pairs)
        dist, status, points = np.empty(k), np.empty(k, np.int8), np.empty((k, 2, 3))
        walk_pairs(f.args, f.radius, fr["rot"], fr["pos"], pairs, np.full((k, 2), -1, np.int64), MAX_ITER, True,
                   dist, status, points, walk_scratch(f.pset))
        brute = sorted_pairs(pairs[status == PENETRATING] + n)
        assert np.array_equal(sorted_pairs(fr["convex"].hits), brute)
        seen += len(brute)
    assert seen > 0, "the field is crowded enough for asteroid collisions"


def test_ship_asteroid_candidates_are_the_box_overlaps(run40):
    """Ship cubes against each asteroid's tightest box at its orientation (every vertex transformed)."""
    w, frames = run40
    f, n = w.field, w.state.n
    fr = frames[-1]
    lo, hi = np.empty((f.count, 3)), np.empty((f.count, 3))
    for i in range(f.count):
        world = f.pset.vertices[f.pset.vert_range[i]:f.pset.vert_range[i + 1]] @ fr["rot"][i].T + fr["pos"][i]
        pad = BOX_PAD_REL * f.radius[i]
        lo[i], hi[i] = world.min(0) - pad, world.max(0) + pad
    s = fr["ships"]
    half = (s.radius * (1 + BOX_PAD_REL))[:, None]
    boxes = box_pairs_brute(np.concatenate([s.pos - half, lo]), np.concatenate([s.pos + half, hi]))
    expected = boxes[(boxes[:, 0] < n) & (boxes[:, 1] >= n)]
    narrow = fr["narrow"]
    got = narrow.pairs[narrow.pairs[:, 1] >= n]
    assert np.array_equal(sorted_pairs(got), sorted_pairs(expected))


def test_ship_asteroid_verdicts_are_the_triangles_verdicts(run40):
    """Exact-only: a ship–asteroid pair collides when a ship triangle meets an asteroid triangle."""
    w, frames = run40
    n, narrow, ships = w.state.n, frames[-1]["narrow"], frames[-1]["ships"]
    T = w.field.transforms(ships)  # the last frame's poses
    rows = np.flatnonzero(narrow.pairs[:, 1] >= n)
    for k in rows:
        s, a = narrow.pairs[k]
        ship, rock = w.models[ships.model_id[s]], w.asteroid_shapes.meshes[w.field.shape[a - n]]
        touching = len(brute_force_pair(ship.vertices, ship.faces, T[s], rock.vertices, rock.faces, T[a])) > 0
        assert bool(narrow.colliding[k]) == touching and narrow.certain[k]
    assert len(rows) > 0


def test_colliding_asteroids_part(run40):
    """After response the centres of a colliding asteroid pair no longer approach (pairs whose bodies
    were hit once in the sample: a second hit may turn a body back)."""
    w, frames = run40
    n, parted = w.state.n, 0
    for fr in frames:
        hits = fr["convex"].hits - n
        once = np.bincount(hits.ravel(), minlength=w.field.count) == 1
        for a, b in hits[once[hits].all(axis=1)]:
            assert np.dot(fr["vel"][b] - fr["vel"][a], fr["pos"][b] - fr["pos"][a]) >= 0
            parted += 1
    assert parted > 0


def test_min_level_holds_for_ship_asteroid_pairs_when_out_of_time():
    """No time at all (a clock whose every read is 1 s later): every pair still gets the min level."""
    w = field_world(clock=TickClock(1.0), collision={"min_level": 2})
    levels = []
    for _ in range(30):
        w.step()
        nr = w.last_narrow
        sel = (nr.pairs[:, 1] >= w.state.n) & nr.colliding
        levels += nr.level[sel].tolist()
    assert levels and min(levels) >= 2


def test_same_seed_same_hash_with_asteroids():
    hashes = []
    for _ in range(2):
        w = field_world(clock=TickClock(1e-5))
        for _ in range(60):
            w.step()
        hashes.append(w.field.hash(w.state))
    assert hashes[0] == hashes[1]
    assert field_world(sim={"seed": 6}).field.hash(w.state) != field_world().field.hash(w.state)


def test_fixed_cubes_give_the_same_collisions_as_dynamic_boxes():
    runs = []
    for boxes in ("dynamic", "fixed"):
        w = field_world(collision={"time_critical": False}, asteroids={"boxes": boxes})
        for _ in range(15):
            w.step()
        runs.append((w.field.hash(w.state), len(w.field.last.pairs)))
    assert runs[0][0] == runs[1][0], "same colliding pairs, so the same trajectories"
    assert runs[0][1] <= runs[1][1], "tight boxes overlap no more often than cubes"


def test_cold_start_pairs_are_the_bounding_sphere_overlaps():
    rng = np.random.default_rng(2)
    pos, radius = rng.uniform(0, 20, (300, 3)), rng.uniform(0.2, 1.5, 300)
    a, b = np.triu_indices(300, 1)
    near = ((pos[a] - pos[b]) ** 2).sum(1) <= (radius[a] + radius[b]) ** 2
    assert np.array_equal(_sphere_pairs(pos, radius), np.stack([a[near], b[near]], 1))


def test_cold_world_flies_then_switches_to_the_kernels():
    w = field_world(clock=TickClock(1e-5))
    cold = World(w.config, w.models, w.trees, warm=False, notify=None)
    f, n, seen = cold.field, cold.state.n, 0
    for _ in range(30):
        cold.step()
        spheres = _sphere_pairs(f.pos, f.radius) + n
        assert np.array_equal(sorted_pairs(f.last.pairs), sorted_pairs(spheres)), "asteroid pairs: sphere level"
        seen += len(spheres)
    assert not cold.compiled and seen > 0
    cold.kernels_ready.set()
    cold.step()
    assert cold.compiled


def test_coarse_mesh_is_a_closed_hull_of_the_polytopes_own_vertices():
    from spaceship_sim.convex.field import coarse_mesh
    from spaceship_sim.convex.polytope import random_polytope

    poly = random_polytope(24, np.random.default_rng(4), radius=5.0)
    mesh = coarse_mesh(poly, corners=8)
    assert mesh.closed and len(mesh.vertices) == 8 and 0 < mesh.volume < poly.volume
    dist = np.linalg.norm(mesh.vertices[:, None] - poly.vertices[None], axis=2).min(axis=1)
    assert dist.max() < 1e-9, "same body frame, corners taken from the polytope"


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(1e-4, 0.5))
def test_compiled_tumble_is_the_numpy_integration_bit_for_bit(seed, dt):
    f = field_world(collision={"time_critical": False}).field
    rng = np.random.default_rng(seed)
    f.pos[:] = rng.uniform(-40, 40, f.pos.shape)  # some past the walls (half-size 35), moving either way
    f.vel[:], f.omega[:] = rng.normal(0, 5, f.vel.shape), rng.normal(0, 2, f.omega.shape)
    twin = copy.deepcopy(f)
    for _ in range(3):
        f.integrate(dt, compiled=True)
        twin.integrate(dt, compiled=False)
    for name in ("pos", "vel", "quat", "rot", "T"):
        assert np.array_equal(getattr(f, name), getattr(twin, name)), name
    assert f.rot.flags.c_contiguous
