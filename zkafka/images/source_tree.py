"""The installed zkafka as a source tree that ``pip wheel`` builds: what goes into an image is what this
Python runs, whether it was installed from a wheel or is an editable checkout.

The tree is the top-level packages' directories as they are on disk (no ``__pycache__``) and a
``pyproject.toml`` written from the installed distribution's metadata: name, version, core dependencies
(no extras: the image leaves pyspark out), Python requirement and entry points; every non-Python file of a
package is declared as its package data.
"""
from __future__ import annotations

import importlib.util
import json
import shutil
from importlib.metadata import Distribution, distribution
from pathlib import Path

# The distribution's top-level packages (pyproject.toml's [tool.setuptools.packages.find] include).
PACKAGES = ("brokers", "coordinator", "consumer_group", "transactions", "scripts", "zkafka")
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo")


def package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"package {name!r} is not importable: is zkafka installed?")
    return Path(next(iter(spec.submodule_search_locations)))


def core_requirements(dist: Distribution) -> list[str]:
    """Requires-Dist without the extras' entries."""
    return [r for r in dist.requires or [] if "extra ==" not in r.replace('extra==', 'extra ==')]


def package_data(root: Path) -> dict[str, list[str]]:
    """Per package (dotted name), its non-Python files relative to the package's directory."""
    data: dict[str, list[str]] = {}
    for init in sorted(root.rglob("__init__.py")):
        pkg_dir = init.parent
        files = [f for f in sorted(pkg_dir.iterdir()) if f.is_file() and f.suffix not in (".py", ".pyc")]
        files += [f for d in sorted(pkg_dir.iterdir()) if d.is_dir() and not (d / "__init__.py").exists()
                  and d.name != "__pycache__" for f in sorted(d.rglob("*")) if f.is_file()]
        if files:
            name = ".".join(pkg_dir.relative_to(root).parts)
            data[name] = [str(f.relative_to(pkg_dir)) for f in files]
    return data


def _toml_list(values) -> str:
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


def pyproject(dist: Distribution, data: dict[str, list[str]]) -> str:
    """The tree's pyproject.toml (TOML strings written as JSON strings: the same escapes)."""
    meta = dist.metadata
    lines = ['[build-system]', 'requires = ["setuptools>=61", "wheel"]', 'build-backend = "setuptools.build_meta"',
             '', '[project]', f'name = {json.dumps(meta["Name"])}', f'version = {json.dumps(meta["Version"])}',
             f'dependencies = {_toml_list(core_requirements(dist))}']
    if meta.get("Requires-Python"):
        lines.append(f'requires-python = {json.dumps(meta["Requires-Python"])}')
    groups: dict[str, list] = {}
    for ep in dist.entry_points:
        groups.setdefault(ep.group, []).append(ep)
    for group, eps in sorted(groups.items()):
        table = "project.scripts" if group == "console_scripts" else f'project.entry-points.{json.dumps(group)}'
        lines += ['', f'[{table}]'] + [f'{json.dumps(ep.name)} = {json.dumps(ep.value)}' for ep in eps]
    lines += ['', '[tool.setuptools.packages.find]', f'include = {_toml_list(p + "*" for p in PACKAGES)}',
              '', '[tool.setuptools.package-data]'] + [f'{json.dumps(k)} = {_toml_list(v)}' for k, v in data.items()]
    return "\n".join(lines) + "\n"


def installed_packages() -> dict[str, Path]:
    """Each top-level package's directory; they must sit side by side (a ``scripts`` or ``brokers`` of someone
    else's, found first on ``sys.path``, is not zkafka's)."""
    dirs = {name: package_dir(name) for name in PACKAGES}
    parents = {d.parent for d in dirs.values()}
    if len(parents) != 1:
        raise RuntimeError("zkafka's packages are not side by side: " + ", ".join(f"{n} in {d}" for n, d in dirs.items())
                           + " (another package of one of these names shadows zkafka's on sys.path?)")
    return dirs


def write_source_tree(destination: Path, dist: Distribution | None = None) -> Path:
    """Copy the installed packages to ``destination`` (created) with their pyproject.toml; returns it."""
    dist = dist or distribution("zkafka")
    destination.mkdir(parents=True, exist_ok=True)
    for name, directory in installed_packages().items():
        shutil.copytree(directory, destination / name, ignore=IGNORED)
    (destination / "pyproject.toml").write_text(pyproject(dist, package_data(destination)))
    return destination
