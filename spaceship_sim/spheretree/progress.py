"""What a tree build tells the user while it runs: stage lines and bars on stderr, or nothing.

Big meshes take minutes (200k triangles: sampling, Qhull, inside tests, merging, coverage and
error bounds each take seconds to minutes), so the CLI reports every stage as it starts and runs
a bar through the stages that work in chunks. Library calls stay quiet (`QUIET`).
"""
from __future__ import annotations

import sys


class BuildProgress:
    """`stage(text)` prints a line; `bar(sized iterable, desc)` wraps a loop in a tqdm bar;
    `counter(desc, total)` is a bar advanced by hand. Disabled, all do nothing."""

    def __init__(self, enabled: bool = True):
        self.enabled = enabled

    def stage(self, text: str) -> None:
        if self.enabled:
            from tqdm import tqdm

            tqdm.write(f"  {text}", file=sys.stderr)  # tqdm.write keeps open bars intact

    def bar(self, iterable, desc: str, unit: str = "it"):
        if not self.enabled:
            return iterable
        return self.counter(desc, len(iterable), unit, iterable)

    def counter(self, desc: str, total: int, unit: str = "it", iterable=None):
        """A bar advanced by hand (`.update()`, `.close()`); a no-op object when disabled."""
        if not self.enabled:
            return _NoBar()
        from tqdm import tqdm

        return tqdm(iterable, desc=f"  {desc}", total=total, unit=unit, leave=False,
                    file=sys.stderr)


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


QUIET = BuildProgress(enabled=False)


def chunks(n: int, size: int) -> list[slice]:
    """Slices cutting range(n) into pieces of at most `size` (a bar advances once per piece)."""
    return [slice(s, min(n, s + size)) for s in range(0, n, size)]
