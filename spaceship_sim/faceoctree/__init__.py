"""Face octrees on bounding-box overlap regions (Smith & Kitamura 1994): an exact narrow phase
with no per-model preprocessing, for rigid and deforming ships, with a swept-space test between
samples and a parallel face-pair stage."""
from .detector import FaceOctreeExact

__all__ = ["FaceOctreeExact"]
