#!/usr/bin/env python3
"""Same-process A/B of the exact level's first-contact search (narrowphase/refine.py LEAF_PAIRS_TRIED).

    python scripts/ab_first_contacts.py [--poses 300] [MODEL ...]

On `bench narrowphase`'s poses (deep and shallow, seed 0) of each model (default: the five the bench
runs), medial trees of depth 3: prebuilt trees with 1 leaf pair tried (the witness, then the whole
leaf frontier) against the default, best of 5 CPU-time runs of one refine_frame call; on-collide trees
of depth 3 with 1 against unlimited, best of 2 cold runs on fresh banks. Checks that the verdicts agree.
"""
from __future__ import annotations

import argparse
import time
import types

import numpy as np

from spaceship_sim.bench import bench_narrowphase as bench
from spaceship_sim.narrowphase import TreeBank, refine, refine_frame
from spaceship_sim.narrowphase.ocst import OcstBank

MODELS = ["lamp", "fighter", "freighter", "torus", "capsules"]


def best_of(runs, call):
    best, verdicts = np.inf, None
    for _ in range(runs):
        t0 = time.thread_time()
        verdicts = call().colliding
        best = min(best, time.thread_time() - t0)
    return best, verdicts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--poses", type=int, default=300)
    ap.add_argument("models", nargs="*", default=MODELS)
    args = ap.parse_args()
    default = refine.LEAF_PAIRS_TRIED["prebuilt"]
    for name in args.models:
        model = bench.resolve_model(name)
        tree = bench.load_tree(model, "medial", 3)
        bank = TreeBank.from_trees([tree])
        for kind in ("deep", "shallow"):
            T, _ = bench.make_poses(kind, types.SimpleNamespace(seed=0, poses=args.poses), tree, bank,
                                    bench.fcl_pair(model.mesh))
            n = len(T) // 2
            frame = (np.zeros(2 * n, np.int64), T, np.arange(2 * n).reshape(n, 2))
            times, verdicts = {}, []
            for which, tries, runs, make in (("prebuilt", 1, 5, lambda: bank), ("prebuilt", default, 5, lambda: bank),
                                             ("on-collide", 1, 2, lambda: OcstBank([model.mesh], depth=3)),
                                             ("on-collide", -1, 2, lambda: OcstBank([model.mesh], depth=3))):
                refine.LEAF_PAIRS_TRIED[which] = tries
                times[which, tries], v = best_of(runs, lambda: refine_frame(make(), *frame, deadline=np.inf, min_level=0,
                                                                             all_contacts=False))
                verdicts.append(v)
            refine.LEAF_PAIRS_TRIED.update({"prebuilt": default, "on-collide": -1})
            assert all(np.array_equal(v, verdicts[0]) for v in verdicts), f"{name} {kind}: verdicts differ"
            us = {k: t / n * 1e6 for k, t in times.items()}
            print(f"{name:9s} {kind:7s} prebuilt: witness+frontier {us['prebuilt', 1]:7.1f} µs/pair, {default} leaf pairs "
                  f"first {us['prebuilt', default]:7.1f} ({us['prebuilt', default] / us['prebuilt', 1]:.2f}x) | "
                  f"on-collide cold: witness+frontier {us['on-collide', 1]:8.1f}, depth-first "
                  f"{us['on-collide', -1]:8.1f} ({us['on-collide', -1] / us['on-collide', 1]:.2f}x)", flush=True)


if __name__ == "__main__":
    main()
