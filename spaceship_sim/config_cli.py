"""`spaceship-sim check-config FILE...`: validate scenario files."""
from __future__ import annotations

from .config import describe, load_config


def register(sub) -> None:
    p = sub.add_parser("check-config", help="validate scenario TOML files (exit 2 on the first error)")
    p.add_argument("files", nargs="*", metavar="FILE")
    p.add_argument("--keys", action="store_true", help="list every key with its default and unit")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.keys:
        print("\n".join(describe()))
    for f in args.files:
        cfg = load_config(f)
        print(f"{f}: ok ({cfg.ships.count} ships, broad phase {cfg.collision.broadphase})")
    return 0
