"""Round-robin across samples and frames (Hubbard's fairness).

The round-robin deepens pair rows one level at a time in some order, so when the deadline cuts
a level the rows at the end of that order stay behind. In the broad phase's order every sample,
the same pairs would stay behind frame after frame. `FairOrder` keeps, per ship pair, the
refinement it has had so far (levels reached, summed over the samples since it entered the broad
phase) and puts the least served pairs first — new pairs before all — keeping the broad phase's
order among equals: whoever the deadline cut short catches up next time. The caller owns it (one
per world) and drops it on reset; refine_frame(..., fair=it) visits the rows in its order and
records the levels reached inside its own kernel calls (kernels.search_levels and
summarize_stacks: two calls from Python fewer a sample); `order` and `record` do the same from
Python (the tests compare the two).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..sorting import argsort_stable


class FairOrder:
    """Per ship pair (a, b) of n ships: levels reached, summed over its samples so far, kept as
    sorted pair keys a * n + b and their sums; looked up and rebuilt by numba kernels (a sample
    has tens to thousands of candidate pairs, where numpy's or a dict's per-call cost would
    dominate: ~50 us a sample for 28 pairs, now a few). Pairs are distinct, as a broad phase
    gives them."""

    def __init__(self):
        self.keys = np.zeros(0, np.int64)    # sorted pair keys
        self.served = np.zeros(0, np.int64)  # refinement each key's pair has had

    def service(self, pairs: np.ndarray, n: int) -> np.ndarray:
        """(k,) int64: refinement each of `pairs` ((k, 2) ship indices) has had; 0 if new."""
        return service(np.asarray(pairs), n, self.keys, self.served)

    def order(self, pairs: np.ndarray, n: int) -> np.ndarray:
        """Permutation of `pairs`: least served first, else the given order."""
        return np.argsort(self.service(pairs, n), kind="stable")

    def record(self, pairs: np.ndarray, levels: np.ndarray, n: int) -> None:
        """After a sample: the level each pair reached (pairs not reported are forgotten)."""
        self.keys, self.served = record_service(np.asarray(pairs), np.asarray(levels, np.int64), n, self.keys,
                                                self.served)

    def kernel_args(self, n: int) -> tuple:
        """What the refinement kernels take as `fair` (kernels.search_levels) over n bodies."""
        return self.keys, self.served, n

    def recorded(self, keys: np.ndarray, served: np.ndarray) -> None:
        """The kernels' record_service of a sample (kernels.summarize_stacks) taken as the state."""
        self.keys, self.served = keys, served


NOT_FAIR = (np.zeros(0, np.int64), np.zeros(0, np.int64), -1)  # `fair` of a call without a FairOrder


@njit(cache=True)
def _lookup(keys, served, key):
    """Refinement recorded for `key` in the sorted `keys`; 0 if absent."""
    j = np.searchsorted(keys, key)
    return served[j] if j < len(keys) and keys[j] == key else 0


@njit(cache=True)
def service(pairs, n, keys, served):
    out = np.empty(len(pairs), np.int64)
    for i in range(len(pairs)):
        out[i] = _lookup(keys, served, np.int64(pairs[i, 0]) * n + pairs[i, 1])
    return out


@njit(cache=True)
def record_service(pairs, levels, n, keys, served):
    """FairOrder.record's new (keys, served): the pairs' keys sorted, each with its service plus
    the level it reached."""
    new_keys = np.empty(len(pairs), np.int64)
    for i in range(len(pairs)):
        new_keys[i] = np.int64(pairs[i, 0]) * n + pairs[i, 1]
    new_served = service(pairs, n, keys, served) + levels
    by_key = argsort_stable(new_keys)
    return new_keys[by_key], new_served[by_key]
