"""``kafka-consumer-groups --bootstrap-server`` against a real 3-broker cluster: a confluent-kafka consumer
commits, then the tool lists, describes (offsets, log end offsets, lag, owners), refuses to reset or
delete the active group, resets the idle group every way (dry run first) and deletes it."""
from __future__ import annotations

import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from scripts.local.cluster import Cluster, running_cluster
from tests.integration.conditions import wait_for

REPO = Path(__file__).resolve().parents[2]
PARTITIONS = 6
PER_PARTITION = 100
LATER = 10  # records per partition produced after the commit: the lag
TOPIC, EMPTY, GROUP = "tool-topic", "tool-empty", "tool-group"
BASE_MS = (int(time.time()) - 3600) * 1000  # record k of each partition is stamped BASE_MS + k seconds


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("tool") / "cluster", 3, tick_time=500, session_timeout_ms=4000,
                         properties={"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "6",
                         "replica.fetch.backoff.ms": "200"}) as c:
        yield c


def tool(cluster: Cluster, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scripts.tools.kafka_consumer_groups",
                           "--bootstrap-server", cluster.bootstrap_servers, *argv],
                          capture_output=True, text=True, timeout=120, cwd=REPO)


def table(out: str) -> dict[tuple[str, int], list[str]]:
    """The describe table by (topic, partition): CURRENT-OFFSET, LOG-END-OFFSET, LAG, CONSUMER-ID, HOST, CLIENT-ID."""
    lines = [line.split() for line in out.splitlines() if line.strip()]
    assert lines and lines[0][:3] == ["GROUP", "TOPIC", "PARTITION"], out
    return {(cells[1], int(cells[2])): cells[3:] for cells in lines[1:]}


def reset_table(out: str) -> dict[tuple[str, int], int]:
    lines = [line.split() for line in out.splitlines() if line.strip()]
    assert lines and lines[0] == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], out
    return {(cells[1], int(cells[2])): int(cells[3]) for cells in lines[1:]}


def current(cluster: Cluster) -> dict[int, str]:
    described = tool(cluster, "--describe", "--group", GROUP)
    assert described.returncode == 0, described.stderr
    return {p: cells[0] for (topic, p), cells in table(described.stdout).items() if topic == TOPIC}


def produce_stamped(cluster: Cluster) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 5})
    for p in range(PARTITIONS):
        for k in range(PER_PARTITION):
            producer.produce(TOPIC, f"{p}-{k}".encode(), partition=p, timestamp=BASE_MS + 1000 * k)
    assert producer.flush(60) == 0


def produce_later(cluster: Cluster) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 5})
    for p in range(PARTITIONS):
        for k in range(LATER):
            producer.produce(TOPIC, b"later", partition=p)
    assert producer.flush(60) == 0


def consume_and_commit(cluster: Cluster) -> Consumer:
    """A member owning both topics that has read and committed every stamped record."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": GROUP, "client.id": "tool-client",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False, "session.timeout.ms": 6000,
                         "heartbeat.interval.ms": 500, "fetch.wait.max.ms": 50})
    consumer.subscribe([TOPIC, EMPTY])
    last: dict[int, int] = {}

    def everything_read() -> bool:
        for message in consumer.consume(500, timeout=0.2):
            if message.error() is None:
                last[message.partition()] = message.offset()
        return len(last) == PARTITIONS and all(o == PER_PARTITION - 1 for o in last.values())

    wait_for(everything_read, 60, "the consumer to read every stamped record", interval=0)
    consumer.commit(offsets=[TopicPartition(TOPIC, p, o + 1) for p, o in last.items()], asynchronous=False)
    wait_for(lambda: len(consumer.assignment()) == PARTITIONS + 2, 30, "the member to own both topics")
    return consumer


@pytest.fixture(scope="module")
def active(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    for name, partitions in ((TOPIC, PARTITIONS), (EMPTY, 2)):
        admin.create_topics([NewTopic(name, partitions, 3)])[name].result(30)
    produce_stamped(cluster)
    consumer = consume_and_commit(cluster)
    produce_later(cluster)
    yield consumer
    consumer.close()


def test_list_and_describe_an_active_group(cluster, active):
    listed = tool(cluster, "--list")
    assert listed.returncode == 0 and GROUP in listed.stdout.split(), listed
    wait_for(lambda: "rebalancing" not in tool(cluster, "--describe", "--group", GROUP).stderr, 30, "a stable group")
    described = tool(cluster, "--describe", "--group", GROUP)
    assert (described.returncode, described.stderr) == (0, ""), described.stderr
    rows = table(described.stdout)
    assert set(rows) == {(TOPIC, p) for p in range(PARTITIONS)} | {(EMPTY, 0), (EMPTY, 1)}
    member_id = rows[(TOPIC, 0)][3]
    for p in range(PARTITIONS):
        assert rows[(TOPIC, p)][:3] == [str(PER_PARTITION), str(PER_PARTITION + LATER), str(LATER)]
        assert rows[(TOPIC, p)][3] == member_id and rows[(TOPIC, p)][5] == "tool-client"
    assert rows[(EMPTY, 0)][:3] == ["-", "0", "-"]  # owned, nothing committed
    members = tool(cluster, "--describe", "--group", GROUP, "--members")
    assert members.stdout.split()[-5:] == [GROUP, member_id, rows[(TOPIC, 0)][4], "tool-client", str(PARTITIONS + 2)]
    state = tool(cluster, "--describe", "--group", GROUP, "--state")
    assert state.returncode == 0 and state.stdout.split()[-3:] == ["range", "Stable", "1"], state.stdout


def test_an_active_group_can_be_neither_reset_nor_deleted(cluster, active):
    reset = tool(cluster, "--reset-offsets", "--group", GROUP, "--all-topics", "--to-earliest", "--execute")
    assert reset.returncode == 1
    assert reset.stderr.strip() == (f"Error: Assignments can only be reset if the group '{GROUP}' is inactive, "
                                    "but the current state is Stable.")
    deleted = tool(cluster, "--delete", "--group", GROUP)
    assert deleted.returncode == 1 and "NON_EMPTY_GROUP" in deleted.stderr, deleted.stderr
    assert current(cluster) == {p: str(PER_PARTITION) for p in range(PARTITIONS)}


@pytest.fixture(scope="module")
def idle(cluster, active):
    active.close()  # LeaveGroup: the group is Empty at once
    wait_for(lambda: "has no active members" in tool(cluster, "--describe", "--group", GROUP).stderr, 30,
             "the group to become Empty")


def test_describe_an_empty_group(cluster, idle):
    described = tool(cluster, "--describe", "--group", GROUP)
    assert described.returncode == 0
    assert described.stderr == f"Consumer group '{GROUP}' has no active members.\n"
    rows = table(described.stdout)
    assert set(rows) == {(TOPIC, p) for p in range(PARTITIONS)}  # only what has committed offsets
    assert all(cells == ["100", "110", "10", "-", "-", "-"] for cells in rows.values()), rows


def test_reset_offsets_every_way(cluster, idle):
    everything = [f"{TOPIC}"]
    dry = tool(cluster, "--reset-offsets", "--group", GROUP, "--topic", TOPIC, "--to-earliest")
    assert dry.returncode == 0 and dry.stderr.startswith("WARN: No action will be performed")
    assert reset_table(dry.stdout) == {(TOPIC, p): 0 for p in range(PARTITIONS)}
    assert current(cluster) == {p: "100" for p in range(PARTITIONS)}  # a dry run changes nothing

    def reset(*how: str, scope=everything) -> dict[tuple[str, int], int]:
        done = tool(cluster, "--reset-offsets", "--group", GROUP, *[f for t in scope for f in ("--topic", t)],
                    *how, "--execute")
        assert (done.returncode, done.stderr) == (0, ""), done.stderr
        return reset_table(done.stdout)

    assert reset("--to-earliest") == {(TOPIC, p): 0 for p in range(PARTITIONS)}
    rows = table(tool(cluster, "--describe", "--group", GROUP).stdout)
    assert all(rows[(TOPIC, p)][:3] == ["0", "110", "110"] for p in range(PARTITIONS)), rows
    assert set(reset("--shift-by", "30").values()) == {30}
    assert current(cluster) == {p: "30" for p in range(PARTITIONS)}
    assert set(reset("--shift-by", "-1000").values()) == {0}  # clamped to the log start
    at_40s = datetime.fromtimestamp((BASE_MS + 40_000) / 1000, tz=timezone.utc).isoformat(timespec="milliseconds")
    assert set(reset("--to-datetime", at_40s).values()) == {40}
    assert current(cluster) == {p: "40" for p in range(PARTITIONS)}
    future = datetime.fromtimestamp(time.time() + 3600, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000")
    assert set(reset("--to-datetime", future).values()) == {110}  # after the last record: the log end
    assert reset("--to-offset", "5", scope=[f"{TOPIC}:0,1"]) == {(TOPIC, 0): 5, (TOPIC, 1): 5}
    assert reset("--to-offset", "999", scope=[f"{TOPIC}:2"]) == {(TOPIC, 2): 110}  # clamped to the log end
    assert current(cluster) == {0: "5", 1: "5", 2: "110", 3: "110", 4: "110", 5: "110"}
    dry = tool(cluster, "--reset-offsets", "--group", GROUP, "--all-topics", "--to-latest", "--dry-run")
    assert (dry.returncode, dry.stderr) == (0, "") and set(reset_table(dry.stdout).values()) == {110}
    assert current(cluster)[0] == "5"


def test_delete_the_idle_group(cluster, idle):
    deleted = tool(cluster, "--delete", "--group", GROUP)
    assert (deleted.returncode, deleted.stdout, deleted.stderr) == (
        0, f"Deletion of requested consumer groups ('{GROUP}') was successful.\n", "")
    assert GROUP not in tool(cluster, "--list").stdout.split()
    gone = tool(cluster, "--describe", "--group", GROUP)
    assert (gone.returncode, gone.stderr) == (1, f"Error: Consumer group '{GROUP}' does not exist.\n")
    again = tool(cluster, "--delete", "--group", GROUP)
    assert again.returncode == 1 and "GROUP_ID_NOT_FOUND" in again.stderr, again.stderr
