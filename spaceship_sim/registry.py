"""The one map from the config's names to the parts that implement them.

Contracts (`broadphase/base.py`, `narrowphase/exact.py`, `narrowphase/volumes.py`) import no
implementation, and `config.py` checks names against its own plain name lists; this module is the
only place a name becomes an object. It is imported where a world is composed (`sim/world.py`),
by the command line and by the benches — never by a stage, so the import graph has no circle.
`tests/test_layers.py` checks that the names here and in `config.py` agree.

Adding an exact strategy: its module (a class built from the scenario's meshes whose
`collide(ma, mb, Ta, Tb, all_contacts)` returns an `ExactAnswer`), and its line in
EXACT_METHODS below and in `config.EXACT_STRATEGY_NAMES`.
Adding a broad phase: its module in `broadphase/` (a `BroadPhase` subclass), and its class in
BROADPHASES below and its name in `config.BROADPHASE_NAMES`.
"""
from __future__ import annotations

from typing import Callable, Sequence

from .broadphase import BroadPhase, BroadPhaseNameError, BruteForce, SpaceTime, SweepPrune
from .config import Config
from .narrowphase.exact import BruteForceExact, ExactDetector
from .narrowphase.refine import NarrowPhase

BROADPHASES: dict[str, type[BroadPhase]] = {cls.name: cls for cls in (SpaceTime, SweepPrune, BruteForce)}


def make_broadphase(name: str, radius, *, min_resolution: float, **options) -> BroadPhase:
    """The broad phase called `name` for ships of bounding radius `radius` ((n,) float64 [m])."""
    try:
        cls = BROADPHASES[name]
    except KeyError:
        raise BroadPhaseNameError("config", "collision.broadphase",
                                  f"unknown broad phase {name!r}; choose one of {sorted(BROADPHASES)}") from None
    return cls(radius, min_resolution=min_resolution, **options)


# Strategies load when asked for: each pulls in numba kernels (and fcl an optional package)
def _bsp(meshes) -> ExactDetector:
    from .bsp import BSPExact

    return BSPExact(meshes)


def _fcl(meshes) -> ExactDetector:
    from .narrowphase.fcl_exact import FclExact  # python-fcl is optional: an InputError when it is missing

    return FclExact(meshes)


def _ssv(meshes) -> ExactDetector:
    from .ssv.exact import SSVExact

    return SSVExact(meshes)


def _ocst(meshes) -> ExactDetector:
    from .narrowphase.ocst_exact import OcstExact

    return OcstExact(meshes)


def _face_octree(meshes) -> ExactDetector:
    from .faceoctree import FaceOctreeExact

    return FaceOctreeExact(meshes)


# name -> constructor from the scenario's meshes (list of meshes.Mesh)
EXACT_METHODS: dict[str, Callable[[Sequence], ExactDetector]] = {
    "brute": BruteForceExact,  # every triangle pair: the oracle the others are tested against
    "bsp": _bsp,  # Hubbard's baseline
    "fcl": _fcl,  # the peer
    "ssv": _ssv,  # swept-sphere-volume trees (Larsen et al.): fills `distance` for pairs found apart
    "ocst": _ocst,  # on-collide sphere trees (Franquesa et al.): sphere levels built as pairs reach them
    "faceoctree": _face_octree,  # face octree on the boxes' overlap (Smith–Kitamura): no preprocessing
}


def exact_strategy(cfg: Config, models) -> ExactDetector | None:
    """The strategy at the end of the time-critical loop, or None for the sphere-tree leaves' own
    triangle tests."""
    method = cfg.collision.exact_method
    return None if method == "sphere_leaves" else EXACT_METHODS[method](models)


def make_narrow_phase(cfg: Config, models, now, detector=None) -> NarrowPhase:
    """The scenario's narrow phase: NarrowPhase, or a DeformingNarrowPhase (face octree on the flexing
    ships) when [deform] names models. models: the world's meshes; now: callable returning the
    simulation time [s]; detector: the exact level's strategy, as NarrowPhase's."""
    c = cfg.collision
    settings = dict(min_level=c.min_level, triangle_tests=c.triangle_tests, all_contacts=c.all_contacts, detector=detector,
                    tighten=c.distance_intervals == "tighten", tighten_share=c.interval_share)
    if not cfg.deform.models:
        return NarrowPhase(**settings)
    from .faceoctree.deform import DeformingNarrowPhase, DeformingShips

    return DeformingNarrowPhase(**settings, ships=DeformingShips(cfg, models, now))
