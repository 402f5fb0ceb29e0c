"""`spaceship-sim check-config FILE...`: validate scenario files."""
from __future__ import annotations

from .args import COMMAND_LINE
from ..config import describe, load_config
from ..errors import InputError


def register(sub) -> None:
    p = sub.add_parser("check-config", help="validate scenario TOML files: keys, ranges, models, placement (exit 2 on the first error)")
    p.add_argument("files", nargs="*", metavar="FILE")
    p.add_argument("--keys", action="store_true", help="list every key with its default and unit")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..sim.scenario import validate_scenario

    if not args.files and not args.keys:
        raise InputError(COMMAND_LINE, "FILE", "name at least one config file to check (or list the keys: --keys)")
    if args.keys:
        print("\n".join(describe()))
    for f in args.files:
        cfg = load_config(f)
        validate_scenario(cfg)
        print(f"{f}: ok ({cfg.ships.count} ships, broad phase {cfg.collision.broadphase})")
    return 0
