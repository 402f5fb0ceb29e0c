"""Face-octree kernels (numba): Smith & Kitamura's four steps for a batch of ship pairs.

Meshes are packed: V (N, 3) float64 vertices of every model in its body frame [m], F (M, 3)
int64 faces (vertex ids local to their model), model m's vertices V[voff[m]:voff[m+1]] and faces
F[foff[m]:foff[m+1]]. Pair r has the relative pose of ship B in ship A's body frame, R[r] (3, 3)
and t[r] (3,): x_A = R[r] @ x_B + t[r]. Everything runs in A's body frame.

0. A reject with no vertex moved: each model's body-frame box is computed once per call (from
   the vertices as they are now), and pairs whose boxes are apart along one of the six box axes
   (an oriented-box test) are done (not in swept mode, where B moves).
1. The overlap region: A's axis-aligned box intersected with the axis-aligned box of B's
   vertices moved into A's frame — both recomputed on every call from the vertices as they are
   now, so nothing is prepared per model and meshes may deform.
2. The faces of each mesh meeting the region, by vertex outcodes (a face is dropped when all its
   vertices lie beyond one side): B's first; their boxes shrink the region before A's faces are
   scanned. Then, in turn, each mesh's face boxes shrink the region and the other mesh's faces
   are filtered by box on it, until nothing changes (box tests only: an exact triangle-box pass
   over every face here costs more than it saves the octree).
3. A face octree over the region, depth first, a cell split only while faces of both meshes are
   in it, down to `max_depth` or until it holds at most `leaf_pairs` face pairs or at most THIN
   faces of one mesh. Each face is
   sent to the children its box reaches, with the exact triangle-box test only where its box
   straddles a split plane. For a first contact the sparsest shared child is searched first.
4. Exact triangle–triangle tests of the leaves' face pairs whose boxes overlap, each pair once
   (sorted, duplicates dropped); or, for a first contact, pairs tested as the leaves come, until
   the first hit. `test_candidates_parallel` is the paper's SPMD strategy: steps 1-3 serial, then
   every candidate of every pair on its own prange iteration; same hits as the serial kernel.

Correctness: two intersecting triangles share a point p. p lies on both surfaces, so inside both
boxes and the region, and in some leaf cell (cells are closed and padded by a relative 1e-9, so
rounding cannot push p out of all of them); both triangles meet that cell, so the pair is tested.

Swept mode (`swept`): B also has an end pose (R1, t1); B's faces are bounded by the boxes of
their start and end positions (the convex hull of the six vertices contains every in-between
position when B's vertices move along straight lines in A's frame), the region uses B's box over
both poses, and step 4 tests A's triangle against the hull (`swept.swept_hits`).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit, prange

from ..geometry.buffers import grow
from ..geometry.triangles import intersect_triangle_triangle
from .boxtest import overlap_triangle_box
from .swept import swept_hits

PAD_REL = 1e-9  # cells grow by this fraction of the region's coordinates (see Correctness)
CANDIDATES, ALL_HITS, FIRST_HIT = 0, 1, 2  # what face_octree returns per pair
SHRUNK, UNCHANGED, EMPTY = 0, 1, 2  # what shrinking the region to a face list's box did
LOWER_HALF = (0b01010101, 0b00110011, 0b00001111)  # children in the lower half along x, y, z (bit o: child o)
THIN = 4  # a cell with this few faces of one mesh is a leaf however many the other has: splitting it would
# route all the other's faces to save a few box tests (measured: 5% on deep first contacts, up to 15% all)
MAX_SHRINKS = 8  # rounds of shrinking the region by A's faces, then B's (most pairs settle in 2-3)

# What the kernels pass around in one tuple each, not as a dozen loose arrays:
# the packed meshes (module docstring): V (N, 3) float64 [m], F (M, 3) int64, voff, foff int64
Meshes = namedtuple("Meshes", "V F voff foff")
# the pairs' poses of B in A's frame: R, R1 (k, 3, 3), t, t1 (k, 3); R1, t1 the swept end pose
Poses = namedtuple("Poses", "R t R1 t1")
# what a call asks: swept (bool), max_depth, leaf_pairs (octree limits), mode (CANDIDATES, ...)
Limits = namedtuple("Limits", "swept max_depth leaf_pairs mode")
# one mesh's faces selected for a pair (step 2), in A's frame: triangles T (n, 3, 3), at the end
# pose T1 (B when swept; A's is T itself), boxes lo, hi (n, 3) (over both poses)
FaceSet = namedtuple("FaceSet", "T T1 lo hi")


@njit(cache=True)
def _move(V, v0, v1, R, t, r, out, box, extend):
    """out[:v1 - v0] = R[r] @ V[i] + t[r] for i in v0..v1: B's vertices in A's frame; box[1]
    (2, 3) = their box (or grown by it when `extend`)."""
    for k in range(3):
        r0, r1, r2, tk = R[r, k, 0], R[r, k, 1], R[r, k, 2], t[r, k]
        lo, hi = (box[1, 0, k], box[1, 1, k]) if extend else (np.inf, -np.inf)
        for i in range(v0, v1):
            x = r0 * V[i, 0] + r1 * V[i, 1] + r2 * V[i, 2] + tk
            out[i - v0, k] = x
            lo, hi = min(lo, x), max(hi, x)
        box[1, 0, k], box[1, 1, k] = lo, hi


@njit(cache=True)
def _bounds(X, s, e, box, b, extend):
    """box[b] (2, 3) = box of points X[s:e] (or of them and box[b] when `extend`)."""
    for k in range(3):
        lo, hi = (box[b, 0, k], box[b, 1, k]) if extend else (np.inf, -np.inf)
        for i in range(s, e):  # local accumulators: min/max through box[] costs 10x (store-load chains)
            lo, hi = min(lo, X[i, k]), max(hi, X[i, k])
        box[b, 0, k], box[b, 1, k] = lo, hi


@njit(cache=True)
def _model_boxes(V, voff, ma, mb):
    """(n_models, 2, 3) body-frame boxes of the models of the batch's pairs, from their vertices
    as they are now (once per call, not per pair; other models' rows are left unset)."""
    box = np.empty((len(voff) - 1, 2, 3))
    done = np.zeros(len(voff) - 1, np.bool_)
    for r in range(len(ma)):
        for m in (ma[r], mb[r]):
            if not done[m]:
                _bounds(V, voff[m], voff[m + 1], box, m, False)
                done[m] = True
    return box


@njit(cache=True)
def _boxes_apart(box, a, b, R, t, r):
    """A's body box and B's, placed by (R[r], t[r]) in A's frame, are separated along one of the
    six box axes (an oriented-box test: no vertex moved). Padded by PAD_REL of the coordinates,
    so rounding never separates boxes that touch."""
    scale, apart = 1.0, False
    for k in range(3):
        scale += abs(t[r, k]) + abs(box[a, 0, k]) + abs(box[a, 1, k]) + abs(box[b, 0, k]) + abs(box[b, 1, k])
    pad = PAD_REL * scale
    d = np.empty(3)  # B's box centre in A's frame minus A's box centre
    for k in range(3):
        d[k] = t[r, k] - 0.5 * (box[a, 0, k] + box[a, 1, k])
        for j in range(3):
            d[k] += R[r, k, j] * 0.5 * (box[b, 0, j] + box[b, 1, j])
    for k in range(3):  # A's axes
        reach = 0.5 * (box[a, 1, k] - box[a, 0, k]) + pad
        for j in range(3):
            reach += abs(R[r, k, j]) * 0.5 * (box[b, 1, j] - box[b, 0, j])
        apart = apart or abs(d[k]) > reach
    for j in range(3):  # B's axes
        reach = 0.5 * (box[b, 1, j] - box[b, 0, j]) + pad
        dj = 0.0
        for k in range(3):
            reach += abs(R[r, k, j]) * 0.5 * (box[a, 1, k] - box[a, 0, k])
            dj += R[r, k, j] * d[k]
        apart = apart or abs(dj) > reach
    return apart


@njit(cache=True)
def _overlap(boxes, region):
    """Step 1: region[0] = boxes[0] & boxes[1], padded by PAD_REL of its coordinates (see
    Correctness); returns the pad [m], or -1 when the boxes do not meet."""
    scale = 0.0
    for q in range(3):
        lo, hi = max(boxes[0, 0, q], boxes[1, 0, q]), min(boxes[0, 1, q], boxes[1, 1, q])
        if lo > hi:
            return -1.0
        scale = max(scale, abs(lo), abs(hi))
        region[0, 0, q], region[0, 1, q] = lo, hi
    pad = PAD_REL * scale + 1e-300
    for q in range(3):
        region[0, 0, q] -= pad
        region[0, 1, q] += pad
    return pad


@njit(cache=True)
def _outcodes(X, s, e, box, codes):
    """codes[i - s] (6 bits): which of the six half-spaces bounding box[0] point X[i] is beyond,
    for i in s..e."""
    for i in range(s, e):
        c = 0
        for k in range(3):
            if X[i, k] < box[0, 0, k]:
                c |= 1 << (2 * k)
            elif X[i, k] > box[0, 1, k]:
                c |= 2 << (2 * k)
        codes[i - s] = c


@njit(cache=True)
def _gather(X, x0, F, f, T, o, lo, hi, extend):
    """T[o] (3, 3) = triangle F[f] of vertices X[x0:] (local ids); lo[o], hi[o] its box (or
    grown by it when `extend`: the swept end position)."""
    i0, i1, i2 = x0 + F[f, 0], x0 + F[f, 1], x0 + F[f, 2]
    for k in range(3):
        x0, x1, x2 = X[i0, k], X[i1, k], X[i2, k]
        T[o, 0, k], T[o, 1, k], T[o, 2, k] = x0, x1, x2
        a, b = min(x0, x1, x2), max(x0, x1, x2)
        lo[o, k], hi[o, k] = (min(a, lo[o, k]), max(b, hi[o, k])) if extend else (a, b)


@njit(cache=True)
def _select(X, x0, X1, F, f0, nf, codes, codes1, swept, faces):
    """Step 2 for one mesh: the faces f0..f0+nf of vertices X[x0:] (local ids; X1 the swept end
    positions when `swept`, from 0) whose boxes meet the region (codes: the vertices' outcodes
    against it). Their triangles go to faces.T[:n] (faces.T1[:n]), boxes to faces.lo, faces.hi
    (over both positions); returns their local face ids (n,). The exact test comes later, on the
    shrunk region."""
    sel = np.empty(nf, np.int64)
    n = 0
    for f in range(nf):
        g = f0 + f
        out_all = codes[F[g, 0]] & codes[F[g, 1]] & codes[F[g, 2]]
        if swept:
            out_all &= codes1[F[g, 0]] & codes1[F[g, 1]] & codes1[F[g, 2]]
        if out_all:  # all beyond one side: the boxes miss
            continue
        _gather(X, x0, F, g, faces.T, n, faces.lo, faces.hi, False)
        if swept:
            _gather(X1, 0, F, g, faces.T1, n, faces.lo, faces.hi, True)
        sel[n] = f
        n += 1
    return sel[:n]


@njit(cache=True)
def _shrink(region, lo, hi, idx, n):
    """region[0] = its intersection with the box of boxes lo[idx[:n]], hi[idx[:n]]. Returns
    SHRUNK, UNCHANGED or EMPTY (the intersection is empty: region then undefined)."""
    out = UNCHANGED
    for k in range(3):
        a, b = np.inf, -np.inf
        for i in range(n):
            a, b = min(a, lo[idx[i], k]), max(b, hi[idx[i], k])
        if a > region[0, 0, k] or b < region[0, 1, k]:
            out = SHRUNK
        region[0, 0, k], region[0, 1, k] = max(region[0, 0, k], a), min(region[0, 1, k], b)
        if region[0, 0, k] > region[0, 1, k]:
            return EMPTY
    return out


@njit(cache=True)
def _narrow(region, A, idx_a, B, idx_b, pad):
    """Between steps 2 and 3, on the entries idx_a (rows of A's FaceSet) and idx_b (B's):
    the region shrinks to the box of each mesh's entries meeting it and the other mesh's
    entries are re-filtered on the shrunk region, in turn, until nothing changes (box tests
    only: an exact triangle-box pass over all entries here costs more than it saves the
    octree); then the region is padded by `pad` for the octree's exact tests. Returns (na, nb):
    idx_a[:na], idx_b[:nb] are kept (compacted in place, in order); (0, 0) when the region
    became empty.

    Invariant: a point where a face of A meets a face of B is in the region and both faces'
    boxes, so the faces survive every box filter and the point every shrink."""
    na, nb = len(idx_a), len(idx_b)
    for _ in range(MAX_SHRINKS):
        by_a = _shrink(region, A.lo, A.hi, idx_a, na)
        if by_a == EMPTY:
            return 0, 0
        if by_a == SHRUNK:
            nb = _refilter(idx_b, nb, B.lo, B.hi, region)
            if nb == 0:
                return 0, 0
        by_b = _shrink(region, B.lo, B.hi, idx_b, nb)
        if by_b == EMPTY:
            return 0, 0
        if by_b == UNCHANGED and by_a == UNCHANGED:
            break
        if by_b == SHRUNK:
            na = _refilter(idx_a, na, A.lo, A.hi, region)
            if na == 0:
                return 0, 0
    for q in range(3):
        region[0, 0, q] -= pad
        region[0, 1, q] += pad
    return na, nb


@njit(cache=True)
def _refilter(idx, n, lo, hi, region):
    """Keep, in place and in order, the entries idx[:n] whose boxes (rows of lo, hi) still meet
    the (shrunk) region; returns how many are left."""
    m = 0
    for i in range(n):
        u = idx[i]
        if (lo[u, 0] <= region[0, 1, 0] and hi[u, 0] >= region[0, 0, 0] and lo[u, 1] <= region[0, 1, 1]
                and hi[u, 1] >= region[0, 0, 1] and lo[u, 2] <= region[0, 1, 2] and hi[u, 2] >= region[0, 0, 2]):
            idx[m] = u
            m += 1
    return m


@njit(cache=True)
def _children(box, b, pad, cells):
    """cells (8, 2, 3) = the octants of box[b], each grown by `pad` across the split planes."""
    for o in range(8):
        for k in range(3):
            mid = 0.5 * (box[b, 0, k] + box[b, 1, k])
            if (o >> k) & 1:
                cells[o, 0, k], cells[o, 1, k] = mid - pad, box[b, 1, k]
            else:
                cells[o, 0, k], cells[o, 1, k] = box[b, 0, k], mid + pad


@njit(cache=True)
def _route(pool, s, e, faces, exact, cells, mask, count):
    """For entries pool[s:e] (rows of FaceSet faces): mask[j] (8 bits) = the children cells
    (8, 2, 3) of one parent entry j meets (box test per axis; the exact test only where its box straddles a split plane
    and `exact`); count[o] += entries meeting child o. Child o takes the upper half along axis k
    when bit k of o is set; cells[0] is the lower corner child, cells[7] the upper one."""
    lo, hi = faces.lo, faces.hi
    for j in range(s, e):
        u = pool[j]
        m = 0xFF  # children o with bit k of o set take the upper half along axis k
        straddles = False
        for k in range(3):
            low = lo[u, k] <= cells[0, 1, k] and hi[u, k] >= cells[0, 0, k]
            high = hi[u, k] >= cells[7, 0, k] and lo[u, k] <= cells[7, 1, k]
            m &= (LOWER_HALF[k] if low else 0) | (~LOWER_HALF[k] & 0xFF if high else 0)
            straddles = straddles or (low and high)
        if m and straddles and exact:  # the box reaches across a split plane: ask the triangle
            for o in range(8):
                if (m >> o) & 1 and not overlap_triangle_box(faces.T, u, cells, o):
                    m &= ~(1 << o)
        for o in range(8):
            count[o] += (m >> o) & 1
        mask[j] = m


@njit(cache=True)
def _scatter(pool, mask, s, e, at):
    """Copy each entry pool[j], j in s..e, to the lists of the children its mask[j] names:
    child o's list is filled from at[o] on (advanced; -1: child not kept). One pass."""
    for j in range(s, e):
        m = mask[j]
        for o in range(8):
            if (m >> o) & 1 and at[o] >= 0:
                pool[at[o]] = pool[j]
                at[o] += 1


@njit(cache=True)
def _hit(TA, u, TB, TB1, v, swept):
    if swept:
        return swept_hits(TA[u], TB[v], TB1[v])
    return intersect_triangle_triangle(TA[u], TB[v])



@njit(cache=True)
def _copy_box(src, i, dst, j):
    """dst[j] = src[i] for (m, 2, 3) box arrays."""
    for c in range(2):
        for k in range(3):
            dst[j, c, k] = src[i, c, k]


# A face octree's depth-first stack (_octree_pairs). Per pending cell: its box (size, 2, 3), depth
# and where its lists of A's and B's entries end in pool_a, pool_b (a cell's lists start where the
# previous cell's end, the bottom cell's at 0), all int64; mask_a, mask_b: the children each entry
# of the cell being split meets.
OctreeStack = namedtuple("OctreeStack", "box depth a_end b_end pool_a pool_b mask_a mask_b")
# Scratch of one split: the children cells (8, 2, 3); per child (8,) int64, the entries of A and B
# meeting it, the order children are stacked in, where their lists start in the pools.
SplitScratch = namedtuple("SplitScratch", "cells count_a count_b order at_a at_b")


@njit(cache=True)
def _octree_pairs(A, idx_a, B, idx_b, n_keys, region, pad, limits):
    """Steps 3-4 for one pair over A's entries idx_a (rows of FaceSet A) and B's idx_b (of B):
    keys u * n_keys + v of (A's entry u, B's entry v), sorted: the candidates (limits.mode
    CANDIDATES), the intersecting ones (ALL_HITS), or the first one found (FIRST_HIT, at most
    one key). n_keys: more than any B entry.

    Depth first; a stack entry is a cell (box, depth) with its lists of A's and B's entries held
    in pools in stack order (OctreeStack). A leaf popped off the top gives its face pairs
    (_leaf_keys); any other cell's children's lists are built above its own and then moved down
    over them (_split), so the pools hold only pending cells' lists (at most 8 per level).
    """
    st = _octree_stack(idx_a, idx_b, region, limits.max_depth)
    scratch = SplitScratch(np.empty((8, 2, 3)), np.zeros(8, np.int64), np.zeros(8, np.int64), np.empty(8, np.int64),
                           np.empty(8, np.int64), np.empty(8, np.int64))
    keys = np.empty(max(16, len(idx_a) + len(idx_b)), np.int64)
    nk, top = np.int64(0), 1  # typed, not a literal: one compilation of _leaf_keys
    while top > 0:
        top -= 1
        a0 = st.a_end[top - 1] if top > 0 else 0
        b0 = st.b_end[top - 1] if top > 0 else 0
        span = (a0, st.a_end[top], b0, st.b_end[top])  # the cell's lists: pool_a[a0:a1], pool_b[b0:b1]
        if _is_leaf(st.depth[top], span, limits):
            keys, nk, found = _leaf_keys(st, span, A, B, n_keys, limits, keys, nk)
            if found:
                return keys[:1]
        else:
            top = _split(st, top, span, A, B, pad, limits.swept, scratch)
    if limits.mode == FIRST_HIT:
        return keys[:0]
    return _distinct_keys(keys, nk, n_keys, (idx_a.max() + 1) * n_keys, A, B, limits)


@njit(cache=True)
def _octree_stack(idx_a, idx_b, region, max_depth):
    """The OctreeStack of _octree_pairs holding the root cell: `region` (1, 2, 3) with every
    entry idx_a, idx_b. Sized for 8 cells pending per level below the root."""
    na, nb = len(idx_a), len(idx_b)
    size = 8 * max_depth + 2
    st = OctreeStack(np.empty((size, 2, 3)), np.empty(size, np.int64), np.empty(size, np.int64),
                     np.empty(size, np.int64), np.empty(size * na, np.int64), np.empty(size * nb, np.int64),
                     np.empty(size * na, np.int64), np.empty(size * nb, np.int64))
    for i in range(na):
        st.pool_a[i] = idx_a[i]
    for j in range(nb):
        st.pool_b[j] = idx_b[j]
    _copy_box(region, 0, st.box, 0)
    st.depth[0], st.a_end[0], st.b_end[0] = 0, na, nb
    return st


@njit(cache=True)
def _is_leaf(depth, span, limits):
    """A cell at `depth` holding entries span (a0, a1, b0, b1) is not split: the depth limit, few
    face pairs, or few faces of one mesh (THIN)."""
    a0, a1, b0, b1 = span
    return depth == limits.max_depth or (a1 - a0) * (b1 - b0) <= limits.leaf_pairs or min(a1 - a0, b1 - b0) <= THIN


@njit(cache=True)
def _boxes_meet(A, u, B, v):
    """Entry u's box of FaceSet A and entry v's of B overlap (closed boxes)."""
    return (A.lo[u, 0] <= B.hi[v, 0] and B.lo[v, 0] <= A.hi[u, 0] and A.lo[u, 1] <= B.hi[v, 1]
            and B.lo[v, 1] <= A.hi[u, 1] and A.lo[u, 2] <= B.hi[v, 2] and B.lo[v, 2] <= A.hi[u, 2])


@njit(cache=True)
def _leaf_keys(st, span, A, B, n_keys, limits, keys, nk):
    """A leaf cell's face pairs whose boxes overlap (A's entries pool_a[a0:a1] x B's pool_b[b0:b1],
    span = (a0, a1, b0, b1)), as keys u * n_keys + v appended to keys from nk (keys grown to hold
    every pair of the cell); with FIRST_HIT none is appended and the first pair whose triangles
    meet goes to keys[0]. Returns (keys, nk, whether that first hit was found)."""
    a0, a1, b0, b1 = span
    if nk + (a1 - a0) * (b1 - b0) > len(keys):
        keys = grow(keys, nk + (a1 - a0) * (b1 - b0))
    for i in range(a0, a1):
        for j in range(b0, b1):
            u, v = st.pool_a[i], st.pool_b[j]
            if not _boxes_meet(A, u, B, v):
                continue
            if limits.mode == FIRST_HIT:
                if _hit(A.T, u, B.T, B.T1, v, limits.swept):
                    keys[0] = u * n_keys + v
                    return keys, nk, True
            else:
                keys[nk] = u * n_keys + v
                nk += 1
    return keys, nk, False


@njit(cache=True)
def _split(st, top, span, A, B, pad, swept, scratch):
    """Replace cell `top` of the stack (lists span = (a0, a1, b0, b1)) by its children holding
    entries of both meshes: route each entry to the children its box meets (its triangle too,
    where the box straddles a split plane; B's swept faces by box only), stack the children
    (_stack_children) and move their lists down over the parent's. Returns the new stack height."""
    a0, a1, b0, b1 = span
    cells, count_a, count_b = scratch.cells, scratch.count_a, scratch.count_b
    _children(st.box, top, pad, cells)
    for o in range(8):
        count_a[o] = count_b[o] = 0
    _route(st.pool_a, a0, a1, A, True, cells, st.mask_a, count_a)
    _route(st.pool_b, b0, b1, B, not swept, cells, st.mask_b, count_b)
    ta, tb, kids = _stack_children(st, top, span, scratch)
    _scatter(st.pool_a, st.mask_a, a0, a1, scratch.at_a)
    _scatter(st.pool_b, st.mask_b, b0, b1, scratch.at_b)
    _shift_down(st.pool_a, a1, ta, a1 - a0)
    _shift_down(st.pool_b, b1, tb, b1 - b0)
    return kids


@njit(cache=True)
def _stack_children(st, top, span, scratch):
    """Stack, from slot `top` (the parent's, popped), the children of cell `top` that hold entries
    of both meshes (counts in scratch), and set where each child's lists are built above the
    parent's (scratch.at_a, at_b; -1: child not kept). Returns (end of the children's lists in
    pool_a, in pool_b, the new stack height)."""
    a0, a1, b0, b1 = span
    count_a, count_b, at_a, at_b = scratch.count_a, scratch.count_b, scratch.at_a, scratch.at_b
    d = st.depth[top]  # read before the first child overwrites it
    ta, tb, kids = a1, b1, top
    # the child with the fewest face pairs goes on top, searched first for a first contact: in
    # deep overlaps most cells hold a hit, and a sparse one is a leaf soonest (measured: 10-15%
    # faster than the densest first on deep poses, the same on near-touching ones)
    for o in _order_by_pairs(count_a, count_b, scratch.order):
        at_a[o] = at_b[o] = -1
        if count_a[o] == 0 or count_b[o] == 0:
            continue
        at_a[o], at_b[o] = ta, tb
        ta, tb = ta + count_a[o], tb + count_b[o]
        _copy_box(scratch.cells, o, st.box, kids)
        st.depth[kids] = d + 1
        st.a_end[kids], st.b_end[kids] = ta - (a1 - a0), tb - (b1 - b0)  # after the move down
        kids += 1
    return ta, tb, kids


@njit(cache=True)
def _shift_down(pool, s, e, by):
    """pool[s - by:e - by] = pool[s:e], front to back (the ranges may overlap)."""
    for j in range(s, e):
        pool[j - by] = pool[j]


@njit(cache=True)
def _distinct_keys(keys, nk, n_keys, limit, A, B, limits):
    """keys[:nk] (all < limit) sorted, each once; for ALL_HITS only those whose triangles meet."""
    out = _sorted_keys(keys, nk, n_keys, limit)
    m = 0
    for i in range(nk):
        if (i == 0 or out[i] != out[i - 1]) and (limits.mode == CANDIDATES or _hit(A.T, out[i] // n_keys, B.T, B.T1,
                                                                                   out[i] % n_keys, limits.swept)):
            out[m] = out[i]
            m += 1
    return out[:m]


@njit(cache=True)
def _order_by_pairs(count_a, count_b, order):
    """order (8,) = the children by count_a * count_b descending (insertion sort: np.argsort
    would cost seconds of compilation for 8 numbers)."""
    for o in range(8):
        j = o
        while j > 0 and count_a[order[j - 1]] * count_b[order[j - 1]] < count_a[o] * count_b[o]:
            order[j] = order[j - 1]
            j -= 1
        order[j] = o
    return order


@njit(cache=True)
def _counting_pass(src, n, digit, base, dst):
    """dst[:n] = src[:n] stably sorted by digit(key) = (key // digit) % base."""
    count = np.zeros(base + 1, np.int64)
    for i in range(n):
        count[(src[i] // digit) % base + 1] += 1
    for d in range(base):
        count[d + 1] += count[d]
    for i in range(n):
        d = (src[i] // digit) % base
        dst[count[d]] = src[i]
        count[d] += 1


@njit(cache=True)
def _sorted_keys(keys, n, nb, limit):
    """keys[:n] (u * nb + v, all < limit) sorted: two stable counting passes, by v then by u
    (linear in n + na + nb; np.sort would cost seconds of compilation)."""
    tmp, out = np.empty(n, np.int64), np.empty(n, np.int64)
    _counting_pass(keys, n, 1, nb, tmp)
    _counting_pass(tmp, n, nb, max(limit // nb, 1), out)
    return out


# face_octree's scratch, sized for the largest model: B's vertices in A's frame at the start and
# end poses XB, XB1 (V, 3) float64; outcodes (V,) int64 of A's vertices, B's and B's at the end; the
# selected faces A, B (FaceSets of F rows); the boxes (2, 2, 3) and region (1, 2, 3) of steps 0-1;
# none, an empty int64 array: the answer of a pair without face pairs.
PairScratch = namedtuple("PairScratch", "XB XB1 codes_a codes_b codes_b1 A B boxes region none")


@njit(cache=True)
def face_octree(V, F, voff, foff, ma, mb, R, t, R1, t1, swept, max_depth, leaf_pairs, mode):
    """Steps 1-4 for the k pairs (see the module doc). R1, t1: B's end pose in A's frame (read
    when `swept`). mode: CANDIDATES, ALL_HITS or FIRST_HIT. Returns CSR (ptr (k+1,), fa (P,),
    fb (P,)) int64: pair i's face pairs (local to each model), sorted by (fa, fb), each once."""
    mesh, poses, limits = Meshes(V, F, voff, foff), Poses(R, t, R1, t1), Limits(swept, max_depth, leaf_pairs, mode)
    work = _pair_scratch(voff, foff)
    model_box = _model_boxes(V, voff, ma, mb)
    k = len(ma)
    ptr = np.zeros(k + 1, np.int64)
    fa, fb = np.empty(64, np.int64), np.empty(64, np.int64)
    n = 0
    for r in range(k):
        keys, sel_a, sel_b = _pair_keys(mesh, poses, r, ma[r], mb[r], model_box, work, limits)
        if n + len(keys) > len(fa):
            fa, fb = grow(fa, n + len(keys)), grow(fb, n + len(keys))
        nk = len(sel_b)
        for i in range(len(keys)):
            fa[n + i] = sel_a[keys[i] // nk]
            fb[n + i] = sel_b[keys[i] % nk]
        n += len(keys)
        ptr[r + 1] = n
    return ptr, fa[:n].copy(), fb[:n].copy()


@njit(cache=True)
def _pair_scratch(voff, foff):
    """face_octree's PairScratch for the models of packed offsets voff, foff."""
    most_v, most_f = 1, 1
    for m in range(len(voff) - 1):
        most_v = max(most_v, voff[m + 1] - voff[m])
        most_f = max(most_f, foff[m + 1] - foff[m])
    TA = np.empty((most_f, 3, 3))
    A = FaceSet(TA, TA, np.empty((most_f, 3)), np.empty((most_f, 3)))
    B = FaceSet(np.empty((most_f, 3, 3)), np.empty((most_f, 3, 3)), np.empty((most_f, 3)), np.empty((most_f, 3)))
    return PairScratch(np.empty((most_v, 3)), np.empty((most_v, 3)), np.empty(most_v, np.int64),
                       np.empty(most_v, np.int64), np.empty(most_v, np.int64), A, B, np.empty((2, 2, 3)),
                       np.empty((1, 2, 3)), np.empty(0, np.int64))


@njit(cache=True)
def _pair_keys(mesh, poses, r, a, b, model_box, work, limits):
    """Steps 0-4 for pair r (model a of A, b of B): (keys, sel_a, sel_b), the keys of
    _octree_pairs over A's selected faces sel_a and B's sel_b (local face ids, rows of work.A,
    work.B); all three empty when the pair has no face pair."""
    V, F, voff, foff = mesh
    swept, none, region = limits.swept, work.none, work.region
    if not swept and _boxes_apart(model_box, a, b, poses.R, poses.t, r):
        return none, none, none
    pad = _region(mesh, poses, r, a, b, model_box, work, swept)
    if pad < 0.0:
        return none, none, none
    # B's faces meeting the region first: their boxes shrink it before A's faces are looked at
    nvb = voff[b + 1] - voff[b]
    _outcodes(work.XB, 0, nvb, region, work.codes_b)
    if swept:
        _outcodes(work.XB1, 0, nvb, region, work.codes_b1)
    sel_b = _select(work.XB, 0, work.XB1, F, foff[b], foff[b + 1] - foff[b], work.codes_b, work.codes_b1, swept,
                    work.B)
    idx_b = np.arange(len(sel_b))
    if len(sel_b) == 0 or _shrink(region, work.B.lo, work.B.hi, idx_b, len(sel_b)) == EMPTY:
        return none, none, none
    _outcodes(V, voff[a], voff[a + 1], region, work.codes_a)
    sel_a = _select(V, voff[a], V, F, foff[a], foff[a + 1] - foff[a], work.codes_a, work.codes_a, False, work.A)
    idx_a = np.arange(len(sel_a))
    # then each mesh's faces bound the region tighter (deep poses: much tighter), in turn
    na, nb = _narrow(region, work.A, idx_a, work.B, idx_b, pad) if len(sel_a) else (0, 0)
    if na == 0 or nb == 0:
        return none, none, none
    keys = _octree_pairs(work.A, idx_a[:na], work.B, idx_b[:nb], len(sel_b), region, pad, limits)
    return keys, sel_a, sel_b


@njit(cache=True)
def _region(mesh, poses, r, a, b, model_box, work, swept):
    """Step 1 for pair r: B's vertices moved into A's frame (work.XB; work.XB1 at the end pose when
    `swept`) and work.region = A's box & their box, padded (_overlap). Returns the pad [m], or -1
    when the boxes miss."""
    V, voff = mesh.V, mesh.voff
    _copy_box(model_box, a, work.boxes, 0)
    _move(V, voff[b], voff[b + 1], poses.R, poses.t, r, work.XB, work.boxes, False)
    if swept:
        _move(V, voff[b], voff[b + 1], poses.R1, poses.t1, r, work.XB1, work.boxes, True)
    return _overlap(work.boxes, work.region)


@njit(cache=True)
def _candidate_hits(mesh, poses, r, a, b, fa, fb, swept, tri, tri1):
    """Exact test of candidate (face fa of model a, face fb of model b) of pair r; scratch
    tri, tri1 (2, 3, 3): A's triangle and B's at the start, B's at the end (tri1[1]), A's frame."""
    V, F, voff, foff = mesh
    R, t, R1, t1 = poses
    for j in range(3):
        va, vb = voff[a] + F[foff[a] + fa, j], voff[b] + F[foff[b] + fb, j]
        for k in range(3):
            tri[0, j, k] = V[va, k]
            tri[1, j, k] = R[r, k, 0] * V[vb, 0] + R[r, k, 1] * V[vb, 1] + R[r, k, 2] * V[vb, 2] + t[r, k]
            tri1[1, j, k] = R1[r, k, 0] * V[vb, 0] + R1[r, k, 1] * V[vb, 1] + R1[r, k, 2] * V[vb, 2] + t1[r, k]
    return _hit(tri, 0, tri, tri1, 1, swept)


@njit(cache=True, parallel=True)
def test_candidates_parallel(V, F, voff, foff, ma, mb, R, t, R1, t1, swept, row, ca, cb):
    """Step 4, SPMD: candidate i (of pair row[i]) on its own prange iteration. Returns hit (P,)
    bool: True where the candidate's triangles (swept: triangle and hull) intersect."""
    mesh, poses = Meshes(V, F, voff, foff), Poses(R, t, R1, t1)
    hit = np.zeros(len(ca), np.bool_)
    for i in prange(len(ca)):
        tri, tri1 = np.empty((2, 3, 3)), np.empty((2, 3, 3))
        r = row[i]
        hit[i] = _candidate_hits(mesh, poses, r, ma[r], mb[r], ca[i], cb[i], swept, tri, tri1)
    return hit
