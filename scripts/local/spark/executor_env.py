"""The executors' Python environment, packed for ``spark-submit --archives ENV.tar.gz#zkafka-env`` with
``spark.pyspark.python=./zkafka-env/bin/python``: Spark's documented way to ship a virtualenv.

The archive is a relocatable virtual environment made from *this* interpreter's installed distributions,
without pip or a network: ``pyvenv.cfg`` (``home`` = this base interpreter's folder), ``bin/python`` (a
symlink to the base interpreter, so every host that runs executors needs the same Python at the same path,
as with ``venv-pack``), and ``lib/pythonX.Y/site-packages/`` holding the files (as
``importlib.metadata`` lists them) of the distributions the ``zkafka`` data source needs in a task,
``EXECUTOR_DISTRIBUTIONS`` and their requirements. pyspark itself is not packed: Spark puts its own
``pyspark.zip`` on the executors' ``PYTHONPATH``. zkafka's code is not packed either: it travels with each
submission (``code_zip``, ``--py-files``), so a code change needs no new environment.

The archive is cached by the name of its contents (the distributions' names and versions, the Python):
``pack`` returns the existing file when nothing changed.
"""
from __future__ import annotations

import hashlib
import io
import os
import re
import sys
import sysconfig
import tarfile
import tempfile
import zipfile
from importlib import metadata
from pathlib import Path

EXECUTOR_DISTRIBUTIONS = ("confluent-kafka", "pyarrow", "msgpack")
CODE_PACKAGES = ("consumer_group",)
ENV_NAME = "zkafka-env"


def requirement_closure(names: tuple[str, ...] = EXECUTOR_DISTRIBUTIONS) -> list[metadata.Distribution]:
    """The installed distributions ``names`` and, recursively, what they require (extras and markers that do
    not apply here left out), each once."""
    seen: dict[str, metadata.Distribution] = {}
    todo = list(names)
    while todo:
        name = _normalize(todo.pop())
        if name in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise FileNotFoundError(f"the executors need {name!r}, which is not installed here") from None
        seen[name] = dist
        todo.extend(_plain_requirements(dist))
    return [seen[name] for name in sorted(seen)]


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _plain_requirements(dist: metadata.Distribution) -> list[str]:
    """Requirement names without an ``extra ==`` marker (the packer does not evaluate other markers: a
    requirement of another platform that is not installed is skipped)."""
    names = []
    for requirement in dist.requires or ():
        if re.search(r"\bextra\s*==", requirement):
            continue
        name = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
        if name:
            try:
                metadata.distribution(name.group(0))
            except metadata.PackageNotFoundError:
                continue
            names.append(name.group(0))
    return names


def archive_name(dists: list[metadata.Distribution]) -> str:
    key = "|".join([sys.version, sys.base_prefix, *(f"{d.metadata['Name']}=={d.version}" for d in dists)])
    return f"{ENV_NAME}-{hashlib.sha256(key.encode()).hexdigest()[:12]}.tar.gz"


def pack(cache_dir: Path) -> Path:
    """The executors' environment archive in ``cache_dir`` (made now unless one with the same contents is there)."""
    dists = requirement_closure()
    target = Path(cache_dir) / archive_name(dists)
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=target.name, suffix=".partial", dir=target.parent)
    os.close(handle)
    partial = Path(name)  # one per packer: two packing at once each rename a whole archive into place
    try:
        _write_archive(partial, dists)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def _write_archive(partial: Path, dists: list[metadata.Distribution]) -> None:
    site = f"lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"
    with tarfile.open(partial, "w:gz", compresslevel=1) as tar:
        _add_bytes(tar, "pyvenv.cfg", _pyvenv_cfg().encode())
        link = tarfile.TarInfo("bin/python")
        link.type, link.linkname = tarfile.SYMTYPE, str(Path(sys._base_executable).resolve())
        tar.addfile(link)
        for dist in dists:
            for file in dist.files or ():
                path = Path(dist.locate_file(file))
                if path.is_file() and "__pycache__" not in file.parts and not str(file).startswith(".."):
                    tar.add(path, f"{site}/{file}", recursive=False)


def _pyvenv_cfg() -> str:
    home = Path(sys._base_executable).resolve().parent
    return (f"home = {home}\ninclude-system-site-packages = false\n"
            f"version = {sysconfig.get_python_version()}.{sys.version_info.micro}\n")


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def code_zip(target: Path, root: Path | None = None) -> Path:
    """zkafka's code a job imports in its tasks (``CODE_PACKAGES``, ``.py`` files only) as one zip for
    ``--py-files``: Python imports it from the zip on the executors."""
    root = root or Path(__file__).resolve().parents[3]
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        for package in CODE_PACKAGES:
            for path in sorted((root / package).rglob("*.py")):
                out.write(path, path.relative_to(root).as_posix())
    return target
