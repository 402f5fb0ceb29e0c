"""Key bindings, by pyglet key-symbol name (resolved in the app; no GL import here).

FLIGHT keys are held: pressed adds the action to `world.keys`, released removes it; the
keyboard controller reads that set. COMMAND keys act once per press.
"""
from __future__ import annotations

FLIGHT = {
    "W": "thrust_forward", "S": "thrust_back",
    "A": "yaw_left", "D": "yaw_right",
    "UP": "pitch_up", "DOWN": "pitch_down",
    "Q": "roll_left", "E": "roll_right",
    "SPACE": "brake",
}
COMMANDS = {
    "P": "pause", "N": "step", "R": "reset", "C": "camera", "T": "tree_level", "B": "boxes", "L": "features",
    "F1": "overlay", "F11": "fullscreen", "F12": "screenshot",
}
# help panel lines: (keys, what they do)
HELP = [
    ("W S / A D", "thrust fwd, back / yaw"),
    ("Up Down / Q E", "pitch / roll"),
    ("Space", "brake"),
    ("P / N", "pause / single step"),
    ("R", "reset"),
    ("C", "chase / orbit camera"),
    ("T", "next tree level drawn"),
    ("B / L", "asteroid boxes / features"),
    ("drag, wheel", "orbit: turn, zoom"),
    ("table row", "camera on that pair"),
    ("F1 / F11", "overlay / fullscreen"),
    ("F12", "screenshot (PNG)"),
    ("Esc", "quit"),
]


def resolve(key_module) -> tuple[dict[int, str], dict[int, str]]:
    """Map pyglet key symbols (from `pyglet.window.key`) to flight actions and commands."""
    return ({getattr(key_module, k): a for k, a in FLIGHT.items()},
            {getattr(key_module, k): c for k, c in COMMANDS.items()})
