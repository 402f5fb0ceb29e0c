"""The pair schedule of the space-time broad phase: ship pairs with wake-up times.

A pair is either asleep, in an indexed min-heap ordered by wake time (so any pair can be removed
in O(log P)), or due at the next call, in the due list (new pairs, and pairs overlapping now:
they are tested at every call, so they skip the heap's O(log P) round trip). Every pair is also
in a doubly linked list per ship, so a ship's pairs can be dropped without a search. Pair ids
freed by drops are reused. All kernels are numba, int64/float64 throughout.
"""
from __future__ import annotations

import numpy as np
from numba import njit

# counts[]: heap size, ids ever handed out, free ids stacked in `free`, pairs in the due list
SIZE, TOP, N_FREE, N_DUE = 0, 1, 2, 3


@njit(cache=True)
def _sift_up(heap, hpos, key, i):
    """Move heap[i] towards the root of the indexed min-heap ordered by key[heap[.]]."""
    p = heap[i]
    k = key[p]
    while i > 0:
        parent = (i - 1) >> 1
        q = heap[parent]
        if key[q] <= k:
            break
        heap[i] = q
        hpos[q] = i
        i = parent
    heap[i] = p
    hpos[p] = i


@njit(cache=True)
def _sift_down(heap, hpos, key, i, size):
    p = heap[i]
    k = key[p]
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and key[heap[c + 1]] < key[heap[c]]:
            c += 1
        q = heap[c]
        if key[q] >= k:
            break
        heap[i] = q
        hpos[q] = i
        i = c
    heap[i] = p
    hpos[p] = i


@njit(cache=True)
def heap_push(heap, hpos, key, size, p):
    """Add pair p to the heap of `size` pairs; returns the new size."""
    heap[size] = p
    hpos[p] = size
    _sift_up(heap, hpos, key, size)
    return size + 1


@njit(cache=True)
def heap_remove(heap, hpos, key, size, p):
    """Remove pair p from anywhere in the heap; returns the new size."""
    i = hpos[p]
    size -= 1
    if i < size:
        q = heap[size]
        heap[i] = q
        hpos[q] = i
        _sift_up(heap, hpos, key, i)
        _sift_down(heap, hpos, key, hpos[q], size)
    return size


@njit(cache=True)
def _end(pa, p, s):
    """Which end of pair p ship s is: 0 (pa[p]) or 1 (pb[p]); selects the list links."""
    return 0 if pa[p] == s else 1


@njit(cache=True)
def _link(p, s, e, pa, head, nxt, prv):
    """Put pair p at the front of ship s's list (s is end e of p)."""
    q = head[s]
    nxt[p, e] = q
    prv[p, e] = -1
    if q >= 0:
        prv[q, _end(pa, q, s)] = p
    head[s] = p


@njit(cache=True)
def _unlink(p, pa, pb, head, nxt, prv):
    """Take pair p out of both its ships' lists."""
    for e in range(2):
        s = pa[p] if e == 0 else pb[p]
        after, before = nxt[p, e], prv[p, e]
        if before >= 0:
            nxt[before, _end(pa, before, s)] = after
        else:
            head[s] = after
        if after >= 0:
            prv[after, _end(pa, after, s)] = before


@njit(cache=True)
def make_due(p, wake, due, dpos, counts):
    """Append pair p (in no heap) to the due list."""
    wake[p] = -np.inf
    dpos[p] = counts[N_DUE]
    due[counts[N_DUE]] = p
    counts[N_DUE] += 1


@njit(cache=True)
def _remove_due(p, due, dpos, counts):
    counts[N_DUE] -= 1
    last = due[counts[N_DUE]]
    due[dpos[p]] = last
    dpos[last] = dpos[p]
    dpos[p] = -1


@njit(cache=True)
def drop_pairs(ships, pa, pb, head, nxt, prv, wake, heap, hpos, due, dpos, free, counts):
    """Remove every scheduled pair of these ships; their ids go on the free stack."""
    for s in ships:
        p = head[s]
        while p >= 0:
            after = nxt[p, _end(pa, p, s)]
            _unlink(p, pa, pb, head, nxt, prv)
            if dpos[p] >= 0:
                _remove_due(p, due, dpos, counts)
            else:
                counts[SIZE] = heap_remove(heap, hpos, wake, counts[SIZE], p)
            free[counts[N_FREE]] = p
            counts[N_FREE] += 1
            p = after


@njit(cache=True)
def add_pairs(new_a, new_b, pa, pb, head, nxt, prv, wake, due, dpos, free, counts):
    """Schedule pairs (new_a[k], new_b[k]) due at once (room for them assumed)."""
    for k in range(len(new_a)):
        if counts[N_FREE] > 0:
            counts[N_FREE] -= 1
            p = free[counts[N_FREE]]
        else:
            p = counts[TOP]
            counts[TOP] += 1
        pa[p], pb[p] = new_a[k], new_b[k]
        for e in range(2):  # a loop, not constants: a literal argument would compile _link twice
            _link(p, new_a[k] if e == 0 else new_b[k], e, pa, head, nxt, prv)
        make_due(p, wake, due, dpos, counts)


class PairSchedule:
    """Arrays of the schedule for n ships; grows on demand, pair ids stay valid."""

    GROWN = ("pa", "pb", "wake", "heap", "hpos", "due", "dpos", "free", "buf", "out")

    def __init__(self, n: int, cap: int = 1024):
        self.head = np.full(n, -1, np.int64)
        self.counts = np.zeros(4, np.int64)
        self.cap = 0
        self.nxt = self.prv = np.zeros((0, 2), np.int64)
        for name in self.GROWN:
            setattr(self, name, np.zeros(0, np.float64 if name == "wake" else np.int64))
        self.reserve(cap)

    @property
    def size(self) -> int:
        """Live pairs: asleep or due."""
        return int(self.counts[SIZE] + self.counts[N_DUE])

    def reserve(self, need: int) -> None:
        """Make room for `need` live pairs."""
        if need <= self.cap:
            return
        cap = max(need, 2 * self.cap)
        for name in self.GROWN:
            old = getattr(self, name)
            setattr(self, name, np.concatenate([old, np.full(cap - self.cap, -1 if name == "dpos" else 0, old.dtype)]))
        for name in ("nxt", "prv"):
            setattr(self, name, np.concatenate([getattr(self, name), np.full((cap - self.cap, 2), -1, np.int64)]))
        self.cap = cap

    def drop(self, ships) -> None:
        drop_pairs(ships, self.pa, self.pb, self.head, self.nxt, self.prv, self.wake, self.heap, self.hpos,
                   self.due, self.dpos, self.free, self.counts)

    def add(self, a, b) -> None:
        """Pairs a[k] < b[k], not scheduled yet, due at once."""
        self.reserve(self.size + len(a))
        add_pairs(a, b, self.pa, self.pb, self.head, self.nxt, self.prv, self.wake, self.due, self.dpos,
                  self.free, self.counts)

    def live(self):
        """(a, b, wake) of every scheduled pair (copies); due pairs have wake -inf."""
        ids = np.concatenate([self.heap[: self.counts[SIZE]], self.due[: self.counts[N_DUE]]])
        return self.pa[ids].copy(), self.pb[ids].copy(), self.wake[ids].copy()

    def of_ship(self, s: int) -> list[int]:
        """Pair ids in ship s's list (for tests)."""
        out, p = [], int(self.head[s])
        while p >= 0:
            out.append(p)
            p = int(self.nxt[p, 0 if self.pa[p] == s else 1])
        return out
