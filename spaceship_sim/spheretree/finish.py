"""Steps every builder shares once it has chosen its spheres level by level.

1. `enforce_coverage` - conservative coverage: the union of each level's spheres contains every
   triangle (checked by subdividing triangles until every piece lies in one sphere; spheres are
   enlarged where a piece is left over). `enforce_chains` - what the refinement's descent needs
   beyond that: every surface point lies in a chain of spheres, root to leaf, each the child of
   the one before (a level's union covering a point is not enough when the spheres covering it
   there are children of parents that do not). Medial spheres need it (measured before: 1-19 of
   ~20,000 surface samples of the lamp, fighter and freighter had no chain); nested octree cells
   give it by construction.
2. `error_bounds` - per sphere a true upper bound on max over the ball of the distance to the ship.
3. witnesses (closest surface point to each centre) and leaf triangle lists.
4. `assemble` - the flat `SphereTree` arrays, level by level, children contiguous.

All coordinates are in the ship's body frame [m].
"""
from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree

from numba import njit, prange

from ..geometry.triangles import closest_points_triangles
from ..geometry.vectors import unit_rows
from ..threads import ThreadChoice
from .geometry import MeshQuery, nearest_on_mesh, triangles_meeting_boxes
from .progress import QUIET, BuildProgress
from .tree import SphereTree

# containment slack, relative to the radius: keeps floating-point rounding from calling a point
# on a sphere's surface uncovered (spheres are grown by the same factor when enlarged)
_REL_SLACK = 1e-9


# ---------------------------------------------------------------- coverage

def triangle_sphere_pairs(tris: np.ndarray, centers: np.ndarray, radii: np.ndarray,
                          slack: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(tri_idx, sphere_idx) int64 arrays of every triangle (m,3,3) touching a sphere (closed balls).

    A box prefilter picks candidates (the triangles' boxes meeting the spheres' boxes, by a box
    tree); the exact test is distance(centre, triangle) <= r (1 + slack). Pairs come sorted by
    triangle, then sphere.
    """
    t, k = triangles_meeting_boxes(tris, centers - radii[:, None], centers + radii[:, None])
    q = closest_points_triangles(centers[k], np.ascontiguousarray(tris[t]))
    ok = np.linalg.norm(q - centers[k], axis=1) <= radii[k] * (1 + slack)
    return t[ok].astype(np.int64), k[ok].astype(np.int64)


@njit(cache=True)
def farthest_corner(pieces, rows, points, cols):
    """(k,) float64: for each pair k the distance from point cols[k] of points (n, 3) to the farthest
    corner of triangle rows[k] of pieces (p, 3, 3) — numpy's norm(pieces[rows] - points[cols][:, None],
    axis=2).max(axis=1) bit for bit (the same sums in the same order), without the (k, 3, 3)
    temporaries."""
    out = np.empty(len(rows))
    for k in range(len(rows)):
        p, c = rows[k], cols[k]
        far = 0.0
        for j in range(3):
            dx = pieces[p, j, 0] - points[c, 0]
            dy = pieces[p, j, 1] - points[c, 1]
            dz = pieces[p, j, 2] - points[c, 2]
            far = max(far, np.sqrt(dx * dx + dy * dy + dz * dz))
        out[k] = far
    return out


def _grow_to(radii, idx, needed):
    """Enlarge radii[idx] to at least needed (vectorised max, duplicates allowed)."""
    np.maximum.at(radii, idx, needed * (1 + 4 * _REL_SLACK))


# pieces (sub-triangles) per round of enforce_coverage and enforce_chains: at least PIECES_MIN, else
# so many per triangle and sphere (the shipped models' medial trees peak at 140,000 coverage pieces,
# 71 per triangle and sphere of the level, and 74,000 chain pieces, 36 per triangle and sphere of
# the tree). Past it (large flat triangles split along every seam between spheres), every piece left
# is held at once: spheres grow a little more, the work stays in proportion.
PIECES_MIN, COVERAGE_PIECES_PER_ITEM, CHAIN_PIECES_PER_ITEM = 20_000, 256, 64


def _piece_budget(tris: np.ndarray, radii: np.ndarray, per_item: int) -> int:
    return max(PIECES_MIN, per_item * (len(tris) + len(radii)))


def enforce_coverage(tris: np.ndarray, centers: np.ndarray, radii: np.ndarray,
                     min_piece: float, max_rounds: int = 12) -> tuple[np.ndarray, int]:
    """Make the union of spheres contain every triangle; return (radii, number enlarged).

    tris (m,3,3); centers (n,3); radii (n,) (copied, not modified in place); min_piece [m]: pieces
    smaller than this that still lie in no single sphere (or any piece left once they outnumber
    their `_piece_budget`) make the cheapest sphere grow to hold them.
    A piece (sub-triangle) lies in a ball iff its three corners do (balls are convex), so when the
    loop ends every piece, hence every triangle, is covered.
    """
    radii = radii.astype(np.float64).copy()
    before = radii.copy()
    kd = cKDTree(centers)
    pieces = tris.copy()
    pt, ps = triangle_sphere_pairs(tris, centers, radii)  # candidate spheres of each piece
    budget = _piece_budget(tris, radii, COVERAGE_PIECES_PER_ITEM)
    for rnd in range(max_rounds + 1):
        if len(pieces) == 0:
            break
        d = farthest_corner(pieces, pt, centers, ps)
        inside = d <= radii[ps] * (1 + _REL_SLACK)
        covered = np.zeros(len(pieces), bool)
        covered[pt[inside]] = True
        has_cand = np.zeros(len(pieces), bool)
        has_cand[pt] = True
        diam = np.max(np.linalg.norm(pieces - pieces[:, [1, 2, 0]], axis=2), axis=1)
        final = ~covered & ((diam < min_piece) | ~has_cand | (rnd == max_rounds) | (len(pieces) > budget))
        if final.any():
            _grow_cheapest(pieces[final], centers, radii, kd)
        split = ~covered & ~final
        # children of split pieces inherit the parent's candidates that still touch them
        keep = split[pt]
        pieces, pt, ps = _subdivide(pieces, split, pt[keep], ps[keep], centers, radii)
    return radii, int(np.count_nonzero(radii > before))


def _grow_cheapest(pieces: np.ndarray, centers, radii, kd: cKDTree, k: int = 8) -> None:
    """For each piece (p,3,3), enlarge the nearby sphere that needs the least growth to contain it."""
    k = min(k, len(centers))
    _, nb = kd.query(pieces.mean(axis=1), k=k)
    nb = nb.reshape(len(pieces), k)
    far = np.linalg.norm(pieces[:, None, :, :] - centers[nb][:, :, None, :], axis=3).max(axis=2)  # (p,k)
    best = np.argmin(far - radii[nb], axis=1)
    rows = np.arange(len(pieces))
    _grow_to(radii, nb[rows, best], far[rows, best])


def _subdivide(pieces, split, pt, ps, centers, radii):
    """Split the marked pieces into 4 (edge midpoints); remap candidate pairs onto the children."""
    parents = np.flatnonzero(split)
    new_id = np.full(len(pieces), -1)
    new_id[parents] = np.arange(len(parents))
    a, b, c = (pieces[parents, i] for i in range(3))
    ab, bc, ca = (a + b) / 2, (b + c) / 2, (c + a) / 2
    kids = np.stack([np.stack(t, axis=1) for t in ((a, ab, ca), (ab, b, bc), (ca, bc, c), (ab, bc, ca))])
    kids = kids.reshape(4 * len(parents), 3, 3)  # child j of parent i at j * len(parents) + i
    base = new_id[pt]
    kt = (np.arange(4)[:, None] * len(parents) + base[None, :]).ravel()
    ks = np.tile(ps, 4)
    # drop spheres that no longer touch the child's bounding ball
    mid = kids[kt].mean(axis=1)
    rad = np.linalg.norm(kids[kt] - mid[:, None], axis=2).max(axis=1)
    ok = np.linalg.norm(mid - centers[ks], axis=1) <= radii[ks] + rad
    return kids, kt[ok], ks[ok]


def enforce_chains(tris: np.ndarray, centers: np.ndarray, radii: np.ndarray, first_child: np.ndarray,
                   child_count: np.ndarray, depth: int, min_piece: float, max_rounds: int = 12):
    """Make every point of every triangle lie in a chain of spheres from the root down to the
    deepest level, each the child of the one before (a node without children stands in for
    itself below its level); return (radii, number enlarged).

    Each round sends the pieces (sub-triangles) left down from the root, keeping at every level
    the nodes that contain the whole piece and whose parents did. A piece that runs out of such
    nodes is split in four for the next round, which starts again from the root (a smaller piece
    may find chains through other parents); once a piece is smaller than min_piece (or in the
    last round, or once the pieces outnumber the budget), the candidate child needing the least
    growth grows to hold it. The root must
    already contain every triangle (enforce_coverage). tris (m,3,3); centers (n,3); radii (n,)
    (copied); first_child, child_count (n,) in the tree's node order.
    """
    radii = radii.astype(np.float64).copy()
    before = radii.copy()
    pieces = tris.copy()
    budget = _piece_budget(tris, radii, CHAIN_PIECES_PER_ITEM)
    for rnd in range(max_rounds + 1):
        if not len(pieces):
            break
        last = rnd == max_rounds or len(pieces) > budget
        small = (np.max(np.linalg.norm(pieces - pieces[:, [1, 2, 0]], axis=2), axis=1) < min_piece) | last
        lost = np.zeros(len(pieces), bool)
        pt, pn = np.arange(len(pieces)), np.zeros(len(pieces), np.int64)  # (piece, node holding it)
        for _ in range(depth):
            pt, pn = _children_pairs(pt, pn, first_child, child_count)
            far = farthest_corner(pieces, pt, centers, pn)
            inside = far <= radii[pn] * (1 + _REL_SLACK)
            held = np.zeros(len(pieces), bool)
            held[pt[inside]] = True
            grow = ~held[pt] & small[pt]  # candidates of small pieces no child holds
            if grow.any():  # the one needing the least growth holds it
                rows = np.flatnonzero(grow)
                rows = rows[np.lexsort((far[rows] - radii[pn[rows]], pt[rows]))]
                first = rows[np.unique(pt[rows], return_index=True)[1]]
                _grow_to(radii, pn[first], far[first])
                inside[first] = True
            lost[pt[~held[pt] & ~small[pt]]] = True
            pt, pn = pt[inside], pn[inside]
        pieces = _split(pieces[lost])
    return radii, int(np.count_nonzero(radii > before))


def _children_pairs(pt, pn, first_child, child_count):
    """(piece, child) for every (piece, node) pair: the node's children, or the node itself when it
    has none."""
    count = np.maximum(child_count[pn], 1)
    rows = np.repeat(np.arange(len(pt)), count)
    offset = np.arange(len(rows)) - np.repeat(np.cumsum(count) - count, count)
    kids = np.where(child_count[pn[rows]] > 0, first_child[pn[rows]] + offset, pn[rows])
    return pt[rows], kids.astype(np.int64)


def _split(pieces: np.ndarray) -> np.ndarray:
    """Each piece (p,3,3) split into 4 at its edge midpoints (4p,3,3)."""
    a, b, c = pieces[:, 0], pieces[:, 1], pieces[:, 2]
    ab, bc, ca = (a + b) / 2, (b + c) / 2, (c + a) / 2
    return np.concatenate([np.stack(t, axis=1) for t in ((a, ab, ca), (ab, b, bc), (ca, bc, c), (ab, bc, ca))])


def coverage_verified(tris: np.ndarray, centers: np.ndarray, radii: np.ndarray, min_piece: float) -> bool:
    """True when the subdivision check finds every triangle inside the union without growing a sphere."""
    return enforce_coverage(tris, centers, radii, min_piece)[1] == 0


def min_piece_size(tris: np.ndarray) -> float:
    """Smallest sub-triangle [m] the coverage check splits to: 1e-3 of the mesh's extent."""
    return 1e-3 * float(np.max(tris.max(axis=(0, 1)) - tris.min(axis=(0, 1))))


# ---------------------------------------------------------------- error bounds

_CUBE = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=np.float64)


def error_bounds(query: MeshQuery, centers: np.ndarray, radii: np.ndarray, rel_tol: float = 0.03,
                 max_rounds: int = 7, max_cells: int = 4000, chunk: int = 64,
                 progress: BuildProgress = QUIET) -> np.ndarray:
    """(n,) upper bounds on max_{p in ball(c_i, r_i)} dist(p, ship), each a true bound.

    Branch and bound over cubes covering each ball. The ship distance D(p) is max(0, s(p)) with s the
    signed distance to the surface (closed mesh) or the unsigned distance (open mesh); s is
    1-Lipschitz, so on a cube with centre q and circumradius rho (clipped to |q - c| + r, the farthest
    a ball point can be from q) every point has D <= max(0, s(q) + rho); also D(p) <= |p - x| for the
    surface point x closest to q, whose max over the cube is at a corner; the smaller bound is used.
    (rho is the covering radius of the sample q for its cube: the correction term Hubbard adds to
    his dodecahedron samples, here refined adaptively.) Cubes whose bound does not exceed the best
    value seen at a point of the ball (a lower bound) by more than rel_tol * r are retired with
    their bound; the others are split in 8. The result is the max of all retired bounds,
    so it never underestimates; its slack is at most rel_tol * r (or the last cube size).
    A sphere stops splitting at max_cells cubes (then its slack may exceed rel_tol * r, but the
    result is still a bound). One numba kernel, sphere by sphere (`_sphere_error`, serial or on
    numba's threads, whichever `ThreadChoice` finds faster: the same bounds either way); the numpy
    reference `error_bounds_numpy` does the same rounds for a chunk of spheres at once.
    """
    centers = np.ascontiguousarray(centers, dtype=np.float64).reshape(-1, 3)
    radii = np.ascontiguousarray(radii, dtype=np.float64)
    starts = progress.bar(range(0, len(radii), chunk), f"error bounds of {len(radii):,} spheres", unit="chunk")
    out = np.zeros(len(radii))
    threads = ThreadChoice()
    for s in starts:
        with threads.threads_for(len(radii[s:s + chunk])):
            _error_kernel(centers[s:s + chunk], radii[s:s + chunk], _PROBE, _CUBE, query.mesh_args(), rel_tol,
                          max_rounds, max_cells, out[s:s + chunk])
    return out


def _probe_directions() -> np.ndarray:
    """(13, 3): the centre and the 12 icosahedron vertices on the unit sphere (the lower bound's
    first samples, all inside the ball)."""
    phi = (1 + 5 ** 0.5) / 2
    ico = np.array([[0, s1, s2 * phi] for s1 in (-1, 1) for s2 in (-1, 1)], dtype=np.float64)
    ico = unit_rows(np.concatenate([ico, ico[:, [1, 2, 0]], ico[:, [2, 0, 1]]]))
    return np.concatenate([np.zeros((1, 3)), ico])


_PROBE = _probe_directions()


@njit(cache=True, parallel=True)
def _error_kernel(centers, radii, probe, cube, mesh, rel_tol, max_rounds, max_cells, out):
    """out[i] = `_sphere_error` of sphere i, spheres spread over numba's threads (each on its own)."""
    for i in prange(len(radii)):
        out[i] = _sphere_error(centers[i], radii[i], probe, cube, mesh, rel_tol, max_rounds, max_cells)


@njit(cache=True)
def _sphere_error(c, r, probe, cube, mesh, rel_tol, max_rounds, max_cells):
    """`error_bounds` of one sphere: the same rounds as `error_bounds_numpy`, in the same arithmetic."""
    closed = mesh.signed
    d, _, _, _, side, hint = nearest_on_mesh(c[0], c[1], c[2], mesh, 0)
    lower = d * side
    for p in range(1, len(probe)):  # probe[0] is the centre
        d, _, _, _, side, hint = nearest_on_mesh(c[0] + r * probe[p, 0], c[1] + r * probe[p, 1],
                                                 c[2] + r * probe[p, 2], mesh, hint)
        lower = max(lower, d * side)
    upper = 0.0
    cell = np.empty((8, 3))
    half = np.full(8, r / 2)
    for j in range(8):
        for a in range(3):
            cell[j, a] = c[a] + (r / 2) * cube[j, a]
    for rnd in range(max_rounds + 1):
        k = len(half)
        bound, live = np.empty(k), np.zeros(k, np.bool_)
        for j in range(k):  # every cube's bound; the lower bound takes their in-ball centres first
            ox, oy, oz = cell[j, 0] - c[0], cell[j, 1] - c[1], cell[j, 2] - c[2]
            gx, gy, gz = (max(abs(ox) - half[j], 0.0), max(abs(oy) - half[j], 0.0), max(abs(oz) - half[j], 0.0))
            if np.sqrt(gx * gx + gy * gy + gz * gz) > r:  # the cube misses the ball
                continue
            live[j] = True
            dc = np.sqrt(ox * ox + oy * oy + oz * oz)
            d, nx, ny, nz, side, hint = nearest_on_mesh(cell[j, 0], cell[j, 1], cell[j, 2], mesh, hint)
            val = d * side
            if dc <= r:
                lower = max(lower, val)
            rho = min(np.sqrt(3.0) * half[j], dc + r)
            b = max(val + rho, 0.0) if closed else val + rho
            far = 0.0  # |p - x| over the cube: at a corner
            for q in range(8):
                ex = cell[j, 0] + half[j] * cube[q, 0] - nx
                ey = cell[j, 1] + half[j] * cube[q, 1] - ny
                ez = cell[j, 2] + half[j] * cube[q, 2] - nz
                far = max(far, np.sqrt(ex * ex + ey * ey + ez * ez))
            bound[j] = min(b, far)
        busy = 0
        for j in range(k):
            if live[j] and not bound[j] <= lower + rel_tol * r:
                busy += 1
        stop = rnd == max_rounds or 8 * busy > max_cells  # keep the cubes' bounds: valid, just looser
        nxt_cell, nxt_half = np.empty((8 * busy, 3)), np.empty(8 * busy)
        n = 0
        for j in range(k):
            if not live[j]:
                continue
            if stop or bound[j] <= lower + rel_tol * r:
                upper = max(upper, bound[j])
                continue
            h = half[j] / 2
            for q in range(8):
                for a in range(3):
                    nxt_cell[n, a] = cell[j, a] + h * cube[q, a]
                nxt_half[n] = h
                n += 1
        if n == 0:
            break
        cell, half = nxt_cell, nxt_half
    return max(upper, lower)


def centre_error_bounds(query: MeshQuery, centers: np.ndarray, radii: np.ndarray) -> np.ndarray:
    """(n,) the error bounds a sphere's centre gives alone: D is 1-Lipschitz, so D(p) <= D(c) + r
    on the ball. One distance query per sphere where `error_bounds` takes ~1,000; looser by up to
    about r (a sphere centred on a flat surface: both give ~r; one mostly inside the ship: D(c) + r
    against far less)."""
    d, _, side, _ = query.query(centers)
    return _centre_bound(d, side, radii, query.closed)


def _centre_bound(d, side, radii, closed: bool) -> np.ndarray:
    """D(centre) + r from the centres' distances d and sides (+-1) to the surface."""
    return (np.maximum(d * side, 0.0) if closed else d) + radii


def error_bounds_numpy(query: MeshQuery, centers: np.ndarray, radii: np.ndarray, rel_tol: float = 0.03,
                       max_rounds: int = 7, max_cells: int = 4000) -> np.ndarray:
    """Reference for `error_bounds` (tests): the rounds in numpy over all spheres at once."""
    n = len(radii)
    pts = centers[:, None, :] + radii[:, None, None] * _PROBE[None]
    lower = _ship_distance(query, pts.reshape(-1, 3))[0].reshape(n, -1).max(axis=1)
    upper = np.zeros(n)
    owner = np.repeat(np.arange(n), 8)
    half = np.repeat(radii / 2, 8)
    cell = (centers[:, None, :] + (radii / 2)[:, None, None] * _CUBE[None]).reshape(-1, 3)
    for rnd in range(max_rounds + 1):
        if len(owner) == 0:
            break
        off = cell - centers[owner]
        dc = np.linalg.norm(off, axis=1)
        # cube-ball intersection: distance from the ball centre to the cube
        gap = np.linalg.norm(np.maximum(np.abs(off) - half[:, None], 0.0), axis=1)
        live = gap <= radii[owner]
        owner, cell, half, dc = owner[live], cell[live], half[live], dc[live]
        val, near = _ship_distance(query, cell)
        in_ball = dc <= radii[owner]
        np.maximum.at(lower, owner[in_ball], val[in_ball])
        rho = np.minimum(np.sqrt(3.0) * half, dc + radii[owner])
        bound = np.maximum(val + rho, 0.0) if query.closed else val + rho
        # second bound: the ship contains q's closest surface point x, so D(p) <= |p - x|, a convex
        # function of p whose max over the cube is at a corner (far tighter when x is off to a side)
        corners = cell[:, None, :] + half[:, None, None] * _CUBE[None]
        bound = np.minimum(bound, np.linalg.norm(corners - near[:, None, :], axis=2).max(axis=1))
        done = bound <= lower[owner] + rel_tol * radii[owner]
        # a sphere whose next round would exceed its cube budget (or the last round) stops here,
        # keeping its cubes' bounds (still valid, just looser)
        busy = np.bincount(owner[~done], minlength=n)
        done |= (rnd == max_rounds) | (8 * busy[owner] > max_cells)
        np.maximum.at(upper, owner[done], bound[done])
        if done.all():
            break
        o, c, h = owner[~done], cell[~done], half[~done] / 2
        owner = np.repeat(o, 8)
        half = np.repeat(h, 8)
        cell = (c[:, None, :] + h[:, None, None] * _CUBE[None]).reshape(-1, 3)
    return np.maximum(upper, lower)


def _ship_distance(query: MeshQuery, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(signed distance (closed mesh) or distance (open) at points (n,), closest surface points (n,3)).

    The ship distance is max(0, first)."""
    d, closest, side, _ = query.query(points)
    return d * side, closest


# ---------------------------------------------------------------- assembly

def witnesses(query: MeshQuery, centers: np.ndarray, radii: np.ndarray, errors: bool = False):
    """Closest surface point to each centre (n,3), and radii grown where a sphere missed the surface;
    with `errors`, also the grown spheres' `centre_error_bounds`, from the same distance query."""
    d, closest, side, _ = query.query(centers)
    radii = np.maximum(radii, d * (1 + 4 * _REL_SLACK))
    return (closest, radii, _centre_bound(d, side, radii, query.closed)) if errors else (closest, radii)


def assemble(levels: list[tuple[np.ndarray, np.ndarray, np.ndarray]], query: MeshQuery, method: str,
             key: str = "", rel_tol: float = 0.03, progress: BuildProgress = QUIET, chains: bool = False) -> SphereTree:
    """Finish a tree from per-level spheres.

    levels[k] = (centers (n_k,3), radii (n_k,), parent (n_k,) int index into level k-1; -1 for root),
    with level 0 a single sphere. Nodes are reordered by parent so that children are contiguous,
    coverage is enforced per level (and with `chains`, root-to-leaf chains: enforce_chains),
    witnesses, error bounds and leaf triangle lists are computed.
    """
    tris = query.tris
    min_piece = min_piece_size(tris)
    centers, radii, parents, lvl = [], [], [], []
    offset = 0
    prev_new = np.zeros(1, np.int64)
    for k, (c, r, p) in enumerate(progress.bar(levels, f"coverage of {len(tris):,} triangles", unit="level")):
        c = np.asarray(c, np.float64).reshape(-1, 3)
        p = np.asarray(p, np.int64).reshape(-1)
        if k > 0:
            order = np.argsort(prev_new[p], kind="stable")  # group children by (new) parent index
            c, r, p = c[order], np.asarray(r)[order], p[order]
            p = prev_new[p]
        r, _ = enforce_coverage(tris, c, np.asarray(r, np.float64), min_piece)
        centers.append(c)
        radii.append(r)
        parents.append(p if k > 0 else np.full(1, -1))
        lvl.append(np.full(len(r), k, np.int32))
        prev_new = offset + np.arange(len(r))
        offset += len(r)
    center = np.concatenate(centers)
    radius = np.concatenate(radii)
    parent = np.concatenate(parents).astype(np.int32)
    level = np.concatenate(lvl)
    m = len(radius)
    level_start = np.concatenate([[0], np.cumsum([len(r) for r in radii])]).astype(np.int64)
    child_count = np.bincount(parent[1:], minlength=m).astype(np.int32)
    first_child = np.full(m, -1, np.int32)
    has, first = np.unique(parent[1:], return_index=True)  # children are contiguous
    first_child[has] = first + 1
    if chains:
        progress.stage("root-to-leaf chains")
        radius, _ = enforce_chains(tris, center, radius, first_child.astype(np.int64), child_count.astype(np.int64),
                                   len(levels) - 1, min_piece)
    progress.stage(f"witness points of {len(radius):,} spheres")
    witness, radius = witnesses(query, center, radius)
    error = error_bounds(query, center, radius, rel_tol=rel_tol, progress=progress)
    # leaves: every triangle each leaf touches (the exact level)
    leaves = np.flatnonzero(child_count == 0)
    progress.stage(f"triangle lists of {len(leaves):,} leaves")
    t, s = triangle_sphere_pairs(tris, center[leaves], radius[leaves], slack=_REL_SLACK)
    node = leaves[s]
    order = np.lexsort((t, node))
    leaf_tri_idx = t[order].astype(np.int32)
    leaf_tri_ptr = np.concatenate([[0], np.cumsum(np.bincount(node, minlength=m))]).astype(np.int64)
    return SphereTree(center=center, radius=radius, error=error, witness=witness, level=level,
                      parent=parent, first_child=first_child, child_count=child_count,
                      leaf_tri_ptr=leaf_tri_ptr, leaf_tri_idx=leaf_tri_idx, level_start=level_start,
                      vertices=query.vertices.copy(), faces=query.faces.astype(np.int32),
                      closed=query.closed, method=method, key=key)
