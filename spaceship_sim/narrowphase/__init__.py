"""Narrow phase: time-critical sphere-tree refinement and exact triangle tests (Hubbard 1996).

refine.py      the refinement loop: levels round-robin until the deadline, the exact level, the summary
kernels.py     its numba kernels (depth-first stacks, leaf frontiers, triangle gathering, bounds)
bank.py        every model's sphere tree as flat global arrays, the layout the kernels walk
volumes.py     what the loop asks of a node pair (overlap, separation bound, contact): the sphere
fairness.py    which pairs go first (the least refined last time)
exact.py       the contract every exact strategy answers (ExactAnswer), their registry, the oracle
reference.py   numpy references the kernels are tested against

Adding an exact strategy (SSV, face octree, BSP, ...) touches two files: its own module or package,
with a class built from the scenario's meshes whose `collide(ma, mb, Ta, Tb, all_contacts)` returns an
ExactAnswer, and its line in `exact.EXACT_METHODS`. Benchmarks and the agreement tests against the
brute-force oracle pick it up from the registry.

Adding a bounding volume to the refinement loop touches three files: its node-array namedtuple,
five numba functions (place, overlap, separation, contact, enclosing) and `Volume` (in `volumes.py`
or its own module), the builder of its trees, and a bank that holds their node arrays and names the
volume (`volume = ...`; a TreeBank subclass also gets the `spheres` the loop's skip test reads, made
with `enclosing`). The loop's kernels call the generic `volumes.overlap` etc., which numba
resolves by the node tuple's class, so nothing of the loop is copied; `place` and `overlap` run inside
the descent compiled without reference counting, so they may not allocate (volumes.py says why)
(`tests/narrowphase/test_volumes.py` plugs in oriented cubes that way and checks them against brute
force).
"""
from .bank import TreeBank, TreeError, bank_of
from .refine import FrameNarrowResult, NarrowPhase, PairResult, collide_pair, refine_frame, refine_roots

__all__ = ["TreeBank", "TreeError", "bank_of", "FrameNarrowResult", "NarrowPhase", "PairResult", "collide_pair",
           "refine_frame", "refine_roots"]
