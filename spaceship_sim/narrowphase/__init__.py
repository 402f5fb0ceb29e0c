"""Narrow phase: time-critical sphere-tree refinement and exact triangle tests (Hubbard 1996)."""
from .bank import TreeBank, TreeError, bank_of
from .refine import FrameNarrowResult, NarrowPhase, PairResult, collide_pair, refine_frame, refine_roots

__all__ = ["TreeBank", "TreeError", "bank_of", "FrameNarrowResult", "NarrowPhase", "PairResult", "collide_pair", "refine_frame",
           "refine_roots"]
