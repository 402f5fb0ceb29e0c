"""The kernels' compiled stable argsort against numpy's."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from spaceship_sim.sorting import argsort_stable

lengths = st.integers(0, 300)


@settings(max_examples=60, deadline=None)
@given(keys=hnp.arrays(np.int64, lengths, elements=st.integers(-5, 5)))  # many ties
def test_integer_keys_sort_as_numpy_stable(keys):
    np.testing.assert_array_equal(argsort_stable(keys), np.argsort(keys, kind="stable"))


@settings(max_examples=60, deadline=None)
@given(keys=hnp.arrays(np.float64, lengths, elements=st.one_of(
    st.floats(-1e6, 1e6, allow_nan=False), st.sampled_from([0.0, -0.0, 1.5, np.inf, -np.inf]))))
def test_float_keys_sort_as_numpy_stable(keys):
    np.testing.assert_array_equal(argsort_stable(keys), np.argsort(keys, kind="stable"))
