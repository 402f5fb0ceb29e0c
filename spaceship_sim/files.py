"""The user's files: inputs read within bounds, outputs checked before any work starts, partial
files a later start can recognise, and signals that leave none behind.

- `check_input` / `read_input`: an input (config, recording, mesh) must be a regular file under a
  size limit. A device, FIFO or socket is refused before it is opened: /dev/zero would be read
  until memory runs out, a FIFO would block.
- `check_output`: an output path is refused when it is too long, a dangling or looping symlink,
  of the wrong kind (file for folder), or when a probe file cannot be created where it will be
  written (os.access says yes to root everywhere, even in /proc).
- `partial_prefix`: outputs are written under hidden `.partial-<pid>-` names, then moved into
  place. `sweep_partials` removes those that a dead process left behind (SIGKILL, a crash, power),
  saying so; `check_output` runs it on the folders it checks.
- `terminate_as_interrupt`: SIGTERM raises `Terminated` (a KeyboardInterrupt), so the cleanup that
  SIGINT already runs (discard partial files, keep earlier outputs) runs for SIGTERM too;
  `uninterrupted` holds both signals back while finished files are moved into place.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import stat
import sys
import time
from pathlib import Path

from .errors import InputError

NAME_MAX, PATH_MAX = 255, 4096  # bytes of one path component and of a whole path (Linux)
PROBE_PREFIX = ".write-probe-"
PARTIAL = re.compile(r"^\.(?:.+\.)?partial-(?:(\d+)-)?")  # .partial-PID-x, .NAME.partial-PID-x (older: no PID)
_KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISSOCK, "a socket"))


# ---------------------------------------------------------------- inputs

def check_input(path, limit: int, what: str, error=InputError) -> int:
    """The size [bytes] of `path`, a regular file of at most `limit` bytes; else error(path, "",
    problem) with one line saying why (`what` names the expected content, e.g. "config")."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise error(path, "", "file not found") from None
    except OSError as e:
        raise error(path, "", f"cannot read ({e.strerror or e})") from None
    if stat.S_ISDIR(st.st_mode):
        raise error(path, "", "is a folder, not a file")
    if not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
        raise error(path, "", f"is {kind}, not a {what} file")
    if st.st_size > limit:
        raise error(path, "", f"{st.st_size:,} bytes, over the {_size(limit)} limit for a {what} file")
    return st.st_size


def read_input(path, limit: int, what: str, error=InputError) -> bytes:
    """The bytes of `path` (check_input's checks); never more than `limit` are read, in case the
    file grows while it is read."""
    check_input(path, limit, what, error)
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise error(path, "", f"cannot read ({e.strerror or e})") from None
    if len(data) > limit:
        raise error(path, "", f"grew past the {_size(limit)} limit for a {what} file while it was read")
    return data


def _size(n: int) -> str:
    return f"{n / 1e6:.3g} MB" if n >= 1e6 else f"{n / 1e3:.3g} kB" if n >= 1e3 else f"{n} bytes"


# ---------------------------------------------------------------- outputs

class OutputPathError(ValueError):
    """An output path that cannot be written; str() is the problem (the caller names the flag)."""


def check_output(text: str, kind: str, suffix: str = "", notify=None) -> Path:
    """`text` as an output path of `kind` "folder" (created if missing) or "file" (in an existing
    folder; `suffix`: the extension it must have), checked before any work: length, symlinks, kind,
    and a probe file created and removed where the output will go. Stale partial files there are
    swept (notify: where to say so; default stderr). Raises OutputPathError."""
    if not text.strip():
        raise OutputPathError(f"empty path; name the output {kind}")
    path = Path(text)
    _check_length(text)
    if suffix and path.suffix.lower() != suffix:
        raise OutputPathError(f"must name a {suffix} file, got {text!r}")
    _check_link(path)
    if kind == "folder":
        if path.exists() and not path.is_dir():
            raise OutputPathError(f"{text} exists and is not a folder")
        folder = _nearest_existing(path)
        if not folder.is_dir():
            raise OutputPathError(f"{text} is under {folder}, which is a file, not a folder")
    else:
        if path.is_dir():
            raise OutputPathError(f"{text} is a folder, not a file")
        if path.exists() and not path.is_file():
            raise OutputPathError(f"{text} exists and is not a regular file")
        folder = path.parent
        if not folder.is_dir():
            raise OutputPathError(f"folder {folder} of {text} does not exist")
    _probe(folder, path if kind == "file" and path.exists() else None)
    for place in dict.fromkeys((path.parent, path) if kind == "folder" else (folder,)):
        sweep_partials(place, notify)  # run's partial folder is inside --out, bench hubbard's beside it
    return path


def _check_length(text: str) -> None:
    raw = os.fsencode(text)
    if len(raw) >= PATH_MAX:
        raise OutputPathError(f"path is {len(raw)} bytes long, over the {PATH_MAX - 1}-byte limit")
    for part in Path(text).parts:
        n = len(os.fsencode(part))
        if n > NAME_MAX:
            raise OutputPathError(f"name {part[:24]}... is {n} bytes long, over the {NAME_MAX}-byte limit")


def _check_link(path: Path) -> None:
    """A symlink must lead to something: writing through a dangling one fails after the work."""
    if not path.is_symlink():
        return
    try:
        path.stat()
    except FileNotFoundError:
        raise OutputPathError(f"{path} is a symlink to nothing ({os.readlink(path)} does not exist)") from None
    except OSError as e:
        raise OutputPathError(f"{path} is a symlink that cannot be followed ({e.strerror or e})") from None


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _probe(folder: Path, existing: Path | None) -> None:
    """Create and remove a file in `folder`, and open an `existing` output for appending (which
    changes nothing in it): the writes the command will make, tried before it starts."""
    probe = folder / f"{PROBE_PREFIX}{os.getpid()}"
    try:
        with open(probe, "xb"):
            pass
        os.unlink(probe)
        if existing is not None:
            with open(existing, "ab"):
                pass
    except OSError as e:
        where = existing if existing is not None and e.filename == str(existing) else folder
        raise OutputPathError(f"cannot write in {where} ({e.strerror or e})") from None


# ---------------------------------------------------------------- partial files

def partial_prefix(name: str = "") -> str:
    """Prefix of a partial file or folder written by this process (tempfile's `prefix=`): hidden,
    with the name of what it will become and this process's id."""
    return f".{name + '.' if name else ''}partial-{os.getpid()}-"


def process_start() -> float:
    """When this process started [s since the epoch] (Linux /proc; else when this module loaded)."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return _LOADED


_LOADED = time.time()


def stale(entry: Path, started: float) -> bool:
    """A partial file or folder is stale when it is older than this process and the process that
    wrote it has gone (another run writing now keeps its files)."""
    m = PARTIAL.match(entry.name)
    if not m:
        return False
    try:
        if entry.lstat().st_mtime >= started:
            return False
    except OSError:
        return False
    pid = int(m.group(1)) if m.group(1) else None
    return pid is None or pid == os.getpid() or not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def sweep_partials(folder: Path, notify=None) -> list[Path]:
    """Remove the stale partial files and folders directly in `folder`, one line each to
    notify (default: stderr); returns them."""
    notify = notify or (lambda line: print(line, file=sys.stderr, flush=True))
    try:
        entries = list(folder.iterdir()) if folder.is_dir() else []
    except OSError:
        return []
    started, removed = process_start(), []
    for entry in sorted(entries):
        if not stale(entry, started):
            continue
        try:
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
        except OSError:
            continue
        removed.append(entry)
        notify(f"removed {entry}: a partial output left by an interrupted run")
    return removed


# ---------------------------------------------------------------- signals

class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, so that it cleans up as for Ctrl-C."""


def terminate_as_interrupt() -> None:
    """From now on SIGTERM raises Terminated in the main thread (called elsewhere: nothing)."""
    import threading

    def handler(signum, frame):
        raise Terminated()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, handler)


def interruption(exc: BaseException) -> KeyboardInterrupt | None:
    """The KeyboardInterrupt (or Terminated) behind `exc`, if any: a signal that arrives while
    compiled code calls back into Python comes out wrapped in a SystemError."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


@contextlib.contextmanager
def uninterrupted():
    """Hold SIGINT and SIGTERM back during the block (moving finished files into place), then
    act on the first that came. Outside the main thread, a plain block."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = []
    previous = {s: signal.signal(s, lambda signum, frame: caught.append(signum))
                for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if caught:
            handler = previous[caught[0]]
            if callable(handler):
                handler(caught[0], None)
            elif handler == signal.SIG_DFL:
                signal.raise_signal(caught[0])
