"""Time-critical narrow phase (Hubbard 1996): refine all candidate pairs together, one sphere-tree
level at a time, round-robin, until the frame's deadline — every colliding pair reaches at least
`min_level` whatever the clock says — then exact triangle tests on colliding leaves while time
allows.

Levels: 0 is the two root spheres, k the tree's level k (a leaf stands in for itself below its
level), and depth + 1 the exact triangle level (depth = the deeper of the two trees).

Certainty: sphere trees cover their ships conservatively, so a pair found apart at any level is
certainly apart (`certain` is True); a pair still colliding at a sphere level may be a false
positive, and its `separation_bound` says how far apart the ships may be at most.

Early exit: "colliding at level k" needs only one colliding sphere pair at level k (a witness),
"apart at level k" needs every colliding pair of level k - 1 expanded. So each pair keeps a
depth-first stack of colliding node pairs not yet expanded, and deepening it to the next level
stops at the first witness (kernels.descend_stacks); an expansion tests child pairs only until
one overlaps and keeps the rest untested in a continuation (kernels.py, "lazy sibling testing"):
on a deep overlap a handful of sphere tests per level instead of most of the tree, with the
verdict and level a breadth-first descent would give. Only the exact level needs every colliding
leaf pair, and in first-contact mode only when the witness's own leaves meet nothing (on
on-collide trees, not even then: they go on depth-first, leaf pair by leaf pair). The
separation bound is the best over the stacked pairs (the witness and its ancestors).

Why, in figures (sphere level 2 per pair on 1,000 deep poses, the row "sphere level 2" of
`spaceship-sim bench narrowphase --poses 1000 --poses-kind deep --brute-poses 1 --repeat 3`, run on the
code before and after each change; a quiet 2-core VM, November 2026; the history of kernels.py has both):
- Depth-first early exit with lazy sibling testing, against expanding every (children of A) x
  (children of B) pair breadth-first: CPU time (`--clock cpu`) lamp 1.19 -> 0.44 µs, fighter 1.09 -> 0.47,
  freighter 0.44 -> 0.33, torus 1.34 -> 0.50, capsules 1.13 -> 0.35; fcl's first contact over level 2
  went from 4.4-20x to 14.6-29.6x on deep poses (44-134x near touching), same verdicts and levels.
- The enclosing-sphere skip (kernels._scan_children: a child of B whose sphere misses the sphere
  around A's children is skipped with one test instead of one per child of A): on deep poses most
  pairs are apart at level 2, so a colliding level-1 pair used to have all its 8 x 8 child pairs
  tested. Median of five alternating processes: lamp 0.443 -> 0.377 µs, fighter 0.476 -> 0.384,
  freighter 0.309 -> 0.274, torus 0.513 -> 0.430, capsules 0.336 -> 0.301; the fighter's deep
  fcl / level 2 went 8.8x -> 10.6-11.1x, every answer unchanged.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import time
import weakref
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

import numpy as np

from ..clock import WALL, kernel_clock, sync_clock
from ..cost import CostModel
from .bank import TreeBank, bank_of
from .fairness import NOT_FAIR
from .intervals import (NO_KEPT, CarriedIntervals, bank_parts, narrow_round, narrow_round_reference, opened,
                        row_poses, verdict_bounds, widest_first)
from .kernels import (BAD_MODELS, BAD_PAIRS, CAP, DEPTH, MA, MB, ROOT_A, ROOT_B, ROWS, TRI_A, TRI_B, Tree,
                      complete_pairs, count_leaves, csr_by_pose_row, descend_stacks, exact_pairs, first_contacts,
                      leaves_of, scratch_views, search_levels, stack_width, stacks_csr, summarize_stacks, SCRATCH_FLAGS,
                      SCRATCH_FLOATS, SCRATCH_INTS)
from .ocst import BuildRounds, resume_blocked, resume_stacks
from .volumes import volume_of

PROBE = 8               # pair rows in the first descent call of a level under a finite deadline
EXACT_PROBE = 1         # ... of the exact level: one row's triangle tests can take a millisecond
# The exact level's cost model for all contacts (fitted on 1,419 rows of a lamps run on a 2-core runner,
# in thread CPU time): the triangle tests of a batch of rows cost 60 µs a call plus 0.031 µs per
# triangle of their leaf pairs (each leaf's, counted per pair it is in), i.e. CALL_UNITS + triangles
# at the rate measured so far in the call, EXACT_UNIT_COST [s per unit] before the first measurement;
# a batch's leaf frontier costs 80 µs plus 0.18 µs a leaf pair first, so no batch starts with less than
# EXACT_FIRST_COST [s] left before the first is measured
CALL_UNITS = 2000
EXACT_UNIT_COST = 3.1e-8
EXACT_FIRST_COST = 1.5e-4
# each exact strategy's cost per unit (seconds per CALL_UNITS + leaf triangle) as its calls measured it on
# each clock: the rate a call prices its rows at before it has measured its own (cost.CostModel: an outlier
# does not stick, and a strategy priced out of every budget is probed with one row every EXACT_PROBE_AFTER
# calls). Per clock: a warm-up's wall-clock seconds say nothing of a TickClock's, and a run on one must
# make the same decisions whatever ran before it on another.
_UNIT_COST = weakref.WeakKeyDictionary()
EXACT_PROBE_AFTER = 4
# ... and its time per row of the distance query that closes the interval of a pair found apart
# (_apart_distances): a row never starts where that would end past the deadline (a crowd.toml row,
# two freighters side by side, takes ~3 ms on a 2-core runner; the prior holds until the first row ran)
_DISTANCE_COST = weakref.WeakKeyDictionary()
DISTANCE_ROW_COST = 3e-4
MAX_BATCH = 1 << 16     # pairs per kernel call at most (bounds the scratch arrays)
FINISH_COST = 6e-8      # [s] per held node pair: time kept back from the deadline for the final
                        # summary (bounds, contacts), measured ~50 ns per pair on a 2-core runner
# Leaf pairs a first-contact row tries depth-first before its whole leaf frontier is tested (-1: all;
# _Search._first_contacts says why)
LEAF_PAIRS_TRIED = {"prebuilt": 4, "on-collide": -1}
NO_LIMIT = 1 << 62      # a forced level past every tree: each row straight to its deepest sphere level
# verdict-then-tighten (intervals.py): the node pairs each open row gets in the first round (x4 a
# round). On lamps.toml's apart pairs 4 leave a median interval of 2.6 m of the verdict's 6.9 m and
# 8 leave 1.3 m: a first round of 8 is what takes most rows below a third of the verdict's width
TIGHTEN_POPS = 8
# ... and the time the narrowing takes besides its node pairs, per clock (_tighten_cost): before
# them, the intervals made, carried and ordered; after them, the verdicts settled and the intervals
# kept (~55 and ~25 µs a sample of ~20 pairs on lamps.toml after a 31 ms render, caches cold)
_TIGHTEN_COST = weakref.WeakKeyDictionary()
TIGHTEN_SET_UP_COST, TIGHTEN_FINISH_COST = 5.5e-5, 2.5e-5
# ... and per node pair a row may pop (_Search._narrow_rounds; a pop with its children's tests and
# up to TRIANGLES_PER_POP triangle pairs: ~1 µs)
_POP_COST = weakref.WeakKeyDictionary()
TIGHTEN_POP_COST = 1e-6


@dataclass(eq=False)
class FrameNarrowResult:
    """Narrow-phase answer for k candidate pairs (arrays over the pairs, in input order).

    pairs            : (k, 2) int64, ship indices (A, B)
    colliding        : (k,) bool
    level            : (k,) int64, deepest level reached (depth + 1 = exact triangle level)
    certain          : (k,) bool, the answer is certain: found apart, or triangles were tested
    separation_bound : (k,) float64 [m], upper bound on the ships' separation; 0 when intersecting
                       triangles were found, +inf when not colliding
    contact_point    : (k, 3) float64, world [m], mean of the middles of the overlaps of the
                       witness sphere pair and its ancestors (nan when not colliding)
    contact_normal   : (k, 3) float64, world, unit, from ship A toward ship B (for response): the
                       root spheres' centre line (kernels.summarize_stacks)
    time_used        : float [s]
    level_histogram  : (max_level + 1,) int64, colliding pairs per level reached
    distance         : (k,) float64 [m], exact separation of pairs found apart when an exact strategy
                       that measures it ran and time allowed (0 for pairs with intersecting triangles),
                       else nan
    sphere_pairs     : list of k (p, 2) int32 arrays: colliding (node of A, node of B) at the pair's
                       level — the witness found there, not every colliding pair of that level —
                       node indices local to each model's SphereTree
    tri_pairs        : list of k (q, 2) int32 arrays: intersecting (face of A, face of B), local
    time_in_batches  : float [s], wall time of time_used spent inside the timed kernel batches (the
                       rest is per-call overhead: set-up, bookkeeping between batches, the summary)
    bound_pairs      : (k, 2) int64 or None: the colliding sphere pair (node of A, node of B, local)
                       the separation bound comes from — the witness or one of its ancestors — -1
                       where none (pairs apart); None from strategies without sphere trees
    lower, upper     : (k,) float64 [m], lower <= the ships' surface distance <= upper (intervals.py);
                       lower == upper where it is known exactly
    """

    pairs: np.ndarray
    colliding: np.ndarray
    level: np.ndarray
    certain: np.ndarray
    separation_bound: np.ndarray
    contact_point: np.ndarray
    contact_normal: np.ndarray
    time_used: float
    level_histogram: np.ndarray
    distance: np.ndarray
    # (ptr (k+1,), global ids of A (P,), of B (P,), per-pair id offsets of A (k,), of B (k,))
    _spheres: tuple = field(repr=False)
    _tris: tuple = field(repr=False)
    time_in_batches: float = 0.0
    bound_pairs: np.ndarray | None = None
    # how the separation intervals are made, on first use (a verdict-only caller never pays for them):
    # answer -> (lower, upper); None: from the verdict alone (sphere trees know more: intervals.py)
    interval_source: object = field(default=None, repr=False)

    @cached_property
    def interval(self) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper), made on first use and then kept (tightening narrows them in place)."""
        return (self.interval_source or verdict_interval)(self)

    @property
    def interval_known(self) -> bool:
        """Whether the intervals have been made (read, or narrowed by the tightening)."""
        return "interval" in vars(self)

    @property
    def lower(self) -> np.ndarray:
        return self.interval[0]

    @property
    def upper(self) -> np.ndarray:
        return self.interval[1]

    # per-pair lists are built only when asked for: most frames never look at them
    @cached_property
    def sphere_pairs(self) -> list[np.ndarray]:
        return _local_pairs(*self._spheres)

    @cached_property
    def tri_pairs(self) -> list[np.ndarray]:
        return _local_pairs(*self._tris)


def verdict_interval(answer) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) from a verdict alone: [0, 0] where triangles intersect, the exact distance
    where one was measured, [0, separation bound] where colliding at a sphere level, [0, inf) else."""
    lower = np.where(np.isfinite(answer.distance), answer.distance, 0.0)
    upper = np.where(np.isfinite(answer.distance), answer.distance,
                     np.where(answer.colliding, answer.separation_bound, np.inf))
    touching = answer.colliding & answer.certain
    lower[touching] = upper[touching] = 0.0
    return lower, upper


def _local_pairs(ptr, ga, gb, off_a, off_b) -> list[np.ndarray]:
    """Per pair row, its (p, 2) int32 id pairs made local to each model (global - offset)."""
    rows = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    local = np.stack([ga - off_a[rows], gb - off_b[rows]], 1).astype(np.int32)
    return [local[a:b] for a, b in zip(ptr[:-1].tolist(), ptr[1:].tolist())]


@dataclass(frozen=True)
class PairResult:
    """collide_pair's answer for one pair; fields as in FrameNarrowResult, one pair's worth.

    sphere_pairs : (p, 2) int32, colliding (node of A, node of B) at `level`
    tri_pairs    : (q, 2) int32, intersecting (face of A, face of B) at the exact level
    """

    colliding: bool
    level: int
    sphere_pairs: np.ndarray
    separation_bound: float
    certain: bool
    tri_pairs: np.ndarray
    contact_point: np.ndarray
    contact_normal: np.ndarray


def collide_pair(tree_a, T_a, tree_b, T_b, max_level=None, triangle_tests=True, all_contacts=True) -> PairResult:
    """Refine one pair of ships with no deadline.

    tree_a, tree_b : SphereTree;  T_a, T_b : (4, 4) float64 rigid body->world transforms
    max_level      : deepest sphere level to refine to (None: the leaves); the exact triangle
                     level runs when `triangle_tests` and the leaves were reached
    all_contacts   : False stops the exact level at the first intersecting triangle pair
    """
    T = np.stack([_transform(T_a, "T_a"), _transform(T_b, "T_b")])
    r = _refine(bank_of(tree_a), bank_of(tree_b), np.zeros(2, np.int64), T, np.array([[0, 1]], np.int64),
                deadline=math.inf, min_level=0, max_level=max_level, triangle_tests=triangle_tests,
                all_contacts=all_contacts)
    return PairResult(colliding=bool(r.colliding[0]), level=int(r.level[0]), sphere_pairs=r.sphere_pairs[0],
                      separation_bound=float(r.separation_bound[0]), certain=bool(r.certain[0]),
                      tri_pairs=r.tri_pairs[0], contact_point=r.contact_point[0],
                      contact_normal=r.contact_normal[0])


def refine_frame(bank: TreeBank, model_id, T, pairs, deadline: float, min_level: int = 1, max_level=None,
                 triangle_tests: bool = True, all_contacts: bool = True, clock=WALL, detector=None,
                 fair=None, tighten: bool = False, tighten_share: float = 0.0,
                 carried: CarriedIntervals | None = None, tighten_until: float = math.inf) -> FrameNarrowResult:
    """Refine the frame's candidate pairs until `clock()` reaches `deadline`.

    model_id : (n,) int, each ship's model (index into bank.trees)
    T        : (n, 4, 4) float64, rigid body->world transform of each ship
    pairs    : (k, 2) int, candidate ship pairs (A, B) from the broad phase
    min_level: every colliding pair is refined at least this deep, deadline or not (a value past
               the leaves forces the exact level too)
    max_level: deepest sphere level (None: the leaves); triangle_tests: finish with triangle tests
    all_contacts: False stops each pair's exact level at its first intersecting triangle pair
               (enough for yes/no and response; tri_pairs then holds at most one pair)
    clock    : spaceship_sim.clock object the deadline refers to (read between kernel batches)
    detector : an exact strategy over the bank's models (narrowphase.exact, e.g. SSVExact) to run the
               exact level instead of the sphere-tree leaves' triangles; when it measures distance,
               the pairs found apart then get their exact separation while time allows
    fair     : a fairness.FairOrder over the n bodies: the round-robin deepens the pairs least
               served so far first, and the levels reached are recorded in it (None: in the
               given order, nothing recorded)
    tighten  : verdict-then-tighten: under a finite deadline the verdicts get (1 - tighten_share) of
               the time, and what they leave narrows the widest separation intervals (intervals.py);
               False: the intervals are what the verdicts know
    carried  : with tighten, the intervals of earlier samples (intervals.CarriedIntervals): carried to
               these poses before the narrowing, and this sample's kept in it after
    tighten_until: the work a frame can do without (the narrowing, with tighten; the exact distances
               of pairs found apart) stops here if that is before the deadline (the frame keeps what
               the OS may yet take from it: sim/pipeline.py)
    """
    pairs = np.ascontiguousarray(pairs, dtype=np.int64).reshape(-1, 2)  # contiguous: one kernel compilation
    model_id = np.ascontiguousarray(model_id, dtype=np.int64)
    T = np.ascontiguousarray(T, dtype=np.float64)
    if T.ndim != 3 or T.shape[1:] != (4, 4) or len(T) != len(model_id):
        raise ValueError(f"T must be (n, 4, 4) with n = len(model_id) = {len(model_id)}, got {T.shape}")
    # pair and model indices are checked by the kernels, where they are read (_Search.levels)
    return _refine(bank, bank, model_id, T, pairs, deadline=deadline, min_level=min_level, max_level=max_level,
                   triangle_tests=triangle_tests, all_contacts=all_contacts, clock=clock, detector=detector,
                   fair=fair, tighten=tighten, tighten_share=tighten_share, carried=carried,
                   tighten_until=tighten_until)


def refine_roots(bank: TreeBank, model_id, T, pairs, clock=WALL) -> FrameNarrowResult:
    """Level 0 only, in numpy: the answer while numba compiles the kernels on a cold start, so
    that ships can fly (and bounce off each other's bounding spheres) from the first frame.
    Arguments and result as refine_frame's; colliding pairs are at level 0, never certain."""
    start = clock()
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    model_id, T = np.asarray(model_id, dtype=np.int64), np.asarray(T, dtype=np.float64)
    k = len(pairs)
    roots = [bank.node_offset[model_id[pairs[:, side]]].astype(np.int64) for side in (0, 1)]

    def world(points, side):  # body-frame points of each pair's ship on `side` -> world
        Ts = T[pairs[:, side]]
        return np.einsum("kij,kj->ki", Ts[:, :3, :3], points) + Ts[:, :3, 3]

    (ca, cb), (wa, wb) = ([world(arr[roots[side]], side) for side in (0, 1)] for arr in (bank.center, bank.witness))
    ra, rb = bank.radius[roots[0]], bank.radius[roots[1]]
    d = np.linalg.norm(cb - ca, axis=1)
    colliding = d <= ra + rb
    normal = np.divide(cb - ca, d[:, None], out=np.tile([1.0, 0.0, 0.0], (k, 1)), where=d[:, None] > 0)
    mid = 0.5 * (np.maximum(-ra, d - rb) + np.minimum(ra, d + rb))  # the overlap's middle on the centre line
    bound = np.minimum(bank.error[roots[0]] + bank.error[roots[1]], np.linalg.norm(wa - wb, axis=1))
    bound[~colliding] = np.inf
    point = np.where(colliding[:, None], ca + mid[:, None] * normal, np.nan)
    normal[~colliding] = 0.0
    ptr = np.zeros(k + 1, np.int64)
    np.cumsum(colliding, out=ptr[1:])
    n_levels = int(bank.max_level) + 1
    return FrameNarrowResult(
        pairs=pairs, colliding=colliding, level=np.zeros(k, np.int64), certain=~colliding, separation_bound=bound,
        contact_point=point, contact_normal=normal, time_used=clock() - start,
        level_histogram=np.bincount(np.zeros(int(colliding.sum()), np.int64), minlength=n_levels),
        distance=np.full(k, np.nan), _spheres=(ptr, roots[0][colliding], roots[1][colliding], roots[0], roots[1]),  # roots: local id 0
        _tris=(np.zeros(k + 1, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(k, np.int64),
               np.zeros(k, np.int64)),
        bound_pairs=np.where(colliding[:, None], np.zeros((k, 2), np.int64), -1))  # the roots: local id 0


@dataclass(frozen=True)
class NarrowPhase:
    """The narrow-phase stage as the frame runs it: how deep `refine_frame` goes (levels as in
    the module docstring); the deadline and clock come with each call.

    min_level    : every colliding pair is refined at least this deep, deadline or not [-]
    max_level    : deepest sphere level, None for the leaves [-]
    triangle_tests : finish with triangle tests when time allows
    all_contacts : False stops each pair's exact level at its first intersecting triangle pair
    detector     : as refine_frame's (collision.exact_method = "ssv": an SSVExact)
    tighten      : as refine_frame's (collision.distance_intervals = "tighten")
    tighten_share: as refine_frame's (collision.interval_share)
    carried      : what the tightening carries from sample to sample (refine_frame's); a copy made
                   with dataclasses.replace shares it
    """

    min_level: int = 1
    max_level: int | None = None
    triangle_tests: bool = True
    all_contacts: bool = True
    detector: object = None  # exact strategy for the exact level (narrowphase.exact; None: the leaves)
    tighten: bool = False
    tighten_share: float = 0.0
    carried: CarriedIntervals = field(default_factory=CarriedIntervals, compare=False, repr=False)

    def __post_init__(self):
        if not (isinstance(self.min_level, int) and self.min_level >= 0):
            raise ValueError(f"min_level must be an int >= 0, got {self.min_level!r}")
        if self.max_level is not None and not (isinstance(self.max_level, int) and self.max_level >= 0):
            raise ValueError(f"max_level must be None or an int >= 0, got {self.max_level!r}")

    def __call__(self, bank: TreeBank, model_id, T, pairs, deadline: float, clock=WALL, fair=None,
                 tighten_until: float = math.inf) -> FrameNarrowResult:
        """refine_frame with these settings (arguments as refine_frame's)."""
        return refine_frame(bank, model_id, T, pairs, deadline, min_level=self.min_level, max_level=self.max_level,
                            triangle_tests=self.triangle_tests, all_contacts=self.all_contacts, clock=clock,
                            detector=self.detector, fair=fair, tighten=self.tighten, tighten_share=self.tighten_share,
                            carried=self.carried, tighten_until=tighten_until)


def _transform(T, name) -> np.ndarray:
    T = np.asarray(T, dtype=np.float64)
    if T.shape != (4, 4) or not np.all(np.isfinite(T)):
        raise ValueError(f"{name} must be a finite (4, 4) transform, got shape {T.shape}")
    return T


class _Frontier:
    """CSR of colliding node pairs for a set of pair rows: rows (a,), ptr (a+1,), and per entry
    fa, fb (global node ids of A and B) and fl (the entry's level). Under the sphere levels a
    row's entries are its depth-first stack (top last, see kernels.descend_stacks)."""

    def __init__(self, rows, ptr, fa, fb, fl):
        self.rows, self.ptr, self.fa, self.fb, self.fl = rows, ptr, fa, fb, fl


def _run_batches(kernel, n: int, deadline: float, n_forced: int, clock, probe: int = PROBE,
                 first_cost: float = 0.0, cost: CostModel | None = None):
    """Call kernel(s, e) over active rows 0..n in batches until done or past the deadline; the
    first n_forced rows run whatever the clock says. A small probe batch measures the time per
    row; each later batch is sized to use a third of the time left, so the deadline is approached
    geometrically with few numba dispatches (one when there is no deadline) and an overshoot of
    a few rows at most; no batch past the forced ones starts where even a probe batch (at the
    measured time per row; first_cost [s] before any is measured) would end past the deadline.
    kernel(s, e) -> (end, piece): it may stop early, at row end < e, when the rest would not
    finish in time (then the batches stop too), and `piece` covers rows s..end.
    cost: a model of the time per row remembered across calls, which then prices the first probe
    (unless its probe is due) and learns from the rows run (one clock read more, only when some ran).
    Returns (rows processed, [piece], wall seconds inside kernel(): an instrument for reports,
    read from the wall clock, never from `clock`, so that it changes nothing a test's clock
    sees)."""
    if cost is not None:
        first_cost = 0.0 if cost.probe_due else cost.predict(probe)
    pieces, done, busy = [], 0, 0.0
    batch = probe if math.isfinite(deadline) else MAX_BATCH
    t_start = clock()
    while done < n:
        now = clock()
        per_row = max((now - t_start) / done, 1e-9) if done else 0.0
        if done >= n_forced and now + (probe * per_row if done else first_cost) >= deadline:
            break
        if done and math.isfinite(deadline):
            batch = int(min(max((deadline - now) / (3 * per_row), probe), MAX_BATCH))
        e = min(done + batch, n if done >= n_forced else n_forced)
        t0 = time.perf_counter()
        end, piece = kernel(done, e)
        busy += time.perf_counter() - t0
        pieces.append(piece)
        done = end
        if end < e:
            break
    if cost is not None and done:
        cost.observe(clock() - t_start, done)
    elif cost is not None and n > n_forced:
        cost.refused()
    return done, pieces, busy


def _join(rows, pieces) -> _Frontier:
    """One frontier from the kernels' CSR pieces (ptr, a, b[, levels]) over consecutive rows."""
    if not pieces:
        empty = np.zeros(0, np.int64)
        return _Frontier(empty, np.zeros(1, np.int64), empty, empty, empty)
    ptrs, off = [np.zeros(1, np.int64)], 0
    for p in pieces:
        ptrs.append(p[0][1:] + off)
        off += p[0][-1]
    fa, fb = np.concatenate([p[1] for p in pieces]), np.concatenate([p[2] for p in pieces])
    fl = np.concatenate([p[3] for p in pieces]) if len(pieces[0]) > 3 else np.zeros(len(fa), np.int64)
    return _Frontier(rows, np.concatenate(ptrs), fa, fb, fl)


def _merge_hits(first, rows, second):
    """CSR (ptr, a, b) of hits over a batch: `first`'s, except for the batch rows `rows`, whose
    hits come from `second` (a CSR over those rows only)."""
    n = len(first[0]) - 1
    counts = np.diff(first[0])
    counts[rows] = np.diff(second[0])
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=ptr[1:])
    row_of = np.concatenate([np.repeat(np.arange(n), np.diff(first[0])), np.repeat(rows, np.diff(second[0]))])
    order = np.argsort(row_of, kind="stable")
    return (ptr, *(np.concatenate([f, g])[order] for f, g in zip(first[1:], second[1:])))


def _refine(bank_a: TreeBank, bank_b: TreeBank, model_id, T, pairs, deadline, min_level, max_level, triangle_tests,
            all_contacts=True, clock=WALL, detector=None, fair=None, tighten=False, tighten_share=0.0,
            carried=None, tighten_until=math.inf) -> FrameNarrowResult:
    """Refine k pair rows (pairs (k, 2) int64 of bodies with models model_id (n,) int64 — A's in
    bank_a, B's in bank_b — and body->world transforms T (n, 4, 4) float64, all C-contiguous) in
    four stages: the sphere levels, the exact level while time allows, the summary, and (tighten)
    the separation intervals narrowed until the deadline."""
    start = clock()
    search = _Search(bank_a, bank_b, model_id, T, pairs, max_level, clock, start, fair)
    final = min(deadline, tighten_until)  # where the work a frame can do without ends
    if tighten:  # the verdicts' own deadline: the share kept from them for the narrowing
        deadline = start + (1.0 - tighten_share) * (deadline - start)
    try:
        leaves = search.levels(deadline, min_level)
        if triangle_tests and leaves:
            search.exact_level(deadline, min_level, all_contacts, detector)
        if _measures_distance(detector):  # pairs found apart, time allowing: work a frame can do without,
            # so it ends where the narrowing must (to the verdicts' deadline, on a busy machine it took the
            # time of the next sample's verdicts)
            todo = np.flatnonzero(search.apart & np.isnan(search.distance))
            search.distance[todo], busy = _apart_distances(detector, search.ma, search.mb, search.Ta, search.Tb,
                                                           todo, search.time_left(min(deadline, final)), clock)
            search.busy += busy
        answer = search.summary(pairs, start)
        if tighten:
            search.tighten(answer, start, final, detector, triangle_tests, carried)
        return answer
    finally:
        _SCRATCH.give_back(search.scratch)


class Scratch:
    """A search's arrays and the kernels' argument tuples over them, reused from call to call: a
    fresh multi-megabyte stack array costs a page fault for every page the search touches, on
    every call (measured: 2 ms for the stacks of 1,000 pairs, twice the search itself), and on a
    frame of tens of pairs, allocating and slicing some twenty small arrays and tupling them up on
    every call cost more than the search itself. Holds `flat`, four arrays (ints, flags, floats,
    stacks (3, entries)) for up to `rows` pair rows, laid out by kernels.scratch_views, which the
    two kernels of every call take as they are. args(A, B, k, width) -> dict of
    what _Search keeps (see there), every array C-contiguous of exactly k rows (one kernel
    compilation whatever k), made once per shape and, for prebuilt banks (their arrays never
    change), per pair of banks. None of them escapes into an answer (kernels.summarize_stacks
    copies what does)."""

    KEPT = 64  # shapes whose views are kept (a long run sees a few hundred pair counts)

    def __init__(self, rows: int, entries: int):
        self.rows, self.entries = rows, entries
        self.flat = (np.empty(SCRATCH_INTS * rows + 3, np.int64), np.empty(SCRATCH_FLAGS * rows, bool),
                     np.empty(SCRATCH_FLOATS * rows), np.empty((3, entries), np.int64))
        self._made = {}

    @property
    def stacks(self) -> np.ndarray:
        return self.flat[3]

    def fits(self, k: int, width: int) -> bool:
        return k <= self.rows and k * width <= self.entries

    def args(self, A, B, k: int, width: int) -> "SearchArrays":
        prebuilt = isinstance(A, TreeBank) and isinstance(B, TreeBank)  # no node is ever unbuilt
        key = (k, width, id(A), id(B)) if prebuilt else (k, width)
        got = self._made.get(key)
        if got is None or (prebuilt and not (got.A is A and got.B is B)):
            if len(self._made) >= self.KEPT:
                self._made.clear()
            got = self._made[key] = self._views(k, width, A, B, prebuilt)
        if not prebuilt:  # an on-collide bank grows its arrays: read afresh each call
            got = dataclasses.replace(got, **bank_args(A, B)._asdict(), A=A, B=B)
        return got

    def _views(self, k: int, width: int, A, B, prebuilt: bool) -> "SearchArrays":
        rows, pose, state, known, plan, batch, _ = scratch_views(self.flat, k, width)
        return SearchArrays(A, B, *bank_args(A, B), prebuilt, rows, rows[MA], rows[MB], rows[DEPTH],
                            rows[CAP], plan, batch, *pose, *known, *state, pose, state, known, _no_hits(k),
                            (self.flat, k, width))


@dataclass(eq=False)
class SearchArrays:
    """A search's banks and its k pair rows' arrays: views into a Scratch (kernels.scratch_views),
    and the kernels' argument tuples over them. Stacks are (k, width): `width` node pairs a row."""

    A: object                   # bank of the rows' A ships (TreeBank or ocst.OcstBank)
    B: object                   # bank of the rows' B ships
    trees: tuple                # (A's, B's) kernels.Tree: what the descent reads of the banks
    models: tuple               # the banks' per-model tables, kernels.search_levels's `models`
    prebuilt: bool              # both banks prebuilt: no node is ever unbuilt
    rows: np.ndarray            # (ROWS, k) int64: per row its models, depth, cap, roots (kernels.py)
    ma: np.ndarray              # (k,) int64, model of A
    mb: np.ndarray              # (k,) int64, model of B
    depth: np.ndarray           # (k,) int64, the deeper tree's depth: its leaves' level
    cap: np.ndarray             # (k,) int64, the deepest level the row may reach
    plan: np.ndarray            # kernels.search_levels's progress: level, next row, rows left
    batch: np.ndarray           # (2, k) int64, the rows a search call deepened and their targets
    Ta: np.ndarray              # (k, 4, 4) float64, A's body->world transform
    Tb: np.ndarray              # (k, 4, 4) float64, B's body->world transform
    R: np.ndarray               # (k, 3, 3) float64, B's rotation in A's frame
    t: np.ndarray               # (k, 3) float64 [m], B's origin in A's frame
    tested: np.ndarray          # (k,) bool, triangles were tested (a certain answer)
    distance: np.ndarray        # (k,) float64 [m], what an exact strategy measured (nan where none did)
    sa: np.ndarray              # (k, width) int64, stacked node pairs: A's global node ids
    sb: np.ndarray              # (k, width) int64, ... B's
    sl: np.ndarray              # (k, width) int64, ... their level
    height: np.ndarray          # (k,) int64, entries on each row's stack (top last)
    level: np.ndarray           # (k,) int64, the level each row reached
    apart: np.ndarray           # (k,) bool, found apart (certain)
    blocked: np.ndarray         # (k,) bool, on a node not built yet (ocst.py)
    pose: tuple                 # (Ta, Tb, R, t)
    state: tuple                # (sa, sb, sl, height, level, apart, blocked): descend_stacks's
    known: tuple                # (tested, distance)
    hits: tuple                 # CSR (ptr (k+1,), hit_a, hit_b) of intersecting triangle pairs, global ids
    packed: tuple               # (scratch arrays, k, width): search_levels's and summarize_stacks's


def _no_hits(k: int) -> tuple:
    """The hits (CSR, _Search) of k rows before the exact level finds any: shared by every call
    (nothing writes them; read-only flags would be another kernel signature to compile)."""
    return np.zeros(k + 1, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)


class BankArgs(NamedTuple):
    """The banks' part of a search's arguments."""

    trees: tuple   # (A's, B's) kernels.Tree
    models: tuple  # kernels.search_levels's `models`


def bank_args(A, B) -> BankArgs:
    """The banks' part of a search's arguments."""
    return BankArgs((tree_of(A), tree_of(B)), (A.node_offset, A.tri_offset, A.depth, B.node_offset, B.tri_offset,
                                               B.depth))


def tree_of(bank) -> tuple:
    """What the descent kernels read of a bank: its kernels.Tree, as a plain tuple (kernels.py says why)."""
    return tuple(Tree(bank.nodes, bank.first_child, bank.child_count, bank.spheres, cells_of(bank)))


class _ScratchPool:
    """Scratch (Scratch) that no other call holds: take(k, width) one that fits (a nested or
    concurrent call gets another), give_back when done."""

    def __init__(self):
        self._free = []

    def take(self, k: int, width: int) -> Scratch:
        scratch = self._free.pop() if self._free else None
        if scratch is None or not scratch.fits(k, width):
            old = (scratch.rows, scratch.entries) if scratch is not None else (0, 0)
            scratch = Scratch(max(k, old[0], 1), max(k * width, old[1], 1))
        return scratch

    def give_back(self, scratch: Scratch) -> None:
        self._free.append(scratch)


_SCRATCH = _ScratchPool()


def cells_of(bank):
    """The pending-octant arrays kernels._needs_children takes: an on-collide bank's own
    (ocst.OcstBank.cells), zeros for a prebuilt one (no octant is ever pending)."""
    cells = getattr(bank, "cells", None)
    return cells if cells is not None else _no_cells(len(bank.first_child))


@functools.lru_cache(maxsize=4)
def _no_cells(n: int):
    return np.zeros((1, 3)), np.zeros(1), np.zeros(n, np.int64), np.zeros(n, np.int64)


class _Search(SearchArrays):
    """The frame's pair rows while they are refined: relative poses, depths, every row's
    depth-first stack of colliding node pairs in place ((k, width) arrays sa, sb, sl and height,
    kernels.descend_stacks), the level each reached and what is known of it (SearchArrays's
    fields, views into a scratch this search holds until _refine gives it back).
    """

    def __init__(self, A, B, model_id, T, pairs, max_level, clock, start, fair=None):
        self.clock, self.start, self.fair = clock, start, fair  # start: the refinement's first reading
        k = len(pairs)
        if A is not B:
            volume_of(A, B)  # both banks' nodes must be the same kind of volume
        deepest = max(A.max_level, B.max_level) - 1  # of any model: the stacks are sized before the rows
        width = stack_width(A, B, deepest if max_level is None else min(deepest, max(int(max_level), 0)))
        self.scratch = _SCRATCH.take(k, width)
        vars(self).update(vars(self.scratch.args(A, B, k, width)))  # SearchArrays's fields, no per-field call
        self.frame = model_id, T, pairs, NO_LIMIT if max_level is None else max(int(max_level), 0)
        self.fair_args = NOT_FAIR if fair is None else fair.kernel_args(len(model_id))
        self.busy = 0.0  # wall seconds inside kernel batches (FrameNarrowResult.time_in_batches)

    def time_left(self, deadline: float) -> float:
        """The deadline for more work, less the time the summary will take over the held pairs."""
        return deadline - FINISH_COST * int(self.height.sum())

    def out_of_time(self, deadline: float) -> bool:
        """Whether the deadline had passed when the refinement began: then nothing runs past the
        forced work, and the clock, which only moves on, is not read to find that out again."""
        return deadline <= self.start

    def levels(self, deadline, min_level) -> int:
        """The sphere levels: `min_level` — every level when there is no deadline — whatever the
        clock says, then Hubbard's round-robin, one level at a time over all rows, until the
        deadline; returns how many rows may go on to the exact level (kernels.count_leaves).
        kernels.search_levels does the work; between its calls the clock is read and the time left
        turned into rows as _run_batches does: per level, a first probe of PROBE rows measures the
        time per row and each later call gets a third of the time left, so the deadline is
        approached geometrically with few calls and an overshoot of a few rows at most. When the
        deadline had passed at the start, that is one kernel call for the whole search."""
        search, plan = self._searcher(min_level if math.isfinite(deadline) else NO_LIMIT), self.plan
        _, more, leaves = search(0)
        if plan[0] in (BAD_PAIRS, BAD_MODELS):
            raise ValueError("pairs refer to ships outside 0..n-1" if plan[0] == BAD_PAIRS else
                             f"model_id outside 0..{min(self.A.n_models, self.B.n_models) - 1}")
        if self.out_of_time(deadline):
            return leaves
        level = None
        while more:
            now = self.clock()
            if plan[0] != level:  # a new level: its rows are timed from here
                level, t_start, done, left = plan[0], now, 0, self.time_left(deadline)
            if now >= left:
                break  # out of time: the rest stay at this level
            budget = PROBE
            if done:
                per_row = max((now - t_start) / done, 1e-9)
                budget = int(min(max((left - now) / (3 * per_row), PROBE), MAX_BATCH))
            n, more, leaves = search(budget)
            done += n
        return leaves

    def _searcher(self, forced: int):
        """search(budget) -> (rows deepened, more, leaves): one kernels.search_levels call of a
        fresh search (the first sets it up and forces every row to min(cap, forced)), its blocked
        rows resumed on on-collide trees, and its time counted in `busy`."""
        plan, batch = self.plan, self.batch
        plan[0] = -1

        def search(budget):
            t0 = time.perf_counter()  # wall clock: an instrument (time_in_batches), never a decision
            n, more, leaves = search_levels(*self.trees, self.models, self.frame, *self.packed, self.fair_args,
                                            forced, budget)
            if not self.prebuilt and resume_stacks(self.A, self.B, batch[0, :n], batch[1, :n], self.sa, self.sb,
                                              self.height, self.blocked, self._descend):
                leaves = count_leaves(self.rows, self.level, self.apart)  # on-collide trees: rows went on
                if not more and plan[0] >= 0:  # the kernel ended level plan[0] before they reached it
                    plan[1], plan[2], more = 0, 0, True  # (every forced row blocked): scan it again
            if n:  # a call that deepened nothing only set the search up: overhead, as root_stacks was
                self.busy += time.perf_counter() - t0
            return n, more, leaves

        return search

    def _descend(self, rows, targets) -> None:
        """Deepen `rows` toward targets (per row), in place (ocst.resume_stacks's resume)."""
        descend_stacks(*self.trees, self.pose, rows, targets, self.state)

    def stacks(self, rows, top_only=False) -> _Frontier:
        return _Frontier(rows, *stacks_csr(self.sa, self.sb, self.sl, self.height, rows, top_only))

    def exact_level(self, deadline, min_level, all_contacts, detector) -> None:
        """Triangle tests for the rows that reached their leaves (those whose min_level lies past
        their leaves first, whatever the clock), by the detector's strategy or on the leaves'
        triangles, while time allows."""
        want = ~self.apart & (self.level == self.depth) & (self.cap == self.depth)
        if not want.any():
            return
        order = np.argsort(~(min_level > self.depth), kind="stable")
        leaves = order[want[order]]

        n_forced, left = int(np.sum(min_level > self.depth[leaves])), self.time_left(deadline)
        if not n_forced and self.out_of_time(deadline):
            return

        def kernel(s, e):
            if detector is None and not all_contacts:
                return self._first_contacts(leaves[s:e], s, left if s >= n_forced else math.inf)
            return self._fitting_contacts(leaves, s, e, n_forced, left, spent, test, cost)

        test = self._leaf_contacts if detector is None else \
            functools.partial(self._detector_hits, detector, all_contacts=all_contacts)
        cost = _cost_model(detector, self.clock)  # the leaves' is learned afresh in each call
        spent = [0.0, 0]  # clock seconds and cost units of the contact tests so far
        done, pieces, busy = _run_batches(kernel, len(leaves), left, n_forced, self.clock, probe=EXACT_PROBE,
                                          first_cost=EXACT_FIRST_COST)
        if spent[1]:
            cost.observe(spent[0], spent[1])
        self.busy += busy
        tested = leaves[:done]
        found = _join(tested, pieces)
        none = tested[np.diff(found.ptr) == 0]
        self.level[tested] = self.depth[tested] + 1
        self.tested[tested] = True
        self.apart[none] = True
        self.height[none] = 0  # rows found apart by the triangles keep no sphere pairs
        self.hits = csr_by_pose_row(found.rows, found.ptr, found.fa, found.fb, len(self.level))

    def _fitting_contacts(self, leaves, s, e, n_forced, deadline, spent, test, cost):
        """(end, hits) for all contacts of rows leaves[s:e] under the deadline: their leaf frontier,
        then test(front, take) — the contacts of its first `take` rows, by the leaves' triangles
        (_leaf_contacts) or an exact strategy (_detector_hits) — for the longest run of them
        predicted to finish in time (at least the forced ones). One row's tests cannot be cut and
        may take milliseconds (two lamps in deep overlap hold ~1,000 leaf pairs; a face octree of two
        pulsing lamps, up to 19 ms), so a row whose cost would overrun the deadline is left at its
        sphere leaves, a conservative answer, instead of being started. The call costs CALL_UNITS
        plus the rows' leaf triangles (what any strategy's work grows with: the overlap), at the
        rate measured so far (`spent`: clock seconds, units; before any, the `cost` model's rate,
        which after refusing rows in several calls lets one row through as a probe while time is left)."""
        rows = leaves[s:e]
        front = self._all_leaves(rows)
        units = np.cumsum(self._leaf_triangles(front)) + CALL_UNITS
        rate = spent[0] / spent[1] if spent[1] else cost.rate()
        now = self.clock()
        late = units * rate > deadline - now
        take = max(int(np.argmax(late)) if late.any() else len(rows), min(max(n_forced - s, 0), len(rows)))
        if not take and not spent[1] and cost.probe_due and now < deadline:
            take = 1  # overruns by one row's cost at most
        if not take:
            if not spent[1]:
                cost.refused()
            return s, (np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))
        hits = test(front, take)
        spent[0] += self.clock() - now
        spent[1] += int(units[take - 1])
        return s + take, hits

    def _leaf_contacts(self, front, take):
        """Hits (CSR) of the first `take` rows of `front`: their leaf pairs' triangles, every contact."""
        end = int(front.ptr[take])
        return self._triangles(_Frontier(front.rows[:take], front.ptr[:take + 1], front.fa[:end], front.fb[:end],
                                         front.fl[:end]), False)

    def _leaf_triangles(self, front) -> np.ndarray:
        """Per row of `front`, the triangles of its leaf pairs (A's leaf's and B's, per pair)."""
        tpa, tpb = self.A.tri_ptr, self.B.tri_ptr
        per_pair = tpa[front.fa + 1] - tpa[front.fa] + tpb[front.fb + 1] - tpb[front.fb]
        total = np.zeros(len(per_pair) + 1, np.int64)
        np.cumsum(per_pair, out=total[1:])
        return np.diff(total[front.ptr])

    def _first_contacts(self, rows, s=0, deadline=math.inf):
        """(s + rows done, hits CSR over them) of rows (leaves[s:...]) that want one contact each:
        depth-first from the witness, the deepest overlap found, leaf pair by leaf pair
        (kernels.first_contacts), where a contact is likeliest. On prebuilt trees for a few leaf
        pairs, then the rest of the leaf frontier is tested whole: near-touching rows are mostly
        apart at the triangles, and the whole frontier tests each triangle pair once where leaf
        pairs repeat them. On on-collide trees to the end, since every leaf pair of the frontier is
        a node pair to build; there a row may need tens of build rounds, so under a finite deadline
        no round starts that would end past it or pass the cap (ocst.BuildRounds), and the rows
        from the first unfinished one on are put back at their sphere leaves as they were
        (conservative; the fair order serves them first next time)."""
        tries = LEAF_PAIRS_TRIED["prebuilt" if self.prebuilt else "on-collide"]
        hit = np.full((len(self.level), 2), -1, np.int64)
        rounds = None if self.prebuilt or not math.isfinite(deadline) else BuildRounds(self.clock, deadline)
        before = [a[rows] for a in self.state] if rounds is not None else None  # copies: fancy indexing
        todo = rows
        while len(todo):
            first_contacts(*self.trees, self.pose, todo, self.depth[todo], self.state, *self._leaves(), hit, tries)
            todo = todo[self.blocked[todo]]
            # every row given, not only the blocked: all stacks are touched before a build may evict
            # (ocst._make_room), and the last round, none blocked, touches the nodes the stacks hold
            resume_stacks(self.A, self.B, rows, self.depth[rows], self.sa, self.sb, self.height, self.blocked,
                          self._descend, stop=rounds)
            if len(todo) and self.blocked[todo].any():  # stopped before a build: out of time or of room
                done = int(np.argmax(np.isin(rows, todo)))
                for a, b in zip(self.state, before):
                    a[rows[done:]] = b[done:]
                rows = rows[:done]
                break
        got = hit[rows, 0] >= 0
        ptr = np.zeros(len(rows) + 1, np.int64)
        np.cumsum(got, out=ptr[1:])
        hits = ptr, hit[rows[got], 0], hit[rows[got], 1]
        rest = np.flatnonzero(~got & (self.height[rows] > 0))  # out of tries
        return s + len(rows), (_merge_hits(hits, rest, self._triangles(self._all_leaves(rows[rest]), True))
                               if len(rest) else hits)

    def _leaves(self) -> tuple:
        """A's and B's kernels.Leaves (read at each use: an on-collide bank reallocates tri_idx)."""
        return leaves_of(self.A), leaves_of(self.B)

    def _triangles(self, front, first):
        return exact_pairs(*self._leaves(), self.pose, front.rows, front.ptr, front.fa, front.fb, first)

    def _all_leaves(self, rows) -> _Frontier:
        """The whole leaf frontier below each row's stack."""
        def resume(idx, ptr, fa, fb):
            return complete_pairs(*self.trees, self.pose, rows[idx], ptr, fa, fb)

        front = self.stacks(rows)
        piece = complete_pairs(*self.trees, self.pose, rows, front.ptr, front.fa, front.fb)
        return _join(rows, [resume_blocked(self.A, self.B, piece, resume)])

    def _detector_hits(self, detector, front, take, all_contacts):
        """The strategy's own answer for the first `take` rows of `front`, as CSR (ptr, hit_a, hit_b)
        of global triangle ids."""
        rows = front.rows[:take]
        ma, mb = self.ma[rows], self.mb[rows]
        # a strategy that measures distance leaves the rows it finds apart to _apart_distances: work a frame
        # can do without, after every verdict (inside the verdicts, a quarter of the SSV exact level's time on lamps)
        extra = {"with_distance": False} if _measures_distance(detector) else {}
        got = detector.collide(ma, mb, self.Ta[rows], self.Tb[rows], all_contacts, **extra)
        self.distance[rows] = got.distance
        pair_row = np.repeat(np.arange(len(rows)), np.diff(got.tri_ptr))
        return (got.tri_ptr, got.tri_a + self.A.tri_offset[ma][pair_row], got.tri_b + self.B.tri_offset[mb][pair_row])

    def summary(self, pairs, start) -> FrameNarrowResult:
        """The answer: every stacked pair collides (a continuation's: its parent), so each bounds
        the separation, and together (the witness and its ancestors) they give the contact point;
        the normal is the root pair's; the witness is the pair reported and drawn
        (kernels.summarize_stacks)."""
        tree_a, tree_b = self.trees
        summary = summarize_stacks(tree_a[0], tree_b[0], *self.packed, self.hits[0],
                                   max(self.A.max_level, self.B.max_level) + 1, pairs, self.fair_args)
        answer = frame_answer(pairs, summary, self.hits, self.clock() - start, self.busy, self.fair)
        if self.prebuilt:  # the root spheres' gap and witnesses too, when the intervals are first read
            answer.interval_source = functools.partial(verdict_bounds, A=self.A, B=self.B, T=self.frame[1])
        return answer

    def tighten(self, answer, start, deadline, detector=None, triangle_tests=True, carried=None) -> None:
        """Narrow answer's separation intervals until the deadline (intervals.py), then settle the
        verdicts they decide. The intervals `carried` from earlier samples come first (none: none),
        and this sample's are kept in it at the end. The pairs found apart whose exact distance is
        unknown go next, widest first relative to the pair's size, to the exact strategy's distance
        query where it has one (it closes them); then rounds over the open rows (_narrow_rounds)
        until the deadline less the finish's time. Nothing starts, and no clock is read, where the
        time it takes besides the node pairs (_tighten_cost: set-up and finish) would end past the
        deadline, so a sample with no budget reads the clock as one without tightening
        (compiled_sample.py)."""
        now = start + answer.time_used  # the summary's reading
        model_id, T = self.frame[0], self.frame[1]
        carried = carried if self.A is self.B else None  # kept per bank: one pair of banks
        if not (self.prebuilt and math.isfinite(deadline) and now < deadline):
            return _carry_when_read(carried, self.A, answer, model_id, T)
        set_up, finish = _tighten_cost(self.clock)
        if now + set_up.predict() + finish.predict() >= deadline and not set_up.probe_due:
            set_up.refused()
            return _carry_when_read(carried, self.A, answer, model_id, T)
        R, t = self._opened(answer, carried)
        lower, upper = answer.lower, answer.upper
        set_up.observe(self.clock() - now)  # the distance queries below are priced by their own model
        root_a, root_b = answer._spheres[3], answer._spheres[4]
        size = self.A.spheres[root_a, 3] + self.B.spheres[root_b, 3]
        if _measures_distance(detector):
            todo = widest_first(lower, upper, size, True, answer.colliding)
            found, busy = _apart_distances(detector, self.ma, self.mb, self.Ta, self.Tb, todo, deadline, self.clock)
            self.busy += busy
            known = np.isfinite(found)
            answer.distance[todo[known]] = lower[todo[known]] = upper[todo[known]] = found[known]
        self._narrow_rounds((bank_parts(self.A), bank_parts(self.B), R, t), answer, size, deadline - finish.predict())
        narrowed = self.clock()
        # a pair found touching reaches the exact level only where it may (no level cap above it)
        settle_verdicts(answer, self.depth + 1, triangle_tests & (self.cap == self.depth))
        if carried is not None:
            carried.remember(self.A, answer, model_id, T)
        end = self.clock()
        finish.observe(end - narrowed)
        answer.time_used = end - start

    def _opened(self, answer, carried) -> tuple:
        """B's pose in A's frame per pair row (R, t), with answer's intervals made (what the verdict
        knows, narrowed by those `carried`; None: none) where they were not yet."""
        model_id, T, pairs = self.frame[:3]
        if answer.interval_known:  # read already: only carried
            if carried is not None:
                carried.carry(self.A, answer, model_id, T)
            return row_poses(T, pairs)
        kept = NO_KEPT if carried is None else carried.kept_for(self.A)
        R, t, lower, upper = opened(bank_parts(self.A), bank_parts(self.B), T, pairs, model_id, answer._spheres[3],
                                    answer._spheres[4], answer.colliding, answer.certain, answer.separation_bound,
                                    answer.distance, kept)
        answer.interval = lower, upper
        return R, t

    def _narrow_rounds(self, parts, answer, size, deadline) -> None:
        """Rounds of narrowing over answer's open rows until the deadline, widest first relative to
        the pair's size (k,), each row TIGHTEN_POPS node pairs in the first round and 4x as many in
        each later one (intervals.narrow_round: one kernel call a round, the clock read after every
        row). parts: narrow_rows's banks and row poses. A round's first row is priced at the node
        pairs it may pop times the time per node pair popped so far (_pop_cost, per clock): none
        starts that would end past the deadline, and a price too low overruns by one row."""
        lower, upper, roots = answer.lower, answer.upper, answer._spheres[3:5]
        per_pop, pops, clk = _pop_cost(self.clock), TIGHTEN_POPS, kernel_clock(self.clock)
        while True:
            order = widest_first(lower, upper, size, False, answer.colliding)
            if not len(order):
                return
            first = 0.0 if per_pop.probe_due else per_pop.predict(pops)
            t0 = time.perf_counter()
            if clk is None:
                done, work, begun, end = narrow_round_reference(*parts, order, *roots, pops, lower, upper, self.clock,
                                                                deadline, first)
            else:
                done, work, begun, end = narrow_round(*parts, order, *roots, pops, lower, upper,
                                                      kernel_clock(self.clock, clk), deadline, first)
                sync_clock(self.clock, clk)
            self.busy += time.perf_counter() - t0
            if not done:
                per_pop.refused()
                return
            per_pop.observe(end - begun, max(work, 1))
            if done < len(order):
                return
            pops *= 4


def settle_verdicts(answer, exact_level, may_touch) -> None:
    """What a narrowed interval decides, in the answer: a pair colliding at a sphere level whose
    lower bound is positive is apart (certain; its distance where the interval closed), one whose
    upper bound is 0 touches (certain, at the exact level `exact_level` per row) where `may_touch`
    (per row: the exact level is not capped away). The level histogram follows."""
    lower, upper = answer.lower, answer.upper
    apart = answer.colliding & (lower > 0)
    touching = answer.colliding & ~answer.certain & (upper == 0) & may_touch
    if not (apart.any() or touching.any()):
        return
    hist = answer.level_histogram
    np.subtract.at(hist, answer.level[apart | touching], 1)
    answer.level[touching] = exact_level[touching]
    np.add.at(hist, answer.level[touching], 1)
    answer.colliding[apart] = False
    answer.certain[apart | touching] = True
    answer.separation_bound[apart], answer.separation_bound[touching] = np.inf, 0.0
    answer.contact_point[apart], answer.contact_normal[apart] = np.nan, 0.0
    closed = apart & (lower == upper)
    answer.distance[closed] = lower[closed]
    if answer.bound_pairs is not None:
        answer.bound_pairs[apart] = -1


def _carry_when_read(carried, bank, answer, model_id, T) -> None:
    """A sample that does not narrow: its intervals, if read, still narrowed by those carried."""
    if carried is not None:
        carried.carry_when_read(bank, answer, model_id, T)


def _measures_distance(detector) -> bool:
    """Whether the exact strategy `detector` (None: the sphere leaves) has a distance query."""
    return detector is not None and hasattr(detector, "distance")


def _remembered(table, clock, make):
    """table[clock], made by make() at its first use: one estimate per clock (a TickClock's costs
    are counted in readings, the wall clock's in seconds)."""
    got = table.get(clock)
    if got is None:
        got = table[clock] = make()
    return got


def _cost_model(detector, clock) -> CostModel:
    """The exact strategy's remembered cost per unit on `clock` (a fresh one for the sphere leaves,
    detector None)."""
    if detector is None:
        return CostModel(EXACT_UNIT_COST)
    return _remembered(_UNIT_COST.setdefault(detector, weakref.WeakKeyDictionary()), clock,
                       lambda: CostModel(EXACT_UNIT_COST, probe_after=EXACT_PROBE_AFTER))


def _tighten_cost(clock) -> tuple[CostModel, CostModel]:
    """The narrowing's remembered set-up and finish times on `clock` (_Search.tighten)."""
    return _remembered(_TIGHTEN_COST, clock, lambda: (CostModel(TIGHTEN_SET_UP_COST), CostModel(TIGHTEN_FINISH_COST)))


def _pop_cost(clock) -> CostModel:
    """The narrowing's remembered time per node pair popped, on `clock` (_narrow_rounds)."""
    return _remembered(_POP_COST, clock, lambda: CostModel(TIGHTEN_POP_COST))


def _distance_cost(detector, clock) -> CostModel:
    """The exact strategy's remembered time per apart row's distance query on `clock`."""
    return _remembered(_DISTANCE_COST.setdefault(detector, weakref.WeakKeyDictionary()), clock,
                       lambda: CostModel(DISTANCE_ROW_COST, probe_after=EXACT_PROBE_AFTER))


def frame_answer(pairs, summary: tuple, hits: tuple, time_used: float, busy: float, fair) -> FrameNarrowResult:
    """The FrameNarrowResult of a search's summary (kernels.summarize_stacks's arrays) and hits
    (CSR of intersecting triangle pairs); the levels reached recorded in `fair` (or None)."""
    colliding, certain, bound, distance, point, normal, level, root_a, root_b, tri_a, tri_b, bound_pair, hist, ptr, fa, \
        fb, keys, served = summary
    if fair is not None:
        fair.recorded(keys, served)
    return FrameNarrowResult(
        pairs=pairs, colliding=colliding, level=level, certain=certain, separation_bound=bound, contact_point=point,
        contact_normal=normal, time_used=time_used, level_histogram=hist, distance=distance,
        _spheres=(ptr, fa, fb, root_a, root_b), _tris=(*hits, tri_a, tri_b), time_in_batches=busy,
        bound_pairs=bound_pair)


def _apart_distances(detector, ma, mb, Ta, Tb, rows, deadline, clock) -> np.ndarray:
    """Exact separation of the pairs `rows` (found apart) in batches until the deadline: (len(rows),)
    float64 [m], nan for the rows time did not allow; and the wall seconds spent in the batches."""
    out = np.full(len(rows), np.nan)
    if not len(rows):
        return out, 0.0

    def kernel(s, e):
        r = rows[s:e]
        return e, (detector.distance(ma[r], mb[r], Ta[r], Tb[r]).distance,)

    done, pieces, busy = _run_batches(kernel, len(rows), deadline, 0, clock, probe=EXACT_PROBE,
                                      cost=_distance_cost(detector, clock))
    if pieces:
        out[:done] = np.concatenate([p[0] for p in pieces])
    return out, busy
