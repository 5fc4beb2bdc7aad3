import pytest

from scripts.cli import main
from zkafka.images import build as images


def test_build_passes_the_mode_and_bases_and_prints_the_tags(monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(images, "build", lambda mode, **kw: calls.append((mode, kw)) or images.plan(
        "offline", False, broker_tag="zkafka:x", zookeeper_tag="zkafka-zookeeper:x"))
    assert main(["images", "build", "--offline"]) == 0
    assert calls == [("offline", {"force_base": False, "base_image": images.ONLINE_BASE,
                                  "zookeeper_base": images.ONLINE_ZOOKEEPER})]
    assert capsys.readouterr().out.split() == ["zkafka:x", "zkafka-zookeeper:x"]
    main(["images", "build", "--base-image", "my/python:3.11", "--zookeeper-image", "my/zk:3.8", "--force-base"])
    assert calls[-1] == ("auto", {"force_base": True, "base_image": "my/python:3.11", "zookeeper_base": "my/zk:3.8"})


def test_a_failed_step_exits_1_with_its_message(monkeypatch, capsys):
    def fail(mode, **kw):
        raise images.BuildError("no Docker engine answers `docker info`")
    monkeypatch.setattr(images, "build", fail)
    assert main(["images", "build"]) == 1
    assert "zkafka images build: no Docker engine answers" in capsys.readouterr().err


def test_online_and_offline_exclude_each_other(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["images", "build", "--online", "--offline"])
    assert exit_.value.code == 2 and "not allowed with argument" in capsys.readouterr().err
