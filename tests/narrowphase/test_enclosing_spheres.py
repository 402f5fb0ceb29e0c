"""The loop's test before a node's child pairs (volumes.enclosing_spheres, kernels._reaches_children):
each node's spheres hold its volume and its children's, and skipping the child pairs they rule out
changes no answer — the same verdicts, levels, bounds, contacts and pairs as testing every child
pair (a bank with unbounded spheres), at every level and at the exact one, on random poses."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from spaceship_sim.narrowphase import TreeBank, refine_frame
from spaceship_sim.narrowphase.volumes import SPHERE_SLACK, enclosing_spheres

from narrow_helpers import hand_octree, random_pose, with_every_child_pair

NAMES = ["ico", "box", "torus", "torus_hand3", "torus_medial"]


@pytest.fixture(scope="module")
def trees(meshes):
    from spaceship_sim.spheretree import build_tree
    out = {name: build_tree(v, f, method="octree", branching=8, depth=2) for name, (v, f) in meshes.items()}
    out["torus_hand3"] = hand_octree(*meshes["torus"], depth=3)
    out["torus_medial"] = build_tree(*meshes["torus"], method="medial", branching=8, depth=2)
    return out


@pytest.mark.parametrize("name", NAMES)
def test_spheres_hold_each_node_and_its_children(trees, name):
    bank = TreeBank.from_trees([trees[name]])
    S = bank.spheres
    own, kids = S[:, :4], S[:, 4:]
    assert np.array_equal(own[:, :3], bank.center) and np.all(own[:, 3] >= bank.radius)
    for i in range(len(S)):
        n = bank.child_count[i]
        members = np.arange(bank.first_child[i], bank.first_child[i] + n) if n else np.array([i])
        reach = np.linalg.norm(bank.center[members] - kids[i, :3], axis=1) + bank.radius[members]
        assert np.all(reach < kids[i, 3]), i  # with room for rounding (SPHERE_SLACK)
        # and no looser than the sphere centred in the children's box (else it would skip little)
        lo, hi = (bank.center[members] - bank.radius[members, None]).min(0), \
            (bank.center[members] + bank.radius[members, None]).max(0)
        boxed = (np.linalg.norm(bank.center[members] - (lo + hi) / 2, axis=1) + bank.radius[members]).max()
        assert kids[i, 3] <= boxed * (1 + SPHERE_SLACK) + SPHERE_SLACK * bank.radius.max() + 1e-12, i


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(NAMES), st.sampled_from(NAMES), st.sampled_from([0.5, 1.0, 1.4]))
def test_skipping_child_pairs_changes_no_answer(trees, seed, name_a, name_b, spread):
    rng = np.random.default_rng(seed)
    ta, tb = trees[name_a], trees[name_b]
    reach = spread * (ta.radius[0] + tb.radius[0])
    T = np.stack([pose for _ in range(6) for pose in (random_pose(rng, 0.0), random_pose(rng, reach))])
    pairs, models = np.arange(12).reshape(6, 2), np.tile([0, 1], 6)
    pruned, every = TreeBank.from_trees([ta, tb]), with_every_child_pair(TreeBank.from_trees([ta, tb]))
    depth = max(ta.depth, tb.depth)
    for level, exact, all_contacts in [(lv, False, True) for lv in range(depth + 1)] + [(None, True, True),
                                                                                       (None, True, False)]:
        got, want = (refine_frame(bank, models, T, pairs, deadline=math.inf, min_level=0, max_level=level,
                                  triangle_tests=exact, all_contacts=all_contacts) for bank in (pruned, every))
        for field in ("colliding", "level", "certain", "separation_bound", "contact_point", "contact_normal",
                      "level_histogram", "bound_pairs"):
            np.testing.assert_array_equal(getattr(got, field), getattr(want, field), err_msg=f"{field} {level}")
        for g, w in zip(got.sphere_pairs + got.tri_pairs, want.sphere_pairs + want.tri_pairs):
            np.testing.assert_array_equal(g, w)


def test_flexing_ships_remake_their_spheres():
    """faceoctree.deform grows the flexing models' radii in place each sample: the spheres follow."""
    from spaceship_sim.clock import TickClock
    from spaceship_sim.config import load_config, shipped_config
    from spaceship_sim.sim.world import World
    world = World.from_config(load_config(shipped_config("deforming.toml")), clock=TickClock(), notify=None)
    ships = world.deforming
    bank = ships.bank(world.bank)
    before = bank.spheres.copy()
    ships.flex_to(0.37, bank)
    assert not np.array_equal(bank.spheres, before)
    np.testing.assert_array_equal(bank.spheres, enclosing_spheres(bank))
