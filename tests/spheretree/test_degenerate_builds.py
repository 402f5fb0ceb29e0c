"""Degenerate meshes build with work in proportion to their size: an open box (large flat triangles,
every sample on them an orphan of the Voronoi repair, seams between spheres across whole faces) and
the same box a nanometre wide. Work is counted (samples, pieces), never timed."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from spaceship_sim.spheretree import build_tree, finish, medial
from spaceship_sim.spheretree.geometry import MeshQuery
from spaceship_sim.spheretree.verify import verify_tree


def _open_box(size: float):
    """A cube of side `size` without its top: 10 triangles, open."""
    import trimesh
    box = trimesh.creation.box((size, size, size))
    return np.array(box.vertices), np.array(box.faces[box.triangles_center[:, 2] < 0.49 * size])


@pytest.mark.parametrize("size", [1.0, 1e-9])
def test_voronoi_repair_adds_at_most_its_share_of_samples(size):
    v, f = _open_box(size)
    q = MeshQuery(v, f, closed=False)
    med = medial.medial_spheres(q, 1500, seed=0)
    assert med["orphans"] > 0  # the repair could not fix the flat faces: it ran out of room
    assert len(med["points"]) <= medial.MAX_REPAIR_GROWTH * 1500


@pytest.mark.parametrize("size", [1.0, 1e-9])
def test_coverage_and_chains_split_at_most_their_budget(monkeypatch, size):
    """The pieces enforce_coverage and enforce_chains split stay within a round's split of the budget,
    and the tree still keeps every promise (verify_tree checks from scratch)."""
    v, f = _open_box(size)
    peak = {"coverage": 0, "chains": 0}
    subdivide, split = finish._subdivide, finish._split

    def counted_subdivide(pieces, *args):
        out = subdivide(pieces, *args)
        peak["coverage"] = max(peak["coverage"], len(out[0]))
        return out

    def counted_split(pieces):
        out = split(pieces)
        peak["chains"] = max(peak["chains"], len(out))
        return out

    monkeypatch.setattr(finish, "_subdivide", counted_subdivide)
    monkeypatch.setattr(finish, "_split", counted_split)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the open mesh's warning is tested elsewhere
        tree = build_tree(v, f, method="medial", depth=3)
    coverage = finish._piece_budget(f, tree.radius, finish.COVERAGE_PIECES_PER_ITEM)  # the largest level's
    chains = finish._piece_budget(f, tree.radius, finish.CHAIN_PIECES_PER_ITEM)
    assert 0 < peak["coverage"] <= 4 * coverage and 0 < peak["chains"] <= 4 * chains
    assert verify_tree(tree) == []
