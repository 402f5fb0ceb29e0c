"""What a frame takes: the stages it runs, the simulation it advances, and what its budget is made of.

`pipeline.step(stages, sim, timing, config)` reads these and nothing else; `World` composes them
from a config, swaps stages at run time (the numpy references until numba has compiled, a broad
phase chosen in the overlay) and offers their fields under its own name (`world.broad` is
`world.stages.broad`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..state import ShipState
from ..cost import CostModel
from .stats import FixedCost

if TYPE_CHECKING:  # the stages' types, for readers and checkers: the world imports the stages themselves
    from ..broadphase import BroadPhase
    from ..dynamics import Controllers, Integrator
    from ..faceoctree.continuous import SweptCatch
    from ..narrowphase import FrameNarrowResult, NarrowPhase, TreeBank
    from ..narrowphase.exact import ExactDetector
    from ..narrowphase.fairness import FairOrder


@dataclass(eq=False)
class Stages:
    """The parts a frame runs, in Hubbard's order."""

    controllers: Controllers | None = None  # the user's keys and the autopilots
    integrator: Integrator | None = None    # adaptive RK2
    broad: BroadPhase | None = None         # pairs whose bounding spheres may meet
    field: Any = None                       # the asteroids (convex.field), a NoField without
    bank: TreeBank | Any = None             # the models' trees (a TreeBank, or an ocst.OcstBank)
    narrow: NarrowPhase | None = None       # the time-critical refinement's settings
    fair: FairOrder | None = None           # which pairs the narrow phase deepens first
    exact_only: ExactDetector | None = None  # answers every pair whatever the budget (Hubbard's exact-only
                                             # baselines), None: the refinement
    swept: SweptCatch | None = None         # crossings between samples, None: off
    compiled: bool = False      # the stages run their numba kernels (else their numpy references)
    use_compiled_sample: bool = True  # the common sample runs as one numba call where it can (compiled_sample.py)
    compiled_sample: Any = None   # that call's compiled_sample.CompiledSample, made at first use


@dataclass(eq=False)
class Timing:
    """What a sample's detection budget is made of (stats.detection_budget), and the clock it is read on."""

    clock: Any                  # spaceship_sim.clock: WALL, or a TickClock in tests
    target_frame_time: float    # [s]
    time_critical: bool         # refine only as deep as the budget allows (else every pair to the exact level)
    safety: float               # held back from every frame's budgets besides the lateness learned [s]
    render: CostModel           # the render time: a high quantile of recent frames' [s]
    overrun: CostModel          # what the narrow phase overran its deadline by: a high quantile [s]
    fixed: FixedCost            # the frame's stages outside the narrow phase still to come [s]
    late: CostModel             # how far frames ended past their plan: a high quantile [s]

    def margin(self) -> float:
        """What a frame's budgets hold back [s]: the safety margin, and the lateness past the plan
        that nothing else predicts (the OS descheduling the process mid-stage, a render woken late
        beyond what the render's own quantile learned), as a high quantile of recent frames'."""
        return self.safety + self.lateness()

    def lateness(self, quantile: float | None = None) -> float:
        """[s] the lateness learned: how far recent frames ended past their plan, as a high quantile
        of them (`late`'s, unless given)."""
        return max(0.0, self.late.rate(quantile))

    def end_frame(self, stats) -> None:
        """Learn from a finished frame (render time known) how far it ended past its plan: the target
        less the safety margin and less what the learned lateness took from its budgets, all of it
        where the last sample still had a budget, none where it had none (it may have had nothing to
        give): so the learned part cannot feed on itself (renders longer than the target would
        otherwise grow it without end, and it would never come back down)."""
        self.render.observe(stats.render_actual)
        held = stats.margin - self.safety if stats.last_budget > 0.0 else 0.0
        self.late.observe(stats.frame_time - (stats.target - self.safety - held))


@dataclass(eq=False)
class SimState:
    """The simulation a frame advances."""

    state: ShipState            # the ships (and, through the field, the asteroids)
    t: float = 0.0              # simulation time [s]
    frame: int = 0              # frames stepped
    last_narrow: FrameNarrowResult | None = None  # the last sample's narrow-phase answer
