"""The on-collide sphere trees as an exact strategy: the refinement loop run to the triangles on
an OcstBank whose levels are built as the pairs reach them (Franquesa et al. 2006)."""
from __future__ import annotations

import numpy as np

from .exact import ExactAnswer
from .ocst import OcstBank
from .refine import refine_frame


class OcstExact:
    """The exact strategy of on-collide trees (registry.EXACT_METHODS["ocst"]): sphere levels built
    as the pairs reach them, then the triangles of colliding leaves. meshes: list of Mesh."""

    def __init__(self, meshes, depth: int = 3):
        self.bank = OcstBank(meshes, depth=depth)

    def collide(self, ma, mb, Ta, Tb, all_contacts=True):
        k = len(ma)
        pairs = np.stack([np.arange(k), np.arange(k, 2 * k)], 1)
        r = refine_frame(self.bank, np.concatenate([ma, mb]).astype(np.int64), np.concatenate([Ta, Tb]), pairs,
                         deadline=np.inf, min_level=0, all_contacts=all_contacts)
        return ExactAnswer.from_lists(r.tri_pairs)
