"""``kafka-leader-election``: flag checks (exit 2 naming the flag), Kafka's JSON file format, Kafka's
output lines and exit codes (the AdminClient call itself is covered by tests/integration)."""
from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from scripts.tools import kafka_leader_election as kle
from scripts.tools.common import client_properties

BOOT = ["--bootstrap-server", "localhost:9092"]


def exit_of(argv, capsys) -> tuple[int, str]:
    with pytest.raises(SystemExit) as info:
        kle.main([*BOOT, *argv])
    return info.value.code, capsys.readouterr().err


@pytest.mark.parametrize("argv, words", [
    (["--election-type", "preferred"], "one of --topic, --all-topic-partitions, --path-to-json-file is required"),
    (["--election-type", "fast", "--all-topic-partitions"], "argument --election-type: 'fast' is not an election type"),
    (["--all-topic-partitions"], "--election-type"),
    (["--election-type", "preferred", "--topic", "t"], "--partition is required when --topic is specified"),
    (["--election-type", "preferred", "--partition", "0", "--all-topic-partitions"],
     "--partition is only allowed with --topic"),
    (["--election-type", "preferred", "--topic", "t", "--partition", "0", "--all-topic-partitions"],
     "--topic cannot be used with --all-topic-partitions"),
    (["--election-type", "preferred", "--all-topic-partitions", "--path-to-json-file", "f"],
     "--all-topic-partitions cannot be used with --path-to-json-file"),
    (["--election-type", "preferred", "--topic", "t", "--partition", "-1"], "--partition must be >= 0"),
    (["--election-type", "preferred", "--topic", "t", "--partition", "x"], "argument --partition"),
    (["--election-type", "preferred", "--path-to-json-file", "/nonexistent/e.json"],
     "argument --path-to-json-file: /nonexistent/e.json"),
    (["--election-type", "preferred", "--all-topic-partitions", "--admin.config", "/nonexistent/a.properties"],
     "argument --admin.config"),
])
def test_bad_flags_exit_2_naming_the_flag(argv, words, capsys):
    code, err = exit_of(argv, capsys)
    assert code == 2 and words in err, err


def test_a_malformed_json_file_exits_2_naming_the_flag(tmp_path, capsys):
    path = tmp_path / "e.json"
    path.write_text('{"partitions": [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 0}]}')
    code, err = exit_of(["--election-type", "preferred", "--path-to-json-file", str(path)], capsys)
    assert code == 2 and "--path-to-json-file" in err and "duplicate partitions: t-0" in err


def test_election_type_is_case_insensitive():
    assert kle.election_type("preferred") == "PREFERRED" and kle.election_type("Unclean") == "UNCLEAN"


# -- the JSON file ------------------------------------------------------------------------------------

def test_parses_kafkas_format_in_order():
    text = '{"partitions":\n\t[{"topic": "foo", "partition": 1},\n\t {"topic": "foobar", "partition": 2}]\n}'
    assert kle.parse_election_json(text) == [("foo", 1), ("foobar", 2)]
    assert kle.parse_election_json('{"version": 1, "partitions": []}') == []


@pytest.mark.parametrize("text, words", [
    ("", "Replica election data is empty"),
    ("   \n", "Replica election data is empty"),
    ("{", "not JSON"),
    ("[]", 'missing "partitions" field'),
    ('{"version": 1}', 'missing "partitions" field'),
    ('{"partitions": {"foo": 1}}', '"partitions" must be a list'),
    ('{"partitions": [{"topic": "foo"}]}', "bad partition entry"),
    ('{"partitions": [{"topic": "", "partition": 0}]}', "bad partition entry"),
    ('{"partitions": [{"topic": "foo", "partition": "1"}]}', "bad partition entry"),
    ('{"partitions": [{"topic": "foo", "partition": false}]}', "bad partition entry"),
    ('{"partitions": ["foo-1"]}', "bad partition entry"),
    ('{"partitions": [{"topic": "a", "partition": 1}, {"topic": "b", "partition": 0}, {"topic": "a", "partition": 1},'
     ' {"topic": "b", "partition": 0}]}', "Replica election data contains duplicate partitions: a-1,b-0"),
])
def test_bad_json_says_what_is_wrong(text, words):
    with pytest.raises(ValueError) as info:
        kle.parse_election_json(text)
    assert words in str(info.value)


def test_admin_config_properties(tmp_path):
    path = tmp_path / "admin.properties"
    path.write_text("# comment\nclient.id = tool\n\nsocket.timeout.ms:1000\n!x\nsasl.jaas.config=a=b\n")
    assert client_properties.read(str(path)) == {"client.id": "tool", "socket.timeout.ms": "1000",
                                                    "sasl.jaas.config": "a=b"}


# -- Kafka's output --------------------------------------------------------------------------------------

def test_report_prints_kafkas_three_kinds_of_lines_and_exits_1_on_failures():
    lines = []
    results = {
        TopicPartition("t", 1): None,
        TopicPartition("t", 0): None,
        TopicPartition("u", 0): KafkaException(KafkaError(KafkaError.ELECTION_NOT_NEEDED, "Leader election not needed")),
        TopicPartition("v", 2): KafkaException(KafkaError(KafkaError.PREFERRED_LEADER_NOT_AVAILABLE, "Failed to elect")),
        TopicPartition("v", 1): KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART, "The partition does not exist."),
    }
    assert kle.report("PREFERRED", results, lines.append) == 1
    assert lines == [
        "Successfully completed leader election (PREFERRED) for partitions t-0, t-1",
        "Valid replica already elected for partitions u-0",
        "Error completing leader election (PREFERRED) for partition: v-1: "
        "org.apache.kafka.common.errors.UnknownTopicOrPartitionException: The partition does not exist.",
        "Error completing leader election (PREFERRED) for partition: v-2: "
        "org.apache.kafka.common.errors.PreferredLeaderNotAvailableException: Failed to elect",
    ]


def test_report_without_failures_exits_0():
    lines = []
    results = {TopicPartition("t", 0): KafkaError(KafkaError.ELECTION_NOT_NEEDED)}
    assert kle.report("UNCLEAN", results, lines.append) == 0
    assert lines == ["Valid replica already elected for partitions t-0"]
    assert kle.report("PREFERRED", {}, lines.append) == 0 and len(lines) == 1


def test_java_exception_names():
    assert kle.java_exception(KafkaError(KafkaError.REQUEST_TIMED_OUT, "slow")) == \
        "org.apache.kafka.common.errors.TimeoutException: slow"
    assert kle.java_exception(KafkaError(KafkaError.NOT_CONTROLLER, "no")) == \
        "org.apache.kafka.common.errors.NotControllerException: no"
    assert kle.java_exception(KafkaError(KafkaError.ELIGIBLE_LEADERS_NOT_AVAILABLE, "none")) == \
        "org.apache.kafka.common.errors.EligibleLeadersNotAvailableException: none"
