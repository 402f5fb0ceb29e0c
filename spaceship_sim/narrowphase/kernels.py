"""Batched narrow-phase kernels (numba) over many ship pairs at once.

A pair's state is a CSR list of colliding node pairs (global node ids of a TreeBank): row i's
pairs are fa[ptr[i]:ptr[i+1]], fb[ptr[i]:ptr[i+1]]. Each pair row r has the relative pose of
ship B in ship A's body frame, R[r] (3, 3) and t[r] (3,): x_A = R[r] @ x_B + t[r]; every test
runs in A's frame (rigid motions keep radii and distances). Kernels handle the pair rows they are
given (`rows[i]` is the pose row of active row i), a batch at a time, so the Python caller can
watch the clock between batches.

The kernels own the trees' topology (first_child, child_count), the stacks and the triangles; the
geometry of a node is the bounding volume's (volumes.py): the kernels take each bank's arrays
grouped (a Tree for the descent, Leaves for the exact level, beside the rows' poses and the
search's state, scratch_views), whose node-array tuples they pass to volumes.place, overlap, ...,
which numba resolves by the tuples' class, so one loop serves every volume type (compiled once per
type).
Beside the topology each Tree holds its bank's `spheres`: a sphere around each node's volume and
one around its children's, made with the volume's `enclosing`, which rule out child pairs before
their volumes are tested (_scan_children).

Depth-first stacks and lazy sibling testing. A pair row's sphere-level state is a stack of entries
(sa, sb, sl)[r, :height[r]], top last (descend_stacks). An entry is one of two kinds:

- a *tested* pair: sa = a, sb = b (>= 0), global node ids of a node pair whose volumes overlap,
  at level sl;
- a *continuation*: sb < 0. It stands for the child pairs of a colliding node pair (a0, b0) not
  tested yet: those from index j on, in the order _expand tests them (B's children outer, A's
  inner; a leaf stands in for its own children). sa = a0, sb = ~(b0 << CONT_BITS | j) (see
  cont_node_b, cont_index), sl = the children's level.

Expanding a node pair tests its child pairs only until the first overlapping one (_expand): the
rest become one continuation entry, and the overlapping pair goes above it, on top. Popping a
continuation resumes its scan where it stopped, the same way: the continuation stays, its index
moved on, with the next overlapping pair above it, or goes when none of the rest overlaps. (A
continuation is kept even when no child pair is left after its witness, so that after a descent
the stack is the witness on top of one continuation per level above it: its ancestors, the
pairs the summary takes the bound and contact from, summarize_stacks.) So a
colliding verdict at level k costs the tests up to one overlapping pair per level, where testing
every child pair of every expanded pair cost up to (children of A) x (children of B) tests per
level; an apart verdict still tests every child pair below every colliding pair (each continuation
is resumed until it runs out). Every node pair an entry names — a tested pair, or a
continuation's parent (a0, b0) — overlaps, so each gives a valid separation bound.

Capacity (stack_width): levels never decrease toward the top (children go above their parent's
place, at its level + 1; a resumed continuation keeps its place and pushes its child pair, at its
own level, just above it), and a level k >= 1 holds at most one continuation and one tested pair:
both are pushed by the expansion of a pair at level k - 1 from the top, and a second such
expansion needs that pair's level k - 1 on top, so everything at level k gone first; a resumed
continuation at level k only replaces the tested pair above it. Level 0 holds at most the root
pair. Hence height <= 1 + 2 x (deepest target level).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..geometry.poses import relative_poses, relative_poses_into
from ..geometry.triangles import distance_triangle_triangle, intersect_triangle_triangle
from ..sorting import argsort_stable
from .fairness import record_service, service
from .volumes import contact, dist2 as _dist2, enclosing, moved, overlap, place, separation, to_a as _to_a


# Points are passed as (array, row) and never sliced: array views cost reference counting in
# the innermost loops. Indices are int64 everywhere and constants are passed as typed values (Z,
# TRUE, ...), never literals: each distinct argument type is one more compilation of a helper.
# The descent's per-row and per-expansion functions are compiled without reference counting
# (_nrt=False; they allocate nothing, and nor may the volume functions they call): otherwise each
# call increfs and decrefs its ~20 array arguments, atomic operations that cost more than the
# ~60 sphere tests of an expansion (measured: the descent twice as fast without). Arrays are copied
# element by element, never assigned into an array: that compiles numba's shape-mismatch message
# (string formatting), seconds on a first start.

# What search_levels' set-up keeps per pair row, as rows of one (ROWS, k) int64 block: the
# models, root nodes, triangle id offsets, tree depth and deepest sphere level (the cap) of A and B.
MA, MB, ROOT_A, ROOT_B, TRI_A, TRI_B, DEPTH, CAP = range(8)
ROWS = 8
BAD_PAIRS, BAD_MODELS = -2, -3  # search_levels' plan[0] after a first call on bad input
CONT_BITS = 32  # a continuation's sb is ~(b0 << CONT_BITS | j)
Z = np.int64(0)
TRUE, FALSE = np.bool_(True), np.bool_(False)


# A group of arrays crosses from Python as a plain tuple, its fields named by a NamedTuple class
# below (Tree, Leaves) where it is made: numba types a named tuple argument by its slow path, ~1 us
# more a call (measured: a search_levels call 20% slower on ten pair rows), where a plain one hits
# its type cache. Kernels unpack a group once at their top: a field read inside a hot loop was
# measured slower.

class Tree(NamedTuple):
    """One bank's arrays as the descent reads them: the A or the B side of every pair row
    (refine.tree_of)."""

    nodes: tuple              # the volume's node arrays (volumes.py)
    first_child: np.ndarray   # (N,) int64, global id of each node's first child
    child_count: np.ndarray   # (N,) int64
    spheres: np.ndarray       # (N, 8) the bank's `spheres` (volumes.enclosing_spheres), for _scan_children
    cells: tuple              # the on-collide trees' octree cells (_needs_children); zeros for a prebuilt bank


class Leaves(NamedTuple):
    """One bank's leaves as the exact level reads them (leaves_of)."""

    nodes: tuple             # the volume's node arrays (volumes.py): a sphere around each leaf's volume
    tri_ptr: np.ndarray      # (N+1,) int64, CSR: node i's triangles are tri_idx[tri_ptr[i]:tri_ptr[i+1]]
    tri_idx: np.ndarray      # (K,) int64, global triangle ids
    tri_verts: np.ndarray    # (F, 3, 3) float64, body frame
    tri_center: np.ndarray   # (F, 3) float64
    tri_radius: np.ndarray   # (F,) float64, around tri_center


@njit(cache=True, _nrt=False)
def cont_node_b(x):
    """B's node of the parent pair of a continuation entry whose sb is x (< 0)."""
    return (~x) >> CONT_BITS


@njit(cache=True, _nrt=False)
def cont_index(x):
    """The next child-pair index of a continuation entry whose sb is x (< 0) (_expand's order)."""
    return (~x) & ((1 << CONT_BITS) - 1)


@njit(cache=True, _nrt=False)
def entry_node_b(x):
    """B's node of a stack entry's pair: its own for a tested pair, its parent's for a
    continuation (both pairs overlap)."""
    return (~x) >> CONT_BITS if x < 0 else x


def stack_pairs_b(sb):
    """entry_node_b over a numpy array of sb values."""
    sb = np.asarray(sb)
    return np.where(sb < 0, (~sb) >> CONT_BITS, sb)


@njit(cache=True, _nrt=False)
def _scan_children(A, B, R, t, r, a0, b0, j, level, stack, top, xb, lazy):
    """Test the child pairs of node pair (a0, b0) from index j on (B's children outer, A's inner,
    in node order; a leaf stands in for its own children) and write the overlapping ones at
    stack = (sa, sb, sl)[top:], one row's entries, at `level`. Returns (new top, whether one
    overlapped).

    lazy (_expand, the descent): stop at the first overlapping pair; write a continuation for the
    child pairs after it — kept even when none is left, so that the stack holds every pair the
    witness descends from — and the overlapping pair above it (module docstring). Otherwise
    (_push_children, the exact level) every overlapping pair is written. (Testing first the child
    pairs whose centres face the other node was measured slower: ordering cost more tests than it
    saved.) A child of B whose enclosing sphere misses the sphere around A's children (the trees'
    `spheres`, volumes.enclosing_spheres) is skipped with one test in place of one per A
    child: on deep poses that halves the tests, and the answers are the same (measured: level 2 on
    the freighter 0.31 -> 0.27 us a pair, the fighter 0.47 -> 0.38; also testing A's children
    against B's children's sphere first, into a bit mask, cost more than it saved)."""
    VA, fca, cca, ea, _ = A
    VB, fcb, ccb, eb, _ = B
    sa, sb, sl = stack
    a_first, na, b_first, nb = a0, 1, b0, 1
    if cca[a0] > 0:
        a_first, na = fca[a0], cca[a0]
    if ccb[b0] > 0:
        b_first, nb = fcb[b0], ccb[b0]
    bi, ai = j // na, j % na
    hit = False
    while bi < nb:
        b = b_first + bi
        if not _reaches_children(eb, b, ea, a0, R, t, r):  # b overlaps none of A's children (a continue,
            # not an if block around the rest: measured 9% faster)
            ai = 0
            bi += 1
            continue
        place(VB, np.uint64(b), R, t, r, xb)  # node ids are >= 0: unsigned, numba checks no wraparound
        while ai < na:
            a = a_first + ai
            if overlap(VA, np.uint64(a), VB, np.uint64(b), R, t, r, xb)[0]:
                hit = True
                if lazy:
                    sa[top], sb[top], sl[top] = a0, ~((b0 << CONT_BITS) | (bi * na + ai + 1)), level
                    top += 1
                sa[top], sb[top], sl[top] = a, b, level
                top += 1
                if lazy:
                    return top, hit
            ai += 1
        ai = 0
        bi += 1
    return top, hit


@njit(cache=True, _nrt=False)
def _reaches_children(eb, b, ea, a0, R, t, r):
    """Whether B's node b's own sphere reaches the sphere around A's node a0's children (spheres,
    volumes.enclosing_spheres): else b overlaps none of them."""
    a0, b = np.uint64(a0), np.uint64(b)
    reach = ea[a0, 7]
    if reach == np.inf:  # unbounded (on-collide trees): no test
        return True
    x0, x1, x2 = moved(R, t, r, eb, b)
    s = eb[b, 3] + reach
    return (ea[a0, 4] - x0) ** 2 + (ea[a0, 5] - x1) ** 2 + (ea[a0, 6] - x2) ** 2 <= s * s


@njit(cache=True, _nrt=False)
def _expand(A, B, R, t, r, a0, b0, j, level, stack, top, xb):
    """Lazy expansion of node pair (a0, b0) from child-pair index j (_scan_children, lazy):
    returns (new top, whether a child pair overlapped); nothing is written when none does. `lazy`
    is passed as a literal, not a typed constant: numba then compiles _scan_children once per value
    with the other branch folded away (measured: fcl / sphere level 2 on deep poses 11.3 -> 15.6x
    on the lamp, 5.2 -> 7.6x on the fighter; the second compile is worth it)."""
    return _scan_children(A, B, R, t, r, a0, b0, j, level, stack, top, xb, True)


@njit(cache=True, _nrt=False)
def _push_children(A, B, R, t, r, a0, b0, j, level, stack, top, xb):
    """Push every overlapping child pair of node pair (a0, b0) from index j on (_scan_children):
    the whole expansion (j = 0), or a continuation's rest, as the exact level needs it. Returns
    the new top."""
    return _scan_children(A, B, R, t, r, a0, b0, j, level, stack, top, xb, False)[0]


# On-collide trees (ocst.py) build a node's children one octant at a time, as pairs need them. A
# Tree's `cells` = (cell centre (N, 3), cell radius (N,), pending (N,), want (N,)): the sphere
# circumscribing each resident node's octree cell (a root's: its bounding cube's), the octants
# (bit j = 4x + 2y + z) of each node not built yet, and those a pair asked for.
# A prebuilt bank's pending bits are all 0 (refine.py passes zeros), so none of this runs for it.
OCTANT_SLACK = 1e-9  # an octant's cell sphere is grown by this, relative, to hold its cell whatever the rounding


@njit(cache=True, _nrt=False)
def _potential_child(cells, fc, cc, n, j):
    """(x, y, z, radius, exists), in n's frame, of what stands for child j of node n in a pair test:
    the cell sphere of pending octant j (from n's own: half its radius, centre a quarter of the
    cell's side off n's along each axis), or of the child built in octant slot j, or, for a leaf
    (j = 0 only), n's own; exists is False for an empty octant."""
    C, rad, pend = cells[0], cells[1], cells[2]
    if cc[n] == 0:
        return C[n, 0], C[n, 1], C[n, 2], rad[n], j == 0
    if (pend[n] >> j) & 1:
        off = rad[n] / (2.0 * np.sqrt(3.0))  # the cell's side is 2 r / sqrt(3)
        return (C[n, 0] + (off if j & 4 else -off), C[n, 1] + (off if j & 2 else -off),
                C[n, 2] + (off if j & 1 else -off), 0.5 * rad[n] * (1.0 + OCTANT_SLACK), True)
    s = fc[n] + j
    return C[s, 0], C[s, 1], C[s, 2], rad[s], j < cc[n] and rad[s] == rad[s]  # nan: no child there


@njit(cache=True, _nrt=False)
def _needs_children(A, B, a, b, R, t, r):
    """Whether expanding node pair (a, b) must wait for children not built yet: a pending octant
    of either node whose cell sphere overlaps one of the other node's potential children
    (_potential_child). Those octants are ORed into the banks' want bits (ocst.py builds them).
    Cell spheres suffice: a point where the ships meet lies in a cell of each at every level, so
    the pair of cells holding it always overlaps; an octant that overlaps nothing of the other
    node cannot hold such a point, and the child pairs it would make are never needed."""
    _, fca, cca, _, la = A
    _, fcb, ccb, _, lb = B
    pa, pb = la[2][a], lb[2][b]
    if pa == 0 and pb == 0:
        return False
    wa, wb = np.int64(0), np.int64(0)
    for i in range(8):
        y0, y1, y2, rb, ok_b = _potential_child(lb, fcb, ccb, b, i)
        if not ok_b:
            continue
        x = R[r, 0, 0] * y0 + R[r, 0, 1] * y1 + R[r, 0, 2] * y2 + t[r, 0]  # B's frame -> A's
        y = R[r, 1, 0] * y0 + R[r, 1, 1] * y1 + R[r, 1, 2] * y2 + t[r, 1]
        z = R[r, 2, 0] * y0 + R[r, 2, 1] * y1 + R[r, 2, 2] * y2 + t[r, 2]
        vb = (pb >> i) & 1 if ccb[b] > 0 else 0
        for j in range(8):
            va = (pa >> j) & 1 if cca[a] > 0 else 0
            if va == 0 and vb == 0:
                continue  # two built children: the expansion's own test
            x0, x1, x2, ra, ok_a = _potential_child(la, fca, cca, a, j)
            if ok_a and (x0 - x) ** 2 + (x1 - y) ** 2 + (x2 - z) ** 2 <= (ra + rb) ** 2:
                wa |= va << j
                wb |= vb << i
    la[3][a] |= wa
    lb[3][b] |= wb
    return wa != 0 or wb != 0


@njit(cache=True)
def _start_rows(models, frame, rows, pose):
    """A frame's pair rows set up from its own arrays, so that Python gathers nothing per row:
    models (node_offset_a, tri_offset_a, depth_a, node_offset_b, tri_offset_b, depth_b), frame
    (model_id, T, pairs, max_level) as refine_frame's; fills rows (ROWS, k) int64 and pose (Ta,
    Tb, R, t) (search_levels). Returns 0, or BAD_PAIRS / BAD_MODELS (and fills nothing) when a
    pair names a body outside 0..n-1 or a body's model is not in both banks."""
    node_a, tri_a, depth_a, node_b, tri_b, depth_b = models
    model_id, T, pairs, max_level = frame
    Ta, Tb, R, t = pose
    n, n_models = len(model_id), min(len(node_a), len(node_b)) - 1
    for r in range(len(pairs)):
        if not (0 <= pairs[r, 0] < n and 0 <= pairs[r, 1] < n):
            return BAD_PAIRS
    for i in range(n):
        if not 0 <= model_id[i] < n_models:
            return BAD_MODELS
    for r in range(len(pairs)):
        ia, ib = pairs[r, 0], pairs[r, 1]
        ma, mb = model_id[ia], model_id[ib]
        depth = max(depth_a[ma], depth_b[mb])
        rows[MA, r], rows[MB, r], rows[DEPTH, r], rows[CAP, r] = ma, mb, depth, min(depth, max_level)
        rows[ROOT_A, r], rows[ROOT_B, r], rows[TRI_A, r], rows[TRI_B, r] = node_a[ma], node_b[mb], tri_a[ma], tri_b[mb]
        for p in range(4):  # element by element: T[ia] would be a view, refcounted, set by numba's slow path
            for q in range(4):
                Ta[r, p, q], Tb[r, p, q] = T[ia, p, q], T[ib, p, q]
    relative_poses_into(Ta, Tb, R, t)
    return 0


@njit(cache=True)
def _start_stacks(VA, VB, rows, pose, state):
    """Per pair row r, the stack (descend_stacks) holding its root pair (rows[ROOT_A, r],
    rows[ROOT_B, r]) at level 0 when their volumes overlap, empty (apart[r]) when not."""
    _, _, R, t = pose
    sa, sb, sl, height, _, apart, _ = state
    root_a, root_b = rows[ROOT_A], rows[ROOT_B]
    xb = np.empty((2, 3))
    for r in range(len(root_a)):
        sa[r, 0], sb[r, 0], sl[r, 0] = root_a[r], root_b[r], 0
        a, b = np.uint64(root_a[r]), np.uint64(root_b[r])  # as _scan_children's: one signature
        place(VB, b, R, t, r, xb)
        hit = overlap(VA, a, VB, b, R, t, r, xb)[0]
        height[r], apart[r] = (1, False) if hit else (0, True)


@njit(cache=True)
def _stack_capacity(cca, ccb, ptr, levels):
    """(capacity, kids) of a depth-first stack for the rows of CSR ptr: a stack holds a row's
    unexpanded input entries plus at most one sibling group per level below them, and a group is
    at most kids = (most children of a node of A) x (of B) pairs."""
    kids = np.int64(1)
    for c in (cca, ccb):
        for i in range(len(c)):
            kids = max(kids, np.int64(c[i]))
    kids = kids * kids
    most = np.int64(0)
    for i in range(len(ptr) - 1):
        most = max(most, ptr[i + 1] - ptr[i])
    return most + levels * kids, kids


@njit(cache=True)
def _load_stack(ptr, i, fa, fb, sa, sb):
    """Copy row i's entries (fa, fb)[ptr[i]:ptr[i+1]] onto the stack (sa, sb); returns its height."""
    top = np.int64(0)
    for j in range(ptr[i], ptr[i + 1]):
        sa[top], sb[top] = fa[j], fb[j]
        top += 1
    return top


def leaves_of(bank) -> tuple:
    """The bank's Leaves (a plain tuple, see Tree), made at each use: an on-collide bank (ocst.py)
    reallocates tri_idx as it builds."""
    return tuple(Leaves(bank.nodes, bank.tri_ptr, bank.tri_idx, bank.tri_verts, bank.tri_center, bank.tri_radius))


def stack_width(bank_a, bank_b, depth: int) -> int:
    """Entries a row's depth-first stack can ever hold when searched down to level `depth`: its
    root pair, plus at most a continuation and a tested pair per level below the root (module
    docstring, "Capacity"). B's node ids must fit a continuation's sb."""
    if len(bank_b.first_child) >= 1 << (63 - CONT_BITS):
        raise ValueError(f"the stacks' continuations take banks of fewer than 2^{63 - CONT_BITS} nodes")
    return 1 + 2 * max(int(depth), 0)


@njit(cache=True)
def descend_stacks(A, B, pose, rows, target, state):
    """Depth-first search, in place, for pair rows `rows`, of one colliding node pair at level
    target[i] (A, B: the banks' Trees; pose, state: scratch_views').

    Row r's state is its stack (sa, sb, sl)[r, :height[r]] of colliding node pairs not yet
    expanded and of continuations (child pairs not yet tested, module docstring), levels <=
    target[i], top last. A tested pair below the target level on top is popped and expanded
    lazily (_expand: its child pairs tested until one overlaps); a continuation on top resumes
    its scan; until the top entry is a tested pair at the target level — a witness: the ships
    may touch at that level — or the stack runs out: no colliding pair exists at the target
    level, the ships are apart. Every child pair of an expanded pair is tested before the stack
    can run out, so the verdict equals a breadth-first descent's, which would expand every
    colliding pair of every level on the way (on a deep overlap, most of the tree). Every node
    pair an entry names overlaps, so each gives a valid separation bound.

    Sets level[r] to target[i] (the witness on top), or, for an emptied stack, to one below the
    deepest level at which the row had a colliding pair — where a breadth-first descent finds
    its frontier empty — with apart[r] = True. Stacks are (k, width) arrays sized by
    stack_width.

    On-collide trees (ocst.py): a row whose top entry, a tested pair below the target level,
    needs octants not built yet (_needs_children: their want bits set) stops there with
    blocked[r] = True and level[r] = the deepest level seen; once they are built, a second call
    resumes it where it stopped. (A continuation's parent pair was expanded, so every octant it
    needs is built.)
    """
    R, t = pose[2], pose[3]
    xb = np.empty((2, 3))
    for i in range(len(rows)):
        _descend_row(A, B, R, t, rows[i], target[i], state, xb)


@njit(cache=True, _nrt=False)
def _descend_row(A, B, R, t, r, target, state, xb):
    """descend_stacks for pair row r toward level `target`."""
    sa, sb, sl, height, level, apart, blocked = state
    stack = sa[r], sb[r], sl[r]  # the row's entries
    sa_r, sb_r, sl_r = stack
    top = height[r]
    deep = max(level[r], sl_r[top - 1]) if top > 0 and sb_r[top - 1] >= 0 else level[r]
    blocked[r] = False
    while top > 0:
        b = sb_r[top - 1]
        if b < 0:  # a continuation: resume its scan in its place
            top -= 1
            top, hit = _expand(A, B, R, t, r, sa_r[top], cont_node_b(b), cont_index(b), sl_r[top], stack, top, xb)
        elif sl_r[top - 1] >= target:
            break
        elif _needs_children(A, B, sa_r[top - 1], b, R, t, r):
            blocked[r] = True
            break
        else:
            top -= 1
            top, hit = _expand(A, B, R, t, r, sa_r[top], b, Z, sl_r[top] + 1, stack, top, xb)
        if hit:
            deep = max(deep, sl_r[top - 1])
    height[r] = top
    if blocked[r]:
        level[r] = deep
    elif top > 0:
        level[r] = target
    else:
        level[r] = deep + 1
        apart[r] = True


SCRATCH_INTS, SCRATCH_FLAGS, SCRATCH_FLOATS = ROWS + 5, 3, 45  # per pair row (scratch_views); the ints also
                                                               # hold the 3 entries of plan


@njit(cache=True)
def scratch_views(scratch, k, width):
    """The search's arrays for k pair rows with stacks `width` deep, as views of the four flat
    scratch arrays (ints, flags, floats, stacks (3, entries)) refine.Scratch holds: the one
    layout, made here for the kernels and Python alike, so that a call passes four arrays, not
    thirty (each costs numba's dispatch ~0.3 µs to type and unbox, ~1 µs after a render). Returns
    (rows, pose, state, known, plan, batch, order) as search_levels describes them, each
    C-contiguous."""
    ints, flags, floats, stacks = scratch
    rows = ints[:ROWS * k].reshape(ROWS, k)
    height, level = ints[ROWS * k:(ROWS + 1) * k], ints[(ROWS + 1) * k:(ROWS + 2) * k]
    batch = ints[(ROWS + 2) * k:(ROWS + 4) * k].reshape(2, k)
    order = ints[(ROWS + 4) * k:(ROWS + 5) * k]
    plan = ints[(ROWS + 5) * k:(ROWS + 5) * k + 3]
    pose = (floats[:16 * k].reshape(k, 4, 4), floats[16 * k:32 * k].reshape(k, 4, 4),
            floats[32 * k:41 * k].reshape(k, 3, 3), floats[41 * k:44 * k].reshape(k, 3))
    state = (stacks[0, :k * width].reshape(k, width), stacks[1, :k * width].reshape(k, width),
             stacks[2, :k * width].reshape(k, width), height, level, flags[:k], flags[2 * k:3 * k])
    return rows, pose, state, (flags[k:2 * k], floats[44 * k:45 * k]), plan, batch, order


@njit(cache=True)
def search_levels(A, B, models, frame, scratch, k, width, fair, forced, budget):
    """Hubbard's sphere levels for all k pair rows of a frame, in place, in as few calls as the
    clock allows. nopython code cannot read a clock, so the Python caller turns the time left into
    a work budget (rows to deepen) between calls; one call sets the search up and runs the forced
    levels, where a kernel call per stage and per level used to cost more than the search itself
    (refine._Search.levels).

    A, B  : the banks' trees (Tree)
    models: (node_offset_a, tri_offset_a, depth_a, node_offset_b, ...), the banks' per-model tables
    frame : (model_id (n,), T (n, 4, 4), pairs (k, 2), max_level) as refine_frame's
    scratch, k, width: the search's arrays for k pair rows, stacks `width` deep (scratch_views),
            in place:
      rows  : (ROWS, k) int64 and pose (Ta, Tb (k, 4, 4), R (k, 3, 3), t (k, 3)): filled by the first
              call (_start_rows), B's pose in A's frame as relative_poses gives it
      state : (sa, sb, sl, height, level, apart, blocked) as descend_stacks's, set by the first call
      known : (tested (k,) bool, distance (k,) float64), what the exact level learns: reset by the
              first call (kernels.summarize_stacks)
      plan  : (3,) int64 in/out: the level L being deepened (-1 before the first call; BAD_PAIRS or
              BAD_MODELS after it on bad input, _start_rows), the next row to look at, whether a row
              was deepened at L (0/1)
      batch : (2, k) int64 out: the rows deepened by this call and their target levels, for the
              on-collide trees' resume (ocst.resume_stacks)
      order : (k,) int64, the order the round-robin visits the rows in, set by the first call
    fair  : (keys, served, n) of a fairness.FairOrder over n bodies: the round-robin visits the rows
            least served first (the broad phase's order among equals); n < 0: in row order
    forced: the first call deepens every row to min(cap, forced), whatever the budget
    budget: rows the round-robin may deepen in this call, one level at a time over all rows in
            order (so that the deadline leaves the rows at the end of a level one level short); a
            call also ends where a level does, so that the caller can time each level afresh

    Returns (rows deepened, more, leaves): more is False when no row can go deeper; leaves counts
    the rows that may go on to the exact level (at their leaves, not apart).
    """
    views = scratch_views(scratch, k, width)
    rows, pose, state, known, plan, batch, order = views
    R, t = pose[2], pose[3]
    level, apart = state[4], state[5]
    cap = rows[CAP]
    xb = np.empty((2, 3))
    n = 0
    # the forced pass and the round-robin stay here, each calling _descend_row: split into two
    # functions, each with one call, LLVM inlined it in both and the descent ran 2x slower
    if plan[0] < 0:  # set-up and forced pass
        if _start_search(A[0], B[0], models, frame, views, fair):
            return n, False, 0
        first = 0
        for r in range(k):
            target = min(cap[r], forced)
            first = max(first, target)
            if not apart[r] and target > 0:
                _descend_row(A, B, R, t, r, target, state, xb)
                batch[0, n], batch[1, n] = r, target
                n += 1
        plan[0], plan[1], plan[2] = first, 0, 0
    L, i, found = plan[0], plan[1], plan[2]
    done, new_level = 0, False
    while True:
        if i == k:  # level L done
            if found == 0:
                plan[0], plan[1], plan[2] = L, i, found
                return n, False, count_leaves(rows, level, apart)
            L, i, found, new_level = L + 1, 0, 0, True
            continue
        r = order[i]
        if apart[r] or level[r] != L or cap[r] <= L:
            i += 1
            continue
        if new_level or done == budget:
            break
        _descend_row(A, B, R, t, r, L + 1, state, xb)
        batch[0, n], batch[1, n] = r, L + 1
        n += 1
        done += 1
        found = 1
        i += 1
    plan[0], plan[1], plan[2] = L, i, found
    return n, True, count_leaves(rows, level, apart)


@njit(cache=True, inline="always")
def _start_search(VA, VB, models, frame, views, fair):
    """search_levels' set-up: the rows (_start_rows), the search's arrays reset, the visiting order
    and the root pairs stacked. Returns 0, or, on bad input, plan[0] = BAD_PAIRS or BAD_MODELS
    (nothing else done) and that value. Inlined (numba): called, it cost ~0.4 us a search
    (measured), a few percent of a frame's ten-pair search."""
    rows, pose, state, known, plan, _, order = views
    level, blocked = state[4], state[6]
    bad = _start_rows(models, frame, rows, pose)
    if bad:
        plan[0] = bad
        return bad
    level[:] = 0
    blocked[:] = False
    known[0][:] = False
    known[1][:] = np.nan
    _visiting_order(frame[2], fair, order)
    _start_stacks(VA, VB, rows, pose, state)
    return 0


@njit(cache=True)
def _visiting_order(pairs, fair, order):
    """order[:] = the round-robin's order of the pair rows (search_levels' fair)."""
    keys, served, n = fair
    if n >= 0:
        got = argsort_stable(service(pairs, n, keys, served))
        for r in range(len(order)):
            order[r] = got[r]
    else:
        for r in range(len(order)):
            order[r] = r


@njit(cache=True)
def count_leaves(rows, level, apart):
    """Rows at their leaves, not apart, whose cap lets them on to the exact level."""
    n = 0
    for r in range(len(level)):
        n += not apart[r] and level[r] == rows[DEPTH, r] and rows[CAP, r] == rows[DEPTH, r]
    return n


@njit(cache=True)
def stacks_csr(sa, sb, sl, height, rows, top_only):
    """The stacks of pair rows `rows`, in that order, as CSR: (ptr (len(rows)+1,), fa, fb, fl)
    int64, each stack bottom to top, continuations included (see descend_stacks). A stack's
    levels never decrease toward its top, so with `top_only` just the tested pairs at its top
    level are taken: the witness (a level holds one tested pair; its continuation is left out)."""
    n = len(rows)
    first = np.empty(n, np.int64)
    ptr = np.zeros(n + 1, np.int64)
    for i in range(n):
        r = rows[i]
        j = height[r]
        m = height[r]
        if top_only:
            m = 0
            while j > 0 and sl[r, j - 1] == sl[r, height[r] - 1]:
                j -= 1
                m += sb[r, j] >= 0
        else:
            j = 0
        first[i] = j
        ptr[i + 1] = ptr[i] + m
    fa, fb, fl = np.empty(ptr[n], np.int64), np.empty(ptr[n], np.int64), np.empty(ptr[n], np.int64)
    for i in range(n):
        r, o = rows[i], ptr[i]
        for j in range(first[i], height[r]):
            if top_only and sb[r, j] < 0:
                continue
            fa[o], fb[o], fl[o] = sa[r, j], sb[r, j], sl[r, j]
            o += 1
    return ptr, fa, fb, fl


@njit(cache=True)
def csr_by_pose_row(rows, ptr, fa, fb, k):
    """CSR (ptr, fa, fb) over some pair rows (`rows`, any order, each once) re-laid over all k
    pair rows in order; rows not listed get no entries."""
    count = np.zeros(k, np.int64)
    for i in range(len(rows)):
        count[rows[i]] = ptr[i + 1] - ptr[i]
    out_ptr = np.zeros(k + 1, np.int64)
    for r in range(k):
        out_ptr[r + 1] = out_ptr[r] + count[r]
    out_a, out_b = np.empty(ptr[-1], np.int64), np.empty(ptr[-1], np.int64)
    for i in range(len(rows)):
        o = out_ptr[rows[i]] - ptr[i]
        for j in range(ptr[i], ptr[i + 1]):
            out_a[o + j], out_b[o + j] = fa[j], fb[j]
    return out_ptr, out_a, out_b


@njit(cache=True)
def complete_pairs(A, B, pose, rows, ptr, fa, fb):
    """Every colliding leaf pair below the stacks of pair rows `rows` (A, B: Trees; pose as
    scratch_views'; each row's entries (fa, fb)[ptr[i]:ptr[i+1]], see descend_stacks; continuations resumed
    to their end): the breadth-first frontier at the leaves, which the exact level's triangle tests
    need whole.
    Returns CSR (out_ptr (len(rows)+1,), out_a, out_b) int64 and blocked (len(rows),) bool: the row
    met pairs that need octants not built yet (_needs_children); they are output with its leaf
    pairs, so that the output, once they are built, is the row's stack to resume from."""
    cca, ccb = A[2], B[2]
    R, t = pose[2], pose[3]
    k = len(rows)
    size, _ = _stack_capacity(cca, ccb, ptr, np.int64(64))  # tree depth < 64
    sa, sb, sl = np.empty(size, np.int64), np.empty(size, np.int64), np.zeros(size, np.int64)
    stack = sa, sb, sl
    out_ptr = np.zeros(k + 1, np.int64)
    out_a, out_b = np.empty(ptr[k] - ptr[0] + 16, np.int64), np.empty(ptr[k] - ptr[0] + 16, np.int64)
    blocked = np.zeros(k, np.bool_)
    xb = np.empty((2, 3))
    n = 0
    for i in range(k):
        r = rows[i]
        top = _load_stack(ptr, i, fa, fb, sa, sb)
        while top > 0:
            top -= 1
            a, b = sa[top], sb[top]
            if b < 0:  # a continuation: the rest of its parent's child pairs
                top = _push_children(A, B, R, t, r, a, cont_node_b(b), cont_index(b), sl[top], stack, top, xb)
                continue
            unbuilt = _needs_children(A, B, a, b, R, t, r)
            if unbuilt or (cca[a] == 0 and ccb[b] == 0):
                blocked[i] |= unbuilt
                if n == len(out_a):
                    out_a, out_b = _grow1(out_a, n + 1), _grow1(out_b, n + 1)
                out_a[n], out_b[n] = a, b
                n += 1
            else:
                top = _push_children(A, B, R, t, r, a, b, Z, sl[top], stack, top, xb)
        out_ptr[i + 1] = n
    return out_ptr, out_a[:n], out_b[:n], blocked


@njit(cache=True)
def _grow1(arr, need):
    out = np.empty(max(need, 2 * len(arr)), arr.dtype)
    for i in range(len(arr)):
        out[i] = arr[i]
    return out


# No array variable is reassigned inside a hot loop: numba would then pay reference counting on
# every iteration (measured: 10x slower). Outputs are sized by a counting pass or a known bound.

@njit(cache=True)
def _gather(tris, leaf, other_centers, other, other_radius, mark, stamp, sel, n):
    """Append to sel[n:] (sized for every triangle) the unmarked triangles of `leaf` whose
    bounding spheres meet the sphere (other_centers[other], other_radius) — a triangle outside
    it cannot meet anything the other leaf holds — and mark them. tris = (tri_ptr, tri_idx,
    centres, radii), the centres already in A's frame. Returns the new n."""
    tp, ti, tc, tr = tris
    for q in range(tp[leaf], tp[leaf + 1]):
        tri = ti[q]
        if mark[tri] == stamp:
            continue
        rr = tr[tri] + other_radius
        if _dist2(tc, tri, other_centers, other) <= rr * rr:
            mark[tri] = stamp
            sel[n] = tri
            n += 1
    return n


@njit(cache=True)
def _boxes(V, lo, hi):
    """Axis-aligned boxes lo, hi (n, 3) of triangles V (n, 3, 3)."""
    for u in range(len(V)):
        for c in range(3):
            lo[u, c] = min(V[u, 0, c], V[u, 1, c], V[u, 2, c])
            hi[u, c] = max(V[u, 0, c], V[u, 1, c], V[u, 2, c])


@njit(cache=True)
def _starts_within(lo_p, hi_p, op, lo_q, hi_q, oq, strict, out, col, m):
    """Pairs (p, q) whose boxes overlap and where q's box starts along x inside p's x-range
    (lo_p <= lo_q <= hi_p; lo_p < lo_q when strict), p and q visited in x order (op, oq).
    Writes p to out[m:, col] and q to out[m:, 1 - col] when out is big enough (a first call
    with an empty out counts). Returns the new m."""
    j = 0
    nq = len(oq)
    write = len(out) > 0
    for p in op:
        x0 = lo_p[p, 0]
        while j < nq and (lo_q[oq[j], 0] < x0 or (strict and lo_q[oq[j], 0] == x0)):
            j += 1
        k = j
        while k < nq and lo_q[oq[k], 0] <= hi_p[p, 0]:
            q = oq[k]
            k += 1
            if (lo_q[q, 1] <= hi_p[p, 1] and lo_p[p, 1] <= hi_q[q, 1]
                    and lo_q[q, 2] <= hi_p[p, 2] and lo_p[p, 2] <= hi_q[q, 2]):
                if write:
                    out[m, col] = p
                    out[m, 1 - col] = q
                m += 1
    return m


@njit(cache=True)
def _sweep(lo_a, hi_a, lo_b, hi_b):
    """(m, 2) index pairs (u, v) whose boxes a[u] and b[v] overlap, each once: sorted along x,
    every overlapping pair has exactly one box starting inside the other's x-range (ties go to
    the first pass)."""
    oa = argsort_stable(lo_a[:, 0].copy())  # contiguous: one compilation
    ob = argsort_stable(lo_b[:, 0].copy())
    none = np.empty((0, 2), np.int64)
    no, yes, zero, one = np.bool_(False), np.bool_(True), np.int64(0), np.int64(1)
    m = _starts_within(lo_a, hi_a, oa, lo_b, hi_b, ob, no, none, zero, zero)
    m = _starts_within(lo_b, hi_b, ob, lo_a, hi_a, oa, yes, none, one, m)
    out = np.empty((m, 2), np.int64)
    m = _starts_within(lo_a, hi_a, oa, lo_b, hi_b, ob, no, out, zero, zero)
    _starts_within(lo_b, hi_b, ob, lo_a, hi_a, oa, yes, out, one, m)
    return out


@njit(cache=True)
def exact_pairs(A, B, pose, rows, ptr, fa, fb, first):
    """Exact level for pair rows `rows` whose node pairs (fa, fb)[ptr[i]:ptr[i+1]] are colliding
    leaves (A, B: Leaves; pose as scratch_views'): every triangle pair (one of A's, one of B's, global bank
    ids) that intersects, each reported once (_test_leaf_pairs over each row's leaf pairs at once).
    With `first`, only the first intersecting pair of a row is wanted (a yes/no answer, like a
    boolean collide). Returns (out_ptr (len(rows)+1,) int64, hit_a, hit_b (h,) int64).
    """
    R, t = pose[2], pose[3]
    out_ptr = np.zeros(len(rows) + 1, np.int64)
    hits = np.empty((64, 2), np.int64)
    scratch = _triangle_scratch(A[3], B[3])
    h = 0
    for i in range(len(rows)):
        j0, j1 = ptr[i], ptr[i + 1]
        hits, h = _test_leaf_pairs(A, B, R, t, rows[i], fa[j0:j1], fb[j0:j1], i + 1, scratch, hits, h, first)
        out_ptr[i + 1] = h
    return out_ptr, hits[:h, 0].copy(), hits[:h, 1].copy()


@njit(cache=True)
def _triangle_scratch(tva, tvb):
    """_test_leaf_pairs' scratch, sized for every triangle: marks and selections of A's and B's,
    which of B's centres are moved, B's centres in A's frame (filled when first met), and the
    spheres around A's leaf (1, 3) and B's ((2, 3): row 0 in B's frame, row 1 in A's)."""
    return (np.zeros(len(tva), np.int64), np.zeros(len(tvb), np.int64), np.zeros(len(tvb), np.int64),
            np.empty(len(tva), np.int64), np.empty(len(tvb), np.int64), np.empty((len(tvb), 3)),
            np.empty((1, 3)), np.empty((2, 3)))


@njit(cache=True)
def _test_leaf_pairs(A, B, R, t, r, fa, fb, stamp, scratch, hits, h, first):
    """The intersecting triangle pairs below pair row r's colliding leaf pairs (fa[j], fb[j]) of
    leaves A, B (Leaves), appended to hits from h (global bank ids; only the first with `first`).

    Gather the triangles of the leaves that can reach the sphere around the other leaf (volumes.py
    `enclosing`; each triangle once), move B's into A's frame, pair them by sweep and prune of
    their boxes, and test the pairs whose boxes overlap (every triangle pair once, where walking
    the leaf pairs would repeat many). `stamp` must differ from every earlier call's on the same
    scratch (_triangle_scratch). Returns (hits, possibly grown, and the new h)."""
    tva, tvb = A[3], B[3]
    sel_a, sel_b = scratch[3], scratch[4]
    na = nb = 0
    for j in range(len(fa)):
        na, nb = _gather_pair(A, B, R, t, r, fa[j], fb[j], stamp, scratch, na, nb)
    GA = np.empty((na, 3, 3))  # the gathered triangles, in A's frame
    GB = np.empty((nb, 3, 3))
    for u in range(na):
        GA[u] = tva[sel_a[u]]
    for u in range(nb):
        Vu, Tu = GB[u], tvb[sel_b[u]]
        for v in range(3):
            _to_a(R, t, r, Tu, v, Vu, v)
    lo_a, hi_a = np.empty((na, 3)), np.empty((na, 3))
    lo_b, hi_b = np.empty((nb, 3)), np.empty((nb, 3))
    _boxes(GA, lo_a, hi_a)
    _boxes(GB, lo_b, hi_b)
    cand = _sweep(lo_a, hi_a, lo_b, hi_b)
    if h + len(cand) > len(hits):
        hits = _grow2(hits, h + len(cand))
    return hits, _test_pairs(GA, GB, cand, sel_a, sel_b, hits, h, first)


@njit(cache=True)
def _gather_pair(A, B, R, t, r, a, b, stamp, scratch, na, nb):
    """Append to the selections of `scratch` (_triangle_scratch) the triangles of leaf a (of A:
    Leaves) that can reach the sphere around leaf b (of B) and those of b that can reach a's, each
    once per stamp. Returns the new counts (na, nb)."""
    VA, tpa, tia, _, tca, tra = A
    VB, tpb, tib, _, tcb, trb = B
    Z, One = np.int64(0), np.int64(1)
    mark_a, mark_b, moved, sel_a, sel_b, tcb_a, xa, xb = scratch
    rb = enclosing(VB, b, xb)
    _to_a(R, t, r, xb, Z, xb, One)
    na = _gather((tpa, tia, tca, tra), a, xb, One, rb, mark_a, stamp, sel_a, na)
    for q in range(tpb[b], tpb[b + 1]):
        if moved[tib[q]] != stamp:
            _to_a(R, t, r, tcb, tib[q], tcb_a, tib[q])
            moved[tib[q]] = stamp
    ra = enclosing(VA, a, xa)
    return na, _gather((tpb, tib, tcb_a, trb), b, xa, Z, ra, mark_b, stamp, sel_b, nb)


@njit(cache=True)
def _first_hit_in_leaf_pair(A, B, R, t, r, a, b, stamp, scratch, boxes):
    """The first intersecting triangle pair (A's, B's global ids) below one colliding leaf pair
    (a, b) of pair row r (A, B: Leaves), or (-1, -1): _test_leaf_pairs for a single pair, without
    its sweep and allocations (a leaf's few triangles pair up directly). boxes = (GB (F_B, 3, 3),
    lo, hi (F_B, 3)): scratch for B's gathered triangles in A's frame and their boxes."""
    tva, tvb = A[3], B[3]
    GB, lo, hi = boxes
    na, nb = _gather_pair(A, B, R, t, r, a, b, stamp, scratch, 0, 0)
    sel_a, sel_b = scratch[3], scratch[4]
    for v in range(nb):
        Tv = tvb[sel_b[v]]
        for k in range(3):
            _to_a(R, t, r, Tv, k, GB[v], k)
    _boxes(GB[:nb], lo, hi)
    for u in range(na):
        Tu = tva[sel_a[u]]
        ulo0, uhi0 = min(Tu[0, 0], Tu[1, 0], Tu[2, 0]), max(Tu[0, 0], Tu[1, 0], Tu[2, 0])
        ulo1, uhi1 = min(Tu[0, 1], Tu[1, 1], Tu[2, 1]), max(Tu[0, 1], Tu[1, 1], Tu[2, 1])
        ulo2, uhi2 = min(Tu[0, 2], Tu[1, 2], Tu[2, 2]), max(Tu[0, 2], Tu[1, 2], Tu[2, 2])
        for v in range(nb):
            if (lo[v, 0] <= uhi0 and ulo0 <= hi[v, 0] and lo[v, 1] <= uhi1 and ulo1 <= hi[v, 1]
                    and lo[v, 2] <= uhi2 and ulo2 <= hi[v, 2] and intersect_triangle_triangle(Tu, GB[v])):
                return sel_a[u], sel_b[v]
    return -1, -1


@njit(cache=True)
def first_contacts(A, B, pose, rows, target, state, leaves_a, leaves_b, hit, tries):
    """Depth-first to one intersecting triangle pair, for pair rows rows[i] at their leaves
    (target[i]: the leaf level; A, B: Tree; leaves_a, leaves_b: Leaves of the same banks). The
    triangles of the witness, the colliding leaf pair on top of the stack, are tested; where they
    meet nothing it is popped and the stack descended to the next colliding leaf pair
    (_descend_row), until a contact — hit[r] = (A's, B's triangle, global ids), hit (k, 2) int64, -1
    before — or the stack's end: every colliding leaf pair was tested, apart[r]; or a node whose
    children are not built yet (on-collide trees): blocked[r], and once they are built and the row
    descended again (ocst.resume_stacks), a second call goes on from its new witness; or `tries`
    leaf pairs tested in this call (tries < 0: no limit), the last one left on top. Leaf pairs share
    triangles, so a row found apart this way tests some triangle pairs more than once (exact_pairs
    over the whole frontier tests each once), but a contact costs the leaf pairs tried before it,
    not the frontier."""
    R, t = pose[2], pose[3]
    sa, sb, sl, height, _, apart, blocked = state
    tvb = leaves_b[3]
    scratch = _triangle_scratch(leaves_a[3], tvb)
    boxes = np.empty((len(tvb), 3, 3)), np.empty((len(tvb), 3)), np.empty((len(tvb), 3))
    xb = np.empty((2, 3))
    stamp = 0
    for i in range(len(rows)):
        r, goal, left = rows[i], target[i], tries
        blocked[r] = False
        while height[r] > 0 and hit[r, 0] < 0:
            top = height[r] - 1
            if sb[r, top] < 0 or sl[r, top] < goal:  # no witness on top: descend to the next one
                _descend_row(A, B, R, t, r, goal, state, xb)
                if blocked[r]:
                    break
                continue
            if left == 0:
                break
            left -= 1
            stamp += 1
            hit[r, 0], hit[r, 1] = _first_hit_in_leaf_pair(leaves_a, leaves_b, R, t, r, sa[r, top], sb[r, top], stamp,
                                                           scratch, boxes)
            if hit[r, 0] < 0:
                if left == 0:
                    break  # out of tries: the witness stays on top, the caller tests the whole frontier
                height[r] = top  # the witness's triangles meet nothing
        apart[r] |= height[r] == 0


@njit(cache=True)
def _test_pairs(VA, VB, cand, sel_a, sel_b, hits, h, first):
    """Exact tests of candidate (u, v) rows of VA x VB; intersecting ones appended to hits as
    (sel_a[u], sel_b[v]) from h on (only the first one when `first`). Returns the new h."""
    for k in range(len(cand)):
        u, v = cand[k, 0], cand[k, 1]
        if intersect_triangle_triangle(VA[u], VB[v]):
            hits[h, 0] = sel_a[u]
            hits[h, 1] = sel_b[v]
            h += 1
            if first:
                break
    return h


@njit(cache=True)
def _grow2(arr, need):
    out = np.empty((max(need, 2 * len(arr)), arr.shape[1]), arr.dtype)
    for i in range(len(arr)):
        for j in range(arr.shape[1]):
            out[i, j] = arr[i, j]
    return out


@njit(cache=True)
def summarize_stacks(VA, VB, scratch, k, width, hit_ptr, n_levels, pairs, fair):
    """The frame's answer per pair row i from its stack, sa[i, :height[i]] and sb[i, :height[i]]
    (VA, VB: the banks' node arrays; scratch, k, width, fair as search_levels', pairs as its
    frame's), as the answer's own new arrays: each one handed to Python costs ~1 µs back to back,
    and cutting views out of a few flat ones in numpy cost more (measured ~2.5x, in a frame after a
    render, where every Python-level call runs from cold caches). The stack's colliding node pairs
    are its entries' pairs (entry_node_b): the witness, and per level above it the pair its
    continuation comes from — the witness's ancestors, root pair included, each kept by its
    continuation (_expand) — not every overlapping sibling met on the way, as before lazy testing:
    those stay untested. So the bound is the min over fewer pairs (looser, still valid), and the
    contact comes from one chain of pairs, not a spread of them.

    Returns, each (k,) unless noted:
    colliding, certain bool: not found apart; found apart or triangles tested
    bound: the min over those pairs of the volume's separation bound
        (volumes.py; any overlapping pair gives a valid one), 0 for rows with intersecting
        triangles (hit_ptr, CSR over the rows), +inf for rows apart; distance: known's, 0 for
        colliding rows whose triangles were tested; point (k, 3) world, mean over those pairs of
        their contact points (nan for rows apart); normal (k, 3) world, unit, the root pair's
        direction from A toward B (volumes.py `contact`), as the exact strategies report it
        (exact.py): one chain's directions are noise on their own — measured: the mean over the
        chain put two touching unit spheres' normal 33 degrees off their centre line, where the
        mean over every overlapping sibling, before lazy testing, averaged that out (A's origin
        to B's when the roots' centres coincide, +x when the origins coincide too; 0 for rows
        apart)
    level as reached; root_a, root_b, tri_a, tri_b: each row's root node and first triangle id of
        A and B; bound_pair (k, 2): the node pair the bound comes from, local to each model (-1
        for rows apart or with an empty stack); hist (n_levels,): rows not apart per level reached;
        then the CSR (ptr (k+1,), fa, fb) of each row's tested top-level pairs (stacks_csr, top_only);
        and fair's new (keys, served), the levels reached recorded (fairness.record_service; fair's
        own when n < 0)
    The stack is in A's body frame: pose's Ta (k, 4, 4), ship A's body->world transform, maps it.
    A stack's bottom entry names the root pair — the root itself, or the continuation of its
    child pairs, which stays until the search backtracks into it, and then the stack is empty
    (_expand) — so the first contact added gives the normal.
    """
    rows, pose, state, known = scratch_views(scratch, k, width)[:4]
    sa, sb, sl, height, level, apart, _ = state
    tested = known[0]
    colliding, certain = np.empty(k, np.bool_), np.empty(k, np.bool_)
    for i in range(k):
        colliding[i], certain[i] = not apart[i], apart[i] or tested[i]
    bound, distance = np.full(k, np.inf), known[1].copy()
    point, normal = np.full((k, 3), np.nan), np.zeros((k, 3))
    hist = np.zeros(n_levels, np.int64)
    bound_pair = np.full((k, 2), -1, np.int64)
    out = bound, distance, point, normal, hist, bound_pair
    _summarize_rows(VA, VB, pose, state, tested, rows, hit_ptr, out, (np.empty((2, 3)), np.empty(6)))
    ptr, fa, fb, _ = stacks_csr(sa, sb, sl, height, np.arange(k), TRUE)
    keys, served, n = fair
    if n >= 0:
        keys, served = record_service(pairs, level, n, keys, served)
    return (colliding, certain, bound, distance, point, normal, level.copy(), rows[ROOT_A].copy(),
            rows[ROOT_B].copy(), rows[TRI_A].copy(), rows[TRI_B].copy(), bound_pair, hist, ptr, fa, fb, keys, served)


@njit(cache=True, _nrt=False)
def _summarize_rows(VA, VB, pose, state, tested, rows, hit_ptr, out, work):
    """summarize_stacks' per-row answers, in place: out = (bound, distance, point, normal, hist,
    bound_pair) as it returns them, distance holding what the exact level measured, the others
    their values for rows apart; work = (xb (2, 3), acc (6,)) scratch. One call for all rows, and
    compiled without reference counting (it allocates nothing): a call per row, or increfs of its
    arrays, cost up to 20% of the summary (measured)."""
    Ta, _, R, t = pose
    sa, sb, sl, height, level, apart, _ = state
    bound, distance, point, normal, hist, bound_pair = out
    xb, acc = work
    root_a, root_b = rows[ROOT_A], rows[ROOT_B]
    for i in range(len(height)):
        if apart[i]:
            continue
        hist[level[i]] += 1
        if tested[i]:
            distance[i] = 0.0
        if height[i] == 0:
            continue
        acc[:] = 0.0
        best, best_j = np.inf, 0
        for j in range(height[i]):  # two loops, not one: shorter bodies, more entries in flight
            sep = separation(VA, sa[i, j], VB, entry_node_b(sb[i, j]), R, t, i, xb)
            if sep < best:
                best, best_j = sep, j
        bound_pair[i, 0], bound_pair[i, 1] = sa[i, best_j] - root_a[i], entry_node_b(sb[i, best_j]) - root_b[i]
        for j in range(height[i]):
            if j == 1:  # the bottom entry names the root pair (summarize_stacks): its direction is the normal
                n0, n1, n2 = acc[3], acc[4], acc[5]
            contact(VA, sa[i, j], VB, entry_node_b(sb[i, j]), R, t, i, xb, acc)
        if height[i] == 1:
            n0, n1, n2 = acc[3], acc[4], acc[5]
        for c in range(3):
            acc[c] /= height[i]
        length = np.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
        if length < 1e-9:
            n0, n1, n2 = t[i, 0], t[i, 1], t[i, 2]
            length = np.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
        if length < 1e-12:
            n0, n1, n2, length = 1.0, 0.0, 0.0, 1.0
        for c in range(3):  # A's body frame -> world
            point[i, c] = Ta[i, c, 3]
            for m in range(3):
                point[i, c] += Ta[i, c, m] * acc[m]
            normal[i, c] = (Ta[i, c, 0] * n0 + Ta[i, c, 1] * n1 + Ta[i, c, 2] * n2) / length
        bound[i] = 0.0 if hit_ptr[i + 1] > hit_ptr[i] else best


@njit(cache=True)
def min_distance_all_pairs(TA, TB):
    """Brute force: smallest distance between any triangle of TA (n, 3, 3) and any of TB (m, 3, 3),
    same frame. Pairs whose bounding boxes are already farther apart than the best so far are
    skipped (their distance can only be larger). 0 when some pair intersects."""
    lo_a = np.empty((len(TA), 3))
    hi_a = np.empty((len(TA), 3))
    lo_b = np.empty((len(TB), 3))
    hi_b = np.empty((len(TB), 3))
    for T, lo, hi in ((TA, lo_a, hi_a), (TB, lo_b, hi_b)):
        for i in range(len(T)):
            for c in range(3):
                lo[i, c] = min(T[i, 0, c], T[i, 1, c], T[i, 2, c])
                hi[i, c] = max(T[i, 0, c], T[i, 1, c], T[i, 2, c])
    best2 = np.inf
    out = np.empty((2, 3))
    for i in range(len(TA)):
        for j in range(len(TB)):
            g2 = 0.0
            for c in range(3):
                g = max(lo_b[j, c] - hi_a[i, c], lo_a[i, c] - hi_b[j, c], 0.0)
                g2 += g * g
            if g2 >= best2:
                continue
            d = distance_triangle_triangle(TA[i], TB[j], out)
            if d * d < best2:
                best2 = d * d
                if d == 0.0:
                    return 0.0
    return np.sqrt(best2)
