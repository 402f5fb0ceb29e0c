"""Deforming ships: the flexed shape's bound, and a world whose lamps pulse, tested frame by frame
against brute force on the shapes of each sample."""
import dataclasses

import numpy as np
from hypothesis import given, settings, strategies as st

from spaceship_sim.clock import TickClock
from spaceship_sim.config import DeformConfig, config_from_dict
from spaceship_sim.faceoctree.deform import flexed
from spaceship_sim.meshes import load_model
from spaceship_sim.narrowphase.exact import BruteForceExact
from spaceship_sim.state import transforms
from spaceship_sim.world import World

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
        assert narrow.exact[rows].all()
        for i in rows[narrow.colliding[rows]]:  # the reported pair is a true one
            hit = narrow.tri_pairs[i]
            assert len(hit) == 1 and any((hit[0] == want.pairs_of(np.flatnonzero(rows == i)[0])).all(1))
        flexing += len(rows)
        seen += int(want.colliding.sum())
    assert flexing >= 5 and seen >= 1  # the scenario does exercise both verdicts
