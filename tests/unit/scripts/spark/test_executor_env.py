"""The executors' Python environment (scripts.local.spark.executor_env): which installed distributions go in it,
the archive's cached name, the archive itself (a relocatable virtualenv of this interpreter's distributions) and
the zip of zkafka's code. The real environment is packed once for the module (~2 s, ~70 MB in a temp dir)."""
from __future__ import annotations

import ast
import re
import sys
import tarfile
import zipfile
from importlib import metadata
from pathlib import Path, PurePosixPath
from types import SimpleNamespace

import pytest

from scripts.local.spark import executor_env

SITE = f"lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages/"
PROJECT_PACKAGES = {"brokers", "coordinator", "consumer_group", "transactions", "scripts", "zkafka", "tests"}


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installed(name: str) -> bool:
    try:
        metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return False
    return True


# ---------------------------------------------------------------------------------- requirement_closure


def test_the_closure_holds_the_executor_distributions_and_what_they_require():
    dists = executor_env.requirement_closure()
    names = [norm(d.metadata["Name"]) for d in dists]
    assert {"confluent-kafka", "pyarrow", "msgpack"} <= set(names)
    assert len(names) == len(set(names)) and names == sorted(names)
    assert "pyspark" not in names  # Spark ships its own pyspark.zip to the executors
    for dist in dists:  # closed: every installed requirement without an extra is in it
        for requirement in dist.requires or ():
            if re.search(r"\bextra\s*==", requirement):
                continue
            name = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement).group(0)
            if installed(name):
                assert norm(name) in names, f"{dist.metadata['Name']} requires {name}, not in {names}"


def test_names_are_matched_however_they_are_spelled():
    (dist,) = executor_env.requirement_closure(("msgpack",))
    assert norm(dist.metadata["Name"]) == "msgpack"
    assert [d.metadata["Name"] for d in executor_env.requirement_closure(("Confluent_Kafka",))][0] == \
        metadata.distribution("confluent-kafka").metadata["Name"]


def test_an_unknown_distribution_is_named():
    with pytest.raises(FileNotFoundError, match="no-such-dist-zkafka"):
        executor_env.requirement_closure(("msgpack", "no-such-dist-zkafka"))


class FakeDist(SimpleNamespace):
    pass


def test_the_closure_skips_extras_and_requirements_not_installed_and_visits_each_once(monkeypatch):
    graph = {
        "app": ["lib-a>=1", 'Lib_B ; python_version > "3"', 'extra-only ; extra == "test"', "missing-one>=2",
                "lib.a[fast]"],
        "lib-a": ["lib_b"],
        "lib-b": ["app"],  # a cycle
        "extra-only": [],
    }
    def distribution(name):
        key = norm(name)
        if key not in graph:
            raise metadata.PackageNotFoundError(name)
        return FakeDist(metadata={"Name": key}, version="1.0", requires=graph[key])

    monkeypatch.setattr(executor_env, "metadata", SimpleNamespace(
        distribution=distribution, PackageNotFoundError=metadata.PackageNotFoundError))
    dists = executor_env.requirement_closure(("app",))
    assert [d.metadata["Name"] for d in dists] == ["app", "lib-a", "lib-b"]  # not extra-only, though installed


# ---------------------------------------------------------------------------------------- archive_name


def fake(name: str, version: str):
    return SimpleNamespace(metadata={"Name": name}, version=version)


def test_archive_name_is_stable_for_the_same_distributions():
    dists = [fake("confluent-kafka", "2.16.1"), fake("pyarrow", "26.0.1")]
    name = executor_env.archive_name(dists)
    assert re.fullmatch(r"zkafka-env-[0-9a-f]{12}\.tar\.gz", name)
    assert executor_env.archive_name([fake("confluent-kafka", "2.16.1"), fake("pyarrow", "26.0.1")]) == name


def test_archive_name_changes_with_a_version_a_distribution_or_the_python(monkeypatch):
    base = [fake("confluent-kafka", "2.16.1"), fake("pyarrow", "26.0.1")]
    name = executor_env.archive_name(base)
    assert executor_env.archive_name([fake("confluent-kafka", "2.16.1"), fake("pyarrow", "26.0.2")]) != name
    assert executor_env.archive_name([*base, fake("msgpack", "1.2.4")]) != name
    assert executor_env.archive_name(base[:1]) != name
    monkeypatch.setattr(executor_env, "sys", SimpleNamespace(version="3.99.0 (other)", base_prefix=sys.base_prefix))
    assert executor_env.archive_name(base) != name


# ------------------------------------------------------------------------------------------------- pack


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    archive = executor_env.pack(cache)
    with tarfile.open(archive) as tar:
        members = {m.name: m for m in tar.getmembers()}
        cfg = tar.extractfile("pyvenv.cfg").read().decode()
    return SimpleNamespace(cache=cache, archive=archive, members=members, cfg=cfg)


def test_pack_names_the_archive_after_its_contents(packed):
    assert packed.archive.parent == packed.cache
    assert packed.archive.name == executor_env.archive_name(executor_env.requirement_closure())
    assert [p.name for p in packed.cache.iterdir()] == [packed.archive.name]  # no .partial left


def test_the_archive_is_a_virtualenv_of_the_base_interpreter(packed):
    base = Path(sys._base_executable).resolve()
    link = packed.members["bin/python"]
    assert link.issym() and link.linkname == str(base)
    lines = packed.cfg.splitlines()
    assert f"home = {base.parent}" in lines
    assert "include-system-site-packages = false" in lines
    assert f"version = {sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}" in lines


def test_the_archive_holds_the_distributions_files_in_site_packages(packed):
    names = set(packed.members)
    for module in ("pyarrow/__init__.py", "confluent_kafka/__init__.py", "msgpack/__init__.py"):
        assert SITE + module in names
        assert packed.members[SITE + module].isfile()
    for dist in executor_env.requirement_closure():  # the metadata too: importlib.metadata works on executors
        meta = [f for f in dist.files if f.name == "METADATA" and f.parent.name.endswith(".dist-info")]
        assert meta and SITE + str(meta[0]) in names
    assert not any(n.startswith(SITE + "pyspark/") for n in names)
    assert not any(n.startswith(SITE + p + "/") for n in names for p in PROJECT_PACKAGES)


def test_the_archive_has_no_bytecode_caches_and_nothing_outside_the_env(packed):
    names = list(packed.members)
    assert not [n for n in names if "__pycache__" in n]
    assert not [n for n in names if n.startswith("/") or ".." in Path(n).parts]
    assert {n for n in names if not n.startswith(SITE)} == {"pyvenv.cfg", "bin/python"}


def test_a_second_pack_reuses_the_archive(packed):
    before = packed.archive.stat()
    assert executor_env.pack(packed.cache) == packed.archive
    after = packed.archive.stat()
    assert (after.st_mtime_ns, after.st_ino, after.st_size) == (before.st_mtime_ns, before.st_ino, before.st_size)
    assert [p.name for p in packed.cache.iterdir()] == [packed.archive.name]


def test_pack_takes_only_a_distributions_files_inside_site_packages(tmp_path, monkeypatch):
    """A fake distribution (so the test does not depend on what is installed): its scripts outside site-packages
    (``../../../bin``), its bytecode caches and files listed but missing are left out."""
    site = tmp_path / "env" / SITE  # its ../../../bin is tmp_path/env/bin
    files = {"fakepkg/__init__.py": "A = 1\n", "fakepkg/__pycache__/__init__.cpython-311.pyc": "x",
             "fakepkg-1.0.dist-info/METADATA": "Name: fakepkg\n", "../../../bin/fakepkg-tool": "#!/bin/sh\n"}
    for name, text in files.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text(text)
    dist = SimpleNamespace(metadata={"Name": "fakepkg"}, version="1.0",
                           files=[PurePosixPath(n) for n in [*files, "fakepkg/gone.py"]],
                           locate_file=lambda f: site / f)
    monkeypatch.setattr(executor_env, "requirement_closure", lambda: [dist])
    archive = executor_env.pack(tmp_path / "cache")
    assert archive.name == executor_env.archive_name([dist])
    with tarfile.open(archive) as tar:
        assert sorted(tar.getnames()) == sorted(["pyvenv.cfg", "bin/python", SITE + "fakepkg/__init__.py",
                                                 SITE + "fakepkg-1.0.dist-info/METADATA"])
        assert tar.extractfile(SITE + "fakepkg/__init__.py").read() == b"A = 1\n"


# --------------------------------------------------------------------------------------------- code_zip


def test_code_zip_holds_zkafkas_spark_code_as_py_files_only(tmp_path):
    target = executor_env.code_zip(tmp_path / "sub" / "code.zip")
    assert target == tmp_path / "sub" / "code.zip"
    with zipfile.ZipFile(target) as z:
        names = z.namelist()
        root = Path(executor_env.__file__).resolve().parents[3]
        assert z.read("consumer_group/spark/source.py") == (root / "consumer_group/spark/source.py").read_bytes()
    assert {"consumer_group/__init__.py", "consumer_group/spark/__init__.py", "consumer_group/spark/source.py",
            "consumer_group/spark/kafka_io.py", "consumer_group/spark/jobs.py"} <= set(names)
    assert all(n.endswith(".py") and n.startswith("consumer_group/") for n in names)
    assert not [n for n in names if "__pycache__" in n]


def test_the_zipped_spark_code_imports_nothing_of_the_project_outside_the_zip(tmp_path):
    with zipfile.ZipFile(executor_env.code_zip(tmp_path / "code.zip")) as z:
        sources = {n: z.read(n) for n in z.namelist() if n.startswith("consumer_group/spark/")}
    outside = set()
    for name, text in sources.items():
        for node in ast.walk(ast.parse(text, name)):
            modules = ([a.name for a in node.names] if isinstance(node, ast.Import)
                       else [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level
                       else [])
            outside |= {(name, m) for m in modules
                        if m.split(".")[0] in PROJECT_PACKAGES - set(executor_env.CODE_PACKAGES)}
    assert not outside


def test_code_zip_takes_only_the_code_packages_py_files(tmp_path):
    root = tmp_path / "root"
    for path, text in {"consumer_group/__init__.py": "", "consumer_group/sub/b.py": "B = 2\n",
                       "consumer_group/__pycache__/b.cpython-311.pyc": "x", "consumer_group/data.json": "{}",
                       "consumer_group/notes.pyi": "", "brokers/x.py": "", "setup.py": ""}.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    with zipfile.ZipFile(executor_env.code_zip(tmp_path / "c.zip", root=root)) as z:
        assert z.namelist() == ["consumer_group/__init__.py", "consumer_group/sub/b.py"]
        assert z.read("consumer_group/sub/b.py") == b"B = 2\n"
