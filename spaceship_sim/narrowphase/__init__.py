"""Narrow phase: time-critical sphere-tree refinement and exact triangle tests (Hubbard 1996).

refine.py      the refinement loop: levels round-robin until the deadline, the exact level, the summary
kernels.py     its numba kernels (depth-first stacks, leaf frontiers, triangle gathering, bounds)
bank.py        every model's sphere tree as flat global arrays, the layout the kernels walk
fairness.py    which pairs go first (the least refined last time)
exact.py       the contract every exact strategy answers (ExactAnswer), their registry, the oracle
reference.py   numpy references the kernels are tested against

Adding an exact strategy (SSV, face octree, BSP, ...) touches two files: its own module or package,
with a class built from the scenario's meshes whose `collide(ma, mb, Ta, Tb, all_contacts)` returns an
ExactAnswer, and its line in `exact.EXACT_METHODS`. Benchmarks and the agreement tests against the
brute-force oracle pick it up from the registry.

Adding a bounding volume to the refinement loop itself is not yet that small: the sphere is written
into the kernels (the overlap test and child ordering in `_push_children`, the bound and contact in
`summarize_pairs`, the leaf gather in `exact_pairs`) and the bank's arrays, so a second volume type
means variants of those three kernels, a bank, and a builder — four files. New hierarchies (SSV,
face octrees) therefore plug in as exact strategies, beside the sphere levels rather than inside them.
"""
from .bank import TreeBank, TreeError, bank_of
from .refine import FrameNarrowResult, NarrowPhase, PairResult, collide_pair, refine_frame, refine_roots

__all__ = ["TreeBank", "TreeError", "bank_of", "FrameNarrowResult", "NarrowPhase", "PairResult", "collide_pair",
           "refine_frame", "refine_roots"]
