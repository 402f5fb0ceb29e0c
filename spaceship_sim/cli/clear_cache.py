"""`spaceship-sim clear-cache`: list and clear the compiled kernels and the cached trees.

The kernels are rebuilt by the next start (numba compiles them again: a minute or two on two
cores); trees are rebuilt when next needed (the shipped medial trees take minutes each).
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

from .args import COMMAND_LINE
from ..errors import InputError

TREE_FILE = re.compile(r".+-(medial|octree|ssv)-[0-9a-f]{12}\.npz")  # spheretree.build.tree_path's names


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "clear-cache", help="list and clear the compiled-kernel cache and damaged (or all) cached trees",
        description="Remove the compiled numba kernels (every version's; the next start compiles them again) "
                    "and the tree cache files that fail their checksum. A crash or an error while loading "
                    "kernels names this command.")
    p.add_argument("--list", action="store_true", help="only list what is cached, with sizes and damaged files")
    p.add_argument("--trees", action="store_true",
                   help="remove every cached tree too, not only damaged ones (rebuilt when next needed: minutes "
                        "for the shipped medial trees)")
    p.add_argument("--cache-dir", metavar="DIR", help="tree cache folder (default: assets/trees/)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..kernel_cache import kernel_dir
    from ..meshes import assets_dir
    from ..spheretree.tree import seal_problem

    trees = Path(args.cache_dir) if args.cache_dir else assets_dir() / "trees"
    if trees.exists() and not trees.is_dir():
        raise InputError(COMMAND_LINE, "--cache-dir", f"{trees} is a file, not a folder")
    current = kernel_dir()
    for folder in sorted(current.parent.glob("*")) if current.parent.is_dir() else []:
        files = [f for f in folder.rglob("*") if f.is_file()]
        mark = " (this version)" if folder == current else ""
        print(f"kernels {folder}{mark}: {len(files)} files, {_mb(files)}")
        if not args.list:
            shutil.rmtree(folder, ignore_errors=True)
            print(f"  removed {folder}")
    if not current.parent.is_dir():
        print(f"kernels {current}: none cached")
    files = sorted(f for f in trees.glob("*.npz") if TREE_FILE.fullmatch(f.name)) if trees.is_dir() else []
    print(f"trees {trees}: {len(files)} files, {_mb(files)}")
    for f in files:
        problem = seal_problem(f)
        if problem:
            print(f"  {f.name}: {problem}")
        if not args.list and (problem or args.trees):
            f.unlink(missing_ok=True)
            print(f"  removed {f.name}")
    return 0


def _mb(files) -> str:
    return f"{sum(f.stat().st_size for f in files) / 1e6:.1f} MB"
