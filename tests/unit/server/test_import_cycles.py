"""No import cycle runs through the broker's request-serving layers (brokers.http, brokers.server).

Counted as Python runs imports, which grimp does not model: ``import a.b.c`` and ``from a.b import c`` run
``a/__init__`` and ``a/b/__init__`` first, so a package ``__init__`` that re-exports a submodule closes a
cycle with every sibling that imports the package. Imports under ``if TYPE_CHECKING:`` are not run.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCOPE = ("brokers.http", "brokers.server")


def module_files() -> dict[str, Path]:
    modules = {}
    for path in (ROOT / "brokers").rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def packages_of(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def imported_names(tree: ast.Module) -> set[str]:
    skipped = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
               for n in ast.walk(node)}
    names: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def import_graph() -> dict[str, set[str]]:
    modules = module_files()
    graph = {}
    for module, path in modules.items():
        run = {p for name in imported_names(ast.parse(path.read_text())) for p in [*packages_of(name), name]}
        graph[module] = {m for m in run | set(packages_of(module)) if m in modules and m != module}
    return graph


def reaches(graph: dict[str, set[str]], start: str, goal: str) -> list[str] | None:
    paths, seen = [[start]], {start}
    while paths:
        path = paths.pop(0)
        for nxt in sorted(graph[path[-1]]):
            if nxt == goal:
                return path + [nxt]
            if nxt not in seen:
                seen.add(nxt)
                paths.append(path + [nxt])
    return None


def test_no_module_of_brokers_http_or_brokers_server_imports_itself_back():
    graph = import_graph()
    cycles = [reaches(graph, module, module) for module in sorted(graph) if module.startswith(SCOPE)]
    assert [c for c in cycles if c] == []


def test_the_check_sees_a_package_init_that_re_exports_a_submodule():
    graph = {"p": {"p.server"}, "p.server": {"p", "p.admin"}, "p.admin": {"p", "p.auth"}, "p.auth": {"p"}}
    assert reaches(graph, "p.admin", "p.admin") == ["p.admin", "p", "p.server", "p.admin"]
