"""`spaceship-sim build-trees`: build (or load cached) sphere trees of ship models, report, draw."""
from __future__ import annotations

import os
import sys
import warnings

from .args import COMMAND_LINE, output_folder, png_file
from ..config import PREBUILT_TREE_METHODS
from ..errors import InputError
from ..sweep.cluster import add_cluster_args
from ..sweep.trees import run_all

TREE_DEFAULTS = {"branching": 8, "depth": 3, "seed": 0}
LOADING_LINE_BYTES = 1_000_000  # a mesh file this big takes seconds to read and check: say so first


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "build-trees", help="build and cache the sphere trees of ship models (assets/trees/)",
        description="Build sphere trees (Hubbard's medial-axis method and/or the octree baseline) for "
                    "the named models (default: every model in assets/), caching them in assets/trees/.")
    p.add_argument("meshes", nargs="*", metavar="MESH",
                   help="model names from assets/ or mesh file paths (default: all assets)")
    p.add_argument("--method", choices=(*PREBUILT_TREE_METHODS, "both", "ssv"), default="both",
                   help="sphere-tree builder(s), or ssv: swept-sphere-volume trees (the exact level's SSV strategy)")
    p.add_argument("--branching", type=int, default=None, help="children per node (medial; octree is 8-way) "
                   f"(default: {TREE_DEFAULTS['branching']})")
    p.add_argument("--depth", type=int, default=None, help=f"levels below the root (default: {TREE_DEFAULTS['depth']})")
    p.add_argument("--seed", type=int, default=None, help=f"surface sampling seed (default: {TREE_DEFAULTS['seed']})")
    p.add_argument("--report", action="store_true",
                   help="print per model and level: sphere count, mean/max error, coverage, build time")
    p.add_argument("--picture", metavar="PATH", type=png_file,
                   help="write a PNG of levels 1..3 of every tree built (ssv: levels 2, 4, 6, coloured by kind)")
    p.add_argument("--force", action="store_true", help="rebuild even when a cached tree matches")
    p.add_argument("--verify", action="store_true",
                   help="re-check each tree against its mesh (coverage, chains, witnesses, error bounds, leaf "
                        "triangles); a tree that fails is rebuilt and the exit code is 1")
    p.add_argument("--cache-dir", metavar="DIR", type=output_folder, help="cache folder (default: assets/trees/)")
    p.add_argument("--all", nargs="?", const="", metavar="DIR",
                   help="build every model in DIR (default: assets/): each tree method and SSV (--method narrows "
                        "it), as parallel tasks on a dask cluster")
    add_cluster_args(p)
    p.set_defaults(func=run)


def _load_meshes(names):
    from pathlib import Path

    from ..meshes import MeshError, available_models, check_model, load_mesh

    if not names:
        names = available_models()
        if not names:
            raise MeshError("assets", "models", "no models found in the assets folder")
    out = []
    for n in names:
        p = Path(n)
        path = p if p.suffix or len(p.parts) > 1 or os.path.exists(p) else check_model(n, COMMAND_LINE, "MESH")
        if os.path.isfile(path) and path.stat().st_size >= LOADING_LINE_BYTES:
            print(f"  loading {n}", file=sys.stderr)  # small files load silently: bad input stays one line
        out.append(load_mesh(path))
    return out


def tree_params(args) -> None:
    """--branching, --depth and --seed: each acts or is refused (SSV trees take none of them, the
    octree is always 8-way); the defaults fill what is not given."""
    for name in {"ssv": ("branching", "depth", "seed"), "octree": ("branching",)}.get(args.method, ()):
        if getattr(args, name) is not None:
            raise InputError(COMMAND_LINE, f"--{name}", f"does nothing with --method {args.method}"
                             + (" (the octree is always 8-way)" if args.method == "octree" else ""))
    for name, default in TREE_DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, default)


def run(args) -> int:
    tree_params(args)
    if args.all is not None:
        return run_all(args)
    if args.method == "ssv":
        return run_ssv(args)
    from ..spheretree.params import _check_params

    methods = list(PREBUILT_TREE_METHODS) if args.method == "both" else [args.method]
    for m in methods:
        try:
            _check_params(m, args.branching, args.depth, args.seed, source=COMMAND_LINE)
        except InputError as e:  # name the flag, as argparse's own errors do
            raise InputError(COMMAND_LINE, f"--{e.key}", e.problem) from None
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        meshes = _load_meshes(args.meshes)
    from tqdm import tqdm  # the builder (scipy, numba) loads only once the input is known good

    from ..spheretree.build import load_or_build
    from ..spheretree.report import draw_levels, format_report

    rows: dict = {}
    jobs = [(mesh, m) for mesh in meshes for m in methods]
    bar = tqdm(jobs, desc="sphere trees", unit="tree")
    for mesh, m in bar:
        bar.set_postfix_str(f"{mesh.name} {m}")
        tree = load_or_build(mesh, method=m, branching=args.branching, depth=args.depth, seed=args.seed,
                             cache_dir=args.cache_dir, force=args.force, progress=True)
        rows.setdefault(mesh.name, {})[m] = tree
    bar.close()
    failed = _verify(rows, meshes, args) if args.verify else 0
    if args.report:
        print(format_report(rows))
    if args.picture:
        _write_picture(draw_levels, rows, args.picture)
    return 1 if failed else 0


def _verify(rows: dict, meshes, args) -> int:
    """build-trees --verify: print each tree's verdict, rebuild (in rows too) those that fail; their count."""
    from ..spheretree.build import load_or_build
    from ..spheretree.progress import BuildProgress
    from ..spheretree.verify import verify_tree

    failed = 0
    for mesh in meshes:
        for method, tree in rows[mesh.name].items():
            problems = verify_tree(tree, BuildProgress())
            print(f"{mesh.name} {method}: " + ("verified" if not problems else "FAILED: " + "; ".join(problems)))
            if problems:
                failed += 1
                rows[mesh.name][method] = load_or_build(mesh, method=method, branching=args.branching, depth=args.depth,
                                                        seed=args.seed, cache_dir=args.cache_dir, force=True,
                                                        progress=True)
                print(f"{mesh.name} {method}: rebuilt")
    return failed


def run_ssv(args) -> int:
    """build-trees --method ssv: SSV trees (cached beside the sphere trees), --report their statistics."""
    if args.verify:
        raise InputError(COMMAND_LINE, "--verify", "re-checks sphere trees; SSV trees are checked by their checksum")
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        meshes = _load_meshes(args.meshes)
    from tqdm import tqdm

    from ..ssv.report import draw_ssv_levels, format_ssv_report
    from ..ssv.tree import load_or_build_ssv

    trees = {}
    for mesh in tqdm(meshes, desc="SSV trees", unit="tree"):
        trees[mesh.name] = load_or_build_ssv(mesh, cache_dir=args.cache_dir, force=args.force)
    if args.report:
        print(format_ssv_report(trees))
    if args.picture:
        _write_picture(draw_ssv_levels, trees, args.picture)
    return 0


def _write_picture(draw, trees, path) -> None:
    """draw(trees, path), a write failure as the one-line --picture error."""
    try:
        draw(trees, path)
    except OSError as e:
        raise InputError(path, "--picture", f"cannot write ({e.strerror or e})") from None
    print(f"wrote {path}")
