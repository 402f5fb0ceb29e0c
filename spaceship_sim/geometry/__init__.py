"""Geometric primitives shared by every package, one implementation each: numba kernels (the small
ones inlined into their callers) with their numpy oracles.

vectors    3-tuple arithmetic for kernels (sub, dot, cross, lerp, dist2, ...), unit_rows for numpy
segments   closest points of two segments (triangle distance, Lin–Canny walk, SSV edge pairs)
triangles  triangle–triangle intersection and distance, closest point on a triangle, triangle–box
spheres    the sphere overlap rule (touching spheres overlap), kernel and numpy forms
poses      relative poses of rigid bodies (x_A = R x_B + t)
buffers    output arrays that grow inside kernels
reference  the numpy oracles the tests compare the kernels with
"""
