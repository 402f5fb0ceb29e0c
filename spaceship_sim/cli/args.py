"""Command-line argument types: every bad value is refused while parsing, before anything runs.

Each factory returns an argparse `type=` callable. A refusal raises argparse.ArgumentTypeError,
which `cli.Parser.error` turns into `InputError("command line", "--flag", problem)`: one line,
exit code 2. Output paths are probed for writing here too, so that no run does its work and
then fails to save it.
"""
from __future__ import annotations

import argparse
import math
import os
import tempfile
from pathlib import Path

COMMAND_LINE = "command line"  # the `file` of an InputError about a flag
MAX_FRAMES = 10_000_000        # frames of one run: ~4 days at 30 Hz
MAX_MS = 10_000.0              # stand-in render times and detection budgets: 10 s


def integer(lo: int, hi: int, cost=None):
    """An int in lo..hi; cost(value) -> str says what a value too large would take."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if not lo <= value <= hi:
            why = f" (would need {cost(value)})" if cost and value > hi else ""
            raise argparse.ArgumentTypeError(f"must be in {lo}..{hi}, got {value}{why}")
        return value
    return parse


def number(lo: float, hi: float, lo_open: bool = False, unit: str = ""):
    """A finite float in [lo, hi] ((lo, hi] with lo_open); unit is named in the message."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be finite, got {text!r}")
        if value < lo or (lo_open and value == lo) or value > hi:
            left = "(" if lo_open else "["
            raise argparse.ArgumentTypeError(f"must be in {left}{lo:g}, {hi:g}]{unit}, got {value:g}")
        return value
    return parse


def milliseconds(text: str) -> float:
    """A stand-in render time [ms]: 0..MAX_MS."""
    return number(0.0, MAX_MS, unit=f" ms (at most {MAX_MS / 1e3:g} s)")(text)


def milliseconds_list(text: str) -> list[float]:
    """Comma-separated stand-in render times [ms], in the order given, each as `milliseconds`."""
    try:
        return [milliseconds(x) for x in text.split(",")]
    except argparse.ArgumentTypeError as e:
        raise argparse.ArgumentTypeError(f"{e}" + (f" (in {text!r})" if "," in text else "")) from None


def output_folder(text: str) -> str:
    """A folder that exists or can be created, and can be written in."""
    if not text.strip():
        raise argparse.ArgumentTypeError("empty path; name the output folder")
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} exists and is not a folder")
    _check_writable(_nearest_existing(path), text)
    return text


def png_file(text: str) -> str:
    """A .png file path whose folder exists and can be written in."""
    path = Path(text)
    if path.suffix.lower() != ".png":
        raise argparse.ArgumentTypeError(f"must name a .png file, got {text!r}")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder, not a file")
    folder = path.parent
    if not folder.is_dir():
        raise argparse.ArgumentTypeError(f"folder {folder} of {text} does not exist")
    _check_writable(folder, text)
    return text


def new_file(text: str) -> str:
    """A file to (over)write, e.g. a recording: its folder exists and can be written in."""
    path = Path(text)
    if not text.strip():
        raise argparse.ArgumentTypeError("empty path; name the file")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder, not a file")
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"folder {path.parent} of {text} does not exist")
    _check_writable(path.parent, text)
    return text


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _check_writable(folder: Path, text: str) -> None:
    """os.access alone is not enough (root passes it everywhere, some mounts are read-only):
    also write and remove a probe file."""
    if not folder.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is under {folder}, which is a file, not a folder")
    try:
        if not os.access(folder, os.W_OK | os.X_OK):
            raise PermissionError("permission denied")
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-probe-"):
            pass
    except OSError as e:
        raise argparse.ArgumentTypeError(f"cannot write in {folder} ({e.strerror or e})") from None
