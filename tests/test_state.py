"""state.quat_to_matrix: the batched form against the textbook formula it replaced, bit for bit."""
import numpy as np
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from spaceship_sim.state import ShipState, quat_to_matrix, transforms


def textbook(q):
    w, x, y, z = np.moveaxis(np.asarray(q, dtype=np.float64), -1, 0)
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
    ], -2)


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 5), st.just(4)),
              elements=st.floats(-1, 1, allow_nan=False, allow_subnormal=True)))
def test_quat_to_matrix_is_bit_identical_to_the_textbook_formula(q):
    norm = np.linalg.norm(q, axis=1, keepdims=True)
    q = np.where(norm > 1e-6, q / np.maximum(norm, 1e-6), [1.0, 0, 0, 0])
    R = quat_to_matrix(q)
    assert np.array_equal(R, textbook(q))
    assert np.allclose(R @ np.swapaxes(R, -1, -2), np.eye(3), atol=1e-12)
    assert np.array_equal(quat_to_matrix(q[0]), R[0])  # one quaternion, no batch axis


def test_quat_to_matrix_keeps_any_batch_shape():
    q = np.random.default_rng(0).normal(size=(2, 3, 4))
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    assert quat_to_matrix(q).shape == (2, 3, 3, 3)
    assert np.array_equal(quat_to_matrix(q), textbook(q))
    assert np.array_equal(quat_to_matrix([1.0, 0, 0, 0]), np.eye(3))


@settings(max_examples=50, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(0, 6), st.just(7)),
              elements=st.floats(-100, 100, allow_nan=False, allow_subnormal=True)))
def test_compiled_transforms_are_the_numpy_ones_bit_for_bit(qp):
    q = qp[:, :4]
    norm = np.linalg.norm(q, axis=1, keepdims=True)
    q = np.where(norm > 1e-6, q / np.maximum(norm, 1e-6), [1.0, 0, 0, 0])
    state = ShipState.zeros(len(qp))
    state.quat[:], state.pos[:] = q, qp[:, 4:]
    assert np.array_equal(transforms(state, compiled=True), transforms(state))
