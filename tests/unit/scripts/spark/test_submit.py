"""The pure parts of ``zkafka spark submit`` (scripts.local.spark.submit): the application (``zkafka:NAME`` or a
file), the spark-submit command line, the job's result line in a log and the driver's folder, where the
executors' environment archive is unpacked once. Nothing is started."""
from __future__ import annotations

import io
import sys
import tarfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from scripts.local.spark import submit
from scripts.local.spark.executor_env import ENV_NAME
from scripts.local.spark.standalone import spark_home

ARCHIVE = Path("/cache/zkafka-env-0123456789ab.tar.gz")
CODE = Path("/run/zkafka-code-abc.zip")


def command(master: str = "spark://10.1.2.3:7077", app: str = "zkafka:count", app_args=(), **kwargs) -> list[str]:
    return submit.submit_command(master, app, list(app_args), env_archive=ARCHIVE, code=CODE, **kwargs)


def confs(cmd: list[str]) -> dict[str, str]:
    """The ``--conf KEY=VALUE`` settings of a command line (each key at most once)."""
    pairs = [cmd[i + 1].split("=", 1) for i, arg in enumerate(cmd) if arg == "--conf"]
    keys = [k for k, _ in pairs]
    assert len(keys) == len(set(keys)), f"a setting given twice: {keys}"
    return dict(pairs)


def option(cmd: list[str], name: str) -> str:
    assert cmd.count(name) == 1, cmd
    return cmd[cmd.index(name) + 1]


# ------------------------------------------------------------------------------------------- application


def test_a_zkafka_job_is_jobs_py_with_its_name_first():
    file, leading = submit.application("zkafka:copy")
    assert Path(file) == Path(submit.__file__).resolve().parents[3] / "consumer_group" / "spark" / "jobs.py"
    assert Path(file).is_file() and leading == ["copy"]
    assert submit.application("zkafka:count") == (file, ["count"])


def test_an_application_file_is_itself_without_leading_arguments(tmp_path):
    app = tmp_path / "my_job.py"
    app.write_text("print('hi')\n")
    assert submit.application(str(app)) == (str(app), [])


@pytest.mark.parametrize("name", ["missing.py", "a-folder"])
def test_an_application_that_is_not_a_file_names_itself(tmp_path, name):
    (tmp_path / "a-folder").mkdir()
    missing = str(tmp_path / name)
    with pytest.raises(FileNotFoundError) as info:
        submit.application(missing)
    assert repr(missing) in str(info.value) and "zkafka:count" in str(info.value)


# ---------------------------------------------------------------------------------------- submit_command


def test_the_command_ships_the_environment_and_the_code():
    cmd = command()
    assert cmd[0] == str(spark_home() / "bin" / "spark-submit")
    assert option(cmd, "--master") == "spark://10.1.2.3:7077"
    assert option(cmd, "--archives") == f"{ARCHIVE}#{ENV_NAME}" == f"{ARCHIVE}#zkafka-env"
    assert option(cmd, "--py-files") == str(CODE)
    settings = confs(cmd)
    assert settings["spark.pyspark.python"] == "./zkafka-env/bin/python"
    assert settings["spark.pyspark.driver.python"] == sys.executable


def test_the_driver_python_can_be_named():
    assert confs(command(driver_python="/opt/py/bin/python3"))["spark.pyspark.driver.python"] == "/opt/py/bin/python3"


@pytest.mark.parametrize("master", ["spark://127.0.0.1:7077", "spark://localhost:7077", "spark://LOCALHOST:17077"])
def test_a_loopback_master_binds_the_driver_to_loopback(master):
    settings = confs(command(master))
    assert settings["spark.driver.host"] == "127.0.0.1"
    assert settings["spark.driver.bindAddress"] == "127.0.0.1"


@pytest.mark.parametrize("master", ["spark://10.1.2.3:7077", "spark://spark-master.example:7077"])
def test_another_master_leaves_the_driver_address_to_spark(master):
    settings = confs(command(master))
    assert "spark.driver.host" not in settings and "spark.driver.bindAddress" not in settings


def test_user_settings_override_the_defaults_and_are_added():
    cmd = command("spark://127.0.0.1:7077", conf={"spark.pyspark.python": "/usr/bin/python3",
                                                  "spark.driver.host": "192.168.1.5",
                                                  "spark.executor.memory": "512m"})
    settings = confs(cmd)  # each key once: overridden, not given twice
    assert settings["spark.pyspark.python"] == "/usr/bin/python3"
    assert settings["spark.driver.host"] == "192.168.1.5"
    assert settings["spark.driver.bindAddress"] == "127.0.0.1"
    assert settings["spark.executor.memory"] == "512m"


def test_the_application_and_its_arguments_come_last():
    cmd = command(app_args=["--bootstrap-server", "b1:9092", "--topic", "t"])
    assert cmd[-6:] == [str(submit.JOBS), "count", "--bootstrap-server", "b1:9092", "--topic", "t"]
    assert all(arg != "--conf" for arg in cmd[-6:])


def test_an_application_file_comes_last_with_its_arguments(tmp_path):
    app = tmp_path / "job.py"
    app.write_text("")
    cmd = command(app=str(app), app_args=["x", "--y"])
    assert cmd[-3:] == [str(app), "x", "--y"]
    assert "count" not in cmd


def test_a_missing_application_fails_the_command(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.py"):
        command(app=str(tmp_path / "nope.py"))


# -------------------------------------------------------------------------------------------- job_result


def test_job_result_finds_the_result_line_among_the_drivers_output(tmp_path):
    log = tmp_path / "driver.log"
    log.write_bytes(b"26/01/01 10:00:00 INFO SparkContext: Running Spark version 4\n"
                    b"\xff\xfe binary noise\n"
                    b'ZKAFKA-JOB-RESULT {"job": "count", "records": 12, "partitions": {"0": 12}}\n'
                    b"26/01/01 10:00:09 INFO SparkContext: Successfully stopped SparkContext\n")
    assert submit.job_result(log) == {"job": "count", "records": 12, "partitions": {"0": 12}}


def test_job_result_is_none_without_a_result_line(tmp_path):
    log = tmp_path / "driver.log"
    log.write_text("INFO starting\nERROR the job failed: ZKAFKA-JOB-RESULT was never printed\n")
    assert submit.job_result(log) is None
    log.write_text("")
    assert submit.job_result(log) is None


# -------------------------------------------------------------------------------------------- driver_dir


def small_archive(path: Path) -> Path:
    """A tiny environment archive: a pyvenv.cfg, bin/python an absolute symlink (as ``pack`` makes), a module."""
    with tarfile.open(path, "w:gz") as tar:
        for name, data in (("pyvenv.cfg", b"home = /usr/bin\n"),
                           ("lib/python3.11/site-packages/mod.py", b"X = 1\n")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("bin/python")
        link.type, link.linkname = tarfile.SYMTYPE, "/usr/bin/python3"
        tar.addfile(link)
    return path


def test_driver_dir_unpacks_the_archive_next_to_it(tmp_path):
    archive = small_archive(tmp_path / "zkafka-env-0123456789ab.tar.gz")
    run_dir = submit.driver_dir(archive)
    assert run_dir == tmp_path / "zkafka-env-0123456789ab.driver"
    env = run_dir / "zkafka-env"
    assert (env / "pyvenv.cfg").read_text() == "home = /usr/bin\n"
    assert (env / "lib/python3.11/site-packages/mod.py").read_text() == "X = 1\n"
    assert (env / "bin" / "python").is_symlink() and str((env / "bin" / "python").readlink()) == "/usr/bin/python3"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([archive.name, run_dir.name])  # no partial folder left


def test_driver_dir_unpacks_once(tmp_path, monkeypatch):
    archive = small_archive(tmp_path / "zkafka-env-0123456789ab.tar.gz")
    run_dir = submit.driver_dir(archive)
    (run_dir / "zkafka-env" / "marker").write_text("first")

    def no_second_unpack(*args, **kwargs):
        raise AssertionError("the archive was opened again")

    monkeypatch.setattr(submit, "tarfile", SimpleNamespace(open=no_second_unpack))
    assert submit.driver_dir(archive) == run_dir
    assert (run_dir / "zkafka-env" / "marker").read_text() == "first"


def test_driver_dir_keeps_what_another_submission_unpacked_first(tmp_path, monkeypatch):
    archive = small_archive(tmp_path / "zkafka-env-0123456789ab.tar.gz")

    def lost_the_race(src, dst):
        raise OSError(39, "Directory not empty")

    monkeypatch.setattr(submit, "os", SimpleNamespace(rename=lost_the_race))
    run_dir = submit.driver_dir(archive)
    assert run_dir == tmp_path / "zkafka-env-0123456789ab.driver" and run_dir.is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([archive.name, run_dir.name])  # its own copy removed
