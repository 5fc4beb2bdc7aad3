"""kafka-verifiable-producer / -consumer flags (scripts.tools.verifiable.flags): Kafka 2.8's flags, defaults and
Java types, the assignor class names mapped to librdkafka's, the client settings and their precedence, and a
bad flag as one line with exit code 1 (the tools' main)."""
from __future__ import annotations

import pytest

from scripts.tools.verifiable import consumer as consumer_tool
from scripts.tools.verifiable import flags
from scripts.tools.verifiable import producer as producer_tool

P = ["--topic", "t", "--bootstrap-server", "h:1"]
C = ["--topic", "t", "--group-id", "g", "--bootstrap-server", "h:1"]


# -- the producer ---------------------------------------------------------------------------------------
def test_producer_defaults_are_kafkas():
    args = flags.parse_producer(P)
    assert (args.topic, args.bootstrap, args.max_messages, args.throughput, args.acks) == ("t", "h:1", -1, -1, -1)
    assert (args.create_time, args.value_prefix, args.repeating_keys, args.config_file) == (-1, None, None, None)


def test_producer_flags_of_the_system_tests():
    args = flags.parse_producer(["--topic", "t", "--broker-list", "a:1,b:2", "--max-messages", "100",
                                 "--throughput", "500", "--acks", "1", "--producer.config", "p.properties",
                                 "--message-create-time", "1600000000000", "--value-prefix", "3",
                                 "--repeating-keys", "5"])
    assert (args.bootstrap, args.max_messages, args.throughput, args.acks) == ("a:1,b:2", 100, 500, 1)
    assert (args.config_file, args.create_time, args.value_prefix, args.repeating_keys) == (
        "p.properties", 1600000000000, 3, 5)


@pytest.mark.parametrize("argv, words", [
    (["--topic", "t"], "one of the arguments --bootstrap-server --broker-list is required"),
    ([*P, "--broker-list", "h:2"], "argument --broker-list: not allowed with argument --bootstrap-server"),
    (["--bootstrap-server", "h:1"], "the following arguments are required: --topic"),
    ([*P, "--acks", "all"], "argument --acks: could not convert 'all' to Integer"),
    ([*P, "--acks", "2"], "argument --acks: invalid choice: 2 (choose from 0, 1, -1)"),
    ([*P, "--max-messages", "2147483648"], "argument --max-messages: could not convert '2147483648' to Integer"),
    ([*P, "--throughput", "1.5"], "argument --throughput: could not convert '1.5' to Integer"),
    ([*P, "--value-prefix", "p"], "argument --value-prefix: could not convert 'p' to Integer"),
    ([*P, "--message-create-time", "x"], "argument --message-create-time: could not convert 'x' to Long"),
    ([*P, "--message-create-time", "-2"], "argument --message-create-time: invalid timestamp -2"),
    ([*P, "--transactional-id", "x"], "unrecognized arguments: --transactional-id x"),
])
def test_producer_bad_flags(argv, words):
    with pytest.raises(flags.UsageError) as info:
        flags.parse_producer(argv)
    assert words in str(info.value)


def test_java_numbers_take_the_whole_range():
    assert flags.java_int("-2147483648") == -2**31 and flags.java_int(" 2147483647 ") == 2**31 - 1
    assert flags.java_long("9223372036854775807") == 2**63 - 1


def test_producer_config_kafkas_settings_then_the_file_over_them():
    args = flags.parse_producer([*P, "--acks", "1"])
    assert flags.producer_config(args, {}) == {"log_level": "4", "bootstrap.servers": "h:1", "acks": "1",
                                               "retries": "0", "delivery.timeout.ms": "120000"}
    config = flags.producer_config(args, {"acks": "all", "retries": "1000", "enable.idempotence": "true",
                                          "bootstrap.servers": "other:9"})
    assert (config["acks"], config["retries"], config["enable.idempotence"]) == ("all", "1000", "true")
    assert config["bootstrap.servers"] == "other:9"  # Kafka loads the file after the flags


# -- the consumer ---------------------------------------------------------------------------------------
def test_consumer_defaults_are_kafkas():
    args = flags.parse_consumer(C)
    assert (args.group_instance_id, args.max_messages, args.session_timeout) == (None, -1, 30000)
    assert (args.verbose, args.autocommit, args.reset_policy) == (False, False, "earliest")
    assert args.assignment_strategy == "org.apache.kafka.clients.consumer.RangeAssignor"
    assert args.assignors == ["range"]


@pytest.mark.parametrize("java, librdkafka", [
    ("org.apache.kafka.clients.consumer.RangeAssignor", ["range"]),
    ("org.apache.kafka.clients.consumer.RoundRobinAssignor", ["roundrobin"]),
    ("org.apache.kafka.clients.consumer.CooperativeStickyAssignor", ["cooperative-sticky"]),
    ("org.apache.kafka.clients.consumer.StickyAssignor", ["cooperative-sticky"]),
    ("org.apache.kafka.clients.consumer.RoundRobinAssignor, org.apache.kafka.clients.consumer.RangeAssignor",
     ["roundrobin", "range"]),
])
def test_assignors_map_to_librdkafkas(java, librdkafka):
    assert flags.assignors(java) == librdkafka


@pytest.mark.parametrize("text, words", [
    ("RangeAssignor", "unknown assignor RangeAssignor"),
    ("range", "unknown assignor range"),
    ("", "unknown assignor ''"),
    ("org.apache.kafka.clients.consumer.CooperativeStickyAssignor,org.apache.kafka.clients.consumer.RangeAssignor",
     "a cooperative assignor cannot be combined with eager ones"),
])
def test_unknown_or_mixed_assignors(text, words):
    with pytest.raises(flags.UsageError) as info:
        flags.assignors(text)
    assert str(info.value).startswith("argument --assignment-strategy: ") and words in str(info.value)


@pytest.mark.parametrize("argv, words", [
    (["--topic", "t", "--bootstrap-server", "h:1"], "the following arguments are required: --group-id"),
    (["--topic", "t", "--group-id", "g"], "one of the arguments --bootstrap-server --broker-list is required"),
    ([*C, "--reset-policy", "smallest"], "argument --reset-policy: invalid choice: 'smallest'"),
    ([*C, "--session-timeout", "10s"], "argument --session-timeout: could not convert '10s' to Integer"),
    ([*C, "--verbose", "yes"], "unrecognized arguments: yes"),
])
def test_consumer_bad_flags(argv, words):
    with pytest.raises(flags.UsageError) as info:
        flags.parse_consumer(argv)
    assert words in str(info.value)


def test_consumer_config_flags_over_the_file():
    args = flags.parse_consumer([*C, "--group-instance-id", "i-1", "--session-timeout", "6000", "--enable-autocommit",
                                 "--reset-policy", "none", "--assignment-strategy",
                                 "org.apache.kafka.clients.consumer.RoundRobinAssignor"])
    config, max_poll = flags.consumer_config(args, {"group.id": "file", "session.timeout.ms": "1",
                                                    "security.protocol": "SSL", "heartbeat.interval.ms": "500"})
    assert config == {"log_level": "4", "group.id": "g", "session.timeout.ms": "6000", "security.protocol": "SSL",
                      "heartbeat.interval.ms": "500", "group.instance.id": "i-1", "bootstrap.servers": "h:1",
                      "enable.auto.commit": "true", "auto.offset.reset": "error",
                      "partition.assignment.strategy": "roundrobin"}
    assert max_poll == 500
    plain, _ = flags.consumer_config(flags.parse_consumer(C), {})
    assert (plain["enable.auto.commit"], plain["auto.offset.reset"], "group.instance.id" in plain) == (
        "false", "earliest", False)


def test_max_poll_records_of_the_file_is_the_poll_size():
    args = flags.parse_consumer(C)
    config, max_poll = flags.consumer_config(args, {"max.poll.records": "50"})
    assert max_poll == 50 and "max.poll.records" not in config
    for bad in ("many", "0"):
        with pytest.raises(flags.UsageError, match="max.poll.records"):
            flags.consumer_config(args, {"max.poll.records": bad})


# -- through the tools' main: one line, exit 1 ----------------------------------------------------------
@pytest.mark.parametrize("main, prog, argv", [
    (producer_tool.main, "kafka-verifiable-producer", [*P, "--acks", "all"]),
    (producer_tool.main, "kafka-verifiable-producer", [*P, "--producer.config", "/nonexistent/p.properties"]),
    (consumer_tool.main, "kafka-verifiable-consumer", [*C, "--assignment-strategy", "x.Y"]),
    (consumer_tool.main, "kafka-verifiable-consumer", [*C, "--consumer.config", "/nonexistent/c.properties"]),
    (consumer_tool.main, "kafka-verifiable-consumer", ["--nope"]),
])
def test_a_bad_flag_is_one_line_and_exit_1(main, prog, argv, capsys):
    assert main(argv) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"{prog}: error: ") and err.count("\n") == 1, err


def test_a_bad_client_setting_is_one_line_and_exit_1(tmp_path, capsys):
    path = tmp_path / "c.properties"
    path.write_text("no.such.setting=1\n")
    assert consumer_tool.main([*C, "--consumer.config", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("kafka-verifiable-consumer: error: invalid consumer config: ") and "no.such.setting" in err


@pytest.mark.parametrize("main, prog", [(producer_tool.main, "kafka-verifiable-producer"),
                                        (consumer_tool.main, "kafka-verifiable-consumer")])
def test_no_arguments_prints_the_help_and_exits_0(main, prog, capsys):
    assert main([]) == 0
    assert capsys.readouterr().out.startswith(f"usage: {prog} ")
