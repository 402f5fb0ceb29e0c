"""Growing output arrays inside numba kernels, one implementation for the whole package.

A kernel whose output size is unknown until it has run writes into an array it enlarges as it
goes: `grow` keeps the array while it has room, else copies it into one twice as long (amortised
O(1) per element). Any number of dimensions: the leading one grows, the others are kept.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def grow(arr, need):
    """arr itself when it has at least `need` rows, else a new array of max(need, 2 len(arr)) rows
    (same dtype and trailing shape) whose first len(arr) rows are arr's (the rest uninitialised).
    Copied element by element, any memory layout: a slice copy compiles numba's shape-error
    messages (seconds of compile time)."""
    if need <= len(arr):
        return arr
    out = np.empty((max(need, 2 * len(arr)),) + arr.shape[1:], arr.dtype)
    for idx in np.ndindex(arr.shape):
        out[idx] = arr[idx]
    return out
