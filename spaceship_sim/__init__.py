"""spaceship_sim: a real-time spaceship simulator built around time-critical collision detection.

The core (this package minus `spaceship_sim.app`) needs no display and no GL libraries.
"""
__version__ = "0.1.0"

from . import kernel_cache, machine  # noqa: E402 (kernel_cache needs __version__)

kernel_cache.install()  # before any module defines a cached kernel
machine.spin_briefly_after_kernels()  # before numba loads its OpenMP library
