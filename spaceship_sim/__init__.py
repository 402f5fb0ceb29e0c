"""spaceship_sim: a real-time spaceship simulator built around time-critical collision detection.

The core (this package minus `spaceship_sim.app`) needs no display and no GL libraries.
"""
__version__ = "0.1.0"
