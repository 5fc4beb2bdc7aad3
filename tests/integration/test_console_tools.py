"""Kafka's console tools against a real 3-broker cluster, run as the installed console scripts.

kafka-topics --bootstrap-server (create/list/describe/delete through the AdminClient, the same output
as --zookeeper), kafka-console-producer (parse.key, headers, every codec, acks, --sync, delivery
errors, malformed lines) and kafka-console-consumer (Kafka's DefaultMessageFormatter output,
--from-beginning, --partition/--offset, --max-messages, --timeout-ms); bad flags are clear errors with
exit code 2 and never a traceback.
"""
from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scripts.local.cluster import running_cluster
from scripts.tools.console_consumer import FORMATTER_DEFAULTS, MessageFormatter
from scripts.tools.console_producer import READER_DEFAULTS, LineError, LineReader
from tests.integration.conditions import wait_for as _wait_for

BIN = Path(sys.executable).parent
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("console") / "cluster", 3,
                         tick_time=500, session_timeout_ms=6000) as c:
        yield c


def tool(name: str, *args: str, stdin: str | bytes | None = None, timeout: float = 90) -> subprocess.CompletedProcess:
    data = stdin.encode() if isinstance(stdin, str) else stdin
    result = subprocess.run([str(BIN / name), *args], input=data if data is not None else b"",
                            capture_output=True, timeout=timeout)
    result.stdout, result.stderr = result.stdout.decode(errors="replace"), result.stderr.decode(errors="replace")
    assert "Traceback" not in result.stderr, result.stderr
    return result


def topics(cluster, *args: str) -> subprocess.CompletedProcess:
    return tool("kafka-topics", "--bootstrap-server", cluster.bootstrap_servers, *args)


def produce(cluster, topic: str, *args: str, stdin: str | bytes) -> subprocess.CompletedProcess:
    return tool("kafka-console-producer", "--bootstrap-server", cluster.bootstrap_servers, "--topic", topic, *args,
                stdin=stdin)


def consume(cluster, topic: str, *args: str) -> subprocess.CompletedProcess:
    return tool("kafka-console-consumer", "--bootstrap-server", cluster.bootstrap_servers, "--topic", topic, *args)


def create(cluster, topic: str, partitions: int = 3, *config: str) -> None:
    result = topics(cluster, "--create", "--topic", topic, "--partitions", str(partitions),
                    "--replication-factor", "3", *(arg for item in config for arg in ("--config", item)))
    assert (result.returncode, result.stdout) == (0, f"Created topic {topic}.\n"), result.stderr



def wait_for(condition, timeout: float, what: str):
    """Poll a tool run (each call is a subprocess round trip, so there is no sleep)."""
    return _wait_for(condition, timeout, what, interval=0)

def now_ms() -> int:
    return time.time_ns() // 1_000_000


PRINT_ALL = ["--property", "print.key=true", "--property", "print.offset=true", "--property", "print.timestamp=true"]


# -- kafka-topics --bootstrap-server ------------------------------------------------------------------
def test_topics_create_list_describe_delete(cluster):
    create(cluster, "admin-orders", 3, "segment.bytes=1048576", "cleanup.policy=compact")
    assert "admin-orders" in topics(cluster, "--list").stdout.splitlines()

    def described():
        out = topics(cluster, "--describe", "--topic", "admin-orders").stdout
        return out if out.count("Leader: none") == 0 and out.count("\n") == 4 else None

    out = wait_for(described, 30, "every partition of admin-orders to have a leader")
    header, *rows = out.splitlines()
    assert header == ("Topic: admin-orders\tPartitionCount: 3\tReplicationFactor: 3\t"
                      "Configs: cleanup.policy=compact,segment.bytes=1048576")
    for partition, row in enumerate(rows):
        match = re.fullmatch(rf"\tTopic: admin-orders\tPartition: {partition}\tLeader: (\d+)\t"
                             r"Replicas: (\d+,\d+,\d+)\tIsr: ([\d,]+)", row)
        assert match, row
        replicas = match[2].split(",")
        assert sorted(replicas) == ["1", "2", "3"] and match[1] in replicas
        assert set(match[3].split(",")) == set(replicas)
    # The ZooKeeper path prints the same thing for the same topic.
    zk = tool("kafka-topics", "--zookeeper", cluster.zookeeper_connect, "--describe", "--topic", "admin-orders")
    assert zk.stdout == out

    again = topics(cluster, "--create", "--topic", "admin-orders", "--partitions", "3", "--replication-factor", "3")
    assert again.returncode == 1 and "TOPIC_ALREADY_EXISTS" in again.stderr
    quiet = topics(cluster, "--create", "--topic", "admin-orders", "--partitions", "3", "--replication-factor", "3",
                   "--if-not-exists")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")

    deleted = topics(cluster, "--delete", "--topic", "admin-orders")
    assert (deleted.returncode, deleted.stdout) == (0, "Topic admin-orders is marked for deletion.\n"), deleted.stderr
    wait_for(lambda: "admin-orders" not in topics(cluster, "--list").stdout.splitlines(), 30, "admin-orders to go")
    gone = topics(cluster, "--delete", "--topic", "admin-orders")
    assert gone.returncode == 1 and "does not exist" in gone.stderr
    missing = topics(cluster, "--describe", "--topic", "admin-orders")
    assert missing.returncode == 1 and "does not exist" in missing.stderr


def test_topics_create_takes_broker_defaults(cluster):
    result = topics(cluster, "--create", "--topic", "admin-defaults")
    assert (result.returncode, result.stdout) == (0, "Created topic admin-defaults.\n"), result.stderr
    header = topics(cluster, "--describe", "--topic", "admin-defaults").stdout.splitlines()[0]
    assert header == "Topic: admin-defaults\tPartitionCount: 1\tReplicationFactor: 3\tConfigs: "


def test_topics_errors(cluster):
    neither = tool("kafka-topics", "--list")
    assert neither.returncode == 2
    assert "one of the arguments --zookeeper --bootstrap-server is required" in neither.stderr
    both = tool("kafka-topics", "--list", "--zookeeper", cluster.zookeeper_connect,
                "--bootstrap-server", cluster.bootstrap_servers)
    assert both.returncode == 2 and "not allowed with argument" in both.stderr
    no_topic = topics(cluster, "--create", "--partitions", "1")
    assert no_topic.returncode == 2 and "--topic is required" in no_topic.stderr
    bad_config = topics(cluster, "--create", "--topic", "x", "--config", "segment.bytes")
    assert bad_config.returncode == 2 and "--config takes KEY=VALUE" in bad_config.stderr
    invalid = topics(cluster, "--create", "--topic", "admin-invalid", "--partitions", "1", "--replication-factor", "3",
                     "--config", "no.such.key=1")
    assert invalid.returncode == 1 and invalid.stderr.startswith("Error: INVALID_CONFIG"), invalid.stderr
    too_many = topics(cluster, "--create", "--topic", "admin-rf", "--partitions", "1", "--replication-factor", "4")
    assert too_many.returncode == 1 and "INVALID_REPLICATION_FACTOR" in too_many.stderr


# -- producer -> consumer -----------------------------------------------------------------------------
@pytest.mark.parametrize("codec", CODECS)
def test_keyed_lines_with_every_codec_read_back_in_kafkas_format(cluster, codec):
    topic = f"console-{codec}"
    create(cluster, topic, 1)
    lines = [f"user-{i % 4}:{codec} event {i}" for i in range(40)] + [":empty key", "k:", "k:x:y"]
    before = now_ms()
    sent = produce(cluster, topic, "--property", "parse.key=true", "--property", "key.separator=:",
                   "--compression-codec", codec, stdin="\n".join(lines) + "\n")
    after = now_ms()
    assert (sent.returncode, sent.stdout, sent.stderr) == (0, "", "")

    got = consume(cluster, topic, "--from-beginning", "--max-messages", str(len(lines)), *PRINT_ALL)
    assert got.returncode == 0, got.stderr
    assert got.stderr == f"Processed a total of {len(lines)} messages\n"
    rows = got.stdout.splitlines()
    timestamps = [int(re.match(r"CreateTime:(\d+)\t", row)[1]) for row in rows]
    assert all(before <= ts <= after for ts in timestamps)
    expected = [f"CreateTime:{ts}\tOffset:{offset}\t{line.replace(':', chr(9), 1)}"
                for offset, (ts, line) in enumerate(zip(timestamps, lines))]
    assert rows == expected

    dumps = "".join(tool("zkafka", "log", "dump", str(cluster.log_dir(b) / f"{topic}-0")).stdout
                    for b in cluster.broker_ids)
    assert set(re.findall(r"compresscodec: (\w+)", dumps)) == {codec}  # the flag reached the batches


def test_partitions_offsets_and_print_partition(cluster):
    create(cluster, "console-spread", 3)
    lines = [f"key-{i % 5}\tvalue-{i}" for i in range(30)]  # the default key.separator is a tab
    assert produce(cluster, "console-spread", "--property", "parse.key=true",
                   stdin="\n".join(lines) + "\n").returncode == 0
    got = consume(cluster, "console-spread", "--from-beginning", "--max-messages", "30",
                  "--property", "print.partition=true", "--property", "print.offset=true",
                  "--property", "print.key=true", "--property", "key.separator= | ")
    assert got.returncode == 0, got.stderr
    by_partition: dict[int, list[tuple[int, str, str]]] = {}
    for row in got.stdout.splitlines():
        match = re.fullmatch(r"Partition:(\d) \| Offset:(\d+) \| (key-\d) \| (value-\d+)", row)
        assert match, row
        by_partition.setdefault(int(match[1]), []).append((int(match[2]), match[3], match[4]))
    assert sorted(v for rows in by_partition.values() for _, _, v in rows) == sorted(f"value-{i}" for i in range(30))
    key_partition = {}
    for partition, rows in by_partition.items():
        assert [o for o, _, _ in rows] == list(range(len(rows)))  # dense, in order, per partition
        for _, key, _ in rows:
            assert key_partition.setdefault(key, partition) == partition  # one key, one partition

    partition, rows = max(by_partition.items(), key=lambda item: len(item[1]))
    assert len(rows) >= 3
    middle = consume(cluster, "console-spread", "--partition", str(partition), "--offset", "1",
                     "--max-messages", str(len(rows) - 1), "--property", "print.offset=true")
    assert middle.stdout.splitlines() == [f"Offset:{o}\t{v}" for o, _, v in rows[1:]], middle.stderr
    earliest = consume(cluster, "console-spread", "--partition", str(partition), "--offset", "earliest",
                       "--max-messages", "1")
    assert earliest.stdout == f"{rows[0][2]}\n"
    beginning = consume(cluster, "console-spread", "--partition", str(partition), "--from-beginning",
                        "--max-messages", "1")
    assert beginning.stdout == f"{rows[0][2]}\n"
    latest = consume(cluster, "console-spread", "--partition", str(partition), "--offset", "latest",
                     "--timeout-ms", "1000")
    assert (latest.returncode, latest.stdout) == (0, "")
    assert "TimeoutException" in latest.stderr and latest.stderr.endswith("Processed a total of 0 messages\n")
    new_only = consume(cluster, "console-spread", "--timeout-ms", "1000")  # every partition, from the end
    assert (new_only.returncode, new_only.stdout) == (0, "")


def test_headers_null_marker_and_value_only_output(cluster):
    create(cluster, "console-headers", 1)
    sent = produce(cluster, "console-headers", "--property", "parse.headers=true", "--property", "parse.key=true",
                   "--property", "null.marker=<null>",
                   stdin="trace:abc,span:1\tk1\tv1\nh:<null>\t<null>\tv2\n<null>:x\tk\tv\n")
    assert sent.returncode == 1
    assert "Header keys should not be equal to the null marker '<null>'" in sent.stderr
    got = consume(cluster, "console-headers", "--from-beginning", "--max-messages", "2",
                  "--property", "print.headers=true", "--property", "print.key=true",
                  "--property", "null.literal=NULL")
    assert got.stdout == "trace:abc,span:1\tk1\tv1\nh:NULL\tNULL\tv2\n", got.stderr
    plain = consume(cluster, "console-headers", "--from-beginning", "--max-messages", "2")
    assert plain.stdout == "v1\nv2\n"
    no_value = consume(cluster, "console-headers", "--from-beginning", "--max-messages", "2",
                       "--property", "print.offset=true", "--property", "print.value=false")
    assert no_value.stdout == "Offset:0\nOffset:1\n"


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_acks_and_sync(cluster, acks):
    topic = f"console-acks-{acks}"
    create(cluster, topic, 1)
    sent = produce(cluster, topic, "--request-required-acks", acks, "--sync", stdin="one\n\nthree\r\n")
    assert (sent.returncode, sent.stderr) == (0, "")
    got = consume(cluster, topic, "--from-beginning", "--max-messages", "3", "--property", "print.key=true")
    assert got.stdout == "null\tone\nnull\t\nnull\tthree\n"  # an empty line is an empty record; CRLF is dropped


# -- errors -------------------------------------------------------------------------------------------
def test_malformed_key_line_stops_the_producer_with_exit_code_1(cluster):
    create(cluster, "console-malformed", 1)
    sent = produce(cluster, "console-malformed", "--property", "parse.key=true", "--property", "key.separator=:",
                   stdin="a:1\nno separator here\nc:3\n")
    assert sent.returncode == 1
    assert sent.stderr == "ERROR No key separator found on line number 2: 'no separator here'\n"
    got = consume(cluster, "console-malformed", "--from-beginning", "--timeout-ms", "1500", *PRINT_ALL[:2])
    assert got.stdout == "a\t1\n"  # what came before the bad line was sent, nothing after it
    ignored = produce(cluster, "console-malformed", "--property", "parse.key=true", "--property", "key.separator=:",
                      "--property", "ignore.error=true", stdin="whole line\n")
    assert ignored.returncode == 0
    got = consume(cluster, "console-malformed", "--partition", "0", "--offset", "1", "--max-messages", "1",
                  *PRINT_ALL[:2])
    assert got.stdout == "null\twhole line\n"


def test_delivery_failure_is_reported_and_exit_code_1(cluster):
    create(cluster, "console-small", 1, "max.message.bytes=200")
    # --sync: one record per batch (max.message.bytes limits a whole batch, so batched together all three fail)
    sent = produce(cluster, "console-small", "--sync", stdin="ok\n" + "x" * 1000 + "\nfine\n")
    assert sent.returncode == 1
    assert sent.stderr == ("ERROR Error when sending message to topic console-small with key: null, "
                           "value: 1000 bytes with error: MSG_SIZE_TOO_LARGE: Broker: Message size too large\n")
    got = consume(cluster, "console-small", "--from-beginning", "--max-messages", "2")
    assert got.stdout == "ok\nfine\n"


@pytest.mark.parametrize("args, message", [
    ([], "the following arguments are required: --topic"),
    (["--topic", "t", "--compression-codec", "brotli"], "invalid choice: 'brotli'"),
    (["--topic", "t", "--request-required-acks", "2"], "invalid choice: '2'"),
    (["--topic", "t", "--property", "parse.keys=true"], "unknown --property 'parse.keys'"),
    (["--topic", "t", "--property", "parse.key"], "--property takes KEY=VALUE, got 'parse.key'"),
    (["--topic", "t", "--property", "parse.key=yes"], "--property parse.key takes true or false"),
    (["--topic", "t", "--producer-property", "no.such.property=1"],
     'invalid producer config: No such configuration property: "no.such.property"'),
])
def test_producer_bad_flags(cluster, args, message):
    result = tool("kafka-console-producer", "--bootstrap-server", cluster.bootstrap_servers, *args, stdin="x\n")
    assert result.returncode == 2 and message in result.stderr and result.stderr.startswith("usage:"), result.stderr


@pytest.mark.parametrize("args, message", [
    ([], "the following arguments are required: --topic"),
    (["--topic", "t", "--offset", "3"], "The partition is required when offset is specified."),
    (["--topic", "t", "--partition", "0", "--offset", "abc"],
     "The provided offset value 'abc' is incorrect. Valid values are 'earliest', 'latest', or a non-negative long."),
    (["--topic", "t", "--partition", "0", "--offset", "-1"], "The provided offset value '-1' is incorrect."),
    (["--topic", "t", "--partition", "0", "--offset", "1", "--from-beginning"],
     "Options from-beginning and offset cannot be specified together."),
    (["--topic", "t", "--max-messages", "many"], "argument --max-messages: invalid int value: 'many'"),
    (["--topic", "t", "--property", "print.keys=true"], "unknown --property 'print.keys'"),
    (["--topic", "t", "--consumer-property", "no.such.property=1"],
     'invalid consumer config: No such configuration property: "no.such.property"'),
])
def test_consumer_bad_flags(cluster, args, message):
    result = tool("kafka-console-consumer", "--bootstrap-server", cluster.bootstrap_servers, *args)
    assert result.returncode == 2 and message in result.stderr and result.stderr.startswith("usage:"), result.stderr


def test_consumer_unknown_topic_and_partition(cluster):
    create(cluster, "console-two", 2)
    missing = consume(cluster, "console-no-such-topic", "--timeout-ms", "500")
    assert missing.returncode == 1 and "Error: topic 'console-no-such-topic' does not exist" in missing.stderr
    assert "console-no-such-topic" not in topics(cluster, "--list").stdout  # not auto-created by the lookup
    beyond = consume(cluster, "console-two", "--partition", "2", "--timeout-ms", "500")
    assert beyond.returncode == 1 and "partition 2 of topic 'console-two' does not exist" in beyond.stderr


# -- the pure parts, without a cluster ----------------------------------------------------------------
def test_line_reader_matches_kafkas_line_message_reader():
    reader = LineReader({**READER_DEFAULTS, "parse.key": "true", "key.separator": "::"})
    assert reader.parse(b"k::v::w", 1) == (None, b"k", b"v::w")
    assert reader.parse(b"::", 1) == (None, b"", b"")
    with pytest.raises(LineError, match="No key separator found on line number 7: 'kv'"):
        reader.parse(b"kv", 7)
    plain = LineReader(READER_DEFAULTS)
    assert plain.parse(b"a\tb", 1) == (None, None, b"a\tb")


def test_message_formatter_field_order():
    class Msg:
        def timestamp(self):
            return 1, 1_700_000_000_000

        def partition(self):
            return 2

        def offset(self):
            return 9

        def headers(self):
            return [("h", b"v")]

        def key(self):
            return None

        def value(self):
            return b"payload"

    on = {f"print.{f}": "true" for f in ("timestamp", "partition", "offset", "headers", "key")}
    formatter = MessageFormatter({**FORMATTER_DEFAULTS, **on})
    assert formatter.format(Msg()) == b"CreateTime:1700000000000\tPartition:2\tOffset:9\th:v\tnull\tpayload\n"
    assert MessageFormatter(FORMATTER_DEFAULTS).format(Msg()) == b"payload\n"
