"""Poses for the face-octree tests."""
import numpy as np

from spaceship_sim.bench.bench_narrowphase import random_rotations


def random_transforms(rng, n: int, reach: float) -> np.ndarray:
    """(n, 4, 4) rigid body->world transforms: random rotations, translations in a ball of `reach`."""
    T = np.tile(np.eye(4), (n, 1, 1))
    T[:, :3, :3] = random_rotations(rng, n)
    d = rng.normal(size=(n, 3))
    T[:, :3, 3] = d / np.linalg.norm(d, axis=1, keepdims=True) * reach * rng.uniform(size=(n, 1)) ** (1 / 3)
    return T
