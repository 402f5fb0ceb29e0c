"""Command-line argument types: every bad value is refused while parsing, before anything runs.

Each factory returns an argparse `type=` callable. A refusal raises argparse.ArgumentTypeError,
which `cli.Parser.error` turns into `InputError("command line", "--flag", problem)`: one line,
exit code 2. Output paths are probed for writing here too, so that no run does its work and
then fails to save it.
"""
from __future__ import annotations

import argparse
import math

from ..files import OutputPathError, check_output

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
    """A folder that exists or can be created, and can be written in (files.check_output)."""
    return _output(text, "folder")


def png_file(text: str) -> str:
    """A .png file path whose folder exists and can be written in."""
    return _output(text, "file", ".png")


def csv_file(text: str) -> str:
    """A .csv file path whose folder exists and can be written in."""
    return _output(text, "file", ".csv")


def new_file(text: str) -> str:
    """A file to (over)write, e.g. a recording: its folder exists and can be written in."""
    return _output(text, "file")


def _output(text: str, kind: str, suffix: str = "") -> str:
    """Every output path of every command goes through files.check_output, while parsing: a run
    never does its work and then fails to save it."""
    try:
        check_output(text, kind, suffix)
    except OutputPathError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text
