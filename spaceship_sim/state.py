"""ShipState: every ship's state as a struct of numpy arrays (the caller owns it).

Conventions: world frame is right-handed, metres and seconds. Orientation quaternions are
(w, x, y, z), unit length, rotating body-frame vectors into the world frame. A ship's nose
(thrust direction) is its body +x axis. Ship 0 is the user's ship.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, fields

import numpy as np
from numba import njit


@dataclass(eq=False)
class ShipState:
    """pos       : (n, 3) float64, world frame [m] (centre of the model's bounding sphere frame origin)
    vel       : (n, 3) float64, world frame [m/s]
    quat      : (n, 4) float64, (w, x, y, z) body -> world
    omega     : (n, 3) float64, body frame angular velocity [rad/s]
    inv_mass  : (n,)   float64 [1/kg]; 0 means infinite mass (the user's ship)
    radius    : (n,)   float64, bounding radius of the model about the body origin [m]
    model_id  : (n,)   int32, index into the list of ship models
    thrust    : (n,)   float64, commanded forward acceleration along body +x [m/s^2]
    omega_cmd : (n, 3) float64, commanded body-frame rotational velocity [rad/s]
    """

    pos: np.ndarray
    vel: np.ndarray
    quat: np.ndarray
    omega: np.ndarray
    inv_mass: np.ndarray
    radius: np.ndarray
    model_id: np.ndarray
    thrust: np.ndarray
    omega_cmd: np.ndarray

    @classmethod
    def zeros(cls, n: int) -> "ShipState":
        quat = np.zeros((n, 4))
        quat[:, 0] = 1.0
        return cls(pos=np.zeros((n, 3)), vel=np.zeros((n, 3)), quat=quat, omega=np.zeros((n, 3)),
                   inv_mass=np.ones(n), radius=np.ones(n), model_id=np.zeros(n, np.int32),
                   thrust=np.zeros(n), omega_cmd=np.zeros((n, 3)))

    @property
    def n(self) -> int:
        return len(self.pos)

    def copy(self) -> "ShipState":
        return ShipState(**{f.name: getattr(self, f.name).copy() for f in fields(self)})

    def hash(self) -> str:
        """SHA-256 over every array's bytes: equal hashes mean bit-identical states."""
        h = hashlib.sha256()
        for f in fields(self):
            a = np.ascontiguousarray(getattr(self, f.name))
            h.update(f.name.encode())
            h.update(str(a.dtype).encode())
            h.update(a.tobytes())
        return h.hexdigest()


# Rotation matrix of a unit quaternion (w, x, y, z): entry (r, c) = eye(3)[r, c] + s1 q_i q_j + s2 q_k q_l,
# e.g. (0, 0) = 1 - 2 (y y + z z) and (0, 1) = 2 (x y - w z); per entry (r, c) the two terms (i, j, s1), (k, l, s2).
_W, _X, _Y, _Z = range(4)
_TERMS = np.array([
    [[_Y, _Y, -2], [_Z, _Z, -2]], [[_X, _Y, 2], [_W, _Z, -2]], [[_X, _Z, 2], [_W, _Y, 2]],
    [[_X, _Y, 2], [_W, _Z, 2]], [[_X, _X, -2], [_Z, _Z, -2]], [[_Y, _Z, 2], [_W, _X, -2]],
    [[_X, _Z, 2], [_W, _Y, -2]], [[_Y, _Z, 2], [_W, _X, 2]], [[_X, _X, -2], [_Y, _Y, -2]],
]).reshape(3, 3, 2, 3)
# split once at import: (3, 3) index arrays and factors of the first term, then of the second
(_I1, _J1, _S1), (_I2, _J2, _S2) = (tuple(np.moveaxis(_TERMS[:, :, n], -1, 0)) for n in range(2))
_EYE3 = np.eye(3)


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """(..., 4) unit quaternions (w, x, y, z) -> (..., 3, 3) rotation matrices (body -> world).
    Seven numpy operations whatever the batch (the textbook form takes ~40, ~80 us even for one
    ship); bit-identical to it: both products are scaled by an exact factor of 2 before the one
    rounding that adds them, and the identity is added last."""
    q = np.asarray(q, dtype=np.float64)
    qq = q[..., :, None] * q[..., None, :]
    return _EYE3 + (qq[..., _I1, _J1] * _S1 + qq[..., _I2, _J2] * _S2)


@njit(cache=True, inline="always")
def rotation_into(w, x, y, z, R):
    """R[:3, :3] = the rotation of unit quaternion (w, x, y, z): the textbook formula, which
    quat_to_matrix gives bit for bit (R may be a pose (4, 4): its other entries are left alone)."""
    R[0, 0], R[0, 1], R[0, 2] = 1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)
    R[1, 0], R[1, 1], R[1, 2] = 2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)
    R[2, 0], R[2, 1], R[2, 2] = 2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)


@njit(cache=True)
def poses_kernel(quat, pos, T):
    for i in range(len(quat)):
        rotation_into(quat[i, 0], quat[i, 1], quat[i, 2], quat[i, 3], T[i])
        for r in range(3):
            T[i, r, 3], T[i, 3, r] = pos[i, r], 0.0
        T[i, 3, 3] = 1.0


def transforms(state: ShipState, compiled: bool = False) -> np.ndarray:
    """(n, 4, 4) float64 body -> world transforms of every ship: one numba call when `compiled`
    (the world's kernels are: every detection sample builds them), else numpy; the same bits."""
    if compiled:
        T = np.empty((state.n, 4, 4))
        poses_kernel(state.quat, state.pos, T)
        return T
    T = np.zeros((state.n, 4, 4))
    T[:, :3, :3] = quat_to_matrix(state.quat)
    T[:, :3, 3] = state.pos
    T[:, 3, 3] = 1.0
    return T
