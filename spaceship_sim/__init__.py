"""spaceship_sim: a real-time spaceship simulator built around time-critical collision detection.

The core (this package minus `spaceship_sim.app`) needs no display and no GL libraries.
"""
__version__ = "0.1.0"

import os  # noqa: E402

# numba's OpenMP workers (GNU libgomp) spin a long while after each parallel kernel before they sleep:
# with the cores taken by other programs, that spin takes a core's share from the serial stage that
# follows (at --cpu-load 1 an SSV batch ran 8.6 ms alone, 15.6 ms right after a parallel one; with this
# spin, 8.5 ms both). A short spin keeps the quick start of back-to-back kernels. Set before the OpenMP
# library loads, and only where the user has not.
os.environ.setdefault("GOMP_SPINCOUNT", "20000")

from . import kernel_cache  # noqa: E402 (needs __version__)

kernel_cache.install()  # before any module defines a cached kernel
