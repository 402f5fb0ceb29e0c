"""A model seen for the first time: the world flies at once on its bounding sphere while its trees
build in a background thread, takes them in its stepping thread when they are done, and a run that
waits for them (warm=True, a TickClock) gives the same state as one that built them first."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from spaceship_sim.clock import TickClock
from spaceship_sim.config import config_from_dict
from spaceship_sim.sim import tree_builds
from spaceship_sim.sim.world import World
from spaceship_sim.spheretree import STAND_IN, is_cached


@pytest.fixture
def fresh_model(tmp_path, monkeypatch):
    """An assets folder holding one model whose trees are not cached: a lumpy sphere, 320 triangles."""
    import trimesh
    mesh = trimesh.creation.icosphere(subdivisions=2, radius=2.0)
    mesh.vertices *= 1.0 + 0.2 * np.sin(3 * mesh.vertices[:, [0]]) * np.cos(2 * mesh.vertices[:, [1]])
    mesh.export(tmp_path / "lump.ply")
    monkeypatch.setenv("SPACESHIP_SIM_ASSETS", str(tmp_path))
    return config_from_dict({"ships": {"count": 6, "user_model": "lump", "models": ["lump"], "spacing": 1.05},
                             "arena": {"size": 30.0},
                             "collision": {"tree_depth": 2, "exact_method": "sphere_leaves"}})


def test_steps_on_bounding_spheres_until_the_trees_are_built(fresh_model, monkeypatch):
    gate = threading.Event()
    build = tree_builds.load_or_build

    def held(*args, **kwargs):  # the real build, once the test lets it start
        gate.wait()
        return build(*args, **kwargs)

    monkeypatch.setattr(tree_builds, "load_or_build", held)
    world = World.from_config(fresh_model, warm=False, notify=None, clock=TickClock(tick=1e-5), background_trees=True)
    assert world.building is not None and world.building.names == ["lump"]
    assert "lump" in world.building.status()
    assert world.trees[0].method == STAND_IN and world.max_level == 1
    world.warm_up(notify=None)  # the kernels are ready, the trees are not: still bounding spheres
    for _ in range(3):
        world.step()
    assert not world.compiled and world.trees[0].method == STAND_IN
    gate.set()
    world.building.ready.wait()
    world.step()
    assert world.compiled and world.building is None
    assert world.trees[0].method == "medial" and world.max_level == 3
    assert is_cached(world.models[0], method="medial", depth=2)


def test_a_build_error_reaches_the_stepping_thread(fresh_model, monkeypatch):
    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(tree_builds, "load_or_build", broken)
    world = World.from_config(fresh_model, warm=False, notify=None, clock=TickClock(tick=1e-5), background_trees=True)
    world.kernels_ready.set()
    world.building.ready.wait()
    with pytest.raises(OSError, match="disk full"):
        world.step()


def test_waiting_for_background_trees_gives_the_state_of_building_first(fresh_model):
    """warm=True waits for the build before the first frame: the same state hash as trees built
    before the world was made."""
    hashes = []
    for background in (True, False):
        world = World.from_config(fresh_model, notify=None, clock=TickClock(tick=1e-5), background_trees=background)
        assert world.building is None and world.trees[0].method == "medial"
        for _ in range(30):
            world.step()
            world.end_frame(0.01)
        hashes.append(world.state_hash())
    assert hashes[0] == hashes[1]


def test_the_stand_in_holds_the_mesh_and_bounds_its_error(fresh_model):
    import trimesh

    from spaceship_sim.meshes import load_model
    from spaceship_sim.narrowphase.bank import check_tree
    from spaceship_sim.spheretree import bounding_tree
    mesh = load_model("lump")
    tree = bounding_tree(mesh)
    check_tree(tree)
    c, r = tree.center[0], tree.radius[0]
    assert np.all(np.linalg.norm(mesh.vertices - c, axis=1) <= r * (1 + 1e-12))
    rng = np.random.default_rng(0)
    d = rng.normal(size=(2000, 3))
    p = c + r * d / np.linalg.norm(d, axis=1, keepdims=True) * rng.random((2000, 1)) ** (1 / 3)
    tm = trimesh.Trimesh(mesh.vertices, mesh.faces, process=False)
    dist = trimesh.proximity.closest_point(tm, p)[1] * ~tm.contains(p)
    assert dist.max() <= tree.error[0] and np.linalg.norm(tree.witness[0] - c) <= r
