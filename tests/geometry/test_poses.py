"""Relative poses (geometry.poses) against matrix products (geometry.reference.relative_poses_ref)."""
import numpy as np
from hypothesis import given, settings, strategies as st
from numba import njit
from scipy.spatial.transform import Rotation

from spaceship_sim.geometry import reference as ref
from spaceship_sim.geometry.poses import relative_pose, relative_poses, relative_poses_into

SEEDS = st.integers(0, 2**32 - 1)


def transforms(rng, k):
    """(k, 4, 4) random rigid body->world transforms, positions up to ~100 m."""
    T = np.tile(np.eye(4), (k, 1, 1))
    T[:, :3, :3] = Rotation.random(k, random_state=rng).as_matrix()
    T[:, :3, 3] = rng.normal(size=(k, 3)) * rng.uniform(0.1, 100)
    return T


@njit(cache=True)
def per_pair(rot, pos, a, b):
    """relative_pose for bodies a[i], b[i] of rot (n, 3, 3), pos (n, 3), as the Lin–Canny walk calls it."""
    R, t = np.empty((len(a), 3, 3)), np.empty((len(a), 3))
    for i in range(len(a)):
        relative_pose(rot[a[i]], pos[a[i]], rot[b[i]], pos[b[i]], R[i], t[i])
    return R, t


@settings(max_examples=30, deadline=None)
@given(SEEDS)
def test_relative_poses_match_matrix_products(seed):
    rng = np.random.default_rng(seed)
    Ta, Tb = transforms(rng, 50), transforms(rng, 50)
    R, t = relative_poses(Ta, Tb)
    R_ref, t_ref = ref.relative_poses_ref(Ta, Tb)
    assert np.allclose(R, R_ref, rtol=0, atol=1e-15)
    assert np.allclose(t, t_ref, rtol=0, atol=1e-13)
    # x_A = R x_B + t: a point of B, in the world and back in A's frame
    x = rng.normal(size=(50, 3))
    world = np.einsum("kij,kj->ki", Tb[:, :3, :3], x) + Tb[:, :3, 3]
    in_a = np.einsum("kji,kj->ki", Ta[:, :3, :3], world - Ta[:, :3, 3])
    assert np.allclose(np.einsum("kij,kj->ki", R, x) + t, in_a, rtol=0, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(SEEDS)
def test_one_pair_and_batch_forms_agree_bit_for_bit(seed):
    """The walk's per-pair form (rotations and positions) and the batch form (4x4 transforms)."""
    rng = np.random.default_rng(seed)
    T = transforms(rng, 20)
    a, b = rng.integers(0, 20, 40), rng.integers(0, 20, 40)
    rot, pos = np.ascontiguousarray(T[:, :3, :3]), np.ascontiguousarray(T[:, :3, 3])
    R, t = per_pair(rot, pos, a, b)
    R2, t2 = np.empty_like(R), np.empty_like(t)
    relative_poses_into(T[a], T[b], R2, t2)
    assert np.array_equal(R, R2) and np.array_equal(t, t2)
