"""The docs name what exists: every module or folder path README.md and docs/ARCHITECTURE.md give is in
the tree, and every command their code blocks and command table show still parses (`--help`)."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from spaceship_sim.cli.main import build_parser

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", REPO / "docs" / "ARCHITECTURE.md"]
# a path of the package as the docs write it: `narrowphase/refine.py`, `sim/`, `spaceship_sim/x.py`
PATH = re.compile(r"`((?:spaceship_sim/)?(?:[a-z_]+/)+(?:[a-z_]+\.py)?|[a-z_]+\.py)(?::[A-Za-z_.]+)?`")
COMMAND = re.compile(r"spaceship-sim ((?:bench )?[a-z-]+)")


def _paths(text: str) -> set[str]:
    return {m.group(1) for m in PATH.finditer(text)}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_path_the_docs_name_exists(doc):
    text = doc.read_text()
    named = _paths(text)
    assert named, f"{doc.name} names no path: the pattern is wrong"
    missing = []
    for path in named:
        here = [REPO / path, REPO / "spaceship_sim" / path, REPO / "tests" / path, REPO / "docs" / path]
        if not any(p.exists() for p in here):
            missing.append(path)
    assert not missing, f"{doc.name} names paths that do not exist: {sorted(missing)}"


def test_the_path_pattern_sees_paths_and_finds_missing_ones():
    assert _paths("see `narrowphase/refine.py` and `sim/`, `config.py`, `registry.py:EXACT_METHODS`") == {
        "narrowphase/refine.py", "sim/", "config.py", "registry.py"}
    assert not (REPO / "spaceship_sim" / "nowhere/gone.py").exists()


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_command_the_docs_show_parses(doc, capsys):
    commands = {m.group(1) for m in COMMAND.finditer(doc.read_text())}
    parser = build_parser()
    for command in sorted(commands):
        with pytest.raises(SystemExit) as done:
            parser.parse_args([*shlex.split(command), "--help"])
        assert done.value.code == 0, command
    capsys.readouterr()
