"""World: everything one simulation owns — config, ship models and trees, state, stages.

`World.from_config(cfg)` assembles the stages named in the config; `world.step()` runs one
frame through `pipeline.step`; `world.end_frame(render_time)` records the frame's measured
render time, which feeds the render-time predictor of the next frame's budget.
`world.recorder` (spaceship_sim.sim.replay.Recorder, None by default) is told every input of a
frame — keys, setting changes, resets, the switch to compiled stages, render time — so that a
recorded run can be replayed exactly.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import threading

import numpy as np

from . import compile_ahead, pipeline
from ..clock import WALL, TickClock
from ..compile_log import shared_log
from ..config import Config
from ..cost import CostModel
from ..convex.field import AsteroidShapes, make_field
from ..dynamics import Controllers, Integrator, initial_state
from ..faceoctree.continuous import SweptCatch
from ..faceoctree.deform import hull_scale
from ..meshes import load_model
from ..narrowphase import TreeBank, refine_frame
from ..narrowphase.fairness import FairOrder
from ..narrowphase.intervals import CarriedIntervals
from ..narrowphase.kernels import search_levels
from ..narrowphase.ocst import OcstBank, OcstTreeView, warm_up_bank
from ..progress import slow_notice, to_stderr
from ..registry import EXACT_METHODS, exact_strategy, make_broadphase, make_narrow_phase
from ..response import respond
from .frame import SimState, Stages, Timing
from .stats import FixedCost, FrameStats
from .tree_builds import first_trees

# the quantile of recent frames that predicts the render time and the narrow phase's overrun: the
# third highest of the default 8 frames, so lateness in a quarter of recent frames counts in full
LATENESS_QUANTILE = 0.75
# the frames' lateness past their plan (frame.Timing.margin): the third highest of the last 40, so that
# lateness in more than ~5% of recent frames is held back in full
LATE_FRAMES, LATE_QUANTILE = 40, 0.95
COMPILING = "compiling numba kernels (first start only; later starts load them from the cache): "


class _Part:
    """`world.NAME` reads and writes the field NAME of one of the frame's inputs (`holder`: the
    World attribute holding it), so that the app, the replays and the tests name a stage by itself
    while pipeline.step takes the inputs themselves."""

    def __init__(self, holder: str, name: str | None = None):
        self.holder, self.name = holder, name

    def __set_name__(self, owner, name: str):
        self.name = self.name or name

    def __get__(self, world, owner=None):
        return self if world is None else getattr(getattr(world, self.holder), self.name)

    def __set__(self, world, value):
        setattr(getattr(world, self.holder), self.name, value)


class World:
    # the frame's inputs (frame.py), by their fields' names
    controllers, integrator, broad, field, bank = (_Part("stages") for _ in range(5))
    narrow, fair, swept, compiled, use_compiled_sample = (_Part("stages") for _ in range(5))
    exact_only = _Part("stages")  # see __init__
    clock, target_frame_time, time_critical = (_Part("timing") for _ in range(3))
    render_predictor, overrun_predictor = _Part("timing", "render"), _Part("timing", "overrun")
    fixed_predictor, late_predictor = _Part("timing", "fixed"), _Part("timing", "late")
    state, t, frame, last_narrow = (_Part("sim") for _ in range(4))

    def __init__(self, config: Config, models, trees, user: str = "autopilot", warm: bool = True, clock=WALL,
                 notify=to_stderr, exact_only=None, bank=None, building=None):
        """models: list[Mesh]; trees: list[SphereTree], one per model (same order), or with `bank`
        an OcstBank of the models (tree_method "ocst": trees built during collisions) its
        OcstTreeViews.
        warm: compile every kernel now. Else the world steps at once on the stages' numpy
        references (brute-force broad phase, numpy integrator, bounding spheres only) until
        warm_up() — e.g. in a background thread while a window already shows the scene — has
        compiled the kernels; the next step switches over.
        clock: what budgets and stage times are read from (spaceship_sim.clock; tests pass a
        TickClock so time-critical verdicts do not depend on the machine's speed).
        notify: where to say that a step is slow because numba is compiling (None: nowhere).
        exact_only: an exact strategy (narrowphase.exact.ExactDetector built from `models`) that answers
        every pair whose root spheres meet, whatever the budget, in place of the sphere-tree
        refinement (Hubbard's exact-only baselines: BSP, fcl); None: the sphere trees.
        building: a tree_builds.TreeBuild making the trees of which `trees` holds stand-ins; the
        world steps on bounding spheres until it is done too, then takes its trees (step())."""
        self.config, self.models, self.trees, self.user = config, models, trees, user
        # asteroid shapes (convex/field.py) follow the ship models in the tree bank
        self.asteroid_shapes = AsteroidShapes.from_config(config) if config.asteroids.count else None
        # the stages reset() does not replace; pairs with a flexing ship ([deform]) take the face
        # octree, the others the sphere trees
        # the exact level's strategy (its trees, its kernels) is made by warm_up, beside the compiling, and
        # joins the narrow phase with the compiled stages: until then detection is by bounding spheres
        self._exact_level, self.warm_error, self.building = None, None, building
        self.stages = Stages(
            bank=bank if bank is not None else self._tree_bank(trees),
            narrow=make_narrow_phase(config, models, lambda: self.t),
            exact_only=exact_only, swept=SweptCatch(models) if config.collision.swept else None)
        self.timing = Timing(clock, config.sim.target_frame_time, config.collision.time_critical,
                             config.collision.safety_margin, *self._predictors())
        self.deforming = getattr(self.narrow, "ships", None)  # faceoctree.deform.DeformingShips
        self.broadphase_name = config.collision.broadphase
        self.kernels_ready = threading.Event()  # set by warm_up
        self.recorder = None  # spaceship_sim.sim.replay.Recorder: sees every input of every frame
        self.reset()
        if warm:
            self.warm_up(notify)
            self._trees_in(wait=True)
            self.use_compiled_stages()

    def _tree_bank(self, trees) -> TreeBank:
        """The bank of the models' trees, the asteroid shapes' after them."""
        return TreeBank.from_trees(list(trees) + (self.asteroid_shapes.trees if self.asteroid_shapes else []))

    def _trees_in(self, wait: bool = False) -> bool:
        """Whether every model's trees are in: a background build's are taken here (in the stepping
        thread) once it is done, or at once, waiting for it, with `wait`."""
        if self.building is not None and (wait or self.building.ready.is_set()):
            self.trees, self.building = self.building.take(), None
            self.bank = self._tree_bank(self.trees)
        return self.building is None

    def warm_up(self, notify=to_stderr) -> None:
        """Compile (or load from numba's cache) every kernel a frame of this config uses, and make the
        exact level's strategy, so that neither the first frame nor the first collision stalls: the
        narrow phase by refining each model against itself, the integrator, broad phase and response
        by two frames of a scratch world (this world's state is left alone), the exact level last. On
        a cold start with a core to spare, a helper process makes the exact level's strategy and
        compiles its kernels meanwhile (compile_ahead.py; warm_up_helper says what it runs): this
        warm-up loads them from the cache. A step that takes over a second is compiling (first
        start, empty cache): notify(line) says so; None keeps quiet.
        Touches nothing the stepping thread uses: the switch happens in step(); an error is kept in
        `warm_error` for step() to raise, and raised here."""
        try:
            strategy = self.config.collision.exact_method != "sphere_leaves"
            helper = self._start_helper()
            with slow_notice(COMPILING + "narrow phase", notify):
                self._warm_narrow(None)
            with slow_notice(COMPILING + "dynamics, broad phase and response", notify):
                self._warm_frames(exact_pending=strategy)
            with slow_notice(COMPILING + "exact level" + (" (in a helper process)" if helper else ""),
                             notify if strategy else None):
                failed = helper.join() if helper else None
                if failed and notify:
                    notify(f"the warm-up's helper process failed ({failed}); compiling its part here")
                if strategy:
                    self._warm_narrow(self.exact_level())
        except Exception as e:
            self.warm_error = e
            raise
        self.kernels_ready.set()

    def _start_helper(self):
        """compile_ahead's helper process, on a cold start with a core to spare (else None)."""
        if compile_ahead.cached(search_levels) or not compile_ahead.spare_core():
            return None
        return compile_ahead.start((self.config, self.models))

    def _warm_narrow(self, detector) -> None:
        """Refine each model against itself: with detector None, the sphere levels (and the sphere
        leaves' triangle tests where they are the exact level, both the first-contact and the
        all-contact kernels: a first-contact search whose tries run out tests the rest of its leaf
        frontier whole); with the exact level's strategy, its exact level and its distance query on a
        pair apart. The exact-only and swept strategies too (with detector None)."""
        eye = np.broadcast_to(np.eye(4), (2, 4, 4))
        leaves = self.config.collision.exact_method == "sphere_leaves"
        # on-collide trees: a scratch bank of a tiny mesh compiles the same kernels, where this bank
        # would build every model's whole tree
        bank = self.bank if isinstance(self.bank, TreeBank) else warm_up_bank()
        if detector is None:
            every = {self.narrow.all_contacts, True} if leaves else {self.narrow.all_contacts}
            exact = [dataclasses.replace(self.narrow, min_level=0, max_level=None, triangle_tests=leaves,
                                         all_contacts=one) for one in every]
        else:  # first or all contacts: the same kernels, with a strategy at the exact level
            exact = [dataclasses.replace(self.narrow, min_level=0, max_level=None, triangle_tests=True,
                                         detector=detector)]
        for m in range(min(len(self.trees), bank.n_models)):
            for refine in exact:
                refine(bank, np.array([m, m]), eye, np.array([[0, 1]]), deadline=math.inf)
        if self.narrow.tighten:
            self._warm_tighten(exact[0], bank, eye)
        if detector is None:
            self._warm_exact_only(eye)
        elif hasattr(detector, "distance"):  # its distance kernel: on a pair found apart
            apart = eye.copy()
            apart[1, 0, 3] = 4 * float(self.bank.radius[self.bank.node_offset[0]]) + 1.0
            refine_frame(self.bank, np.zeros(2, np.int64), apart, np.array([[0, 1]]), deadline=math.inf, min_level=0,
                         triangle_tests=True, detector=detector)

    def _warm_tighten(self, refine, bank, eye) -> None:
        """The narrowing's kernels (it runs only under a finite deadline): a pair apart, twice, the
        second carrying the first's intervals, on a clock of its own and a memory of its own (the
        world's is left alone)."""
        refine = dataclasses.replace(refine, carried=CarriedIntervals())
        apart = eye.copy()
        apart[1, 0, 3] = 4 * float(bank.radius[bank.node_offset[0]]) + 1.0
        for _ in range(2):
            clock = TickClock(1e-6)
            refine(bank, np.zeros(2, np.int64), apart, np.array([[0, 1]]), deadline=clock() + 1.0, clock=clock)

    def _warm_exact_only(self, eye) -> None:
        """The exact-only baseline's and the swept test's kernels, each model against itself."""
        for m in range(len(self.trees)):
            one = np.array([m])
            if self.exact_only is not None:
                self.exact_only.collide(one, one, eye[:1], eye[1:], all_contacts=False)
            if self.swept:
                self.swept.detector.collide_swept(one, one, eye[:1], eye[:1], eye[:1], eye[:1], False)

    def _warm_frames(self, exact_pending: bool) -> None:
        """Two frames of a scratch world: the integrator, broad phase and response, and where the
        config runs it, the compiled sample (a frame with no time to spare: its whole path, which
        needs a first frame of the broad phase). exact_pending: the exact level's strategy is not
        made yet, so the scratch world stops at the sphere leaves (a config with a strategy never
        runs the compiled sample)."""
        warm_response()  # a collision in the scratch frames is not certain
        cfg = self.config
        if exact_pending:
            cfg = dataclasses.replace(cfg, collision=dataclasses.replace(cfg.collision, exact_method="sphere_leaves",
                                                                         triangle_tests=False))
        scratch = World(cfg, self.models, self.trees, user=self.user, warm=False, notify=None,
                        bank=None if isinstance(self.bank, TreeBank) else self.bank)
        scratch.use_compiled_sample = not exact_pending
        scratch.use_compiled_stages()
        scratch.step()
        scratch.time_critical, scratch.target_frame_time = True, 0.0
        scratch.step()

    def exact_level(self):
        """The config's exact-level strategy (narrowphase.exact), made at the first call (its trees
        loaded from their cache or built); None where the sphere leaves are the exact level."""
        if self._exact_level is None and self.config.collision.exact_method != "sphere_leaves":
            self._exact_level = exact_strategy(self.config, self.models)
        return self._exact_level

    def use_compiled_stages(self) -> None:
        """Switch integrator and broad phase to their numba kernels (compiled by warm_up), and give
        the narrow phase its exact-level strategy."""
        cfg, h = self.config, self.integrator.h
        self.integrator = Integrator(cfg, self.state.n)
        self.integrator.h = h.copy()  # keep each ship's step size
        self.broad = make_broadphase(self.broadphase_name, self.state.radius,
                                     min_resolution=cfg.sim.min_temporal_resolution)
        self.narrow = dataclasses.replace(self.narrow, detector=self.exact_level())
        self.compiled = True

    @classmethod
    def from_config(cls, config: Config, user: str = "autopilot", warm: bool = True, clock=WALL,
                    notify=to_stderr, exact_only: str | None = None, background_trees: bool = False) -> "World":
        """Load the models the config names (user's first) and their cached sphere trees;
        exact_only: a name in registry.EXACT_METHODS answering every pair instead (see __init__);
        background_trees: trees missing from the cache build in a background thread (tree_builds.py)
        while the world steps on bounding spheres, else before the world is made."""
        names = list(dict.fromkeys([config.ships.user_model, *config.ships.models]))
        models = [load_model(name) for name in names]
        c = config.collision
        exact = None if exact_only is None else EXACT_METHODS[exact_only](models)
        if c.tree_method == "ocst":  # nothing to build before the first frame
            bank = OcstBank(models, depth=c.tree_depth, evict_after=c.ocst_evict_after, max_nodes=c.ocst_max_nodes,
                            max_share=c.ocst_max_share)
            views = [OcstTreeView(bank, m) for m in range(len(models))]  # what the app draws
            return cls(config, models, views, user=user, warm=warm, clock=clock, notify=notify, exact_only=exact,
                       bank=bank)
        trees, building = first_trees(models, c, background=background_trees)
        return cls(config, models, trees, user=user, warm=warm, clock=clock, notify=notify, exact_only=exact,
                   building=building)

    # --- lifecycle --------------------------------------------------------------------
    def reset(self) -> None:
        """Back to frame 0: the seeded initial state and fresh stages."""
        if getattr(self, "recorder", None) is not None:
            self.recorder.event("reset")
        cfg = self.config
        names = [m.name for m in self.models]
        radii = np.array([m.bounding_radius * hull_scale(cfg, m.name) for m in self.models])
        self.sim = SimState(initial_state(cfg, names, radii))
        self.controllers = Controllers.from_config(cfg, self.state.n, user=self.user)
        self.field = make_field(cfg, self.asteroid_shapes, self.state, model_offset=len(self.models))
        # until the kernels are compiled: numpy stages, which need no compiling
        self.integrator = Integrator(cfg, self.state.n, backend="numba" if self.compiled else "numpy")
        self.broad = make_broadphase(self.broadphase_name if self.compiled else "brute_force", self.state.radius,
                                     min_resolution=cfg.sim.min_temporal_resolution)
        self.fair = FairOrder()  # which pairs the narrow phase deepens first
        self.render_predictor, self.overrun_predictor, self.fixed_predictor, self.late_predictor = self._predictors()
        self.last_stats: FrameStats | None = None

    def _predictors(self) -> tuple:
        """Fresh estimates of the render time, of what the narrow phase overruns its deadline by
        (work past its last clock check) and of the frame's stages outside the narrow phase still
        to come after a sample's narrow phase, and of how far frames end past their plan. The render,
        the overrun and the lateness are predicted by a high quantile (cost.CostModel): lateness the OS
        adds now and then shrinks the budget before frames are missed, where a mean would dilute it."""
        n, q = self.config.collision.render_average_frames, LATENESS_QUANTILE
        return CostModel(0.0, n, q), CostModel(0.0, n, q), FixedCost(n), CostModel(0.0, LATE_FRAMES, LATE_QUANTILE)

    def state_hash(self) -> str:
        """SHA-256 of every body's state (ships, and asteroids when there are any)."""
        return self.field.hash(self.state)

    @property
    def keys(self):
        """The KeyState the keyboard controller reads (the app adds/removes action names)."""
        return self.controllers.keys

    def step(self, render_time: float | None = None) -> FrameStats:
        """Run one frame. `render_time`, if given, is the previous frame's measured render
        time (shorthand for calling end_frame first)."""
        if render_time is not None and self.last_stats is not None:
            self.end_frame(render_time)
        if self.warm_error is not None:
            raise self.warm_error
        if not self.compiled and self.kernels_ready.is_set() and self._trees_in():
            self.use_compiled_stages()
        if self.recorder is not None:
            self.recorder.begin_frame(self)
        stats = pipeline.step(self.stages, self.sim, self.timing, self.config)
        self.last_stats = stats
        self.frame += 1
        return stats

    def end_frame(self, render_time: float) -> None:
        """Record the last frame's measured render time [s] (feeds the render's and the lateness's
        predictions, frame.Timing.end_frame)."""
        self.last_stats.finish(render_time)
        self.timing.end_frame(self.last_stats)
        if self.recorder is not None:
            self.recorder.end_frame(self, render_time)

    def set_collision(self, min_level=None, max_level=None, broadphase=None, target_frame_time=None,
                      time_critical=None) -> None:
        """Runtime knobs (the app's overlay controls)."""
        if self.recorder is not None:
            asked = dict(min_level=min_level, max_level=max_level, broadphase=broadphase,
                         target_frame_time=target_frame_time, time_critical=time_critical)
            self.recorder.event("set", {k: v for k, v in asked.items() if v is not None})
        if min_level is not None:
            self.narrow = dataclasses.replace(self.narrow, min_level=int(min_level))
        if max_level is not None:
            self.narrow = dataclasses.replace(self.narrow, max_level=int(max_level))
        if target_frame_time is not None:
            self.target_frame_time = float(target_frame_time)
        if time_critical is not None:
            self.time_critical = bool(time_critical)
        if broadphase is not None and broadphase != self.broadphase_name:
            self.broadphase_name = broadphase
            if self.compiled:  # else the switch to compiled stages picks it up
                self.broad = make_broadphase(broadphase, self.state.radius,
                                             min_resolution=self.config.sim.min_temporal_resolution)

    @property
    def max_level(self) -> int:
        """Deepest level a pair can reach: the exact triangle level, one below the leaves."""
        return self.bank.max_level


def warm_up_helper() -> None:
    """The helper process of compile_ahead.py: the world's (config, models) on stdin. Makes the
    config's exact-level strategy (its trees cached on the way) and warms it (warm_strategy), so
    that numba's cache holds its kernels for the world's warm-up to load when it reaches the exact
    level. That is the longest part (SSV: ~15 s of a ~40 s cold compile), so the world's warm-up
    compiles the broad phase and response itself meanwhile; with the sphere leaves as the exact
    level (nothing of a strategy's to compile) the helper compiles those instead. Its compiles
    are recorded where compile_log.shared_log says."""
    config, models = compile_ahead.payload()
    with shared_log("warm-up helper") or contextlib.nullcontext():
        if config.collision.exact_method != "sphere_leaves":
            warm_strategy(exact_strategy(config, models), models)
            return
        make_broadphase(config.collision.broadphase, np.ones(4), min_resolution=config.sim.min_temporal_resolution)
        warm_response()


def warm_response() -> None:
    """The response's kernels, on a pair whose normal and centre line meet."""
    respond(np.zeros((2, 3)), np.ones(2), np.array([[0, 1]]), np.array([[1.0, 0.0, 0.0]]), 1.0,
            np.array([[1.0, 0.0, 0.0]]), 1.0)


def warm_strategy(strategy, models) -> None:
    """Call every kernel of an exact-level strategy (narrowphase.exact) that the narrow phase calls,
    with the argument types it passes: first and all contacts of each model against itself, and
    the distance query on a pair apart where the strategy has one."""
    eye = np.eye(4)[None]
    for m in range(len(models)):
        one = np.array([m], np.int64)
        for every in (False, True):
            strategy.collide(one, one, eye, eye, all_contacts=every)
    if hasattr(strategy, "distance"):
        apart = eye.copy()
        apart[0, 0, 3] = 4 * max(m.bounding_radius for m in models) + 1.0
        zero = np.zeros(1, np.int64)
        strategy.distance(zero, zero, eye, apart)
