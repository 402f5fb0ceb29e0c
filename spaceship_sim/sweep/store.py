"""Finished cells on disk: OUT/cells/<key>.json, each written whole (temp file and rename) the
moment its cell ends, so that an interrupted or failed sweep keeps every cell it finished and a
rerun skips them."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


class CellStore:
    def __init__(self, out: Path):
        self.folder = Path(out) / "cells"

    def path(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def get(self, key: str) -> dict | None:
        """The stored record of cell `key`, or None (never stored, or unreadable: run it again)."""
        try:
            return json.loads(self.path(key).read_text())
        except (OSError, ValueError):
            return None

    def put(self, key: str, record: dict) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        write_atomic(self.path(key), json.dumps(record, indent=1, sort_keys=True) + "\n")

    def keys(self) -> set[str]:
        return {p.stem for p in self.folder.glob("*.json")} if self.folder.is_dir() else set()


def write_atomic(path: Path, text: str | None = None, write=None) -> None:
    """Write `text` (or call write(temp_path)) to a temp file beside `path`, then rename it over
    `path`: a reader sees the old file or the whole new one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        if text is not None:
            with os.fdopen(fd, "w") as f:
                f.write(text)
        else:
            os.close(fd)
            write(Path(tmp))
        os.chmod(tmp, 0o666 & ~_umask())  # as an ordinary new file (mkstemp makes it private)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
