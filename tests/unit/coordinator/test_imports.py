"""coordinator's own import graph, TYPE_CHECKING imports included: no cycle, and no manager reaches
back to the controller (each is handed the pieces it uses)."""
from __future__ import annotations

import ast
from pathlib import Path

import coordinator

PACKAGE = Path(coordinator.__file__).parent


def imports_of(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def graph() -> dict[str, set[str]]:
    modules = {f"coordinator.{p.stem}": p for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    return {name: imports_of(path) & set(modules) for name, path in modules.items()}


def test_coordinator_has_no_import_cycle():
    edges, done, path = graph(), set(), []

    def visit(module: str) -> None:
        assert module not in path, f"import cycle: {' -> '.join(path[path.index(module):] + [module])}"
        if module in done:
            return
        path.append(module)
        for imported in sorted(edges[module]):
            visit(imported)
        path.pop()
        done.add(module)

    for module in sorted(edges):
        visit(module)


def test_no_manager_imports_the_controller():
    importers = {module for module, imported in graph().items() if "coordinator.controller" in imported}
    assert importers == set()
