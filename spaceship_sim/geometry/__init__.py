"""Geometric primitives shared by the tree builders and the narrow phase (numba kernels with
their numpy oracles)."""
