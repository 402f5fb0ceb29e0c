"""Where the compiled numba kernels are cached, and how a damaged cache heals itself.

numba caches a `cache=True` kernel beside its source (`__pycache__/*.nbi|*.nbc`) by default: inside
an installed package that is shared, maybe read-only, and a damaged file there breaks every later
start (an unpickling traceback, or a crash in the loaded machine code). `install()` (run when the
package is imported, before any kernel is defined) changes two things for this package's kernels:

- they cache under `kernel_dir()`: a per-user folder keyed by the package, numba and Python
  versions and the CPU (`$SPACESHIP_SIM_CACHE_DIR/kernels/<key>`, default the platform's cache
  folder), which `spaceship-sim clear-cache` lists and clears;
- every cache file carries a SHA-256 of its contents; a file that is cut short, altered or
  unreadable is deleted with one line on stderr and its kernel compiled again.

A crash in compiled code is named by `fault_hint.install()` (the command line's start).
"""
from __future__ import annotations

import hashlib
import os
import pickle
import platform
import sys
from pathlib import Path

from . import __version__

CACHE_ENV = "SPACESHIP_SIM_CACHE_DIR"  # overrides the per-user cache root
PACKAGE_DIR = Path(__file__).resolve().parent
MAGIC = b"ssimk1\n"  # starts every cache file written here: MAGIC, sha-256 of the rest, the rest
DIGEST = 32
CLEAR_HINT = "a damaged compiled-kernel cache can cause this: run `spaceship-sim clear-cache`"


def cache_root() -> Path:
    """The per-user cache folder of spaceship-sim: $SPACESHIP_SIM_CACHE_DIR, else the platform's
    (XDG_CACHE_HOME or ~/.cache, ~/Library/Caches, %LOCALAPPDATA%) + spaceship-sim."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "spaceship-sim"


def kernel_dir() -> Path:
    """This build's kernel folder: code compiled for another version or CPU is never looked at."""
    import numba
    from numba.core import config

    cpu = config.CPU_NAME or _host_cpu()
    key = f"{__version__}-numba{numba.__version__}-py{sys.version_info[0]}{sys.version_info[1]}"
    return cache_root() / "kernels" / f"{key}-{platform.machine() or 'cpu'}-{cpu}"


def _host_cpu() -> str:
    import llvmlite.binding as llvm
    return llvm.get_host_cpu_name() or "generic"


def install() -> None:
    """Route this package's cached kernels to kernel_dir(), checksummed (see the module docstring).
    Idempotent; kernels of other packages keep numba's own cache."""
    from numba.core import caching

    if getattr(caching, "_spaceship_sim_installed", False):
        return
    caching.CacheImpl._locator_classes.insert(0, _locator_class(caching, kernel_dir()))
    caching.IndexDataCacheFile = checked_cache_file(caching, kernel_dir())
    caching._spaceship_sim_installed = True


def _locator_class(caching, root: Path):
    """numba's cache locator for this package's sources only, with their files under root."""

    class KernelLocator(caching.UserProvidedCacheLocator):
        def __init__(self, py_func, py_file):
            super().__init__(py_func, py_file)
            self._cache_path = os.path.join(root, self.get_suitable_cache_subpath(py_file))

        @classmethod
        def from_function(cls, py_func, py_file):
            if not Path(py_file).resolve().is_relative_to(PACKAGE_DIR):
                return None
            # numba's own checks (the source exists, the folder is writable), not CACHE_DIR's
            return super(caching.UserProvidedCacheLocator, cls).from_function(py_func, py_file)

    return KernelLocator


def checked_cache_file(caching, root: Path):
    """numba's cache file class, sealing (and checking) every file under root."""

    class CheckedCacheFile(caching.IndexDataCacheFile):
        """numba's index + data files, each sealed with a checksum when under root; a file that
        fails it is dropped (with the function's other files) and reads as a cache miss."""

        def __init__(self, cache_path, filename_base, source_stamp):
            super().__init__(cache_path, filename_base, source_stamp)
            self._checked = Path(cache_path).resolve().is_relative_to(root.resolve())
            self._base = filename_base

        def save(self, key, data):
            """numba's save, with the data file named by a digest of the key, not by the first number
            free in the index this process read: two processes that compile two signatures of one
            kernel at once would take the same number, and one's index could then name the other's
            machine code (the compile helper of sim/compile_ahead.py runs beside the world's warm-up).
            Here the last index written may lack the other's entry (a miss: compiled again), never name
            the wrong file; the data is written before the index names it."""
            if not self._checked:
                return super().save(key, data)
            overloads = self._load_index()
            name = overloads.get(key) or f"{self._base}.{hashlib.sha256(repr(key).encode()).hexdigest()[:16]}.nbc"
            self._save_data(name, data)
            if overloads.get(key) != name:
                overloads[key] = name
                self._save_index(overloads)

        def _load_index(self):
            if not self._checked:
                return super()._load_index()
            payload = self._read(self._index_path)
            if payload is None:
                return {}
            version, stamp, overloads = payload
            return overloads if (version, stamp) == (self._version, self._source_stamp) else {}

        def _save_index(self, overloads):
            if not self._checked:
                return super()._save_index(overloads)
            self._write(self._index_path, pickle.dumps((self._version, self._source_stamp, overloads), protocol=-1))

        def _load_data(self, name):
            if not self._checked:
                return super()._load_data(name)
            return self._read(self._data_path(name))

        def _save_data(self, name, data):
            if not self._checked:
                return super()._save_data(name, data)
            self._write(self._data_path(name), self._dump(data))

        def _write(self, path: str, payload: bytes) -> None:
            with self._open_for_write(path) as f:
                f.write(MAGIC + hashlib.sha256(payload).digest() + payload)

        def _read(self, path: str):
            """The unpickled payload of `path`; None when missing, or when damaged (dropped, said once)."""
            try:
                with open(path, "rb") as f:
                    blob = f.read()
            except FileNotFoundError:
                return None
            problem = damage(blob)
            if problem is None:
                try:
                    return pickle.loads(blob[len(MAGIC) + DIGEST:])
                except Exception as e:  # sealed but unreadable: written by a broken numba, say
                    problem = f"{type(e).__name__}: {e}"
            self._drop(path, problem)
            return None

        def _drop(self, path: str, problem: str) -> None:
            for name in os.listdir(self._cache_path):
                if name.startswith(self._base + ".") and name.endswith((".nbi", ".nbc")):
                    _unlink(os.path.join(self._cache_path, name))
            print(f"{path}: damaged compiled-kernel cache ({problem}); dropped it, compiling this kernel again",
                  file=sys.stderr, flush=True)

    return CheckedCacheFile


def damage(blob: bytes) -> str | None:
    """What is wrong with a sealed cache file's bytes (None: intact)."""
    if not blob.startswith(MAGIC):
        return "not sealed by this program" if blob else "empty"
    body = blob[len(MAGIC):]
    if len(body) < DIGEST or hashlib.sha256(body[DIGEST:]).digest() != body[:DIGEST]:
        return "checksum mismatch: cut short or altered"
    return None


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass  # another process dropped it first
