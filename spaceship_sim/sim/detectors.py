"""The detectors of Hubbard's evaluation by name: how each one sets a scenario's collision
detection. bench hubbard runs them side by side; a sweep takes them as an axis."""
from __future__ import annotations

import dataclasses
from typing import NamedTuple


class Detector(NamedTuple):
    time_critical: bool              # refine as the budget allows (else every pair to the exact level)
    tree_method: str | None = None   # the sphere trees' builder (None: the config's)
    exact_only: str | None = None    # a whole-frame exact strategy of the registry instead of the sphere trees
    exact_method: str | None = None  # the exact level's strategy (None: the config's)


DETECTORS = {"bsp": Detector(False, exact_only="bsp"), "fcl": Detector(False, exact_only="fcl"),
             "sphere_leaves": Detector(False, exact_method="sphere_leaves"),
             "ssv": Detector(False, exact_method="ssv"),
             "octree": Detector(True, "octree"), "medial": Detector(True, "medial")}


def with_detector(cfg, name: str):
    """(the config as detector `name` runs it, its whole-frame exact strategy or None)."""
    d = DETECTORS[name]
    c = cfg.collision
    c = dataclasses.replace(c, time_critical=d.time_critical, tree_method=d.tree_method or c.tree_method,
                            exact_method=d.exact_method or c.exact_method)
    return dataclasses.replace(cfg, collision=c), d.exact_only
