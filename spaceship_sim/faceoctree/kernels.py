"""Face-octree kernels (numba): Smith & Kitamura's four steps for a batch of ship pairs.

Meshes are packed (detector.PackedMeshes): V (N, 3) float64 vertices of every model in its body
frame [m], F (M, 3) int64 faces (vertex ids local to their model), model m's vertices
V[voff[m]:voff[m+1]] and faces F[foff[m]:foff[m+1]]. Pair r (detector.PairPoses) has the relative
pose of ship B in ship A's body frame, R[r] (3, 3) and t[r] (3,): x_A = R[r] @ x_B + t[r].
Everything runs in A's body frame.

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

from typing import NamedTuple

import numpy as np
from numba import njit, prange

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
# The kernels take tuples of arrays (below, and detector's); a helper called with them pays reference
# counting on each array, so the per-pair steps are inlined into face_octree or, where they allocate
# nothing, compiled without it (_nrt=False), and the octree's loop works on arrays unpacked once
# (measured, called plainly: 3-6% on deep first contacts).


class Placed(NamedTuple):
    """One mesh's vertices in A's frame, rows v0..v1 of X (B's: moved there, from row 0)."""

    X: np.ndarray       # (n, 3) float64 [m], at B's start pose
    X1: np.ndarray      # (n, 3) float64 [m], at B's end pose when swept (A's: X itself)
    codes: np.ndarray   # (n,) int64, outcodes of X against the region (row v0 at 0)
    codes1: np.ndarray  # (n,) int64, outcodes of X1


class Faces(NamedTuple):
    """One mesh's faces meeting a pair's region, in A's frame: row i is the i-th face selected."""

    T: np.ndarray   # (n, 3, 3) float64 triangles [m], at B's start pose
    T1: np.ndarray  # (n, 3, 3) float64, at B's end pose when swept (A's: T itself)
    lo: np.ndarray  # (n, 3) float64 [m], each triangle's box (swept: over both poses)
    hi: np.ndarray  # (n, 3) float64 [m]


class Scratch(NamedTuple):
    """face_octree's per-pair work arrays, sized for the largest model, made once per call."""

    placed_b: Placed     # B's vertices moved into A's frame
    codes_a: np.ndarray  # A's vertices' outcodes
    A: Faces
    B: Faces
    boxes: np.ndarray    # (2, 2, 3): A's box and B's in A's frame
    region: np.ndarray   # (1, 2, 3): the overlap region
    none: np.ndarray     # (0,) int64: the faces and keys of a pair done early


class Lists(NamedTuple):
    """One mesh's entries (rows of its Faces) in the octree's pending cells: their lists, held in
    `pool` in stack order (a cell's list ends at end[cell] and starts where the previous cell's
    ends), and the split of the cell being split."""

    pool: np.ndarray   # entries of the pending cells' lists
    end: np.ndarray    # (stack size,) where each pending cell's list ends in pool
    mask: np.ndarray   # children of the cell being split that each entry of its list meets (8 bits)
    count: np.ndarray  # (8,) entries meeting each child
    at: np.ndarray     # (8,) where each child's list is built in pool (-1: child not kept)


class Stack(NamedTuple):
    """The octree's pending cells, depth first, and the children of the cell being split."""

    box: np.ndarray    # (stack size, 2, 3) each pending cell's box [m]
    depth: np.ndarray  # (stack size,) int64, its level below the region
    cells: np.ndarray  # (8, 2, 3) the children's boxes (child o: upper half along axis k when bit k is set)
    order: np.ndarray  # (8,) int64, the children in the order they are pushed


@njit(cache=True)
def face_octree(meshes, poses, swept, settings):
    """Steps 1-4 for the k pairs (see the module doc). meshes: detector.PackedMeshes; poses:
    detector.PairPoses (R1, t1: B's end pose in A's frame, read when `swept`); settings:
    detector.OctreeSettings (mode: CANDIDATES, ALL_HITS or FIRST_HIT). Returns CSR (ptr (k+1,),
    fa (P,), fb (P,)) int64: pair i's face pairs (local to each model), sorted by (fa, fb), each once."""
    ma, mb, R, t = poses.ma, poses.mb, poses.R, poses.t
    k = len(ma)
    ptr = np.zeros(k + 1, np.int64)
    fa, fb = np.empty(64, np.int64), np.empty(64, np.int64)
    n = 0
    scratch = _scratch(meshes.voff, meshes.foff)
    model_box = _model_boxes(meshes.V, meshes.voff, ma, mb)
    for r in range(k):
        ptr[r + 1] = n
        if not swept and _boxes_apart(model_box, ma[r], mb[r], R, t, r):
            continue
        sel_a, sel_b, keys = _pair_keys(meshes, poses, r, swept, settings, model_box, scratch)
        if n + len(keys) > len(fa):
            fa, fb = _grow(fa, n + len(keys)), _grow(fb, n + len(keys))
        for i in range(len(keys)):
            fa[n + i] = sel_a[keys[i] // len(sel_b)]
            fb[n + i] = sel_b[keys[i] % len(sel_b)]
        n += len(keys)
        ptr[r + 1] = n
    return ptr, fa[:n].copy(), fb[:n].copy()


@njit(cache=True)
def _scratch(voff, foff):
    """face_octree's Scratch, sized for the largest model."""
    most_v, most_f = 1, 1
    for m in range(len(voff) - 1):
        most_v = max(most_v, voff[m + 1] - voff[m])
        most_f = max(most_f, foff[m + 1] - foff[m])
    placed_b = Placed(np.empty((most_v, 3)), np.empty((most_v, 3)), np.empty(most_v, np.int64),
                      np.empty(most_v, np.int64))
    TA = np.empty((most_f, 3, 3))
    A = Faces(TA, TA, np.empty((most_f, 3)), np.empty((most_f, 3)))
    B = Faces(np.empty((most_f, 3, 3)), np.empty((most_f, 3, 3)), np.empty((most_f, 3)), np.empty((most_f, 3)))
    return Scratch(placed_b, np.empty(most_v, np.int64), A, B, np.empty((2, 2, 3)), np.empty((1, 2, 3)),
                   np.zeros(0, np.int64))


@njit(cache=True, inline="always")
def _pair_keys(meshes, poses, r, swept, settings, model_box, scratch):
    """Steps 1-4 for pair r: (sel_a, sel_b, keys), keys u * len(sel_b) + v naming the face pairs
    (sel_a[u] of A, sel_b[v] of B; local face ids) that settings.mode asks for; all empty when
    the pair is done before the octree."""
    V, F, voff, foff = meshes
    a, b = poses.ma[r], poses.mb[r]
    A, B, region, none = scratch.A, scratch.B, scratch.region, scratch.none
    pad = _region(meshes, poses, r, swept, model_box, scratch.placed_b, scratch.boxes, region)
    if pad < 0.0:
        return none, none, none
    # B's faces meeting the region first: their boxes shrink it before A's faces are looked at
    sel_b = _faces_in_region(F, foff[b], foff[b + 1], scratch.placed_b, 0, voff[b + 1] - voff[b], swept, region, B)
    idx_b = np.arange(len(sel_b))
    if len(sel_b) == 0 or _shrink(region, B.lo, B.hi, idx_b, len(sel_b)) == EMPTY:
        return none, none, none
    placed_a = Placed(V, V, scratch.codes_a, scratch.codes_a)
    sel_a = _faces_in_region(F, foff[a], foff[a + 1], placed_a, voff[a], voff[a + 1], False, region, A)
    idx_a = np.arange(len(sel_a))
    # then each mesh's faces bound the region tighter (deep poses: much tighter), in turn
    na, nb = _narrow(region, A, idx_a, B, idx_b, pad) if len(sel_a) else (0, 0)
    if not (na and nb):
        return none, none, none
    return sel_a, sel_b, _octree_pairs(A, idx_a[:na], B, idx_b[:nb], len(sel_b), swept, region, pad, settings)


@njit(cache=True, _nrt=False)
def _region(meshes, poses, r, swept, model_box, placed_b, boxes, region):
    """Step 1 for pair r: B's vertices moved into A's frame (placed_b; both poses when `swept`),
    boxes (2, 2, 3) = A's box and theirs, region = the boxes' overlap. Returns its pad [m], or -1
    when the boxes do not meet."""
    V, voff = meshes.V, meshes.voff
    a, b = poses.ma[r], poses.mb[r]
    _copy_box(model_box, a, boxes, 0)
    _move(V, voff[b], voff[b + 1], poses.R, poses.t, r, placed_b.X, boxes, False)
    if swept:
        _move(V, voff[b], voff[b + 1], poses.R1, poses.t1, r, placed_b.X1, boxes, True)
    return _overlap(boxes, region)


@njit(cache=True)
def _move(V, v0, v1, R, t, r, out, box, grow):
    """out[:v1 - v0] = R[r] @ V[i] + t[r] for i in v0..v1: B's vertices in A's frame; box[1]
    (2, 3) = their box (or grown by it when `grow`)."""
    for k in range(3):
        r0, r1, r2, tk = R[r, k, 0], R[r, k, 1], R[r, k, 2], t[r, k]
        lo, hi = (box[1, 0, k], box[1, 1, k]) if grow else (np.inf, -np.inf)
        for i in range(v0, v1):
            x = r0 * V[i, 0] + r1 * V[i, 1] + r2 * V[i, 2] + tk
            out[i - v0, k] = x
            lo, hi = min(lo, x), max(hi, x)
        box[1, 0, k], box[1, 1, k] = lo, hi


@njit(cache=True)
def _bounds(X, s, e, box, b, grow):
    """box[b] (2, 3) = box of points X[s:e] (or of them and box[b] when `grow`)."""
    for k in range(3):
        lo, hi = (box[b, 0, k], box[b, 1, k]) if grow else (np.inf, -np.inf)
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


@njit(cache=True, inline="always")
def _faces_in_region(F, f0, f1, placed, v0, v1, swept, region, faces):
    """Step 2 for one mesh: its faces F[f0:f1] (local vertex ids; vertices placed.X[v0:v1], and
    placed.X1 when `swept`) whose boxes meet the region, by the vertices' outcodes (into
    placed.codes, codes1). Their triangles go to faces.T[:n] (T1[:n]), boxes to lo, hi (over both
    positions); returns their local face ids (n,). The exact test comes later, on the shrunk region."""
    X, X1, codes, codes1 = placed
    T, T1, lo, hi = faces
    _outcodes(X, v0, v1, region, codes)
    if swept:
        _outcodes(X1, v0, v1, region, codes1)
    sel = np.empty(f1 - f0, np.int64)
    n = 0
    for f in range(f1 - f0):
        g = f0 + f
        out_all = codes[F[g, 0]] & codes[F[g, 1]] & codes[F[g, 2]]
        if swept:
            out_all &= codes1[F[g, 0]] & codes1[F[g, 1]] & codes1[F[g, 2]]
        if out_all:  # all beyond one side: the boxes miss
            continue
        _gather(X, v0, F, g, T, n, lo, hi, False)
        if swept:
            _gather(X1, v0, F, g, T1, n, lo, hi, True)
        sel[n] = f
        n += 1
    return sel[:n]


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
def _gather(X, x0, F, f, T, o, lo, hi, grow):
    """T[o] (3, 3) = triangle F[f] of vertices X[x0:] (local ids); lo[o], hi[o] its box (or
    grown by it when `grow`: the swept end position)."""
    i0, i1, i2 = x0 + F[f, 0], x0 + F[f, 1], x0 + F[f, 2]
    for k in range(3):
        x0, x1, x2 = X[i0, k], X[i1, k], X[i2, k]
        T[o, 0, k], T[o, 1, k], T[o, 2, k] = x0, x1, x2
        a, b = min(x0, x1, x2), max(x0, x1, x2)
        lo[o, k], hi[o, k] = (min(a, lo[o, k]), max(b, hi[o, k])) if grow else (a, b)


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


@njit(cache=True, _nrt=False)
def _narrow(region, A, idx_a, B, idx_b, pad):
    """Between steps 2 and 3, on the entries idx_a (rows of A's Faces) and idx_b (B's):
    the region shrinks to the box of each mesh's entries meeting it and the other mesh's
    entries are re-filtered on the shrunk region, in turn, until nothing changes (box tests
    only: an exact triangle-box pass over all entries here costs more than it saves the
    octree); then the region is padded by `pad` for the octree's exact tests. Returns (na, nb):
    idx_a[:na], idx_b[:nb] are kept (compacted in place, in order); (0, 0) when the region
    became empty.

    Invariant: a point where a face of A meets a face of B is in the region and both faces'
    boxes, so the faces survive every box filter and the point every shrink."""
    loA, hiA, loB, hiB = A.lo, A.hi, B.lo, B.hi
    na, nb = len(idx_a), len(idx_b)
    for _ in range(MAX_SHRINKS):
        by_a = _shrink(region, loA, hiA, idx_a, na)
        if by_a == EMPTY:
            return 0, 0
        if by_a == SHRUNK:
            nb = _refilter(idx_b, nb, loB, hiB, region)
            if nb == 0:
                return 0, 0
        by_b = _shrink(region, loB, hiB, idx_b, nb)
        if by_b == EMPTY:
            return 0, 0
        if by_b == UNCHANGED and by_a == UNCHANGED:
            break
        if by_b == SHRUNK:
            na = _refilter(idx_a, na, loA, hiA, region)
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
def _octree_pairs(A, idx_a, B, idx_b, n_keys, swept, region, pad, settings):
    """Steps 3-4 for one pair over A's entries idx_a (rows of A's Faces) and B's idx_b: keys
    u * n_keys + v of (A's entry u, B's entry v), sorted: the candidates (mode CANDIDATES), the
    intersecting ones (ALL_HITS), or the first one found (FIRST_HIT, at most one key). n_keys:
    more than any B entry; settings: detector.OctreeSettings.

    Depth first; a stack entry is a cell (box, depth) with its lists of A's and B's entries
    (Lists). Popping the top cell, its children's lists are built above its own and then moved
    down over them, so the pools hold only pending cells' lists (at most 8 per level).
    """
    max_depth, leaf_pairs, mode = settings
    size = 8 * max_depth + 2
    box, depth, cells, order = _stack(region, size)
    pool_a, end_a, mask_a, count_a, at_a = _lists(idx_a, size)
    pool_b, end_b, mask_b, count_b, at_b = _lists(idx_b, size)
    TA, loA, hiA = A.T, A.lo, A.hi
    TB, TB1, loB, hiB = B.T, B.T1, B.lo, B.hi
    keys = np.empty(max(16, len(idx_a) + len(idx_b)), np.int64)
    nk, top = 0, 1
    while top > 0:
        top -= 1
        a0, a1 = _span(end_a, top)
        b0, b1 = _span(end_b, top)
        if depth[top] == max_depth or (a1 - a0) * (b1 - b0) <= leaf_pairs or min(a1 - a0, b1 - b0) <= THIN:
            if nk + (a1 - a0) * (b1 - b0) > len(keys):
                keys = _grow(keys, nk + (a1 - a0) * (b1 - b0))
            for i in range(a0, a1):
                for j in range(b0, b1):
                    u, v = pool_a[i], pool_b[j]
                    if not (loA[u, 0] <= hiB[v, 0] and loB[v, 0] <= hiA[u, 0] and loA[u, 1] <= hiB[v, 1]
                            and loB[v, 1] <= hiA[u, 1] and loA[u, 2] <= hiB[v, 2] and loB[v, 2] <= hiA[u, 2]):
                        continue
                    if mode == FIRST_HIT:
                        if _hit(TA, u, TB, TB1, v, swept):
                            keys[0] = u * n_keys + v
                            return keys[:1]
                    else:
                        keys[nk] = u * n_keys + v
                        nk += 1
            continue
        _children(box, top, pad, cells)
        _route(pool_a, a0, a1, TA, loA, hiA, True, cells, mask_a, count_a)
        _route(pool_b, b0, b1, TB, loB, hiB, not swept, cells, mask_b, count_b)
        ta, tb, kids, d = a1, b1, top, depth[top]
        # the child with the fewest face pairs goes on top, searched first for a first contact: in
        # deep overlaps most cells hold a hit, and a sparse one is a leaf soonest (measured: 10-15%
        # faster than the densest first on deep poses, the same on near-touching ones)
        for o in _order_by_pairs(count_a, count_b, order):
            at_a[o] = at_b[o] = -1  # where child o's lists start above the parent's (-1: not kept)
            if count_a[o] == 0 or count_b[o] == 0:
                continue
            at_a[o], at_b[o] = ta, tb
            ta, tb = ta + count_a[o], tb + count_b[o]
            _copy_box(cells, o, box, kids)
            depth[kids] = d + 1
            end_a[kids], end_b[kids] = ta - (a1 - a0), tb - (b1 - b0)  # after the move down
            kids += 1
        _settle(pool_a, mask_a, a0, a1, at_a, ta)
        _settle(pool_b, mask_b, b0, b1, at_b, tb)
        top = kids
    if mode == FIRST_HIT:
        return keys[:0]
    return _unique_keys(A, B, keys, nk, n_keys, (idx_a.max() + 1) * n_keys, swept, mode)


@njit(cache=True)
def _lists(idx, size):
    """One mesh's Lists for an octree of `size` stack entries, its entries idx all in the root
    cell's list."""
    n = len(idx)
    pool, end = np.empty(size * n, np.int64), np.empty(size, np.int64)
    for i in range(n):
        pool[i] = idx[i]
    end[0] = n
    return Lists(pool, end, np.empty(size * n, np.int64), np.zeros(8, np.int64), np.empty(8, np.int64))


@njit(cache=True)
def _stack(region, size):
    """The octree's Stack of `size` entries, the region (box 0 of `region`) its root cell."""
    stack = Stack(np.empty((size, 2, 3)), np.empty(size, np.int64), np.empty((8, 2, 3)), np.empty(8, np.int64))
    _copy_box(region, 0, stack.box, 0)
    stack.depth[0] = 0
    return stack


@njit(cache=True, inline="always")
def _span(end, cell):
    """(start, end) of pending cell `cell`'s list in its pool."""
    return end[cell - 1] if cell > 0 else 0, end[cell]


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
def _route(pool, s, e, T, lo, hi, exact, cells, mask, count):
    """For entries pool[s:e]: mask[j] (8 bits) = the children cells (8, 2, 3) of one parent
    entry j meets (box test per axis; the exact test only where its box straddles a split plane
    and `exact`); count[o] = entries meeting child o. Child o takes the upper half along axis k
    when bit k of o is set; cells[0] is the lower corner child, cells[7] the upper one."""
    for o in range(8):
        count[o] = 0
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
                if (m >> o) & 1 and not overlap_triangle_box(T, u, cells, o):
                    m &= ~(1 << o)
        for o in range(8):
            count[o] += (m >> o) & 1
        mask[j] = m


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
def _settle(pool, mask, s, e, at, t):
    """Copy each entry pool[j], j in s..e (a split cell's list), to the lists of the children its
    mask[j] names: child o's list is filled from at[o] on (advanced; -1: child not kept), the
    children's lists ending at t; then move those lists down over the parent's. One pass each."""
    for j in range(s, e):
        m = mask[j]
        for o in range(8):
            if (m >> o) & 1 and at[o] >= 0:
                pool[at[o]] = pool[j]
                at[o] += 1
    for j in range(e, t):
        pool[j - (e - s)] = pool[j]


@njit(cache=True)
def _unique_keys(A, B, keys, nk, n_keys, limit, swept, mode):
    """keys[:nk] (all < limit) sorted, each once: all of them (mode CANDIDATES) or those whose
    triangles intersect (ALL_HITS)."""
    TA, TB, TB1 = A.T, B.T, B.T1
    out = _sorted_keys(keys, nk, n_keys, limit)
    m = 0
    for i in range(nk):
        if (i == 0 or out[i] != out[i - 1]) and (mode == CANDIDATES or _hit(TA, out[i] // n_keys, TB, TB1,
                                                                            out[i] % n_keys, swept)):
            out[m] = out[i]
            m += 1
    return out[:m]


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


@njit(cache=True)
def _hit(TA, u, TB, TB1, v, swept):
    if swept:
        return swept_hits(TA[u], TB[v], TB1[v])
    return intersect_triangle_triangle(TA[u], TB[v])


@njit(cache=True)
def _grow(arr, need):
    out = np.empty(max(need, 2 * len(arr)), arr.dtype)
    for i in range(len(arr)):  # element-wise: a slice copy compiles numba's shape-error messages (seconds)
        out[i] = arr[i]
    return out


@njit(cache=True)
def _copy_box(src, i, dst, j):
    """dst[j] = src[i] for (m, 2, 3) box arrays."""
    for c in range(2):
        for k in range(3):
            dst[j, c, k] = src[i, c, k]


@njit(cache=True, parallel=True)
def test_candidates_parallel(meshes, poses, swept, row, ca, cb):
    """Step 4, SPMD: candidate i (face ca[i] of A, cb[i] of B, of pair row[i]) on its own prange
    iteration (meshes, poses as face_octree's). Returns hit (P,) bool: True where the candidate's
    triangles (swept: triangle and hull) intersect."""
    # the loop body takes arrays from outside, not tuples of them (measured: tuples 7-17% slower)
    V, F, voff, foff = meshes
    ma, mb, R, t, R1, t1 = poses
    hit = np.zeros(len(ca), np.bool_)
    for i in prange(len(ca)):
        tri, tri1 = np.empty((2, 3, 3)), np.empty((2, 3, 3))  # A's and B's at the start; B's at the end
        r = row[i]
        _face(V, F, voff, foff, ma[r], ca[i], tri, 0)
        _face(V, F, voff, foff, mb[r], cb[i], tri1, 0)  # B's in its body frame, then moved
        _move_triangle(tri1, 0, R, t, r, tri, 1)
        _move_triangle(tri1, 0, R1, t1, r, tri1, 1)
        hit[i] = _hit(tri, 0, tri, tri1, 1, swept)
    return hit


@njit(cache=True)
def _face(V, F, voff, foff, m, f, out, o):
    """out[o] (3, 3) = face f (local id) of model m, body frame."""
    for j in range(3):
        v = voff[m] + F[foff[m] + f, j]
        for k in range(3):
            out[o, j, k] = V[v, k]


@njit(cache=True)
def _move_triangle(src, s, R, t, r, out, o):
    """out[o] (3, 3) = triangle src[s] moved by (R[r], t[r])."""
    for j in range(3):
        for k in range(3):
            out[o, j, k] = R[r, k, 0] * src[s, j, 0] + R[r, k, 1] * src[s, j, 1] + R[r, k, 2] * src[s, j, 2] + t[r, k]
