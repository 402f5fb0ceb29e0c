"""Round-robin across samples and frames (Hubbard's fairness).

refine_frame deepens pairs in the order it is given them, so when the deadline cuts a level the
pairs at the end of the list stay behind. Fed the broad phase's order every sample, the same
pairs would stay behind frame after frame. `FairOrder` keeps, per ship pair, the refinement it
has had so far (levels reached, summed over the samples since it entered the broad phase) and
puts the least served pairs first — new pairs before all — keeping the broad phase's order among
equals: whoever the deadline cut short catches up next time. The caller owns it (one per world)
and drops it on reset.
"""
from __future__ import annotations

import numpy as np


class FairOrder:
    """Per ship pair (a, b) of n ships: levels reached, summed over its samples so far. A dict:
    a frame has tens to thousands of candidate pairs, where numpy's per-call cost would dominate."""

    def __init__(self):
        self.served: dict[int, int] = {}  # pair key a * n + b -> refinement had

    @staticmethod
    def _keys(pairs: np.ndarray, n: int) -> list[int]:
        return (pairs[:, 0].astype(np.int64) * n + pairs[:, 1]).tolist()

    def service(self, pairs: np.ndarray, n: int) -> np.ndarray:
        """(k,) int64: refinement each of `pairs` ((k, 2) ship indices) has had; 0 if new."""
        get = self.served.get
        return np.array([get(key, 0) for key in self._keys(pairs, n)], np.int64)

    def order(self, pairs: np.ndarray, n: int) -> np.ndarray:
        """Permutation of `pairs`: least served first, else the given order."""
        return np.argsort(self.service(pairs, n), kind="stable")

    def record(self, pairs: np.ndarray, levels: np.ndarray, n: int) -> None:
        """After a sample: the level each pair reached (pairs not reported are forgotten)."""
        get = self.served.get
        self.served = {key: get(key, 0) + level
                       for key, level in zip(self._keys(pairs, n), np.asarray(levels).tolist())}
