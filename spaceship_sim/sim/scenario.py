"""What a valid config file alone cannot show: that the models it names exist and that its
ships can be placed in its arena.

`validate_scenario(cfg)` is the one check that check-config, run, fly/demo and bench hubbard make
before any heavy work: it reads the meshes and runs the seeded placement (the same one the world
will run), but builds no sphere tree and compiles no kernel.
"""
from __future__ import annotations

import numpy as np

from ..config import Config


def validate_scenario(cfg: Config) -> None:
    """Raise ConfigError (or MeshError) naming cfg.source and the key when `cfg` cannot run."""
    from ..dynamics.ships import initial_state
    from ..faceoctree.deform import hull_scale
    from ..meshes import check_model, load_mesh

    named = [("ships.user_model", cfg.ships.user_model)] + [(f"ships.models[{j}]", m)
                                                             for j, m in enumerate(cfg.ships.models)]
    paths = {name: check_model(name, cfg.source, key) for key, name in named}
    radii = np.array([load_mesh(p).bounding_radius * hull_scale(cfg, name) for name, p in paths.items()])
    initial_state(cfg, list(paths), radii)
