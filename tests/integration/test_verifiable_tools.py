"""kafka-verifiable-producer and kafka-verifiable-consumer (Kafka 2.8's VerifiableProducer / VerifiableConsumer)
against a real 3-broker cluster, run as the installed console scripts, their JSON events parsed the way Kafka's
system tests parse them.

The producer with --acks -1 reports every record once, at distinct (partition, offset)s, and ends with
shutdown_complete and tool_data, also when stopped with SIGTERM; a record the brokers refuse is a
producer_send_error naming Kafka's exception. Two consumers in one group (eager and
cooperative assignors) split the partitions, rebalance when the second joins and when one is stopped with
SIGTERM (it revokes its partitions and says shutdown_complete), commit after each batch, and between them
consume exactly what was acknowledged. A bad flag is one line on stderr and exit code 1.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from scripts.local.cluster import running_cluster
from tests.integration.conditions import wait_for

BIN = Path(sys.executable).parent
PARTITIONS = 3


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("verifiable") / "cluster", 3, tick_time=500,
                         session_timeout_ms=6000, properties={"group.initial.rebalance.delay.ms": "0"}) as c:
        yield c


@pytest.fixture(scope="module")
def consumer_config(tmp_path_factory) -> Path:
    """Kafka's --consumer.config: quick heartbeats, so a rebalance is noticed within half a second."""
    path = tmp_path_factory.mktemp("verifiable-config") / "consumer.properties"
    path.write_text("heartbeat.interval.ms=500\nmax.poll.records=50\n")
    return path


class Running:
    """A verifiable tool started in the background; its stdout read line by line as JSON events."""

    def __init__(self, name: str, *args: str):
        self.process = subprocess.Popen([str(BIN / name), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True)
        self.events: list[dict] = []
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line)
            self.events.append(json.loads(line))  # every line is an event: a line that is not JSON fails here

    def named(self, name: str) -> list[dict]:
        return [e for e in list(self.events) if e["name"] == name]

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> tuple[int, str]:
        self.process.send_signal(sig)
        return self.wait(timeout)

    def wait(self, timeout: float = 60) -> tuple[int, str]:
        code = self.process.wait(timeout)
        self._reader.join(10)
        stderr = self.process.stderr.read()
        assert "Traceback" not in stderr, stderr
        assert len(self.events) == len(self.lines)
        return code, stderr


def create(cluster, topic: str) -> None:
    result = subprocess.run([str(BIN / "kafka-topics"), "--bootstrap-server", cluster.bootstrap_servers, "--create",
                             "--topic", topic, "--partitions", str(PARTITIONS), "--replication-factor", "3"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def produce(cluster, topic: str, count: int, prefix: int) -> set[tuple[int, int]]:
    """``count`` records through the verifiable producer with acks=all; the acknowledged (partition, offset)s."""
    producer = Running("kafka-verifiable-producer", "--topic", topic, "--bootstrap-server", cluster.bootstrap_servers,
                       "--max-messages", str(count), "--acks", "-1", "--value-prefix", str(prefix))
    code, stderr = producer.wait()
    assert code == 0, stderr
    acked = producer.named("producer_send_success")
    assert sorted(e["value"] for e in acked) == sorted(f"{prefix}.{i}" for i in range(count))
    return {(e["partition"], e["offset"]) for e in acked}


def consumer(cluster, topic: str, group: str, config: Path, *extra: str) -> Running:
    return Running("kafka-verifiable-consumer", "--topic", topic, "--group-id", group, "--broker-list",
                   cluster.bootstrap_servers, "--session-timeout", "6000", "--consumer.config", str(config), *extra)


def assignment(tool: Running, incremental: bool = False) -> set[int]:
    """The partitions the consumer holds after its events so far (eager: the last assignment is all of it)."""
    held: set[int] = set()
    for event in list(tool.events):
        partitions = {p["partition"] for p in event.get("partitions", [])}
        if event["name"] == "partitions_assigned":
            held = held | partitions if incremental else partitions
        elif event["name"] == "partitions_revoked":
            held -= partitions
    return held


def consumed(*tools: Running) -> list[tuple[int, int]]:
    """Every (partition, offset) the consumers' records_consumed events cover (a duplicate appears twice)."""
    return [(p["partition"], offset) for tool in tools for event in tool.named("records_consumed")
            for p in event["partitions"] for offset in range(p["minOffset"], p["maxOffset"] + 1)]


def committed(*tools: Running) -> dict[int, int]:
    """The last offset successfully committed per partition (the commits of all consumers, in time order)."""
    events = sorted((e for tool in tools for e in tool.named("offsets_committed") if e["success"]),
                    key=lambda e: e["timestamp"])
    return {o["partition"]: o["offset"] for e in events for o in e["offsets"]}


def end_offsets(acked: set[tuple[int, int]]) -> dict[int, int]:
    return {p: max(o for q, o in acked if q == p) + 1 for p in {p for p, _ in acked}}


# -- the producer -----------------------------------------------------------------------------------------
def test_producer_reports_every_acknowledged_record_then_shuts_down(cluster):
    create(cluster, "verifiable-produce")
    producer = Running("kafka-verifiable-producer", "--topic", "verifiable-produce", "--bootstrap-server",
                       cluster.bootstrap_servers, "--max-messages", "300", "--acks", "-1", "--repeating-keys", "7")
    code, stderr = producer.wait()
    assert (code, stderr) == (0, "")
    events = producer.events
    assert events[0]["name"] == "startup_complete"
    assert [e["name"] for e in events[-2:]] == ["shutdown_complete", "tool_data"]
    sends = events[1:-2]
    assert [e["name"] for e in sends] == ["producer_send_success"] * 300
    assert all(list(e) == ["timestamp", "name", "key", "value", "topic", "partition", "offset"] for e in sends)
    assert sorted(int(e["value"]) for e in sends) == list(range(300))
    assert all(e["key"] == str(int(e["value"]) % 7) and e["topic"] == "verifiable-produce" for e in sends)
    places = {(e["partition"], e["offset"]) for e in sends}
    assert len(places) == 300
    for partition in {p for p, _ in places}:  # a fresh topic: each partition's offsets are 0, 1, 2, ...
        offsets = sorted(o for p, o in places if p == partition)
        assert offsets == list(range(len(offsets)))
    key_partitions = {}
    for e in sends:
        assert key_partitions.setdefault(e["key"], e["partition"]) == e["partition"]  # one key, one partition
    tool_data = events[-1]
    assert (tool_data["sent"], tool_data["acked"], tool_data["target_throughput"]) == (300, 300, -1)
    assert tool_data["avg_throughput"] > 0


def test_producer_stopped_by_sigterm_reports_what_was_in_flight(cluster):
    create(cluster, "verifiable-endless")
    producer = Running("kafka-verifiable-producer", "--topic", "verifiable-endless", "--broker-list",
                       cluster.bootstrap_servers, "--throughput", "500")
    wait_for(lambda: len(producer.named("producer_send_success")) >= 300, 30, "300 acknowledged sends")
    code, stderr = producer.stop()
    assert (code, stderr) == (128 + signal.SIGTERM, "")
    assert [e["name"] for e in producer.events[-2:]] == ["shutdown_complete", "tool_data"]
    successes = producer.named("producer_send_success")
    tool_data = producer.events[-1]
    assert tool_data["sent"] == tool_data["acked"] == len(successes)  # every send in flight was waited for
    assert [e["value"] for e in successes] != [] and {int(e["value"]) for e in successes} == set(range(len(successes)))
    assert tool_data["target_throughput"] == 500 and tool_data["avg_throughput"] > 0


def test_refused_records_are_send_errors_without_retries(cluster):
    result = subprocess.run([str(BIN / "kafka-topics"), "--bootstrap-server", cluster.bootstrap_servers, "--create",
                             "--topic", "verifiable-refused", "--partitions", "1", "--replication-factor", "3",
                             "--config", "min.insync.replicas=4"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    producer = Running("kafka-verifiable-producer", "--topic", "verifiable-refused", "--bootstrap-server",
                       cluster.bootstrap_servers, "--max-messages", "5")
    code, stderr = producer.wait()
    assert (code, stderr) == (0, "")
    errors = producer.named("producer_send_error")
    assert [e["value"] for e in errors] == ["0", "1", "2", "3", "4"]  # retries=0: each refusal is final
    assert all(list(e) == ["timestamp", "name", "topic", "key", "value", "exception", "message"] for e in errors)
    assert {e["exception"] for e in errors} == {"class org.apache.kafka.common.errors.NotEnoughReplicasException"}
    assert (producer.events[-1]["sent"], producer.events[-1]["acked"]) == (5, 0)


# -- a group of two consumers -----------------------------------------------------------------------------
@pytest.mark.parametrize("strategy", ["RangeAssignor", "CooperativeStickyAssignor"])
def test_two_consumers_share_the_topic_and_consume_exactly_what_was_acked(cluster, consumer_config, strategy):
    topic, group = f"verifiable-{strategy.lower()}", f"group-{strategy}"
    incremental = strategy.startswith("Cooperative")
    create(cluster, topic)
    acked = produce(cluster, topic, 200, 1)
    strategy_flag = ["--assignment-strategy", f"org.apache.kafka.clients.consumer.{strategy}"]
    first = consumer(cluster, topic, group, consumer_config, *strategy_flag)
    wait_for(lambda: assignment(first, incremental) == {0, 1, 2}, 30, "the first consumer to get every partition")
    assert first.events[0]["name"] == "startup_complete" and first.named("partitions_revoked") == []

    second = consumer(cluster, topic, group, consumer_config, *strategy_flag, "--verbose")
    wait_for(lambda: assignment(second, incremental) and not assignment(first, incremental) & assignment(
        second, incremental) and assignment(first, incremental) | assignment(second, incremental) == {0, 1, 2},
        30, "the two consumers to split the partitions")
    assert first.named("partitions_revoked"), "the first consumer gave partitions up when the second joined"
    acked |= produce(cluster, topic, 200, 2)
    wait_for(lambda: set(consumed(first, second)) == acked, 30, "every acknowledged record to be consumed")
    wait_for(lambda: committed(first, second) == end_offsets(acked), 30, "the commits to reach the end offsets")
    data = second.named("record_data")  # --verbose: one line per record, before its records_consumed
    assert {(e["partition"], e["offset"]) for e in data} == {(p, o) for p, o in consumed(second)}
    assert all(e["value"].split(".")[0] in ("1", "2") and e["key"] is None for e in data)

    second_assignment = assignment(second, incremental)
    code, stderr = second.stop()
    assert code == 128 + signal.SIGTERM, stderr
    assert [e["name"] for e in second.events[-2:]] == ["partitions_revoked", "shutdown_complete"]
    assert {p["partition"] for p in second.events[-2]["partitions"]} == second_assignment
    wait_for(lambda: assignment(first, incremental) == {0, 1, 2}, 30, "the first consumer to take every partition")
    acked |= produce(cluster, topic, 200, 3)
    wait_for(lambda: set(consumed(first, second)) == acked, 30, "the third batch to be consumed")
    wait_for(lambda: committed(first, second) == end_offsets(acked), 30, "the commits to reach the end offsets")
    code, stderr = first.stop()
    assert code == 128 + signal.SIGTERM, stderr
    assert first.events[-1]["name"] == "shutdown_complete"

    everything = consumed(first, second)
    assert sorted(set(everything)) == sorted(acked) and len(everything) == len(acked)  # no loss, no duplicate
    commits = [e for tool in (first, second) for e in tool.named("offsets_committed")]
    assert commits and all(e["success"] is True and "error" not in e for e in commits)
    for tool in (first, second):
        for event in tool.named("records_consumed"):
            assert event["count"] == sum(p["count"] for p in event["partitions"]) <= 50  # max.poll.records=50


def test_consumer_max_messages_stops_after_that_many(cluster, consumer_config):
    create(cluster, "verifiable-limit")
    produce(cluster, "verifiable-limit", 100, 4)
    limited = consumer(cluster, "verifiable-limit", "group-limit", consumer_config, "--max-messages", "30",
                       "--enable-autocommit")
    code, stderr = limited.wait()
    assert code == 0, stderr
    assert sum(p["count"] for e in limited.named("records_consumed") for p in e["partitions"]) == 30
    assert limited.named("offsets_committed") == []  # autocommit: librdkafka commits, the tool prints nothing
    assert [e["name"] for e in limited.events[-2:]] == ["partitions_revoked", "shutdown_complete"]


# -- bad flags ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("tool, args, words", [
    ("kafka-verifiable-producer", ["--topic", "t", "--bootstrap-server", "x:1", "--acks", "all"],
     "argument --acks: could not convert 'all' to Integer"),
    ("kafka-verifiable-producer", ["--topic", "t"],
     "one of the arguments --bootstrap-server --broker-list is required"),
    ("kafka-verifiable-producer", ["--topic", "t", "--bootstrap-server", "x:1", "--producer.config", "/nonexistent"],
     "argument --producer.config: cannot read /nonexistent"),
    ("kafka-verifiable-consumer", ["--topic", "t", "--group-id", "g", "--bootstrap-server", "x:1",
                                   "--assignment-strategy", "org.example.MyAssignor"],
     "argument --assignment-strategy: unknown assignor org.example.MyAssignor"),
    ("kafka-verifiable-consumer", ["--topic", "t", "--group-id", "g", "--bootstrap-server", "x:1", "--bogus"],
     "unrecognized arguments: --bogus"),
])
def test_a_bad_flag_is_one_line_and_exit_1(tool, args, words):
    result = subprocess.run([str(BIN / tool), *args], capture_output=True, text=True, timeout=30)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and words in result.stderr, result.stderr
    assert result.stderr.startswith(f"{tool}: error: ")
