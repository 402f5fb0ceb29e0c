"""Ships that fly: equations of motion, adaptive RK2 integration, arena rule, controllers."""
from .controllers import Controllers, KeyboardController, KeyState, RandomAutopilot, ScriptedAutopilot
from .integrator import Integrator, StepStats
from .ships import accel_bound, contain, initial_state

__all__ = ["Controllers", "Integrator", "KeyState", "KeyboardController", "RandomAutopilot", "ScriptedAutopilot",
           "StepStats", "accel_bound", "contain", "initial_state"]
