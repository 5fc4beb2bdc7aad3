"""kafka-topics --alter's flag checks (no cluster needed: every case exits before connecting)."""
from __future__ import annotations

import pytest

from scripts.tools.kafka_topics.command import main

ZK = ["--zookeeper", "127.0.0.1:1"]


@pytest.mark.parametrize("args, named", [
    (["--alter", "--topic", "t"], "--partitions is required with --alter"),
    (["--alter", "--partitions", "3"], "--topic is required with --alter"),
    (["--alter", "--topic", "t", "--partitions", "0"], "--partitions must be positive, got 0"),
    (["--alter", "--topic", "t", "--partitions", "3", "--replication-factor", "2"], "--replication-factor"),
    (["--alter", "--topic", "t", "--partitions", "3", "--config", "a=b"], "--config"),
    (["--alter", "--topic", "t", "--partitions", "3", "--replica-assignment", "1:2,x"],
     "--replica-assignment: partition 1: 'x' is not a colon-separated list of broker ids"),
    (["--alter", "--topic", "t", "--partitions", "3", "--replica-assignment", "1:1"],
     "--replica-assignment: Partition replica lists may not contain duplicate entries: 1"),
    (["--create", "--topic", "t", "--partitions", "1", "--replication-factor", "1", "--replica-assignment", "1"],
     "--replica-assignment is only supported with --alter"),
    (["--alter", "--create", "--topic", "t", "--partitions", "3"], "not allowed with argument"),
])
def test_bad_alter_flags_exit_2_naming_the_flag(args, named, capsys):
    with pytest.raises(SystemExit) as info:
        main([*ZK, *args])
    assert info.value.code == 2 and named in capsys.readouterr().err


def test_the_offsets_topic_cannot_grow(capsys):
    assert main([*ZK, "--alter", "--topic", "__consumer_offsets", "--partitions", "60"]) == 1
    assert capsys.readouterr().err == "Error: The number of partitions for the offsets topic cannot be changed.\n"


def test_command_config_goes_with_bootstrap_server_only(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--zookeeper", "127.0.0.1:1", "--list", "--command-config", str(tmp_path / "c.properties")])
    assert exit_.value.code == 2
    assert "--command-config is only supported with --bootstrap-server" in capsys.readouterr().err
