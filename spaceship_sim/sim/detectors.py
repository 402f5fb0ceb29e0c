"""The detectors of Hubbard's evaluation by name: how each one sets a scenario's collision
detection. bench hubbard runs them side by side; a sweep takes them as an axis."""
from __future__ import annotations

# detector -> (time-critical, sphere-tree method or None: the config's, exact strategy or None)
DETECTORS = {"bsp": (False, None, "bsp"), "fcl": (False, None, "fcl"), "sphere_leaves": (False, None, None),
             "octree": (True, "octree", None), "medial": (True, "medial", None)}
