#!/usr/bin/env python3
"""Long random search for Lin–Canny walks that disagree with brute force (more examples than CI runs).

    python scripts/stress_lin_canny.py [--seed 1] [--n 1500]

Runs the bodies of two property tests of tests/convex/test_closest.py — touching / barely apart /
barely overlapping pairs, and cold starts at random gaps — on n random (faces, faces, seed) draws;
prints each failing draw (replay it as an @example of the test) and exits 1 if there was one.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "convex"))
import test_closest  # noqa: E402

FACES = [8, 20, 36, 60, 200]
PUSHES = [-1e-6, 0.0, 1e-6]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--n", type=int, default=1500)
    args = ap.parse_args()
    touching = test_closest.test_touching_barely_apart_and_barely_overlapping.hypothesis.inner_test
    cold = test_closest.test_cold_start_equals_brute_force.hypothesis.inner_test
    rng, failures = np.random.default_rng(args.seed), 0
    for k in tqdm(range(args.n), desc="walks"):
        fa, fb = (int(f) for f in rng.choice(FACES, 2))
        push, seed, gap = PUSHES[k % 3], int(rng.integers(2**32)), float(rng.uniform(0.3, 1.6))
        for name, test, extra in (("touching", touching, push), ("cold start", cold, gap)):
            try:
                test(fa, fb, extra, seed)
            except AssertionError as err:
                failures += 1
                tqdm.write(f"FAIL {name}: faces {fa}, {fb}, {extra}, seed {seed}: {str(err)[:160]}")
    print(f"{args.n} draws, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
