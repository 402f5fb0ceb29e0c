"""Set-up shared by every test folder: compiled kernels for the whole session.

On a fresh clone nothing is compiled yet, and each kernel family is compiled by the first test that
needs it (tens of seconds each, in one process, often in a subprocess the test starts). A run of many
tests on such a cold cache first warms up the worlds of the shipped scenarios the tests build, in
two processes at once (each world's warm-up compiles its exact level in a helper process besides,
sim/compile_ahead.py), so that the compiling uses every core; the tests then load the kernels from
the per-user cache as a second start does. With the kernels cached, or for a few tests, nothing runs.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

MANY_TESTS = 200  # a run this large pays for warming every scenario up front
# the shipped scenarios whose kernels the tests use, in two groups of about equal compile time
WARM_GROUPS = (("default.toml", "deforming.toml", "tunnel.toml"), ("lamps.toml", "asteroids.toml", "demo.toml"))
WARM = ("import sys\nfrom spaceship_sim.config import load_config, shipped_config\n"
        "from spaceship_sim.sim.world import World\n"
        "for name in sys.argv[1:]:\n    World.from_config(load_config(shipped_config(name)), notify=None)\n")


@pytest.fixture(scope="session", autouse=True)
def compiled_kernels(request):
    """Warm the shipped scenarios' kernels up in parallel when the cache is cold (see the module)."""
    from spaceship_sim.narrowphase.kernels import search_levels
    from spaceship_sim.sim import compile_ahead

    if len(request.session.items) < MANY_TESTS or compile_ahead.cached(search_levels) or not compile_ahead.spare_core():
        return
    warming = [subprocess.Popen([sys.executable, "-c", WARM, *group], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL) for group in WARM_GROUPS]
    for process in warming:
        process.wait()  # a failure costs nothing but time: a test then compiles what is missing
