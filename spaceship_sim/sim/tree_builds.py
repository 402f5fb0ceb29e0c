"""Sphere trees of models seen for the first time, built in a background thread.

A model whose trees are cached loads them in milliseconds; one seen for the first time needs seconds
to build them. With `background=True`, `first_trees` hands the world a stand-in for each missing
tree at once (spheretree.bounding_tree: the bounding sphere alone) and starts a `TreeBuild`; the
world flies on bounding spheres, as while numba compiles, and takes the built trees in its stepping
thread when both are done (World.step). Runs that must be reproducible build first
(`background=False`, the default) or wait for the build before their first frame (the app's
`--frames`).
"""
from __future__ import annotations

import threading

from ..spheretree import bounding_tree, is_cached, load_or_build


class TreeBuild:
    """A daemon thread running `build()` (the models' trees); `names` says whose. `ready` is set
    when it has returned or raised; `take()` waits for it and hands over its result, raising what
    it raised."""

    def __init__(self, names: list[str], build):
        self.names = list(names)
        self.ready = threading.Event()
        self._build, self._result, self._error = build, None, None
        self._thread = threading.Thread(target=self._run, name="tree builds", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._result = self._build()
        except BaseException as exc:  # raised by take(), in the stepping thread
            self._error = exc
        finally:
            self.ready.set()

    def take(self):
        self.ready.wait()
        if self._error is not None:
            raise self._error
        return self._result

    def status(self) -> str:
        """One line for the overlay: whose trees are building."""
        return f"building the sphere trees of {', '.join(self.names)} (first time seen)"


def first_trees(models, collision, background: bool = False):
    """(trees, build): each model's sphere tree for the config's [collision] tree method, branching
    and depth, loaded from the cache or built; with `background`, the missing ones are bounding-sphere
    stand-ins until `build` (a started TreeBuild returning every model's tree; None when nothing was
    missing) is done."""
    params = dict(method=collision.tree_method, branching=collision.tree_branching, depth=collision.tree_depth)
    missing = [m for m in models if not is_cached(m, **params)] if background else []
    if not missing:
        return [load_or_build(m, **params) for m in models], None
    building = {id(m) for m in missing}
    trees = [bounding_tree(m) if id(m) in building else load_or_build(m, **params) for m in models]
    return trees, TreeBuild([m.name for m in missing], lambda: [load_or_build(m, **params) for m in models])
