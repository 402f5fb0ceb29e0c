"""On-collide sphere trees (OCST; Franquesa et al. 2006): octree sphere trees built while ships
collide, kept while they are used, evicted when they are not.

Geometry: the prebuilt octree's (`spheretree/octree.py`). Level 0 is the smallest sphere enclosing
the vertices; a node at level k >= 1 circumscribes an occupied cell of side L / 2^k of the mesh's
bounding cube (occupied: a triangle meets the cell, exact SAT test). Coverage holds by
construction: every point of a triangle in a parent's cell lies in one of its child cells, which
that triangle meets, hence is occupied and inside its circumscribed sphere. Witnesses are
`spheretree.finish.witnesses`, computed on one distance query over the model's whole mesh, made at
its root and kept. Error bounds are the ones a sphere's centre gives alone (`finish.centre_error_bounds`,
from the same query): true bounds, equal to the prebuilt octree's branch and bound on most spheres and
looser (up to ~r) on some leaves, at one distance query where the branch and bound takes ~1,000
(it was ~95% of a group's build time). Only the separation bounds reported get looser; error
bounds decide no verdict. Finishing them in a frame's spare time was tried and cost ~10% of frames
within target in the lamps crowd. Leaves (level = depth) list the triangles meeting
their cell: an intersection point lies in one cell of each ship, whose leaf spheres then collide
and hold both triangles, so the exact level finds every intersecting pair.

Octants built one at a time, as pairs need them. A node at level k circumscribes an
octree cell (a root: its bounding cube), so each child's cell sphere is known from the node alone,
before its occupancy, triangles, witness and error bound are computed. The descent kernels test a
pair's pending octants by those cell spheres (kernels._needs_children) and build only the octants
whose cell sphere meets a potential child of the partner node (a built child's cell, a pending
octant's, or the partner itself when it is a leaf); an octant meeting none of them cannot hold a
point where the ships meet (that point lies in a cell of each ship at every level), so it stays
pending and costs nothing. Pending octants hold no data: a bit each in `pending` (empty octants
found on the way are struck from it too). Before, a node's 8 octants were built together (the
paper's unit), and 27-42% of the resident tree over a lamps run was siblings no pair ever used.

Layout (OcstBank): a TreeBank's arrays (the kernels and refine.py walk it unchanged) with room for
every model's full tree, allocated once (untouched pages of numpy's zeroed arrays take no memory;
the nan-filled radii take 16 bytes a slot):
slots 0..M-1 hold the roots, slot M is a spacer, then blocks of 9 slots, each the children of one
interior node (octant j in slot j, child_count 8) and a spacer, so that tri_ptr[i]:tri_ptr[i+1] is
node i's triangle list for every node although blocks come and go (each block's lists are
contiguous in tri_idx, rewritten whole when an octant is added). A slot with no sphere (an octant
pending or empty) has a nan radius: no overlap test passes on it, so the kernels' loops skip it
unchanged. A pair that needs pending octants stops its row there (`descend_stacks`,
`complete_pairs` report blocked rows, the octants in the banks' `want` bits); `resume_stacks` /
`resume_blocked` build them (the triangles of the parent's cell in those octants) and resume the
rows where they stopped, inside the same timed batch, so building counts against the frame budget
and `min_level` holds as for prebuilt trees. Where work may be left undone (the exact level's first
contacts under a deadline, tens of rounds a row) a round starts only when it is predicted to end in
time and its octants fit within the cap (BuildRounds); else the rows go back to their sphere leaves.
A build round is one compiled call per model
(`_build_octants`: the split of the parents' triangle lists, the spheres, witnesses and error
bounds, the children's blocks and lists; free blocks are found by a scan from the lowest one that
may be free, `_heads`): ~35 µs (median) a round in a lamps run, where numpy calls over a few
nodes took ~0.4 ms.
Node arrays never move; only tri_idx is reallocated (refine.py reads it when the exact level runs).

Memory: nodes are stamped with the simulation time whenever they (or a descendant) are part of a
colliding pair (`touched` keeps that time apart from the build's stamp, for `resident_reasons`).
`maintain(now)`, once per detection sample, evicts every sphere unused for `evict_after`
seconds, with everything below it (its octant pending again in its parent) — the paper deletes a
complete level unused that long; a sphere is the unit here, as octants are built one by one —
then the least recently used spheres while more than `max_nodes` are resident (the paper's memory
cap; `max_share` sets it as a share of the full trees, whose cells are counted when the bank is
made). The cap holds inside a sample too: before a build could pass it, the least recently used
spheres that the sample's pairs do not hold are evicted (`_make_room`, `_evict_lru`): not a node
on a pair's stack (stamped before every build) nor an ancestor, nor an octant of a node a
continuation holds (its scan assumes them built). A pair's other pending octants are tested and
built again when it is expanded, so verdicts and coverage are unchanged; the cap is passed only
when the spheres held alone fill it.
"""
from __future__ import annotations

import time
from functools import cached_property

import numpy as np
from numba import njit

from ..geometry.triangles import triangle_meets_box
from ..spheretree.finish import _REL_SLACK, witnesses
from ..spheretree.geometry import MeshQuery, closest_on_mesh, min_enclosing_sphere
from ..spheretree.octree import bounding_cube, occupied_children
from .kernels import entry_node_b
from .volumes import SPHERE, unbounded_spheres

ALL_PENDING = 0xFF  # pending bits of a node none of whose octants is built or known empty yet
_BLOCK = 9          # slots per node's children: octant j in slot j, and a spacer (module docstring)
# OcstBank._heads: end of tri_idx's used part; lowest block that may be free; spheres rebuilt (their
# cell built before, evicted since)
TRI_TOP, FREE, REBUILT = 0, 1, 2


class OcstBank:
    """Sphere trees of M models built on collision, as a TreeBank's flat arrays.

    Kernel arrays, as TreeBank's (N = slots, all allocated up front):
    center (N,3) float64 body frame [m]; radius, error (N,) float64 [m] (radius nan: no sphere in
    that slot); witness (N,3) float64 [m]; first_child, child_count (N,) int64 (8 for every
    interior node: octant j's child in slot first_child + j); tri_ptr (N+1,) int64, tri_idx (K,)
    int64 global triangle ids (each node's cell triangles); tri_verts (F,3,3), tri_center (F,3),
    tri_radius (F,); node_offset (M+1,) int64 = 0..M (slot of model m's root is m; reported sphere
    ids are slot - m); tri_offset (M+1,) int64; depth (M,) int64.
    For kernels.py's pending-octant test (`cells`): cell_center (N,3), cell_radius (N,) float64 [m]
    the sphere circumscribing each resident node's cell (a root's: the bounding cube; nan where no
    node is); pending (N,) int64 bits of the octants not built yet (neither built nor known empty);
    want (N,) int64 bits a pair asked for (the kernels set them, `build` clears them).
    Bookkeeping: stamp (N,) float64 [s] last use or build (simulation time); touched (N,) float64 [s]
    last use only (-inf: never part of a colliding pair); level, parent, model (N,) int64;
    cell (N,3) int64 integer octree cell of the node.
    models: the meshes (spaceship_sim.meshes.Mesh); depth: levels below the roots; evict_after [s];
    max_nodes: cap on resident spheres over all models; max_share: the cap as a share of full_nodes,
    the spheres of every model's full tree (counted only when max_share < 1; max_nodes is then the
    smaller of the two); seed: of the roots' enclosing-sphere search (as the prebuilt octree's).
    """

    volume = SPHERE  # its nodes are spheres, as a TreeBank's

    def __init__(self, models, depth: int = 3, evict_after: float = 2.0, max_nodes: int = 100_000,
                 max_share: float = 1.0, seed: int = 0):
        self.models = list(models)
        if not self.models:
            raise ValueError("OcstBank needs at least one model")
        M = len(self.models)
        self.evict_after, self.max_nodes, self.now = float(evict_after), int(max_nodes), 0.0
        self.full_nodes = sum(full_tree_nodes(m, depth) for m in self.models) if max_share < 1 else None
        if self.full_nodes is not None:  # the roots are never evicted
            self.max_nodes = min(self.max_nodes, max(M, int(max_share * self.full_nodes)))
        self.depth = np.full(M, int(depth), np.int64)
        n_tris = np.array([len(m.faces) for m in self.models])
        self.tri_offset = np.concatenate([[0], np.cumsum(n_tris)]).astype(np.int64)
        self.node_offset = np.arange(M + 1, dtype=np.int64)
        self.tri_verts = np.ascontiguousarray(np.concatenate([m.vertices[m.faces] for m in self.models]),
                                              dtype=np.float64)
        self.tri_center = np.ascontiguousarray(self.tri_verts.mean(axis=1))
        self.tri_radius = np.ascontiguousarray(
            np.sqrt(((self.tri_verts - self.tri_center[:, None, :]) ** 2).sum(axis=2)).max(axis=1))
        # room for every interior node's children in every model
        n_blocks = M * sum(8 ** k for k in range(int(depth)))
        n = M + 1 + _BLOCK * n_blocks
        self.center, self.witness, self.cell_center = np.zeros((n, 3)), np.zeros((n, 3)), np.zeros((n, 3))
        self.radius, self.cell_radius = np.full(n, np.nan), np.full(n, np.nan)
        self.error, self.stamp = np.zeros(n), np.zeros(n)
        self.touched = np.full(n, -np.inf)
        self.scanned = np.full(n, -np.inf)  # last time a continuation on a pair's stack held the node
        self.first_child = np.full(n, -1, np.int64)
        self.child_count, self.pending, self.want = (np.zeros(n, np.int64) for _ in range(3))
        self.level, self.parent, self.model = (np.zeros(n, np.int64) for _ in range(3))
        self.cell = np.zeros((n, 3), np.int64)
        self.tri_ptr = np.zeros(n + 1, np.int64)
        self.tri_idx = np.arange(self.tri_offset[-1], dtype=np.int64)  # roots' lists: all their triangles
        # [TRI_TOP, FREE, REBUILT]: the lowest free block is taken first (it keeps memory compact)
        self._heads = np.array([len(self.tri_idx), 0, 0], np.int64)
        self._seen = np.zeros(M * _cells_above(int(depth) + 1), np.bool_)  # cells ever built (_cell_key)
        self._block_parent = np.full(n_blocks, -1, np.int64)  # owner of each used block (-1: free)
        self._block_tris = np.zeros((n_blocks, 2), np.int64)  # its region of tri_idx
        # per model: (origin, side) of its octree; its MeshQuery; its _mesh_args
        self._cube, self._queries, self._meshes = [], {}, {}
        self.built_spheres = 0   # counters for reports
        self.evicted_spheres = 0
        self.peak_nodes = M  # most spheres resident at once since the last take_peak
        self.build_seconds = 0.0  # wall time inside build() (an instrument: no decision reads it)
        for m, mesh in enumerate(self.models):
            self._make_root(m, mesh, seed)

    # --- the TreeBank interface refine.py uses ------------------------------------------
    @property
    def n_models(self) -> int:
        return len(self.models)

    @property
    def max_level(self) -> int:
        return int(self.depth.max()) + 1

    max_children = 8  # octree: stack widths are sized for full groups before any is built

    @property
    def nodes(self):
        """The node arrays as the bounding volume's tuple (allocated up front: they never move)."""
        return self.volume.arrays(self)

    @cached_property
    def spheres(self) -> np.ndarray:
        """Unbounded (volumes.unbounded_spheres): children are built and evicted as pairs go, so
        the loop tests every child pair of a node."""
        return unbounded_spheres(len(self.first_child))

    @property
    def cells(self):
        """(cell_center, cell_radius, pending, want): what kernels._needs_children reads and writes."""
        return self.cell_center, self.cell_radius, self.pending, self.want

    @property
    def rebuilt_spheres(self) -> int:
        """Spheres built for a cell that had been built before and evicted since (of built_spheres)."""
        return int(self._heads[REBUILT])

    @property
    def resident_nodes(self) -> int:
        """Spheres held now, roots included (len(built_nodes()), counted as they come and go)."""
        return self.n_models + self.built_spheres - self.evicted_spheres

    def resident_reasons(self) -> dict:
        """Why each resident sphere is held, as counts summing to resident_nodes. "roots": always.
        "in_use": it or a descendant was touched since the last maintain (on a pair's frontier of
        overlapping spheres where a descent stopped, or in a leaf pair of the exact level).
        "kept": touched before, held until evict_after. "never_used": built but never touched —
        its cell overlapped a cell of a node a pair was expanding against, and the descent ended
        with the ships apart or the contact elsewhere."""
        kids = self.built_nodes()[self.n_models:]
        touched = self.touched[kids]
        in_use = int(np.count_nonzero(touched >= self.now))
        never = int(np.count_nonzero(touched == -np.inf))
        return {"roots": self.n_models, "in_use": in_use, "kept": len(kids) - in_use - never, "never_used": never}

    def defining_arrays(self) -> dict:
        """The arrays every node of this bank is a function of: the models' triangles and the
        depth (what a recording fingerprints; the resident part changes as the run goes)."""
        return {"tri_verts": self.tri_verts, "tri_offset": self.tri_offset, "depth": self.depth}

    # --- building -------------------------------------------------------------------
    def _make_root(self, m, mesh, seed):
        tris = mesh.vertices[mesh.faces]
        origin, side = bounding_cube(tris)
        self._cube.append((origin, side))
        c, r = min_enclosing_sphere(mesh.vertices[np.unique(mesh.faces)], seed=seed)
        self._finish(m, np.array([m]), c[None], np.array([r]))
        self.cell_center[m], self.cell_radius[m] = origin + side / 2, side * np.sqrt(3) / 2
        self.tri_ptr[m], self.tri_ptr[m + 1] = self.tri_offset[m], self.tri_offset[m + 1]
        self.parent[m], self.model[m], self.level[m] = -1, m, 0
        self._open(np.array([m]))

    def _query(self, m) -> MeshQuery:
        """Model m's distance query, made at its first use (the root's) and kept: made per build
        group over the triangles near the group, it cost ~0.3 s a group on a 200,000-triangle mesh,
        where one query point costs ~50 µs against the whole mesh."""
        if m not in self._queries:
            mesh = self.models[m]
            self._queries[m] = MeshQuery(mesh.vertices, mesh.faces, mesh.closed)
        return self._queries[m]

    def _finish(self, m, slots, centers, radii):
        """Witnesses and error bounds (spheretree.finish: the centre's) of new spheres of model m
        into `slots`."""
        witness, radii, error = witnesses(self._query(m), centers, radii, errors=True)
        self.center[slots], self.radius[slots], self.witness[slots], self.error[slots] = centers, radii, witness, error
        self.stamp[slots], self.touched[slots] = self.now, -np.inf

    def _open(self, nodes):
        """Give interior nodes (below their model's depth) a block of children slots, every octant
        pending; leaves get none (_open_node)."""
        for s in nodes:
            _open_node(s, self.depth[self.model[s]], self._topology(), self.tri_ptr, self._heads, self.n_models)

    def _topology(self):
        return (self.first_child, self.child_count, self.pending, self.want, self.level, self.parent, self.model,
                self.cell, self._block_parent, self._block_tris, self._seen)

    def build(self, nodes) -> None:
        """Build the octants the kernels asked for (want bits) of `nodes` (global slots, repeats
        allowed): each wanted octant becomes a sphere, or is known empty. One compiled call per
        model (_build_octants), and another after growing tri_idx when it runs out of room."""
        t0 = time.perf_counter()
        nodes = np.asarray(nodes, np.int64)
        self._make_room(nodes)
        for m in range(1) if self.n_models == 1 else np.unique(self.model[nodes]):
            while True:
                built, room = _build_octants(nodes, m, self.now, self._kernel_args, self.tri_idx, self._mesh_args(m))
                self.built_spheres += built
                if not room:
                    break
                self._compact(room)
        self.peak_nodes = max(self.peak_nodes, self.resident_nodes)
        self.build_seconds += time.perf_counter() - t0

    def _make_room(self, nodes) -> bool:
        """Hold the cap inside a sample too: before building the octants `nodes` want, evict as
        many least recently used spheres as the build may add past max_nodes, among those no pair
        holds in this sample (_evict_lru), and an eighth of the cap more: an eviction costs ~0.3 ms
        whatever it frees (it was most of a capped lamps frame's building when it freed a build's
        worth at a time). Spheres held by the sample's pairs are never evicted, so the cap is
        exceeded only when they alone fill it. Returns whether every wanted octant now fits."""
        if self.resident_nodes + 8 * len(nodes) <= self.max_nodes:
            return True  # room for every octant of every node: no counting needed
        u = np.unique(nodes)
        wanted = np.unpackbits((self.want[u] & self.pending[u]).astype(np.uint8))  # one bit per octant
        excess = self.resident_nodes + int(wanted.sum()) - self.max_nodes
        if excess > 0:
            self._evict_lru(excess + self.max_nodes // 8, held_since=self.now)
        return self.resident_nodes + int(wanted.sum()) <= self.max_nodes

    @cached_property
    def _kernel_args(self):
        """The arrays _build_octants writes, but tri_idx (they never move): (n_models, geometry,
        topology, tri_ptr, heads, tri_verts)."""
        geometry = (self.center, self.radius, self.witness, self.error, self.cell_center, self.cell_radius,
                    self.stamp, self.touched)
        return self.n_models, geometry, self._topology(), self.tri_ptr, self._heads, self.tri_verts

    def _mesh_args(self, m):
        """Model m's (origin (3,), side, depth, *MeshQuery.kernel_args()) for _build_octants."""
        if m not in self._meshes:
            origin, side = self._cube[m]
            self._meshes[m] = (origin, float(side), int(self.depth[m]), *self._query(m).kernel_args())
        return self._meshes[m]

    def _block_start(self, block) -> int:
        return self.n_models + 1 + _BLOCK * int(block)

    def _compact(self, extra):
        """Move the live blocks' lists together (a new tri_idx, twice the live size at least,
        with room for `extra` more)."""
        live = np.flatnonzero(self._block_parent >= 0)
        live = live[self._block_tris[live, 1] > self._block_tris[live, 0]]
        roots = int(self.tri_offset[-1])
        size = roots + int((self._block_tris[live, 1] - self._block_tris[live, 0]).sum())
        new = np.empty(max(2 * (size + extra), len(self.tri_idx)), np.int64)
        new[:roots] = self.tri_idx[:roots]
        top = roots
        for b in live:
            s, e = self._block_tris[b]
            new[top:top + e - s] = self.tri_idx[s:e]
            start = self._block_start(b)
            self.tri_ptr[start:start + _BLOCK] += top - s
            self._block_tris[b] = top, top + e - s
            top += e - s
        self.tri_idx, self._heads[TRI_TOP] = new, top

    # --- use and eviction ------------------------------------------------------------
    def touch(self, nodes) -> None:
        """Stamp nodes (global slots) and their ancestors with the current time."""
        _touch_up(self.stamp, self.touched, self.parent, self.now, np.asarray(nodes, np.int64))

    def maintain(self, now: float) -> None:
        """Set the time [s] and evict the spheres unused for evict_after seconds, then the least
        recently used ones while more than max_nodes are resident (_evict_lru; between samples no
        pair holds any). Inside the sample, build keeps the cap the same way (_make_room)."""
        self.now = float(now)
        kids = self.built_nodes()[self.n_models:]
        self._evict(kids[self.stamp[kids] < self.now - self.evict_after])
        if self.resident_nodes > self.max_nodes:
            self._evict_lru(self.resident_nodes - self.max_nodes)

    def take_peak(self) -> int:
        """The most spheres resident at once since the last call (or since the bank was made);
        the count starts again from those resident now."""
        peak, self.peak_nodes = self.peak_nodes, self.resident_nodes
        return peak

    def _evict_lru(self, excess: int, held_since: float = np.inf) -> None:
        """Evict at least `excess` spheres (each takes its subtree along), least recently used
        first, the deepest first among those used together, or all there are to take. Inside a
        sample (held_since = its time) only spheres neither used nor built in it (a pair's stack
        holds its nodes, stamped before each build: resume_stacks; touching stamps ancestors, so
        their subtrees hold nothing used either) and whose parent no continuation on a stack holds
        (`scanned`): its scan goes on over the parent's octants assuming them built
        (kernels.descend_stacks). A pair not expanded yet tests its octants when it is, and
        builds what it needs again. Spheres built in the sample stay to its end, so no octant is
        built twice in a sample and the search ends (letting them go when no pair held them
        livelocked first contacts under a small cap: each round evicted what the next needed)."""
        kids = self.built_nodes()[self.n_models:]
        kids = kids[(self.stamp[kids] < held_since) & (self.scanned[self.parent[kids]] < held_since)]
        self._evict(kids[np.lexsort((-self.level[kids], self.stamp[kids]))[:excess]])

    def _evict(self, nodes) -> None:
        """Free resident nodes (global slots, not roots) and everything below them; each one's
        octant is pending again in its parent."""
        dead, front = [], np.asarray(nodes, np.int64)
        while len(front):
            dead.append(front)
            inner = front[self.child_count[front] > 0]
            kids = (self.first_child[inner][:, None] + np.arange(8)[None]).ravel()
            front = kids[self.cell_radius[kids] == self.cell_radius[kids]]
        if not dead:
            return
        dead = np.unique(np.concatenate(dead))
        top = dead[~np.isin(self.parent[dead], dead)]
        np.bitwise_or.at(self.pending, self.parent[top], 1 << (top - self.first_child[self.parent[top]]))
        inner = dead[self.child_count[dead] > 0]
        if len(inner):
            blocks = (self.first_child[inner] - self.n_models - 1) // _BLOCK
            self._block_parent[blocks] = -1
            self._block_tris[blocks] = 0
            self._heads[FREE] = min(self._heads[FREE], blocks.min())
        self.radius[dead] = self.cell_radius[dead] = np.nan
        self.first_child[dead], self.child_count[dead], self.pending[dead], self.want[dead] = -1, 0, 0, 0
        self.touched[dead], self.scanned[dead], self.stamp[dead] = -np.inf, -np.inf, 0.0
        self.evicted_spheres += len(dead)

    def built_nodes(self) -> np.ndarray:
        """Global slots of every resident node (roots first): the roots, then the built slots of
        the blocks in use (fewer to look at than every slot)."""
        return np.concatenate([np.arange(self.n_models), _built_children(self._block_parent, self.cell_radius,
                                                                         self.n_models)])


def full_tree_nodes(mesh, depth: int) -> int:
    """Spheres of the mesh's full octree tree of `depth` levels below the root: its occupied cells,
    the root included (octree.occupied_children, level by level; no sphere is made)."""
    tris = mesh.vertices[mesh.faces]
    origin, side = bounding_cube(tris)
    cells, pair_tri, pair_cell = np.zeros((1, 3), np.int64), np.arange(len(tris)), np.zeros(len(tris), np.int64)
    n = 1
    for k in range(1, int(depth) + 1):
        cells, _, pair_tri, pair_cell = occupied_children(tris, pair_tri, pair_cell, cells, origin, side / 2 ** k)
        n += len(cells)
    return n


# --- building octants, compiled: a build round was ~1 ms of numpy calls on a few nodes --------

@njit(cache=True)
def _build_octants(nodes, m, now, bank, tri_idx, mesh):
    """OcstBank.build for those of `nodes` (global slots, any order, repeats allowed) that are
    model m's and want octants, by level then slot: each one's wanted octants (want bits) built
    where a triangle of its cell meets them (exact SAT test) — a cell sphere with witness and
    error bound (spheretree.finish.witnesses), a block of children slots when not a leaf — and
    its block's triangle lists rewritten; its wanted and empty octants struck from pending, its
    want bits cleared.
    bank: (n_models, geometry, topology, tri_ptr, heads, tri_verts) with geometry (center, radius,
    witness, error, cell_center, cell_radius, stamp, touched) and topology (first_child,
    child_count, pending, want, level, parent, model, cell, block_parent, block_tris, seen), the bank's
    arrays (OcstBank._kernel_args), heads its [TRI_TOP, FREE, REBUILT]; mesh (origin (3,), side, depth,
    *MeshQuery.kernel_args()) model m's octree cube, depth and distance query.
    Returns (spheres built, room): room > 0 when tri_idx lacks room for the next node's lists
    (it and the rest are left as they were; grow tri_idx by room and call again)."""
    n_models, geometry, topology, tri_ptr, heads, tri_verts = bank
    first_child, pending, want, level, cell = topology[0], topology[2], topology[3], topology[4], topology[7]
    nodes = _wanting(nodes, m, topology[6], want, level)
    most = 0
    for p in nodes:
        most = max(most, tri_ptr[p + 1] - tri_ptr[p])
    kids, count = np.empty((8, most), np.int64), np.zeros(8, np.int64)  # each octant's triangles
    blocks = np.arange(len(mesh[4]))  # the distance query's triangle blocks: all of them
    built = 0
    for p in nodes:
        size = mesh[1] / 2.0 ** (level[p] + 1)
        occupied = _split_cell(tri_verts, tri_idx, tri_ptr[p], tri_ptr[p + 1], cell, p, mesh[0], size, kids, count)
        new = pending[p] & want[p] & occupied
        if new:
            live = occupied & (new | ~pending[p])  # built after this call
            need = 0
            for j in range(8):
                need += count[j] * (live >> j & 1)
            if heads[TRI_TOP] + need > len(tri_idx):
                return built, need
            for j in range(8):
                if new >> j & 1:
                    _make_child(p, j, size, now, n_models, geometry, topology, tri_ptr, heads, mesh, blocks)
                    built += 1
            _store_block(first_child[p], live, kids, count, tri_ptr, tri_idx, heads, topology[9], n_models)
        pending[p] &= occupied & ~want[p]
        want[p] = 0
    return built, 0


@njit(cache=True)
def _wanting(nodes, m, model, want, level):
    """The distinct nodes of model m among `nodes` whose want bits are set, by level then slot."""
    n = len(want)
    keys = np.empty(len(nodes), np.int64)
    k = 0
    for p in nodes:
        if model[p] == m and want[p] != 0:
            keys[k] = level[p] * n + p
            k += 1
    return np.unique(keys[:k]) % n


@njit(cache=True)
def _split_cell(tri_verts, tri_idx, q0, q1, cell, p, origin, size, kids, count):
    """The triangles tri_idx[q0:q1] of node p's cell that meet each of its octants (side `size`),
    in that order, into kids[j, :count[j]]; returns the occupied octants' bits (j = 4x + 2y + z).
    Centres as spheretree.octree's: origin + (cell index + 0.5) size."""
    v, e = np.empty((3, 3)), np.empty((3, 3))
    count[:] = 0
    occupied = 0
    for q in range(q0, q1):
        t = tri_idx[q]
        for j in range(8):
            cx = origin[0] + (2 * cell[p, 0] + (j >> 2 & 1) + 0.5) * size
            cy = origin[1] + (2 * cell[p, 1] + (j >> 1 & 1) + 0.5) * size
            cz = origin[2] + (2 * cell[p, 2] + (j & 1) + 0.5) * size
            if triangle_meets_box(tri_verts, t, cx, cy, cz, size / 2, v, e):
                kids[j, count[j]] = t
                count[j] += 1
                occupied |= 1 << j
    return occupied


@njit(cache=True)
def _make_child(p, j, size, now, n_models, geometry, topology, tri_ptr, heads, mesh, blocks):
    """Octant j of node p as a sphere in its slot: the sphere circumscribing its cell (side
    `size`), grown to reach the surface if it missed it, its witness and centre error bound
    (finish.witnesses), bookkeeping, and its children's block (_open_node)."""
    center, radius, witness, error, cell_center, cell_radius, stamp, touched = geometry
    first_child, level, parent, model, cell = topology[0], topology[4], topology[5], topology[6], topology[7]
    origin, depth, tris, lo, hi, pseudo, closed = mesh[0], mesh[2], mesh[3], mesh[4], mesh[5], mesh[6], mesh[7]
    s = first_child[p] + j
    for c in range(3):
        cell[s, c] = 2 * cell[p, c] + (j >> (2 - c) & 1)
        center[s, c] = origin[c] + (cell[s, c] + 0.5) * size
        cell_center[s, c] = center[s, c]
    cell_radius[s] = size * np.sqrt(3.0) / 2
    d, wx, wy, wz, side, _ = closest_on_mesh(center[s, 0], center[s, 1], center[s, 2], tris, lo, hi, pseudo, closed,
                                             0, blocks)
    radius[s] = max(cell_radius[s], d * (1 + 4 * _REL_SLACK))
    error[s] = (max(d * side, 0.0) if closed else d) + radius[s]
    witness[s, 0], witness[s, 1], witness[s, 2] = wx, wy, wz
    stamp[s], touched[s] = now, -np.inf
    parent[s], model[s], level[s] = p, model[p], level[p] + 1
    key = _cell_key(model[s], level[s], cell[s], len(topology[10]) // n_models)
    heads[REBUILT] += topology[10][key]
    topology[10][key] = True
    _open_node(s, depth, topology, tri_ptr, heads, n_models)


@njit(cache=True)
def _cells_above(k):
    """Cells of an octree's levels 0..k-1: 1 + 8 + ... + 8^(k-1)."""
    return (8 ** k - 1) // 7


@njit(cache=True)
def _cell_key(m, k, c, per_model):
    """A unique index of model m's cell c (3,) at level k among per_model cells a model."""
    n = 1 << k
    return m * per_model + _cells_above(k) + (c[0] * n + c[1]) * n + c[2]


@njit(cache=True)
def _open_node(s, depth, topology, tri_ptr, heads, n_models):
    """A new node s: a leaf at `depth` (its model's) gets no children; an interior node the lowest
    free block of children slots, every octant pending, their triangle lists empty."""
    first_child, child_count, pending, level, block_parent = topology[0], topology[1], topology[2], topology[4], \
        topology[8]
    if level[s] >= depth:
        first_child[s], child_count[s], pending[s] = -1, 0, 0
        return
    b = heads[FREE]
    while block_parent[b] >= 0:
        b += 1
    heads[FREE] = b + 1
    block_parent[b] = s
    start = n_models + 1 + _BLOCK * b
    first_child[s], child_count[s], pending[s] = start, 8, ALL_PENDING
    tri_ptr[start:start + _BLOCK] = 0


@njit(cache=True)
def _store_block(start, live, kids, count, tri_ptr, tri_idx, heads, block_tris, n_models):
    """The triangle lists of the `live` children of the block at slot `start`, in octant order, as
    one new region at the end of tri_idx (the block's old region is left for OcstBank._compact)."""
    t0 = pos = heads[TRI_TOP]
    for j in range(8):
        tri_ptr[start + j] = pos
        if live >> j & 1:
            tri_idx[pos:pos + count[j]] = kids[j, :count[j]]
            pos += count[j]
    tri_ptr[start + 8] = pos
    b = (start - n_models - 1) // _BLOCK
    block_tris[b, 0], block_tris[b, 1] = t0, pos
    heads[TRI_TOP] = pos


@njit(cache=True)
def _built_children(block_parent, cell_radius, n_models):
    """Global slots of the built children in the blocks in use, by block then octant."""
    out = np.empty(8 * len(block_parent), np.int64)
    n = 0
    for b in range(len(block_parent)):
        if block_parent[b] < 0:
            continue
        for s in range(n_models + 1 + _BLOCK * b, n_models + 1 + _BLOCK * b + 8):
            if cell_radius[s] == cell_radius[s]:  # nan: no sphere there
                out[n] = s
                n += 1
    return out[:n]


@njit(cache=True)
def _touch_up(stamp, touched, parent, now, nodes):
    """Stamp `nodes` and their ancestors with `now` (OcstBank.touch)."""
    for n in nodes:
        _stamp_line(stamp, touched, parent, now, n)


@njit(cache=True)
def _stamp_line(stamp, touched, parent, now, node):
    """Stamp node and its ancestors with `now`."""
    while node >= 0:
        stamp[node] = now
        touched[node] = now
        node = parent[node]


@njit(cache=True)
def _touch_stacks(stamp, touched, scanned, parent, now, s, sb, height, rows, side_b):
    """OcstBank.touch of every node on one side of the stacks of pair rows `rows`: s = sa (A's
    side) or sb (B's: entry_node_b, a continuation's parent pair's node); a continuation's node
    is also marked `scanned`: its scan will go on over its children (OcstBank._evict_lru)."""
    for r in rows:
        for j in range(height[r]):
            node = entry_node_b(s[r, j]) if side_b else s[r, j]
            _stamp_line(stamp, touched, parent, now, node)
            if sb[r, j] < 0:
                scanned[node] = now


class OcstTreeView:
    """Model m of an OcstBank seen as a SphereTree by readers of reported spheres (the app's
    drawing): node ids are local to the model (slot - m, as FrameNarrowResult reports them),
    `level(k)` gives the spheres of level k resident now."""

    def __init__(self, bank: OcstBank, m: int):
        self.bank, self.m = bank, int(m)
        self.center, self.radius = bank.center[m:], bank.radius[m:]  # views: they follow the bank
        self.error, self.witness = bank.error[m:], bank.witness[m:]

    @property
    def depth(self) -> int:
        return int(self.bank.depth[self.m])

    def level(self, k: int):
        """(centers (n,3), radii (n,), errors (n,)) of model m's resident spheres at level k."""
        b = self.bank
        nodes = b.built_nodes()
        nodes = nodes[(b.model[nodes] == self.m) & (b.level[nodes] == k)]
        return b.center[nodes], b.radius[nodes], b.error[nodes]


def warm_up_bank() -> OcstBank:
    """A bank of one octahedron (depth 2): refining it against itself compiles every kernel an
    OcstBank uses, in milliseconds once numba's cache holds them."""
    from ..meshes import validate_mesh_arrays

    v = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], np.float64)
    f = np.array([[0, 2, 4], [2, 1, 4], [1, 3, 4], [3, 0, 4], [2, 0, 5], [1, 2, 5], [3, 1, 5], [0, 3, 5]])
    return OcstBank([validate_mesh_arrays(v, f, "octahedron")], depth=2)


# --- the hooks refine.py calls after each descent kernel ---------------------------------

def resume_stacks(A, B, rows, targets, sa, sb, height, blocked, descend, stop=None) -> bool:
    """After kernels.descend_stacks ran pair rows `rows` (n,) toward targets (n,): build the
    octants each blocked row stopped for (the want bits of its top entry's nodes: a tested pair)
    and resume those rows, `descend(rows, targets)`, until none is blocked; then touch every node of the
    colliding pairs the stacks hold (a continuation's: its parent pair's).
    sa, sb (k, width) int64, height (k,) int64, blocked (k,) bool: the in-place stacks.
    stop: None, or stop(A, B, nodes_a, nodes_b) -> True when the build round for those nodes may not
    start (BuildRounds): the rows still blocked are left so, their want bits cleared (no later
    build makes octants for them).
    Returns whether any row was resumed (its level changed)."""
    if not (isinstance(A, OcstBank) or isinstance(B, OcstBank)):
        return False  # prebuilt trees: nothing is ever unbuilt
    stuck = np.flatnonzero(blocked[rows])
    resumed = len(stuck) > 0
    r = rows
    while True:  # touched before each build: a build may evict what the sample does not hold (_make_room)
        _touch_rows(A, B, sa, sb, height, r)
        if not len(stuck):
            return resumed
        r = rows[stuck]
        tops = sa[r, height[r] - 1], sb[r, height[r] - 1]
        if stop is not None and stop(A, B, *tops):
            for bank, nodes in _by_bank(A, B, *tops):
                bank.want[nodes] = 0
            return resumed
        _build(A, B, *tops)
        descend(r, targets[stuck])
        stuck = stuck[blocked[r]]


class BuildRounds:
    """resume_stacks's `stop` for work that may be left undone (the exact level's first contacts
    under a deadline [s] of `clock`): a build round (a build, the rows' resume and their search up
    to the next build) starts only when it is predicted to end by the deadline, at the mean of the
    rounds this object let start (the first starts unless the deadline has passed: the caller
    started the batch because a row was predicted to fit), and when its octants fit within each
    bank's cap once the spheres the sample does not hold are evicted (OcstBank._make_room). A round
    cannot be cut once started, and a row's first contact on trees being built may take tens of
    rounds (~0.1 ms each, more with evictions): run to the end they overran a lamps frame's deadline
    by up to 19 ms, and the spheres they held passed the cap. (The longest round instead of the mean
    can refuse every later round after one preempted on a shared core; in paired lamps runs the mean
    reached the triangles in 1.0-1.9x as many pair-samples, frames within target no fewer.)"""

    def __init__(self, clock, deadline: float):
        self.clock, self.deadline = clock, deadline
        self.start, self.rounds = None, 0

    def __call__(self, A, B, nodes_a, nodes_b) -> bool:
        now = self.clock()
        if self.start is None:
            self.start = now
        mean = (now - self.start) / self.rounds if self.rounds else 0.0  # each round ends before the next call
        if now + mean > self.deadline or not all(bank._make_room(nodes) for bank, nodes in
                                                 _by_bank(A, B, nodes_a, nodes_b)):
            return True
        self.rounds += 1
        return False


def _touch_rows(A, B, sa, sb, height, rows) -> None:
    """Touch every node of the colliding pairs the stacks of `rows` hold (a continuation's: its
    parent pair's, kernels.py)."""
    for bank, s, side_b in ((A, sa, False), (B, sb, True)):
        if isinstance(bank, OcstBank):
            _touch_stacks(bank.stamp, bank.touched, bank.scanned, bank.parent, bank.now, s, sb, height, rows, side_b)


def resume_blocked(A, B, piece, complete):
    """After kernels.complete_pairs: piece = (ptr, fa, fb, blocked) over some rows, where blocked
    rows hold, beside their leaf pairs, pairs waiting for octants (want bits). Build those, and rerun the
    blocked rows idx from their output, `complete(idx, ptr, fa, fb)`, until none is blocked.
    Returns (ptr, fa, fb), as a prebuilt bank's call gives it."""
    ptr, fa, fb, blocked = piece
    while True:  # touched before each build: a build may evict what the sample does not hold (_make_room)
        for bank, col in ((A, fa), (B, fb)):
            if isinstance(bank, OcstBank):
                bank.touch(col)
        if not blocked.any():
            return ptr, fa, fb
        idx = np.flatnonzero(blocked)
        ptr_i, fa_i, fb_i = _rows_of(ptr, (fa, fb), idx)
        _build(A, B, fa_i, fb_i)
        again = complete(idx, ptr_i, fa_i, fb_i)
        ptr, fa, fb = _replace_rows(ptr, (fa, fb), idx, again[0], again[1:3])
        blocked = np.zeros(len(blocked), bool)
        blocked[idx] = again[3]


def _build(A, B, nodes_a, nodes_b) -> None:
    """Build the octants blocked pairs want at their nodes of A and of B, one call per bank."""
    for bank, nodes in _by_bank(A, B, nodes_a, nodes_b):
        bank.build(nodes)


def _by_bank(A, B, nodes_a, nodes_b):
    """(bank, its nodes) for each on-collide bank of A and B: one entry when A is B (a frame's
    pairs are mostly within one bank: one build, not two)."""
    if A is B:
        return [(A, np.concatenate([nodes_a, nodes_b]))] if isinstance(A, OcstBank) else []
    return [(bank, nodes) for bank, nodes in ((A, nodes_a), (B, nodes_b)) if isinstance(bank, OcstBank)]


def _rows_of(ptr, cols, idx):
    """CSR (ptr, *cols) restricted to rows idx."""
    counts = ptr[idx + 1] - ptr[idx]
    sub_ptr = np.zeros(len(idx) + 1, np.int64)
    np.cumsum(counts, out=sub_ptr[1:])
    src = np.repeat(ptr[idx] - sub_ptr[:-1], counts) + np.arange(sub_ptr[-1])
    return (sub_ptr, *(c[src] for c in cols))


def _replace_rows(ptr, cols, idx, new_ptr, new_cols):
    """CSR (ptr, *cols) with rows idx replaced by the CSR (new_ptr, *new_cols) over those rows."""
    n = len(ptr) - 1
    counts = np.diff(ptr)
    counts[idx] = np.diff(new_ptr)
    out_ptr = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=out_ptr[1:])
    keep = np.ones(n, bool)
    keep[idx] = False
    old_rows = np.repeat(np.arange(n), np.diff(ptr))
    take = keep[old_rows]
    dest_old = np.repeat(out_ptr[:-1] - ptr[:-1], np.diff(ptr))[take] + np.flatnonzero(take)
    dest_new = np.repeat(out_ptr[idx] - new_ptr[:-1], np.diff(new_ptr)) + np.arange(new_ptr[-1])
    out = []
    for c, nc in zip(cols, new_cols):
        o = np.empty(out_ptr[-1], c.dtype)
        o[dest_old] = c[take]
        o[dest_new] = nc
        out.append(o)
    return [out_ptr, *out]
