"""spaceship_sim: a real-time spaceship simulator built around time-critical collision detection.

The core (this package minus `spaceship_sim.app`) needs no display and no GL libraries.
"""
__version__ = "0.1.0"

from . import kernel_cache  # noqa: E402 (needs __version__)

kernel_cache.install()  # before any module defines a cached kernel
