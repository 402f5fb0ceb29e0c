"""Bounding volumes of the refinement loop: all the kernels ask of a node pair.

The loop (kernels.py) owns the trees' topology (first_child, child_count), the stacks, the levels and
the clock; a volume type owns the geometry of a node. The kernels call five generic functions on
node-array tuples — VA, a bank's arrays in A's body frame; VB, B's bank's in B's body frame, moved
into A's by the pair row's relative pose R[r], t[r] — with xb a (2, 3) scratch array:

  place(VB, b, R, t, r, xb) -> None
      move what overlap needs of node b into A's frame, into xb (once per node b: the loop then
      tests it against every child of the other node)
  overlap(VA, a, VB, b, R, t, r, xb) -> (bool, float)
      do node a's and the placed node b's volumes overlap, and how deeply (larger: deeper; the loop
      reads only the verdict: it stops an expansion at the first overlapping child pair). A test may
      be conservative, but never "overlapping" where the nodes' `enclosing` spheres are apart: the
      loop skips such pairs by those spheres, and its answers are the same as without the skip only
      if the test agrees
  separation(VA, a, VB, b, R, t, r, xb) -> float
      an upper bound on the ships' separation given that the pair overlaps: the pair's contribution
      to the separation bound (the loop takes the minimum over a pair's overlapping nodes)
  contact(VA, a, VB, b, R, t, r, xb, acc) -> None
      adds to acc[0:3] a contact point of the overlap and to acc[3:6] a direction from A toward B, both
      in A's frame (the loop averages the points over the witness pair and its ancestors, and takes
      the root pair's direction, for the response)
  enclosing(V, i, c) -> float
      a sphere around node i's volume, c[0, :] its centre (the node's own frame), returned its radius:
      the exact level gathers only triangles whose spheres reach the other leaf's, and a bank's
      `spheres` (enclosing_spheres, below), which let the loop skip child pairs, are made from it

place and overlap run in the descent's innermost loop, which kernels.py compiles without reference
counting (a call there would otherwise incref and decref some twenty arrays): they may not
allocate arrays — xb is their scratch — and get node ids as uint64 (numba then checks no negative
index on every array access).

Which volume's implementation runs is decided when numba compiles a kernel, by the class of the
node-array tuple (a namedtuple whose fields name the bank's arrays): `Volume(..., nodes=SphereNodes,
...)` registers itself for it. So the Python side passes plain arrays and tuples — no function
objects, whose unboxing would cost microseconds on every kernel call — and the compiled loop calls
the volume's functions directly (inlined like any njit call).

numba's on-disk cache of kernels.py does not notice edits to this file (it checks each function's
own file only): after changing a volume's functions, delete spaceship_sim/narrowphase/__pycache__.

Adding a bounding volume touches three files: its namedtuple, functions and `Volume`, the builder of
its trees, and the bank that holds their arrays and names the volume (`volume = ...`; as a TreeBank
subclass it gets its `spheres` from `enclosing`, below); the loop and its tests are shared
(tests/narrowphase/test_volumes.py plugs in oriented cubes that way).
"""
from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass
from typing import Callable

import numpy as np
from numba import njit
from numba.core.errors import TypingError
from numba.extending import overload


@dataclass(frozen=True)
class Volume:
    """A bounding-volume type for the refinement loop (see the module docstring): its node-array
    tuple class and its five njit functions. Registers itself for `nodes` when made."""

    name: str
    nodes: type  # namedtuple class; its fields are the names of the bank's node arrays
    place: Callable
    overlap: Callable
    separation: Callable
    contact: Callable
    enclosing: Callable

    def __post_init__(self):
        _BY_NODES[self.nodes] = self

    def arrays(self, bank):
        """The bank's node arrays as this volume's tuple (what the kernels take as VA or VB)."""
        return self.nodes._make(getattr(bank, name) for name in self.nodes._fields)


_BY_NODES: dict[type, Volume] = {}


def _impl(V, name):
    """The registered volume's function `name` for node-array tuple type V (numba typing time)."""
    volume = _BY_NODES.get(getattr(V, "instance_class", None))
    if volume is None:
        raise TypingError(f"no bounding volume registered for node arrays {V}")
    return getattr(volume, name).py_func


# the generic functions the kernels call; numba picks the implementation by the tuple's class

def place(VB, b, R, t, r, xb):
    raise NotImplementedError("numba only")


def overlap(VA, a, VB, b, R, t, r, xb):
    raise NotImplementedError("numba only")


def separation(VA, a, VB, b, R, t, r, xb):
    raise NotImplementedError("numba only")


def contact(VA, a, VB, b, R, t, r, xb, acc):
    raise NotImplementedError("numba only")


def enclosing(V, i, c):
    raise NotImplementedError("numba only")


@overload(place)
def _place(VB, b, R, t, r, xb):
    return _impl(VB, "place")


@overload(overlap)
def _overlap(VA, a, VB, b, R, t, r, xb):
    return _impl(VA, "overlap")


@overload(separation)
def _separation(VA, a, VB, b, R, t, r, xb):
    return _impl(VA, "separation")


@overload(contact)
def _contact(VA, a, VB, b, R, t, r, xb, acc):
    return _impl(VA, "contact")


@overload(enclosing)
def _enclosing(V, i, c):
    return _impl(V, "enclosing")


@njit(cache=True)
def to_a(R, t, r, X, i, out, o):
    """out[o] = R[r] @ X[i] + t[r]: a point of B's body frame in A's body frame."""
    out[o, 0], out[o, 1], out[o, 2] = moved(R, t, r, X, i)


@njit(cache=True)
def moved(R, t, r, X, i):
    """R[r] @ X[i] + t[r] as three floats: kept in registers where a store to a scratch array and
    the loads back would chain one node pair's arithmetic to the next's."""
    x = X[i, 0], X[i, 1], X[i, 2]
    return (R[r, 0, 0] * x[0] + R[r, 0, 1] * x[1] + R[r, 0, 2] * x[2] + t[r, 0],
            R[r, 1, 0] * x[0] + R[r, 1, 1] * x[1] + R[r, 1, 2] * x[2] + t[r, 1],
            R[r, 2, 0] * x[0] + R[r, 2, 1] * x[1] + R[r, 2, 2] * x[2] + t[r, 2])


@njit(cache=True)
def dist2(A, i, B, j):
    return dist2_to(A, i, B[j, 0], B[j, 1], B[j, 2])


@njit(cache=True)
def dist2_to(A, i, x0, x1, x2):
    return (A[i, 0] - x0) ** 2 + (A[i, 1] - x1) ** 2 + (A[i, 2] - x2) ** 2


# --- spheres (Hubbard 1996) ------------------------------------------------------------------------
# center (N, 3) [m], radius (N,) [m], error (N,) [m]: bound on the distance from any point of the
# sphere to its ship, witness (N, 3) [m]: a surface point of the ship inside the sphere
SphereNodes = namedtuple("SphereNodes", "center radius error witness")

@njit(cache=True)
def _sphere_place(VB, b, R, t, r, xb):
    to_a(R, t, r, VB[0], b, xb, np.int64(0))


@njit(cache=True)
def _sphere_overlap(VA, a, VB, b, R, t, r, xb):
    """Centres closer than the radii's sum; depth = that sum minus the centre distance."""
    rr = VA[1][a] + VB[1][b]
    d2 = dist2(VA[0], a, xb, np.int64(0))
    if d2 <= rr * rr:
        return True, rr - np.sqrt(d2)
    return False, 0.0


@njit(cache=True)
def _sphere_separation(VA, a, VB, b, R, t, r, xb):
    """min(e_a + e_b, |witness_a - witness_b|): a point in both spheres is within e_a of A and e_b of
    B, and the witnesses are surface points of the ships (Hubbard's bound, with the witness one)."""
    x0, x1, x2 = moved(R, t, r, VB[3], b)
    return min(VA[2][a] + VB[2][b], np.sqrt(dist2_to(VA[3], a, x0, x1, x2)))


# coordinate indices as typed values: a literal 0, 1, 2 would compile _add_contact once for each
C0, C1, C2 = np.int64(0), np.int64(1), np.int64(2)


@njit(cache=True)
def _sphere_contact(VA, a, VB, b, R, t, r, xb, acc):
    """The middle of the spheres' overlap along their centre line, and that line's direction."""
    ca, ra, rb = VA[0], VA[1][a], VB[1][b]
    x0, x1, x2 = moved(R, t, r, VB[0], b)
    d = np.sqrt(dist2_to(ca, a, x0, x1, x2))
    mid = 0.5 * (max(-ra, d - rb) + min(ra, d + rb))  # measured from A's centre
    _add_contact(acc, C0, x0 - ca[a, 0], ca[a, 0], mid, d)
    _add_contact(acc, C1, x1 - ca[a, 1], ca[a, 1], mid, d)
    _add_contact(acc, C2, x2 - ca[a, 2], ca[a, 2], mid, d)


@njit(cache=True)
def _add_contact(acc, c, dc, cc, mid, d):
    """Coordinate c of a contact: the point at `mid` from A's centre (cc) along the unit centre line
    (dc / d, dc the centre line's coordinate), into acc[c], the direction into acc[3 + c]."""
    u = dc / d if d > 0.0 else 0.0
    acc[c] += cc + mid * u
    acc[3 + c] += u


@njit(cache=True)
def _sphere_enclosing(V, i, c):
    for k in range(3):
        c[0, k] = V[0][i, k]
    return V[1][i]


SPHERE = Volume("sphere", SphereNodes, _sphere_place, _sphere_overlap, _sphere_separation, _sphere_contact,
                _sphere_enclosing)


# --- enclosing spheres: the loop's cheap test before a node's child pairs ----------------------------
# A bank's `spheres` (N, 8): per node, [centre, radius] of a sphere around its own volume, then of one
# around its children's volumes (a leaf's: its own, as a leaf stands in for its children), node
# frame. A child of one node can overlap a child of the other only if its own sphere reaches the
# other's children's sphere, so the loop tests that first (kernels._scan_children). Radii are grown
# by SPHERE_SLACK (relative) plus that times the bank's largest sphere, so that rounding (~1e-16 of
# the coordinates) never fails a sphere test where the volumes' own test would pass, for models within
# 10^6 of their largest sphere from their origin: the answers are those of testing every pair.
SPHERE_SLACK = 1e-9


def enclosing_spheres(bank, out=None) -> np.ndarray:
    """The bank's (N, 8) spheres (see above), made with its volume's `enclosing` (into `out` if given)."""
    spheres = np.empty((len(bank.first_child), 8)) if out is None else out
    _enclosing_spheres(bank.nodes, bank.first_child, bank.child_count, spheres)
    return spheres


def unbounded_spheres(n: int) -> np.ndarray:
    """(n, 8) spheres of infinite radius: no child pair is skipped (a bank whose children come and
    go, ocst.OcstBank)."""
    spheres = np.zeros((n, 8))
    spheres[:, 3] = spheres[:, 7] = np.inf
    return spheres


@njit(cache=True)
def _enclosing_spheres(V, first_child, child_count, spheres):
    """Fill spheres (a TreeBank's nodes: every slot holds a volume, check_tree)."""
    own, kids = spheres[:, :4], spheres[:, 4:]
    c = np.empty((1, 3))
    for i in range(len(own)):
        own[i, 3] = enclosing(V, i, c)
        own[i, 0], own[i, 1], own[i, 2] = c[0, 0], c[0, 1], c[0, 2]  # element by element (kernels.py's note)
    grow = SPHERE_SLACK * own[:, 3].max() if len(own) else 0.0
    centres = np.empty((3, 3))
    for i in range(len(own)):
        lo, hi = (first_child[i], first_child[i] + child_count[i]) if child_count[i] > 0 else (i, i + 1)
        for d in range(3):  # candidate centres: the box's around the children's spheres, their mean, the node's
            centres[0, d] = 0.5 * ((own[lo:hi, d] - own[lo:hi, 3]).min() + (own[lo:hi, d] + own[lo:hi, 3]).max())
            centres[1, d] = own[lo:hi, d].mean()
            centres[2, d] = own[i, d]
        kids[i, 3] = np.inf
        for j in range(3):
            reach = 0.0
            for k in range(lo, hi):
                reach = max(reach, np.sqrt(dist2_to(spheres, k, centres[j, 0], centres[j, 1], centres[j, 2])) + own[k, 3])
            if reach < kids[i, 3]:
                kids[i, 0], kids[i, 1], kids[i, 2], kids[i, 3] = centres[j, 0], centres[j, 1], centres[j, 2], reach
        kids[i, 3] = kids[i, 3] * (1.0 + SPHERE_SLACK) + grow
    for i in range(len(own)):
        own[i, 3] = own[i, 3] * (1.0 + SPHERE_SLACK) + grow


def volume_of(bank_a, bank_b) -> Volume:
    """The volume type two banks share (ValueError when they differ)."""
    if bank_a.volume is not bank_b.volume:
        raise ValueError(f"a pair's trees must share a volume type, got {bank_a.volume.name} and {bank_b.volume.name}")
    return bank_a.volume
