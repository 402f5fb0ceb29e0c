"""The package's import graph: no circle between modules or between folders, contracts and config
import no implementation, names are mapped to parts only by the registry and its callers, and only
app/ touches GL. Every import counts, at module level or inside a function (a lazy import still
ties the two modules together)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "spaceship_sim"
GL = ("pyglet", "moderngl", "imgui_bundle", "OpenGL", "glcontext")
# contracts and the ground floor: what they may import from the package
ALLOWED = {
    "spaceship_sim.config": {"spaceship_sim.errors", "spaceship_sim.files"},
    "spaceship_sim.files": {"spaceship_sim.errors"},
    "spaceship_sim.narrowphase.exact": {"spaceship_sim.narrowphase.reference", "spaceship_sim.geometry"},
    "spaceship_sim.broadphase.base": {"spaceship_sim.errors", "spaceship_sim.sorting", "spaceship_sim.geometry"},
}
# who may import the registry (the composition root, the command line, the benches)
REGISTRY_USERS = ("spaceship_sim.sim.world", "spaceship_sim.cli.", "spaceship_sim.bench.")


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every module of the package (or outside it) that `path` imports, resolved to dotted names."""
    mod, tree = _module(path), ast.parse(path.read_text())
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                head = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(head + ([node.module] if node.module else []))
            found |= {f"{base}.{a.name}" for a in node.names} | {base}
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    """module -> the package's modules it imports (a name imported from a module counts as that module)."""
    files = {_module(p): p for p in PACKAGE.rglob("*.py")}
    edges = {}
    for mod, path in files.items():
        targets = {t for t in _imports(path) if t in files}
        edges[mod] = {t for t in targets if t != mod and not mod.startswith(t + ".")}  # a package's own __init__
    return edges


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One circle of the directed graph, or None."""
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(edges.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state and (c := visit(m)):
                return c
        state[n] = 2
        stack.pop()
        return None

    for n in sorted(edges):
        if n not in state and (c := visit(n)):
            return c
    return None


def _room(mod: str) -> str:
    """A module's folder directly under the package (or the module itself at the package root)."""
    parts = mod.split(".")
    return ".".join(parts[:2])


def test_no_module_imports_another_that_imports_it_back(graph):
    assert _cycle(graph) is None


def test_no_folder_imports_one_that_imports_it_back(graph):
    rooms: dict[str, set[str]] = {}
    for mod, targets in graph.items():
        if mod == "spaceship_sim":
            continue
        rooms.setdefault(_room(mod), set()).update(_room(t) for t in targets if _room(t) != _room(mod))
    assert _cycle(rooms) is None


def test_the_cycle_finder_finds_a_circle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


@pytest.mark.parametrize("contract", sorted(ALLOWED))
def test_contracts_and_config_import_no_implementation(graph, contract):
    allowed = ALLOWED[contract]
    assert {t for t in graph[contract] if not any(t == a or t.startswith(a + ".") for a in allowed)} == set()


def test_only_the_composition_root_the_command_line_and_the_benches_use_the_registry(graph):
    users = {m for m, targets in graph.items() if "spaceship_sim.registry" in targets}
    assert users and all(m.startswith(REGISTRY_USERS) for m in users), users


def test_only_the_app_imports_gl():
    for path in PACKAGE.rglob("*.py"):
        if _module(path).startswith("spaceship_sim.app"):
            continue
        gl = {t for t in _imports(path) if t.split(".")[0] in GL}
        assert not gl, f"{path.relative_to(PACKAGE.parent)} imports {sorted(gl)}"


def test_the_registry_maps_exactly_the_names_config_accepts():
    from spaceship_sim import registry
    from spaceship_sim.config import BROADPHASE_NAMES, EXACT_LEVELS, EXACT_STRATEGY_NAMES

    assert tuple(registry.BROADPHASES) == BROADPHASE_NAMES
    assert tuple(registry.EXACT_METHODS) == EXACT_STRATEGY_NAMES
    assert set(EXACT_LEVELS) - {"sphere_leaves"} <= set(registry.EXACT_METHODS)
