"""Consumer groups against a real 3-broker cluster with unmodified clients (reference §5): members join
and leave, the coordinator rebalances, offsets are committed to ZooKeeper and fetched back, the group
follows the leadership of its ``__consumer_offsets`` partition, and a zombie member cannot commit."""
from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from consumer_group.coordinator.placement import partition_for
from scripts.local.cluster import Cluster, running_cluster
from tests.integration.conditions import wait_for

PARTITIONS = 6
SESSION_MS = 6000
OFFSETS_PARTITIONS = 6


@pytest.fixture
def cluster(tmp_path):
    with running_cluster(tmp_path / "cluster", 3, tick_time=500, session_timeout_ms=4000, properties={
                         "group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions":
                         str(OFFSETS_PARTITIONS), "replica.fetch.backoff.ms": "200"}) as c:
        yield c


def create_topic(cluster: Cluster, topic: str, partitions: int = PARTITIONS) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})  # must outlive the future
    admin.create_topics([NewTopic(topic, partitions, 3)])[topic].result(30)


def produce(cluster: Cluster, topic: str, start: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 5})
    for i in range(start, start + count):
        producer.produce(topic, str(i).encode(), partition=i % PARTITIONS)
    assert producer.flush(60) == 0


class Member:
    """One confluent-kafka group member polling on its own thread; commits after each batch."""

    def __init__(self, cluster: Cluster, group: str, topic: str, name: str, **extra):
        self.name = name
        self.owned: set[int] = set()
        self.revoked: list[set[int]] = []
        self.values: list[int] = []
        self.errors: list[str] = []
        self.consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
                                  "client.id": name, "auto.offset.reset": "earliest", "enable.auto.commit": False,
                                  "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": 500,
                                  "fetch.wait.max.ms": 50, **extra})
        self.consumer.subscribe([topic], on_assign=self._on_assign, on_revoke=self._on_revoke)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _on_assign(self, consumer, partitions):  # eager: the whole assignment; cooperative: what is added
        self.owned |= {p.partition for p in partitions}

    def _on_revoke(self, consumer, partitions):  # eager: everything; cooperative: only what moves away
        self.revoked.append({p.partition for p in partitions})
        self.owned -= {p.partition for p in partitions}

    @property
    def assigned(self) -> set[int]:
        return set(self.owned)

    def _run(self):
        while not self._stop.is_set():
            messages = self.consumer.consume(500, timeout=0.2)
            good = [m for m in messages if m.error() is None]
            self.errors += [str(m.error()) for m in messages if m.error() is not None]
            if good:
                self.values += [int(m.value()) for m in good]
                try:
                    self.consumer.commit(asynchronous=False)
                except KafkaException as exc:
                    self.errors.append(str(exc))

    def close(self):
        self._stop.set()
        self._thread.join(30)
        self.consumer.close()


def owners(members: list[Member]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {p: [] for p in range(PARTITIONS)}
    for m in members:
        for p in m.assigned:
            out[p].append(m.name)
    return out


def each_partition_owned_once(members: list[Member]) -> bool:
    return all(len(names) == 1 for names in owners(members).values())


def committed_in_zk(zk: KazooClient, group: str, topic: str) -> dict[int, int]:
    path = f"/consumers/{group}/offsets/{topic}"
    if not zk.exists(path):
        return {}
    return {int(p): int(zk.get(f"{path}/{p}")[0]) for p in zk.get_children(path)}


def test_members_join_one_by_one_every_partition_has_one_owner_and_offsets_land_in_zookeeper(cluster, zk):
    topic, group = "grouped", "g-join"
    create_topic(cluster, topic)
    produce(cluster, topic, 0, 3000)
    members = []
    try:
        for i in range(3):
            members.append(Member(cluster, group, topic, f"member-{i}"))
            wait_for(lambda: len(members) == sum(1 for m in members if m.assigned) and each_partition_owned_once(members),
                     30, f"{i + 1} members to share the {PARTITIONS} partitions")
            produce(cluster, topic, 3000 + 1000 * i, 1000)
        wait_for(lambda: len(set(v for m in members for v in m.values)) == 6000, 60, "every record consumed")
        assert sorted(len(m.assigned) for m in members) == [2, 2, 2]
        ends = {p: 1000 for p in range(PARTITIONS)}  # 6000 records round-robin over 6 partitions
        wait_for(lambda: committed_in_zk(zk, group, topic) == ends, 30, "the committed offsets in ZooKeeper")
        probe = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group})
        committed = probe.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=30)
        probe.close()
        assert {tp.partition: tp.offset for tp in committed} == ends  # OffsetFetch from the coordinator
        assert all(not m.errors for m in members), [m.errors for m in members]
    finally:
        for m in members:
            m.close()


def test_clean_leave_and_session_expiry_rebalance_without_losing_records(cluster):
    topic, group = "leavers", "g-leave"
    create_topic(cluster, topic)
    produce(cluster, topic, 0, 600)
    a, b = Member(cluster, group, topic, "a"), Member(cluster, group, topic, "b")
    try:
        wait_for(lambda: each_partition_owned_once([a, b]) and a.assigned and b.assigned, 30, "two members")
        b.close()  # LeaveGroup: a takes everything within a rebalance, not a session timeout
        left = time.monotonic()
        wait_for(lambda: a.assigned == set(range(PARTITIONS)), 15, "a to own every partition after b left")
        assert time.monotonic() - left < SESSION_MS / 1000, "the clean leave waited for the session timeout"
        produce(cluster, topic, 600, 600)
        wait_for(lambda: len(set(a.values + b.values)) == 1200, 60, "all 1200 records consumed")
    finally:
        a.close()


# A group member in a child process (so it can be frozen or killed): argv = bootstrap, group, topic, client id.
MEMBER_PROCESS = """
import sys, time
from confluent_kafka import Consumer, TopicPartition
bootstrap, group, topic, client_id = sys.argv[1:5]
c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": client_id, "enable.auto.commit": False,
              "auto.offset.reset": "earliest", "session.timeout.ms": %d, "heartbeat.interval.ms": 500})
c.subscribe([topic])
""" % SESSION_MS

ZOMBIE = MEMBER_PROCESS + """
deadline = time.monotonic() + 60
while not c.assignment() and time.monotonic() < deadline:
    c.poll(0.2)
print("ready", flush=True)
sys.stdin.readline()
try:
    c.commit(offsets=[TopicPartition(topic, p, 999999) for p in range(%d)], asynchronous=False)
    print("committed", flush=True)
except Exception as exc:
    print("refused", exc, flush=True)
""" % PARTITIONS


def test_zombie_member_cannot_commit_after_its_session_expired(cluster, zk):
    topic, group = "zombies", "g-zombie"
    create_topic(cluster, topic)
    produce(cluster, topic, 0, 60)
    zombie = subprocess.Popen([sys.executable, "-c", ZOMBIE, cluster.bootstrap_servers, group, topic, "zombie"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    survivor = None
    try:
        assert zombie.stdout.readline().strip() == "ready"
        zombie.send_signal(signal.SIGSTOP)  # frozen: no heartbeats, its session expires
        survivor = Member(cluster, group, topic, "survivor")
        wait_for(lambda: survivor.assigned == set(range(PARTITIONS)), SESSION_MS / 1000 + 30,
                 "the survivor to own everything once the zombie's session expired")
        zombie.send_signal(signal.SIGCONT)
        zombie.stdin.write("commit\n")
        zombie.stdin.flush()
        answer = zombie.stdout.readline().strip()
        assert answer.startswith("refused"), answer
        assert 999999 not in committed_in_zk(zk, group, topic).values()
    finally:
        zombie.kill()
        zombie.wait(10)
        if survivor is not None:
            survivor.close()


def test_cooperative_sticky_members_keep_their_partitions_while_others_move(cluster):
    topic, group = "coop", "g-coop"
    create_topic(cluster, topic)
    strategy = {"partition.assignment.strategy": "cooperative-sticky"}
    a = Member(cluster, group, topic, "a", **strategy)
    b = None
    try:
        wait_for(lambda: a.assigned == set(range(PARTITIONS)), 30, "a to own every partition")
        b = Member(cluster, group, topic, "b", **strategy)
        wait_for(lambda: each_partition_owned_once([a, b]) and len(a.assigned) == len(b.assigned) == 3, 40,
                 "an incremental rebalance to 3 + 3")
        # incremental: a only ever gave up the 3 partitions that moved, never its whole assignment
        assert a.revoked and all(len(r) <= 3 for r in a.revoked), a.revoked
        produce(cluster, topic, 0, 600)
        wait_for(lambda: len(set(a.values + b.values)) == 600, 60, "all records consumed by the pair")
    finally:
        a.close()
        if b is not None:
            b.close()


def coordinator_of(cluster: Cluster, group: str) -> int:
    """The leader of the group's __consumer_offsets partition, from a broker's metadata cache."""
    name = f"__consumer_offsets-{partition_for(group, OFFSETS_PARTITIONS)}"
    for broker in cluster.broker_ids:
        health = cluster.health(broker) or {}
        state = health.get("metadata", {}).get("partitions", {}).get(name)
        if state and state["leader"] >= 0:
            return state["leader"]
    return -1


def test_group_follows_its_offsets_partition_when_the_coordinator_dies(cluster, zk):
    topic, group = "moving", "g-moving"
    create_topic(cluster, topic)
    produce(cluster, topic, 0, 1200)
    member = Member(cluster, group, topic, "m")
    try:
        wait_for(lambda: len(set(member.values)) == 1200, 60, "the first 1200 records")
        wait_for(lambda: sum(committed_in_zk(zk, group, topic).values()) == 1200, 30, "their offsets committed")
        old = coordinator_of(cluster, group)
        assert old > 0
        cluster.signal_broker(old, signal.SIGKILL)
        wait_for(lambda: coordinator_of(cluster, group) not in (-1, old), 30, "a new coordinator")
        before = len(member.values)
        produce(cluster, topic, 1200, 1200)
        wait_for(lambda: len(set(member.values)) == 2400, 90, "the member to resume with the new coordinator")
        duplicates = len(member.values) - len(set(member.values))
        assert duplicates < before, "the group restarted from the beginning, not from its committed offsets"
        wait_for(lambda: sum(committed_in_zk(zk, group, topic).values()) == 2400, 30, "new commits")
    finally:
        member.close()


KILLED = MEMBER_PROCESS + """
while True:
    messages = [m for m in c.consume(100, timeout=0.2) if m.error() is None]
    for m in messages:
        print("value", m.partition(), m.offset(), int(m.value()), flush=True)
    if messages:
        for tp in c.commit(asynchronous=False):
            print("committed", tp.partition, tp.offset, flush=True)
"""


def test_killed_member_is_replaced_after_its_session_timeout_and_only_uncommitted_records_repeat(cluster):
    topic, group = "killed", "g-killed"
    create_topic(cluster, topic)
    produce(cluster, topic, 0, 600)
    doomed = subprocess.Popen([sys.executable, "-c", KILLED, cluster.bootstrap_servers, group, topic, "doomed"],
                              stdout=subprocess.PIPE, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(doomed.stdout.readline, "")), daemon=True)
    reader.start()
    survivor = None
    try:
        wait_for(lambda: len(_whole(lines, "value")) >= 600, 60, "the doomed member to read")
        survivor = Member(cluster, group, topic, "survivor")
        wait_for(lambda: survivor.assigned and len(survivor.assigned) < PARTITIONS, 30, "a shared assignment")
        produce(cluster, topic, 600, 600)  # records the doomed member may read but not commit
        doomed.kill()
        killed_at = time.monotonic()
        doomed.wait(10)
        reader.join(10)
        wait_for(lambda: survivor.assigned == set(range(PARTITIONS)), SESSION_MS / 1000 + 30,
                 "the survivor to take over once the killed member's session expired")
        took = time.monotonic() - killed_at
        assert took >= SESSION_MS / 1000 - 1.5, f"rebalanced {took:.1f}s after the kill: before the session timeout"
        wait_for(lambda: len(set(survivor.values) | _values(lines)) == 1200, 60, "every record consumed")
        committed = {}
        for line in _whole(lines, "committed"):
            _, partition, offset = line.split()
            committed[int(partition)] = max(committed.get(int(partition), 0), int(offset))
        for value in set(survivor.values) & _values(lines):  # read twice: only above the last known commit
            partition, offset = value % PARTITIONS, value // PARTITIONS
            assert offset >= committed.get(partition, 0), (value, committed)
    finally:
        doomed.kill()
        if survivor is not None:
            survivor.close()


def _values(lines: list[str]) -> set[int]:
    return {int(line.split()[3]) for line in _whole(lines, "value")}


def _whole(lines: list[str], kind: str) -> list[str]:
    """The complete lines of one kind (a process killed mid-print leaves a torn last line)."""
    return [line for line in lines if line.startswith(kind + " ") and line.endswith("\n")]


def test_confluent_and_kafka_python_members_share_a_group(cluster):
    from kafka import KafkaConsumer  # kafka-python: a second, independent client implementation

    topic, group = "mixed", "g-mixed"
    create_topic(cluster, topic)
    produce(cluster, topic, 0, 1200)
    a = Member(cluster, group, topic, "confluent", **{"partition.assignment.strategy": "range"})
    python_values: list[int] = []
    stop = threading.Event()
    python_assigned: set[int] = set()

    def run_python_member():
        consumer = KafkaConsumer(topic, bootstrap_servers=cluster.bootstrap_servers, group_id=group,
                                 client_id="kafka-python", auto_offset_reset="earliest", enable_auto_commit=False,
                                 session_timeout_ms=SESSION_MS, heartbeat_interval_ms=500)
        try:
            while not stop.is_set():
                batches = consumer.poll(timeout_ms=200)
                python_assigned.clear()
                python_assigned.update(tp.partition for tp in consumer.assignment())
                for records in batches.values():
                    python_values.extend(int(r.value) for r in records)
                if batches:
                    consumer.commit()
        finally:
            consumer.close()

    thread = threading.Thread(target=run_python_member, daemon=True)
    thread.start()
    try:
        wait_for(lambda: len(a.assigned) == 3 and len(python_assigned) == 3 and not (a.assigned & python_assigned),
                 60, "range assignment over a confluent-kafka and a kafka-python member")
        wait_for(lambda: len(set(a.values) | set(python_values)) == 1200, 60, "every record consumed by the pair")
    finally:
        stop.set()
        thread.join(30)
        a.close()


def test_static_member_restarting_within_its_session_gets_its_partitions_back_without_a_rebalance(cluster):
    topic, group = "static", "g-static"
    create_topic(cluster, topic)
    a = Member(cluster, group, topic, "a", **{"group.instance.id": "instance-a"})
    b = Member(cluster, group, topic, "b", **{"group.instance.id": "instance-b"})
    b2 = None
    try:
        wait_for(lambda: each_partition_owned_once([a, b]) and a.assigned and b.assigned, 30, "two static members")
        b_partitions, a_revocations = set(b.assigned), len(a.revoked)
        b.close()  # a static member sends no LeaveGroup: its partitions wait for it for a session timeout
        b2 = Member(cluster, group, topic, "b-restarted", **{"group.instance.id": "instance-b"})
        wait_for(lambda: b2.assigned == b_partitions, SESSION_MS / 1000, "the restarted instance to get b's partitions")
        produce(cluster, topic, 0, 600)
        wait_for(lambda: len(set(a.values + b2.values)) == 600, 60, "every record consumed")
        assert len(a.revoked) == a_revocations, "the other member went through a rebalance"
    finally:
        a.close()
        if b2 is not None:
            b2.close()


def test_aiokafka_and_kcat_consume_through_groups_and_commit(cluster):
    import asyncio
    import shutil

    from aiokafka import AIOKafkaConsumer

    topic = "other-clients"
    create_topic(cluster, topic)
    produce(cluster, topic, 0, 600)

    async def consume_with_aiokafka() -> tuple[set[int], int]:
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=cluster.bootstrap_servers, group_id="g-aiokafka",
                                    auto_offset_reset="earliest", enable_auto_commit=False)
        await consumer.start()
        try:
            values: set[int] = set()
            deadline = time.monotonic() + 60
            while len(values) < 600 and time.monotonic() < deadline:
                for records in (await consumer.getmany(timeout_ms=500)).values():
                    values.update(int(r.value) for r in records)
            await consumer.commit()
            committed = [await consumer.committed(tp) for tp in consumer.assignment()]
            return values, sum(committed)
        finally:
            await consumer.stop()

    values, committed_total = asyncio.run(consume_with_aiokafka())
    assert values == set(range(600)) and committed_total == 600

    kcat = subprocess.run([shutil.which("kcat"), "-b", cluster.bootstrap_servers, "-G", "g-kcat", "-o", "beginning",
                           "-c", "600", "-f", "%s\\n", "-X", "session.timeout.ms=6000", topic],
                          capture_output=True, text=True, timeout=120)
    assert kcat.returncode == 0, kcat.stderr
    assert {int(v) for v in kcat.stdout.split()} == set(range(600))
