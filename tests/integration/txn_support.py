"""What the transaction tests share: topics, seeding, the LSO and high watermark as ListOffsets answers them,
reading a topic to its end under either isolation level, the copier process (scripts/demo/txn_copier.py) and its
supervisor, and broker bounces that wait for the ISR to be whole again."""
from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
from confluent_kafka import IsolationLevel

from scripts.local.cluster import Cluster
from tests.integration.conditions import wait_for
from tests.integration.znodes import connected_zk

ROOT = Path(__file__).resolve().parents[2]
TXN_LOG = "__transaction_state"


def create_topics(bootstrap: str, names: list[str], partitions: int = 1, replication_factor: int = 3,
                  min_isr: int = 2) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    config = {"min.insync.replicas": str(min_isr)}
    futures = admin.create_topics([NewTopic(n, partitions, replication_factor, config=config) for n in names],
                                  operation_timeout=30)
    for f in futures.values():
        f.result(60)
    wait_for(lambda: all(len(ps := admin.list_topics(n, timeout=10).topics[n].partitions) == partitions
                         and all(p.leader >= 0 for p in ps.values()) for n in names), 30, f"leaders of {names}")


def seed(bootstrap: str, topic: str, count: int, partitions: int = 1) -> dict[int, list[bytes]]:
    """``count`` records (values ``b"0"``, ``b"1"``, ...) round-robin over the partitions, acks=all;
    what each partition holds, in order."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "enable.idempotence": True})
    sent: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    for i in range(count):
        value = str(i).encode()
        while True:
            try:
                producer.produce(topic, value, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
        sent[i % partitions].append(value)
    assert producer.flush(60) == 0
    return sent


def end_offsets(bootstrap: str, topic: str, partitions: int = 1, committed: bool = False) -> dict[int, int]:
    """The latest offset per partition from ListOffsets: the LSO under read_committed, else the high watermark."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    level = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED
    futures = admin.list_offsets({TopicPartition(topic, p): OffsetSpec.latest() for p in range(partitions)},
                                 isolation_level=level, request_timeout=10)
    return {tp.partition: f.result().offset for tp, f in futures.items()}


def stable(bootstrap: str, topic: str, partitions: int = 1) -> dict[int, int] | None:
    """The end offsets if no transaction is open on ``topic`` (LSO == high watermark everywhere), else None."""
    try:
        high = end_offsets(bootstrap, topic, partitions)
        return high if end_offsets(bootstrap, topic, partitions, committed=True) == high else None
    except Exception:  # noqa: BLE001 - a leader moving: not stable yet
        return None


class TopicReader:
    """A confluent-kafka consumer of every partition of ``topic`` from the beginning (no group), keeping each
    partition's values in order and the offset of its last end-of-partition event."""

    def __init__(self, bootstrap: str, topic: str, partitions: int = 1, isolation: str = "read_committed"):
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{time.monotonic_ns()}",
                                  "enable.auto.commit": False, "isolation.level": isolation,
                                  "enable.partition.eof": True, "fetch.wait.max.ms": 100})
        self.consumer.assign([TopicPartition(topic, p, -2) for p in range(partitions)])
        self.values: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
        self.eof: dict[int, int] = {}
        self.errors: list[str] = []

    def poll(self, timeout: float = 0.2) -> None:
        for m in self.consumer.consume(500, timeout):
            if m.error() is None:
                self.values[m.partition()].append(m.value())
                self.eof.pop(m.partition(), None)
            elif m.error().code() == KafkaError._PARTITION_EOF:
                self.eof[m.partition()] = m.offset()
            else:
                self.errors.append(str(m.error()))

    def at(self, ends: dict[int, int]) -> bool:
        return all(self.eof.get(p, -1) >= end for p, end in ends.items())

    def read_to(self, ends: dict[int, int], timeout: float) -> dict[int, list[bytes]]:
        deadline = time.monotonic() + timeout
        while not self.at(ends):
            assert time.monotonic() < deadline, f"reader at {self.eof}, wanted {ends}"
            self.poll()
        return self.values

    def close(self) -> None:
        self.consumer.close()


def read_all(bootstrap: str, topic: str, partitions: int = 1, isolation: str = "read_committed",
             timeout: float = 60) -> dict[int, list[bytes]]:
    """Every value of ``topic`` per partition, once no transaction is open on it."""
    ends = wait_for(lambda: stable(bootstrap, topic, partitions), timeout, f"LSO == high watermark on {topic}", 0.2)
    reader = TopicReader(bootstrap, topic, partitions, isolation)
    try:
        return reader.read_to(ends, timeout)
    finally:
        reader.close()


class ReaderThread(threading.Thread):
    """A ``TopicReader`` polling in the background while copiers run (the concurrent read_committed consumer)."""

    def __init__(self, bootstrap: str, topic: str, partitions: int = 1):
        super().__init__(daemon=True, name=f"reader-{topic}")
        self.reader = TopicReader(bootstrap, topic, partitions)
        self.halt = threading.Event()
        self.caught_up = threading.Event()
        self.ends: dict[int, int] | None = None

    def run(self) -> None:
        while not self.halt.is_set():
            self.reader.poll()
            if self.ends is not None and self.reader.at(self.ends):
                self.caught_up.set()
        self.reader.close()

    def finish(self, ends: dict[int, int], timeout: float) -> dict[int, list[bytes]]:
        self.ends = ends
        assert self.caught_up.wait(timeout), f"concurrent reader at {self.reader.eof}, wanted {ends}"
        self.halt.set()
        self.join(15)
        return self.reader.values


# -- the copier process ---------------------------------------------------------------------------
class CopierProcess:
    """``python -m scripts.demo.txn_copier`` with its JSON events in a queue (and all of them in ``events``)."""

    def __init__(self, bootstrap: str, input_topic: str, output_topic: str, group: str, transactional_id: str,
                 *extra: str):
        self.stderr = tempfile.TemporaryFile("w+")  # librdkafka's logs; a pipe nobody reads could fill and block it
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "scripts.demo.txn_copier", "--bootstrap-server", bootstrap, "--input", input_topic,
             "--output", output_topic, "--group", group, "--transactional-id", transactional_id, *extra],
            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True, bufsize=1,
            start_new_session=True)
        self.queue: queue.Queue = queue.Queue()
        self.events: list[dict] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                self.queue.put(json.loads(line))
            except ValueError:
                continue
        self.queue.put({"event": "eof"})

    def wait(self, condition, timeout: float, what: str) -> dict:
        """The first event (since the last wait) ``condition(event)`` holds for."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            assert left > 0, (f"timed out after {timeout} s waiting for {what}; events {self.events[-5:]}\n"
                              f"{self.stderr_tail()}")
            try:
                event = self.queue.get(timeout=left)
            except queue.Empty:
                continue
            self.events.append(event)
            if condition(event):
                return event
            if event["event"] == "eof":
                raise AssertionError(f"copier exited ({self.proc.wait(10)}) before {what}: {self.events[-5:]}\n"
                                     f"{self.stderr_tail()}")

    def stderr_tail(self, chars: int = 3000) -> str:
        self.stderr.seek(0)
        return self.stderr.read()[-chars:]

    def wait_event(self, kind: str, timeout: float) -> dict:
        return self.wait(lambda e: e["event"] == kind, timeout, kind)

    def committed(self) -> int:
        return sum(1 for e in self.events if e["event"] == "committed")

    def signal(self, sig: signal.Signals) -> None:
        self.proc.send_signal(sig)

    def resume_paused(self) -> None:
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def exit_code(self, timeout: float = 60) -> int:
        return self.proc.wait(timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait(10)


KNOWN_STUCK_CALL = "send_offsets_to_transaction"  # librdkafka 2.16's hang (#5456, #5511), see CopierSupervisor


def unexcused_stuck(event: dict, stuck_before: int, bounces: int) -> str | None:
    """Why a copier's ``stuck`` report is not librdkafka's known hang, or None when it is excused: stuck in
    ``send_offsets_to_transaction`` (its cached group coordinator went down and was decommissioned: the
    coordinator request is never re-triggered and its timeout never checked), at most once per broker bounce
    (``stuck_before``: the stuck copiers already replaced). Anything else stuck is a defect to report."""
    if event.get("call") != KNOWN_STUCK_CALL:
        return f"a copier stuck elsewhere than librdkafka's known bug (#5456, #5511): {event}"
    if stuck_before + 1 > bounces:
        return f"{stuck_before + 1} stuck copiers in {bounces} broker bounces: {event}"
    return None


class CopierSupervisor:
    """The copier processes of one copy job, one at a time, as a supervisor runs them: a copier that reports its
    client stuck (scripts/demo/txn_copier.py: a transactional call outliving twice its timeout, then exit 4) is
    replaced by a new one with the same ``transactional.id``, whose InitProducerId fences the stuck producer and
    aborts its transaction; exactly-once must hold through that. Only ``unexcused_stuck``'s excuse is granted;
    ``bounces`` counts the broker bounces the test made (each may strike the known hang once)."""

    def __init__(self, bootstrap: str, source: str, sink: str, group: str, transactional_id: str, *flags: str):
        self.bootstrap, self.source, self.sink = bootstrap, source, sink
        self.group, self.transactional_id = group, transactional_id
        self.flags = flags  # every copier's
        self.copiers: list[CopierProcess] = []
        self.stuck: list[dict] = []
        self.bounces = 0
        self.extra: tuple[str, ...] = ()

    def copier(self, *extra: str) -> CopierProcess:
        """Start a copier with the job's flags and ``extra`` (which a replacement is given too)."""
        c = CopierProcess(self.bootstrap, self.source, self.sink, self.group, self.transactional_id, *self.flags,
                          *extra)
        self.copiers.append(c)
        self.extra = extra
        return c

    def supervised(self, condition, timeout: float, what: str) -> dict:
        """The current copier's first event ``condition`` holds for; a stuck copier is replaced (if excused) and
        the wait goes on with its replacement."""
        deadline = time.monotonic() + timeout
        while True:
            copier = self.copiers[-1]
            try:
                event = copier.wait(lambda e: condition(e) or e["event"] == "stuck", deadline - time.monotonic(),
                                    what)
            except AssertionError as exc:
                raise AssertionError(f"{exc}\nreplaced stuck copiers: {self.stuck}") from None
            if event["event"] != "stuck":
                return event
            self.replace_stuck(copier, event)

    def replace_stuck(self, copier: CopierProcess, event: dict) -> None:
        print(f"copier stuck, replaced: {event}\n{copier.stderr_tail(1500)}")
        reason = unexcused_stuck(event, len(self.stuck), self.bounces)
        assert reason is None, reason
        self.stuck.append(event)
        assert copier.exit_code(10) == 4
        self.copier(*self.extra)

    def committed(self) -> int:
        return sum(c.committed() for c in self.copiers)

    def close(self) -> None:
        for c in self.copiers:
            c.kill()


# -- brokers --------------------------------------------------------------------------------------
def leader_of(bootstrap: str, topic: str, partition: int) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return admin.list_topics(topic, timeout=10).topics[topic].partitions[partition].leader


def full_isr(bootstrap: str, topics: list[str]) -> bool:
    try:
        metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
    except Exception:  # noqa: BLE001
        return False
    for name in topics:
        topic = metadata.topics.get(name)
        if topic is None or topic.error is not None:
            return False
        if any(p.leader < 0 or sorted(p.isrs) != sorted(p.replicas) for p in topic.partitions.values()):
            return False
    return True


def restart_killed_broker(cluster: Cluster, broker_id: int, timeout: float = 60) -> None:
    """Start a SIGKILLed broker again once ZooKeeper expired its dead session (until then its registration
    stands and the id may not register again), and wait until the cluster is ready."""
    wait_for(lambda: cluster.broker_pid(broker_id) is None, 10, f"broker {broker_id} gone")
    with connected_zk(cluster) as zk:
        wait_for(lambda: zk.exists(f"/brokers/ids/{broker_id}") is None, cluster.spec.session_timeout_ms / 1000 + 15,
                 f"broker {broker_id}'s registration expired", 0.2)
    cluster.start_broker(broker_id)
    cluster.wait_until_ready(timeout)


def bounce_broker(cluster: Cluster, broker_id: int, hard: bool, topics: list[str], timeout: float = 60) -> None:
    """Stop ``broker_id`` (SIGKILL if ``hard``, else a controlled shutdown), start it again, and wait until it is
    registered and every partition of ``topics`` has its whole replica set in the ISR again."""
    if hard:
        cluster.signal_broker(broker_id, signal.SIGKILL)
        restart_killed_broker(cluster, broker_id, timeout)
    else:
        cluster.stop_broker(broker_id)
        cluster.start_broker(broker_id)
        cluster.wait_until_ready(timeout)
    wait_for(lambda: full_isr(cluster.bootstrap_servers, topics), timeout, f"full ISR of {topics}", 0.5)
