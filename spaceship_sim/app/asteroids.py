"""The asteroid field's visual aids, as I-COLLIDE's figures show them: each asteroid's
sweep-and-prune box and, for every pair whose boxes overlap, the segment between its closest
features (Lin–Canny's closest points). Plain numpy, no GL: the renderer draws the lines.
"""
from __future__ import annotations

import numpy as np

ASTEROID_COLOR = (0.55, 0.48, 0.42)           # hull colour: dusty rock, apart from every ship colour
BOX_COLOR = (0.45, 0.55, 0.75, 0.35)          # boxes overlapping no other asteroid's box
PAIR_BOX_COLOR = (1.0, 0.85, 0.2, 0.9)        # boxes in an active (overlapping) pair
FEATURE_COLOR = (0.2, 1.0, 0.9, 1.0)          # closest-feature segments of separated pairs
TOUCH_COLOR = (1.0, 0.15, 0.65, 1.0)          # box outlines of interpenetrating pairs (exact level colour)
FEATURE_POINT_PX = 5.0                        # closest points drawn as dots this size: short segments stay visible

# the 12 edges of a box as corner pairs; corner c has x from bit 0, y from bit 1, z from bit 2
_EDGES = np.array([(c, c | bit) for bit in (1, 2, 4) for c in range(8) if not c & bit])


def box_edges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """GL_LINES vertices of boxes lo, hi (k, 3) world: (24 k, 3) float32, 12 edges per box."""
    bits = (np.arange(8)[:, None] >> np.arange(3)) & 1                 # (8, 3) corner selectors
    corners = np.where(bits[None], hi[:, None, :], lo[:, None, :])     # (k, 8, 3)
    return corners[:, _EDGES].reshape(-1, 3).astype(np.float32)


def field_lines(field, show_boxes: bool, show_features: bool) -> list[tuple[np.ndarray, tuple, float]]:
    """[(GL_LINES vertices (v, 3) float32, rgba, end point size [px], on top)] of the field's last sample: boxes (those in an
    active pair highlighted, interpenetrating pairs in the exact level's colour) and closest-feature
    segments (closest points of pairs inside each other's boxes: the segments are short, drawn with
    dots at their ends and over everything). A field without asteroids gives []."""
    if not field.count:
        return []
    out = []
    last, n = field.last, field.n_ships
    if show_boxes and len(field.box_lo):
        in_pair = np.zeros(field.count, bool)
        in_pair[last.pairs.ravel() - n] = True
        touching = np.zeros(field.count, bool)
        touching[last.hits.ravel() - n] = True
        for sel, rgba in ((~in_pair, BOX_COLOR), (in_pair & ~touching, PAIR_BOX_COLOR), (touching, TOUCH_COLOR)):
            out.append((box_edges(field.box_lo[sel], field.box_hi[sel]), rgba, 0.0, False))
    if show_features:
        apart = ~last.colliding & np.isfinite(last.points).all(axis=(1, 2))
        out.append((last.points[apart].reshape(-1, 3).astype(np.float32), FEATURE_COLOR, FEATURE_POINT_PX,
                    True))  # seen through the hulls, as the hits' witness segments are
    return out
