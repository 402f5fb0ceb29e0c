"""Brute force: every pair tested, vectorised numpy in row blocks (the reference)."""
from __future__ import annotations

import numpy as np

from ..geometry.spheres import overlap_spheres
from .base import BroadPhase

BLOCK_ELEMENTS = 1 << 21  # pair tests per block: bounds scratch memory at ~50 MB for any n


class BruteForce(BroadPhase):
    name = "brute_force"

    def _find_pairs(self, t, pos, vel, accel_bound) -> np.ndarray:
        n, r = self.n, self.radius
        rows = max(1, BLOCK_ELEMENTS // n)
        out = []
        for s in range(0, n - 1, rows):
            e = min(n - 1, s + rows)
            i = np.arange(s, e)[:, None]
            # offsets p_j - p_i, as every broad phase takes them (base.ships_overlap)
            hit = overlap_spheres(pos[None, :, 0] - pos[s:e, None, 0], pos[None, :, 1] - pos[s:e, None, 1],
                                  pos[None, :, 2] - pos[s:e, None, 2], r[s:e, None], r[None, :])
            hit &= np.arange(n)[None, :] > i
            a, b = np.nonzero(hit)  # row-major: already lexicographic
            out.append(np.stack([a + s, b], axis=1))
        pairs = np.concatenate(out).astype(np.int32) if out else np.zeros((0, 2), np.int32)
        self.last_stats = {"pairs_examined": n * (n - 1) // 2, "pairs_found": len(pairs)}
        return pairs
