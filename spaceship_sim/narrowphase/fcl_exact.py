"""FclExact: python-fcl (BVHModel OBBRSS, collide) behind the narrowphase.exact contract — the
peer every exact strategy is compared with. Pairs are answered one by one from Python, with
the transforms set per query as a simulation would."""
from __future__ import annotations

import numpy as np

from ..errors import InputError
from .exact import ExactAnswer


class FclExact:
    def __init__(self, meshes):
        try:
            import fcl
        except ImportError:
            raise InputError("python-fcl", "", "not installed (pip install python-fcl): no 'fcl' exact method") from None
        self.fcl = fcl
        self.objects = []
        for mesh in meshes:
            model = fcl.BVHModel()
            model.beginModel(len(mesh.vertices), len(mesh.faces))
            model.addSubModel(np.asarray(mesh.vertices, float), np.asarray(mesh.faces, np.int32))
            model.endModel()
            # two objects per model, so a model can meet itself
            self.objects.append((fcl.CollisionObject(model, fcl.Transform()),
                                 fcl.CollisionObject(model, fcl.Transform())))
        self.first = fcl.CollisionRequest(num_max_contacts=1, enable_contact=True)
        self.all = fcl.CollisionRequest(num_max_contacts=1 << 20, enable_contact=True)

    def collide(self, ma, mb, Ta, Tb, all_contacts=True) -> ExactAnswer:
        fcl, request, hits = self.fcl, self.all if all_contacts else self.first, []
        for a, b, ta, tb in zip(np.asarray(ma).tolist(), np.asarray(mb).tolist(), Ta, Tb):
            oa, ob = self.objects[a][0], self.objects[b][1]
            oa.setTransform(fcl.Transform(ta[:3, :3], ta[:3, 3]))
            ob.setTransform(fcl.Transform(tb[:3, :3], tb[:3, 3]))
            result = fcl.CollisionResult()
            fcl.collide(oa, ob, request, result)
            pairs = {(c.b1, c.b2) for c in result.contacts}  # b1: a face of the first object
            hits.append(np.array(sorted(pairs), np.int64).reshape(-1, 2))
        return ExactAnswer.from_lists(hits)
