"""One real local dask cluster (2 single-threaded worker processes) for the sweep tests, and a
small deterministic sweep spec."""
from __future__ import annotations

import pytest

SPEC = """
[sweep]
frames = {frames}
warmup = 2

[axes]
config = ["lamps.toml"]
seed = {seeds}
detector = ["medial", "sphere_leaves"]
render_ms = [28, 31]
"""


def write_spec(folder, frames: int = 8, seeds=(1, 2), name: str = "spec.toml", text: str | None = None):
    path = folder / name
    path.write_text(text if text is not None else SPEC.format(frames=frames, seeds=list(seeds)))
    return path


@pytest.fixture(scope="session")
def spec_file():
    """write_spec(folder, frames=8, seeds=(1, 2), name="spec.toml", text=None) -> path"""
    return write_spec


@pytest.fixture(scope="package")
def client():
    from spaceship_sim.sweep.cluster import open_client

    with open_client(None, 2, timing=True, quiet=True) as c:
        yield c
