"""``zkafka spark``'s command line (scripts.local.commands.spark) through ``scripts.cli``: the errors that need
no cluster, and what ``submit`` hands to the submission (a fake records it: nothing is packed or started)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from scripts import cli
from scripts.local.spark import submit as spark_submit


def usage_error(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as info:
        cli.main(list(argv))
    assert info.value.code == 2
    return capsys.readouterr().err


def test_status_of_a_dir_without_a_cluster_fails_with_the_error_on_stderr(tmp_path, capsys):
    assert cli.main(["spark", "status", "--dir", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("zkafka spark status: ") and "zkafka spark up" in err and str(tmp_path.resolve()) in err


def test_down_of_a_dir_without_a_cluster_fails_too(tmp_path, capsys):
    assert cli.main(["spark", "down", "--dir", str(tmp_path)]) == 1
    assert "zkafka spark down: " in capsys.readouterr().err


@pytest.mark.parametrize("workers", ["0", "-1"])
def test_up_needs_a_worker(tmp_path, capsys, workers):
    err = usage_error(capsys, "spark", "up", "--workers", workers, "--dir", str(tmp_path))
    assert "--workers" in err and "usage: zkafka spark up" in err
    assert list(tmp_path.iterdir()) == []  # nothing started, nothing written


def test_submit_conf_needs_key_equals_value(tmp_path, capsys):
    err = usage_error(capsys, "spark", "submit", "--conf", "novalue", "zkafka:count")
    assert "--conf" in err and "KEY=VALUE" in err and "usage: zkafka spark submit" in err


@pytest.fixture
def submitted(monkeypatch):
    calls = []

    def fake_submit(master, app, app_args, *, conf, cache_dir, **kwargs):
        calls.append(dict(master=master, app=app, app_args=app_args, conf=conf, cache_dir=cache_dir))
        return 7

    monkeypatch.setattr(spark_submit, "submit", fake_submit)
    return calls


def test_submit_passes_the_app_its_arguments_and_the_settings(submitted, tmp_path):
    code = cli.main(["spark", "submit", "--master", "spark://h:7077", "--conf", "spark.a=1", "--conf", "spark.b=x=y",
                     "--cache-dir", str(tmp_path), "zkafka:count", "--bootstrap-server", "b:9092", "--topic", "t"])
    assert code == 7  # spark-submit's exit code
    assert submitted == [dict(master="spark://h:7077", app="zkafka:count",
                              app_args=["--bootstrap-server", "b:9092", "--topic", "t"],
                              conf={"spark.a": "1", "spark.b": "x=y"}, cache_dir=tmp_path)]


def test_submit_defaults_to_the_cluster_of_dir_and_the_default_cache(submitted, tmp_path):
    (tmp_path / "spark-cluster.json").write_text(json.dumps({"master_port": 17077, "master_webui_port": 18180}))
    assert cli.main(["spark", "submit", "--dir", str(tmp_path), "zkafka:copy"]) == 7
    assert submitted[0]["master"] == "spark://127.0.0.1:17077"
    assert submitted[0]["cache_dir"] == spark_submit.DEFAULT_CACHE == Path.home() / ".cache" / "zkafka" / "spark"
    assert submitted[0]["app_args"] == [] and submitted[0]["conf"] == {}


def test_submit_without_master_or_cluster_fails(submitted, tmp_path, capsys):
    assert cli.main(["spark", "submit", "--dir", str(tmp_path), "zkafka:count"]) == 1
    assert "zkafka spark submit: " in capsys.readouterr().err and submitted == []


def test_a_missing_application_is_an_error_not_a_traceback(monkeypatch, tmp_path, capsys):
    def fake_submit(master, app, app_args, **kwargs):
        spark_submit.application(app)

    monkeypatch.setattr(spark_submit, "submit", fake_submit)
    assert cli.main(["spark", "submit", "--master", "spark://h:7077", str(tmp_path / "nope.py")]) == 1
    assert "nope.py" in capsys.readouterr().err
