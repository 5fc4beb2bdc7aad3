"""Replication against real processes (reference §3.3-§3.7, §7 pitfall 2): a real ZooKeeper,
real brokers, confluent-kafka producers and consumers, kill -9 / SIGSTOP on the brokers' own pids.

1. RF 3 under acks=all: every replica's segment files are byte-identical, HW == LEO, ISR == all.
2. kill -9 of the leader while a producer sends with acks=all (min.insync.replicas=2): every
   acknowledged record is read back from the new leader (at-least-once: duplicates are counted and
   printed; idempotent producer: exactly once, in order); the old leader comes back, truncates its
   unreplicated tail and ends byte-identical. The ``stall-then-kill`` variants make sure the new
   leader holds records whose acknowledgement the producer never got (so retries would duplicate).
3. A SIGSTOPped follower drops out of the ISR (the leader's ZooKeeper write) after
   replica.lag.time.max.ms; acks=all keeps working with ISR >= min.insync.replicas; SIGCONT: it
   catches up and rejoins.
4. KIP-101 replays, deterministic, RF 2 on a 2-broker cluster (so "kill -9 both" also freezes the
   controller: the partition state in ZooKeeper stays exactly what the leader last wrote):
   a. a follower whose checkpointed HW is stale becomes leader and serves every acknowledged record;
   b. divergence: records only the old leader has are truncated when it returns as a follower, on
      the new leader's diverging_epoch answer to its Fetch v12 (KIP-320); both logs end byte-identical;
   c. KIP-101's power-loss replay: the returning replica's HW on disk covers records the new leader
      lost; truncating to that HW would leave two different records at the same offsets.
5. Two of three replicas down with min.insync.replicas=2: acks=all gets NOT_ENOUGH_REPLICAS and
   nothing is appended; the brokers come back, the ISR recovers, acks=all works again.

Each test runs its own cluster under tmp_path. Progress and the at-least-once duplicate count are
printed (``pytest -rP`` shows them).
"""
from __future__ import annotations

import json
import re
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from scripts.local.cluster import Cluster
from tests.integration.conditions import wait_for

SESSION_MS = 4000
VALUE_PAD = b"." * 40


# -- harness ----------------------------------------------------------------------------------------


def zk_state(zk: KazooClient, topic: str, partition: int) -> dict:
    data, _ = zk.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
    return json.loads(data)


def view(cluster: Cluster, broker: int, topic: str, partition: int) -> dict | None:
    """The broker's own view of its replica (/healthz), or None."""
    health = cluster.health(broker)
    return health["partitions"].get(f"{topic}-{partition}") if health else None


def create_topic(cluster: Cluster, zk: KazooClient, topic: str, assignment: list[list[int]],
                 config: dict[str, str] | None = None) -> None:
    """Create with an explicit assignment and wait until every replica follows the first one."""
    client = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    futures = client.create_topics([NewTopic(topic, num_partitions=len(assignment), replica_assignment=assignment,
                                            config=config or {})],
                                   operation_timeout=30)
    futures[topic].result(timeout=60)
    for p, replicas in enumerate(assignment):
        wait_for(lambda p=p, replicas=replicas: zk.exists(f"/brokers/topics/{topic}/partitions/{p}/state")
                 and (s := zk_state(zk, topic, p))["leader"] == replicas[0] and sorted(s["isr"]) == sorted(replicas),
                 30, f"{topic}-{p} online with leader {replicas[0]}")
        for b in replicas:
            wait_for(lambda b=b, p=p, leader=replicas[0]: (v := view(cluster, b, topic, p)) and v["leader"] == leader,
                     30,
                     f"broker {b} to know {topic}-{p}")


def value(seq: int) -> bytes:
    return b"%09d|" % seq + VALUE_PAD


def seq_of(raw: bytes) -> int:
    return int(raw.split(b"|", 1)[0])


@dataclass
class Run:
    acked: list[tuple[int, int, bytes]] = field(default_factory=list)  # (partition, offset, value)
    failed: list[tuple[int, bytes, KafkaError]] = field(default_factory=list)
    unfinished: int = 0
    seconds: float = 0.0


def produce(cluster: Cluster, topic: str, items, config: dict, *, bootstrap: str | None = None,
            when: tuple[int, callable] | None = None, flush_timeout: float = 120.0) -> Run:
    """Send ``items`` ((partition, value) pairs); ``when=(n, fn)`` calls ``fn()`` once from the send
    loop as soon as ``n`` records were acknowledged."""
    producer = Producer({"bootstrap.servers": bootstrap or cluster.bootstrap_servers, "linger.ms": 5, **config})
    run = Run()
    started = time.monotonic()

    def report(err, msg):
        if err is None:
            run.acked.append((msg.partition(), msg.offset(), msg.value()))
        else:
            run.failed.append((msg.partition(), msg.value(), err))

    fired = when is None
    for partition, raw in items:
        while True:
            try:
                producer.produce(topic, value=raw, partition=partition, on_delivery=report)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
        if not fired and len(run.acked) >= when[0]:
            when[1]()
            fired = True
    deadline = time.monotonic() + flush_timeout
    while not fired and time.monotonic() < deadline:
        producer.poll(0.05)
        if len(run.acked) >= when[0] or len(producer) == 0:
            when[1]()
            fired = True
    run.unfinished = producer.flush(max(1.0, deadline - time.monotonic()))
    run.seconds = time.monotonic() - started
    return run


def consume(cluster: Cluster, topic: str, partitions: list[int], timeout: float = 60.0) -> dict[int, list[tuple[int, bytes]]]:
    """Every record below each partition's high watermark, as (offset, value), read by a consumer
    (which fetches from the current leader)."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"verify-{topic}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        def high(p: int):
            try:
                return consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=5)
            except Exception:  # noqa: BLE001 - leader moving: ask again
                return None

        ends = {p: wait_for(lambda p=p: high(p), 30, f"watermarks of {topic}-{p}")[1] for p in partitions}
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        records: dict[int, list[tuple[int, bytes]]] = {p: [] for p in partitions}
        pending = {p for p in partitions if ends[p] > 0}
        deadline = time.monotonic() + timeout
        while pending and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise AssertionError(f"consumer error {msg.error()}")
            records[msg.partition()].append((msg.offset(), msg.value()))
            if msg.offset() + 1 >= ends[msg.partition()]:
                pending.discard(msg.partition())
        assert not pending, f"could not read up to the high watermarks {ends}: got {[(p, len(records[p])) for p in partitions]}"
        for p in partitions:
            assert [o for o, _ in records[p]] == list(range(ends[p])), f"{topic}-{p}: offsets are not dense from 0"
        return records
    finally:
        consumer.close()


def in_sync(cluster: Cluster, topic: str, partition: int, brokers: list[int]) -> dict[int, dict] | None:
    """Every replica's view when all LEOs equal the leader's and the leader's HW == LEO, else None."""
    views = {b: view(cluster, b, topic, partition) for b in brokers}
    if any(v is None for v in views.values()):
        return None
    leaders = [v for v in views.values() if v["is_leader"]]
    if len(leaders) != 1:
        return None
    leo = leaders[0]["log_end_offset"]
    if leaders[0]["high_watermark"] != leo or any(v["log_end_offset"] != leo for v in views.values()):
        return None
    return views


def log_files(cluster: Cluster, broker: int, topic: str, partition: int) -> dict[str, bytes]:
    directory = cluster.log_dir(broker) / f"{topic}-{partition}"
    return {f.name: f.read_bytes() for f in sorted(directory.glob("*.log"))}


def assert_identical_logs(cluster: Cluster, topic: str, partition: int, brokers: list[int]) -> int:
    """Every replica's .log segment files are byte-for-byte the same; returns their total size."""
    files = {b: log_files(cluster, b, topic, partition) for b in brokers}
    first = brokers[0]
    for b in brokers[1:]:
        if files[b] == files[first]:
            continue
        names = (sorted(files[first]), sorted(files[b]))
        detail = [f"segment names {names[0]} vs {names[1]}"]
        for name in sorted(set(files[first]) & set(files[b])):
            x, y = files[first][name], files[b][name]
            if x != y:
                at = next((i for i in range(min(len(x), len(y))) if x[i] != y[i]), min(len(x), len(y)))
                detail.append(f"{name}: {len(x)} vs {len(y)} bytes, first difference at byte {at}")
        raise AssertionError(f"{topic}-{partition}: broker {first} and broker {b} differ: {'; '.join(detail)}")
    return sum(len(data) for data in files[first].values())


def log_lines(cluster: Cluster, broker: int, *needles: str) -> list[str]:
    try:
        text = (cluster.broker_dir(broker) / "broker.log").read_text(errors="replace")
    except OSError:
        return []
    return [line for line in text.splitlines() if all(n in line for n in needles)]


def checkpointed_hw(log_dir: Path, topic: str, partition: int) -> int | None:
    """The partition's entry in ``replication-offset-checkpoint`` (None when absent)."""
    try:
        lines = (log_dir / "replication-offset-checkpoint").read_text().splitlines()
    except FileNotFoundError:
        return None
    for line in lines[2:]:
        t, p, offset = line.split()
        if (t, int(p)) == (topic, partition):
            return int(offset)
    return None


def wait_all_dead(zk: KazooClient, timeout: float = SESSION_MS / 1000 + 15) -> None:
    """After kill -9 of every broker: until their sessions expired (a restart before that would wait for
    its previous incarnation's session to expire; the tests start from a cluster with nobody registered)."""
    wait_for(lambda: not zk.get_children("/brokers/ids") and not zk.exists("/controller"), timeout,
             "the killed brokers' sessions to expire")


def non_controllers(cluster: Cluster) -> tuple[int, list[int]]:
    controller = wait_for(cluster.controller, 10, "a controller")[0]
    return controller, [b for b in cluster.broker_ids if b != controller]


# -- 1. byte-identical replicas ---------------------------------------------------------------------
def test_rf3_replicas_are_byte_identical_after_acks_all_run(make_cluster):
    cluster, zk = make_cluster(3, properties={"replica.lag.time.max.ms": "10000"})
    topic, assignment = "identical", [[1, 2, 3], [2, 3, 1], [3, 1, 2]]
    create_topic(cluster, zk, topic, assignment, {"min.insync.replicas": "2"})
    total = 50_000
    run = produce(cluster, topic, ((i % 3, value(i)) for i in range(total)),
                  {"acks": "all", "enable.idempotence": False})
    assert run.unfinished == 0 and not run.failed, f"undelivered: {run.unfinished}, failed: {run.failed[:5]}"
    assert len(run.acked) == total
    print(f"{total} records acks=all in {run.seconds:.1f} s")
    for p, replicas in enumerate(assignment):
        expected = sum(1 for q, _, _ in run.acked if q == p)
        views = wait_for(lambda p=p, replicas=replicas: in_sync(cluster, topic, p, replicas), 30,
                         f"{topic}-{p}: every LEO == leader's")
        leader = views[replicas[0]]
        assert leader["is_leader"]
        assert leader["log_end_offset"] == leader["high_watermark"] == expected
        assert sorted(leader["isr"]) == [1, 2, 3]
        assert sorted(zk_state(zk, topic, p)["isr"]) == [1, 2, 3]
        size = assert_identical_logs(cluster, topic, p, replicas)
        print(f"{topic}-{p}: {expected} records, {size} bytes identical on brokers {replicas}")
    records = consume(cluster, topic, [0, 1, 2])
    for p in range(3):
        assert [seq_of(v) for _, v in records[p]] == list(range(p, total, 3))


# -- 2. kill -9 the leader under acks=all -----------------------------------------------------------
@pytest.mark.parametrize("idempotent", [False, True], ids=["at-least-once", "idempotent"])
@pytest.mark.parametrize("stall", [False, True], ids=["kill", "stall-then-kill"])
def test_kill_leader_during_acks_all_produce_loses_no_acknowledged_record(make_cluster, stall, idempotent):
    """``kill``: kill -9 the leader once 30 % of the run is acknowledged; partition 1's new leader is
    the follower listed second, so the two partitions fail over to different brokers.
    ``stall-then-kill``: first SIGSTOP one follower so the HW stalls, until the other follower has
    copied records the leader could not acknowledge, then kill -9 the leader (and SIGCONT the
    follower): the new leader holds batches the producer never saw acknowledged, so the producer's
    retries are duplicates unless the broker recognises them (at-least-once: counted and printed;
    idempotent: none allowed)."""
    cluster, zk = make_cluster(3, properties={"replica.lag.time.max.ms": "10000"})
    _, (leader, other) = non_controllers(cluster)
    third = next(b for b in cluster.broker_ids if b not in (leader, other))
    topic, partitions = "failover", [0, 1]
    # both led by the victim; after a stall, both go to the follower that copied the unacknowledged tail
    assignment = [[leader, other, third], [leader, other, third] if stall else [leader, third, other]]
    create_topic(cluster, zk, topic, assignment, {"min.insync.replicas": "2"})

    total = 200_000
    config = {"acks": "all", "retries": 2_000_000, "retry.backoff.ms": 100, "message.timeout.ms": 120_000,
              "request.timeout.ms": 15_000}
    if idempotent:
        config["enable.idempotence"] = True
    else:
        config.update({"enable.idempotence": False, "max.in.flight.requests.per.connection": 1})
    killed: dict = {}
    last: dict[int, tuple] = {}
    started = time.monotonic()

    def unacked_but_replicated():
        """A partition whose leader holds records above its HW, all copied by the running follower."""
        for p in partitions:
            led, copy = view(cluster, leader, topic, p), view(cluster, other, topic, p)
            last[p] = (led and (led["high_watermark"], led["log_end_offset"]), copy and copy["log_end_offset"])
            if led and copy and led["high_watermark"] < led["log_end_offset"] == copy["log_end_offset"]:
                return f"{topic}-{p} HW {led['high_watermark']} LEO {led['log_end_offset']}"
        return None

    def kill_leader():
        try:
            if stall:
                cluster.signal_broker(third, signal.SIGSTOP)
                try:
                    killed["window"] = wait_for(unacked_but_replicated, 3, "replicated, unacknowledged records")
                except AssertionError as exc:
                    killed["error"] = f"{exc}; last (HW, LEO) on the leader, LEO on the follower: {last}"
            killed["at"] = time.monotonic() - started
            cluster.signal_broker(leader, signal.SIGKILL)
        finally:
            if stall:
                cluster.signal_broker(third, signal.SIGCONT)

    killer = threading.Thread(target=kill_leader)  # the producer keeps being fed meanwhile
    run = produce(cluster, topic, ((i % 2, value(i)) for i in range(total)), config,
                  when=(total * 3 // 10, killer.start), flush_timeout=150)
    killer.join()
    assert "at" in killed, "the leader was never killed"
    assert "error" not in killed, killed["error"]
    print(f"{'stall-then-kill' if stall else 'kill'} {'idempotent' if idempotent else 'at-least-once'}: "
          f"{len(run.acked)} acked, {len(run.failed)} failed, "
          f"{run.unfinished} undelivered in {run.seconds:.1f} s (leader {leader} killed at {killed['at']:.1f} s"
          f"{', ' + killed['window'] if stall else ''})")
    for p, replicas in enumerate(assignment):  # offline election: the next replica in assignment order
        state = zk_state(zk, topic, p)
        assert state["leader"] == replicas[1] and leader not in state["isr"], state

    records = consume(cluster, topic, partitions)
    failures = []
    if run.failed or run.unfinished:
        failures.append(f"{len(run.failed)} records failed ({sorted({str(e) for _, _, e in run.failed})[:3]}), "
                        f"{run.unfinished} undelivered")
    stored = {p: dict(records[p]) for p in partitions}
    missing = [(p, o, seq_of(v)) for p, o, v in run.acked if stored[p].get(o) != v]
    if missing:
        failures.append(f"{len(missing)} acknowledged records are not at their acknowledged offsets on the new "
                        f"leaders, e.g. {missing[:10]}")
    duplicates = {}
    for p in partitions:
        seqs = [seq_of(v) for _, v in records[p]]
        seen, firsts = set(), []
        for s in seqs:
            if s in seen:
                duplicates.setdefault(p, []).append(s)
            else:
                seen.add(s)
                firsts.append(s)
        if firsts != sorted(firsts):
            bad = next(i for i in range(1, len(firsts)) if firsts[i] < firsts[i - 1])
            failures.append(f"{topic}-{p}: first occurrences out of order at {bad}: {firsts[max(0, bad - 3):bad + 3]}")
        produced = list(range(p, total, 2))
        lost = sorted(set(produced) - seen)
        if lost:
            failures.append(f"{topic}-{p}: {len(lost)} produced records never stored, e.g. {lost[:10]}")
        if idempotent and seqs != produced:
            failures.append(f"{topic}-{p}: idempotent producer: stored {len(seqs)} records, "
                            f"{len(duplicates.get(p, []))} duplicates, expected exactly the {len(produced)} sent in order")
    count = sum(len(d) for d in duplicates.values())
    print(f"duplicates: {count} " + " ".join(f"{topic}-{p}: {d[:20]}{'...' if len(d) > 20 else ''}"
                                             for p, d in sorted(duplicates.items())))

    # The old leader returns as a follower: it drops what it never replicated and copies the rest.
    cluster.start_broker(leader)
    try:
        for p in partitions:
            wait_for(lambda p=p: in_sync(cluster, topic, p, cluster.broker_ids)
                     and len(zk_state(zk, topic, p)["isr"]) == 3, 45,
                     f"{topic}-{p}: broker {leader} caught up in the ISR")
            assert_identical_logs(cluster, topic, p, assignment[p])
    except AssertionError as exc:
        failures.append(f"after the old leader's restart: {exc}")
    assert not failures, "\n".join(failures)


# -- 3. a stopped follower leaves the ISR and comes back --------------------------------------------
def test_stopped_follower_drops_out_of_isr_and_rejoins(make_cluster):
    lag_ms = 2000
    # a 10 s session: the shrink must be the leader's lag rule, not the controller seeing a dead broker
    cluster, zk = make_cluster(3, session_timeout_ms=10_000, properties={"replica.lag.time.max.ms": str(lag_ms)})
    _, (leader, stopped) = non_controllers(cluster)
    steady = next(b for b in cluster.broker_ids if b not in (leader, stopped))
    topic, assignment = "laggard", [[leader, steady, stopped]]
    create_topic(cluster, zk, topic, assignment, {"min.insync.replicas": "2"})
    config = {"acks": "all", "enable.idempotence": False, "message.timeout.ms": 30_000}
    before = produce(cluster, topic, ((0, value(i)) for i in range(5000)), config)
    assert len(before.acked) == 5000 and not before.failed
    wait_for(lambda: in_sync(cluster, topic, 0, assignment[0]), 20, "all replicas in sync")

    cluster.signal_broker(stopped, signal.SIGSTOP)
    stopped_at = time.monotonic()
    try:
        # parked until the leader drops the stopped follower from the ISR, then acknowledged
        during = produce(cluster, topic, ((0, value(i)) for i in range(5000, 7000)), config, flush_timeout=30)
        acked_after = time.monotonic() - stopped_at
        assert len(during.acked) == 2000 and not during.failed, f"{during.failed[:3]} undelivered {during.unfinished}"
        state = zk_state(zk, topic, 0)
        assert sorted(state["isr"]) == sorted([leader, steady]), state
        assert zk.exists(f"/brokers/ids/{stopped}"), "the stopped broker's session expired: not the lag rule"
        lines = log_lines(cluster, leader, f"{topic}-0: ISR", f"followers [{stopped}] fell out of sync")
        assert lines, f"no ISR shrink logged by leader {leader}:\n{cluster.tail(leader, 40)}"
        print(f"acks=all resumed {acked_after:.1f} s after SIGSTOP; {lines[-1]}")
        # the leader's isr_change_notification makes the controller send UpdateMetadata: clients see it
        wait_for(lambda: sorted(metadata_isr(cluster, steady, topic, 0)) == sorted([leader, steady]), 20,
                 "the shrunk ISR in the metadata the brokers serve")
        assert acked_after >= lag_ms / 1000 - 0.5, "acknowledged before the follower could have been dropped"
        # ISR (2) >= min.insync.replicas (2): acks=all keeps going without the stopped follower
        more = produce(cluster, topic, ((0, value(i)) for i in range(7000, 9000)), config, flush_timeout=20)
        assert len(more.acked) == 2000 and not more.failed
        assert zk.exists(f"/brokers/ids/{stopped}")
    finally:
        cluster.signal_broker(stopped, signal.SIGCONT)
    after = produce(cluster, topic, ((0, value(i)) for i in range(9000, 10000)), config)
    assert len(after.acked) == 1000 and not after.failed
    wait_for(lambda: sorted(zk_state(zk, topic, 0)["isr"]) == sorted(assignment[0]), 20,
             f"broker {stopped} back in the ISR (ZooKeeper)")
    # the leader logs the expansion after its ZooKeeper write returns, so the znode can be seen first
    wait_for(lambda: log_lines(cluster, leader, f"{topic}-0: ISR", f"follower {stopped} caught up"), 10,
             f"leader {leader} to log that follower {stopped} caught up")
    wait_for(lambda: in_sync(cluster, topic, 0, assignment[0]), 20, "all replicas in sync again")
    assert_identical_logs(cluster, topic, 0, assignment[0])
    records = consume(cluster, topic, [0])
    assert [seq_of(v) for _, v in records[0]] == list(range(10000))


def metadata_isr(cluster: Cluster, broker: int, topic: str, partition: int) -> list[int]:
    """The ISR in ``broker``'s metadata cache (what its Metadata responses give clients)."""
    health = cluster.health(broker) or {}
    return health.get("metadata", {}).get("partitions", {}).get(f"{topic}-{partition}", {}).get("isr", [])


# -- 4. KIP-101 replays -----------------------------------------------------------------------------
# Two brokers, RF 2, topic [[A, B]]. Killing both with -9 also kills the controller, so the partition
# state in ZooKeeper stays what it was (leader A, ISR [A, B]) and the one broker started next becomes
# controller and, being in the ISR, leader: deterministic elections, no timing windows.
# ``replica.high.watermark.checkpoint.interval.ms`` decides how stale the HW on disk is.
NEVER = "3600000"


def truncations(cluster: Cluster, broker: int, topic: str) -> list[str]:
    """The broker's log lines about cutting its replica of ``topic``-0 (not the load-time recovery)."""
    return [line for line in log_lines(cluster, broker, f"{topic}-0")
            if re.search(r"truncated to offset|truncating to|truncating$", line)]


def test_kip101_stale_follower_hw_never_truncates_acknowledged_records(make_cluster):
    """KIP-101 scenario 1. Pre-KIP-101 a restarting follower truncated to its checkpointed HW, which
    lags the leader's; when it then led, the acknowledged records above that HW were gone."""
    cluster, zk = make_cluster(2, properties={"replica.high.watermark.checkpoint.interval.ms": NEVER,
                                              "replica.lag.time.max.ms": "10000"})
    a, b = 1, 2
    topic = "kip101-hw"
    create_topic(cluster, zk, topic, [[a, b]], {"min.insync.replicas": "2"})
    total = 3000
    run = produce(cluster, topic, ((0, value(i)) for i in range(total)),
                  {"acks": "all", "enable.idempotence": False, "batch.num.messages": 500})
    assert len(run.acked) == total and not run.failed
    wait_for(lambda: in_sync(cluster, topic, 0, [a, b]), 20, "follower caught up")

    # B restarts as a follower holding every acknowledged record but a stale HW on disk
    cluster.signal_broker(b, signal.SIGKILL)
    wait_for(lambda: not zk.exists(f"/brokers/ids/{b}") and zk_state(zk, topic, 0)["isr"] == [a],
             SESSION_MS / 1000 + 15, f"broker {b} gone and out of the ISR")
    stale = checkpointed_hw(cluster.log_dir(b), topic, 0)
    assert (stale or 0) < total, f"premise: B's checkpointed HW ({stale}) should lag the {total} acked records"
    cluster.start_broker(b)
    cluster.wait_until_ready(60)
    wait_for(lambda: in_sync(cluster, topic, 0, [a, b]) and sorted(zk_state(zk, topic, 0)["isr"]) == [a, b], 30,
             f"broker {b} back in the ISR")
    cut = truncations(cluster, b, topic)
    assert not cut, f"broker {b} truncated on becoming follower (its HW on disk was {stale}): {cut}"

    # Both die; B comes back alone and leads: it must serve every acknowledged record.
    for broker in (a, b):
        cluster.signal_broker(broker, signal.SIGKILL)
    wait_all_dead(zk)
    stale = checkpointed_hw(cluster.log_dir(b), topic, 0)
    assert (stale or 0) < total, f"premise: B's checkpointed HW ({stale}) should still lag"
    assert sorted(zk_state(zk, topic, 0)["isr"]) == [a, b]
    cluster.start_broker(b)
    cluster.wait_until_ready(60)
    wait_for(lambda: zk_state(zk, topic, 0)["leader"] == b and (v := view(cluster, b, topic, 0)) and v["is_leader"],
             30, f"broker {b} to lead")
    led = view(cluster, b, topic, 0)
    assert led["log_end_offset"] == total, (f"broker {b} leads with LEO {led['log_end_offset']} "
                                            f"(checkpointed HW {stale}): acknowledged records truncated")
    records = consume(cluster, topic, [0])
    stored = dict(records[0])
    missing = [(o, seq_of(v)) for _, o, v in run.acked if stored.get(o) != v]
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {missing[:10]}"
    assert len(records[0]) == total

    cluster.start_broker(a)  # the old leader follows; nothing to truncate, nothing diverges
    cluster.wait_until_ready(60)
    wait_for(lambda: in_sync(cluster, topic, 0, [a, b]) and sorted(zk_state(zk, topic, 0)["isr"]) == [a, b], 30,
             f"broker {a} back in the ISR")
    assert_identical_logs(cluster, topic, 0, [a, b])


def test_kip101_divergent_leader_truncates_by_leader_epoch(make_cluster):
    """A record only the old leader has (m2, acks=1 while the follower was frozen) is cut when it
    returns as a follower of the new leader, which wrote m3 at the same offsets: by epoch (to exactly
    where epoch 0 ends on the new leader), not to its own (stale) HW."""
    cluster, zk = make_cluster(2, properties={"replica.high.watermark.checkpoint.interval.ms": NEVER,
                                              "replica.lag.time.max.ms": "10000"})
    a, b = 1, 2
    topic = "kip101-div"
    create_topic(cluster, zk, topic, [[a, b]], {"min.insync.replicas": "2"})
    m1 = produce(cluster, topic, ((0, value(i)) for i in range(1000)),
                 {"acks": "all", "enable.idempotence": False, "batch.num.messages": 200})
    assert len(m1.acked) == 1000 and not m1.failed
    n = 1000
    wait_for(lambda: in_sync(cluster, topic, 0, [a, b]), 20, "follower caught up")

    # m2 reaches only A: B is frozen (well within its session and A's replica.lag.time.max.ms)
    warm = Producer({"bootstrap.servers": f"127.0.0.1:{cluster.kafka_port(a)}", "acks": "1",
                     "enable.idempotence": False, "linger.ms": 0})
    warm.list_topics(topic, timeout=10)
    cluster.signal_broker(b, signal.SIGSTOP)
    stopped_at = time.monotonic()
    m2: list = []
    for i in range(1000, 1100):
        warm.produce(topic, value=value(i), partition=0, on_delivery=lambda err, msg: m2.append((err, msg.offset())))
    assert warm.flush(10) == 0 and all(err is None for err, _ in m2), m2[:3]
    assert sorted(o for _, o in m2) == list(range(n, n + 100))
    cluster.signal_broker(a, signal.SIGKILL)
    cluster.signal_broker(b, signal.SIGKILL)  # works on a stopped process
    window = time.monotonic() - stopped_at
    wait_all_dead(zk)
    state = zk_state(zk, topic, 0)
    assert (state["leader"], sorted(state["isr"])) == (a, [a, b]), f"premise broken ({window:.1f} s): {state}"

    cluster.start_broker(b)  # B leads a new epoch starting at offset n
    cluster.wait_until_ready(60)
    wait_for(lambda: (v := view(cluster, b, topic, 0)) and v["is_leader"], 30, f"broker {b} to lead")
    assert view(cluster, b, topic, 0)["log_end_offset"] == n
    assert zk_state(zk, topic, 0)["leader_epoch"] > state["leader_epoch"]
    m3 = produce(cluster, topic, ((0, value(i)) for i in range(2000, 2050)), {"acks": "1", "enable.idempotence": False},
                 bootstrap=f"127.0.0.1:{cluster.kafka_port(b)}")
    assert len(m3.acked) == 50 and not m3.failed
    assert sorted(o for _, o, _ in m3.acked) == list(range(n, n + 50))  # the offsets A used for m2

    stale = checkpointed_hw(cluster.log_dir(a), topic, 0)
    cluster.start_broker(a)  # A follows B: m2 diverges from B's log and must go
    cluster.wait_until_ready(60)
    wait_for(lambda: in_sync(cluster, topic, 0, [a, b]), 30, f"broker {a} to catch up with {b}")
    wait_for(lambda: sorted(zk_state(zk, topic, 0)["isr"]) == [a, b], 30, f"broker {a} back in the ISR")
    cut = truncations(cluster, a, topic)
    print(f"A's checkpointed HW {stale}; " + "\n".join(cut))
    assert any(f"truncated to offset {n} " in line for line in cut), \
        f"broker {a} did not truncate to {n} (its HW on disk: {stale}): {cut}\n{cluster.tail(a, 40)}"
    assert_identical_logs(cluster, topic, 0, [a, b])
    records = consume(cluster, topic, [0])
    seqs = [seq_of(v) for _, v in records[0]]
    assert seqs == list(range(1000)) + list(range(2000, 2050)), "acknowledged m1 lost or m2 survived"


def batch_position(segment: Path, offset: int) -> int:
    """The file position of the RecordBatch v2 whose base offset is ``offset``."""
    data, position = segment.read_bytes(), 0
    while position + 12 <= len(data):
        base = int.from_bytes(data[position:position + 8], "big", signed=True)
        if base == offset:
            return position
        position += 12 + int.from_bytes(data[position + 8:position + 12], "big")
    raise AssertionError(f"{segment}: no batch starts at offset {offset}")


def test_kip101_power_loss_replay_leaves_no_divergent_replicas(make_cluster):
    """KIP-101 scenario 2. Both replicas lose power; the follower B also loses its unflushed tail
    (m2), comes back first, leads and writes m3 at m2's offsets. A's HW on disk covers m2, so the
    pre-KIP-101 rule (truncate to HW) keeps m2 and the two logs diverge at the same offsets; the epoch
    rule cuts A back to where B's epoch 0 ends. (m2 itself is gone: acks=all without fsync does not
    survive both replicas losing power, in Kafka either.)"""
    cluster, zk = make_cluster(2, properties={"replica.high.watermark.checkpoint.interval.ms": "300",
                                              "replica.lag.time.max.ms": "10000"})
    a, b = 1, 2
    topic = "kip101-power"
    create_topic(cluster, zk, topic, [[a, b]], {"min.insync.replicas": "2"})
    config = {"acks": "all", "enable.idempotence": False, "batch.num.messages": 200}
    m1 = produce(cluster, topic, ((0, value(i)) for i in range(1000)), config)
    # one record per batch: truncation works on whole batches, so m2's must not cover m3's end
    m2 = produce(cluster, topic, ((0, value(i)) for i in range(1000, 1100)), {**config, "batch.num.messages": 1})
    assert len(m1.acked) == 1000 and len(m2.acked) == 100 and not m1.failed and not m2.failed
    n = 1000
    wait_for(lambda: in_sync(cluster, topic, 0, [a, b]), 20, "follower caught up")
    wait_for(lambda: checkpointed_hw(cluster.log_dir(a), topic, 0) == n + 100, 10, "A's HW checkpoint to cover m2")

    for broker in (a, b):
        cluster.signal_broker(broker, signal.SIGKILL)
    wait_all_dead(zk)
    assert sorted(zk_state(zk, topic, 0)["isr"]) == [a, b]
    # B's power cut: the page cache held m2; nothing on disk vouches for more than m1
    segment = cluster.log_dir(b) / f"{topic}-0" / "00000000000000000000.log"
    with open(segment, "r+b") as f:
        f.truncate(batch_position(segment, n))
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        (cluster.log_dir(b) / name).unlink(missing_ok=True)

    cluster.start_broker(b)
    cluster.wait_until_ready(60)
    wait_for(lambda: (v := view(cluster, b, topic, 0)) and v["is_leader"], 30, f"broker {b} to lead")
    assert view(cluster, b, topic, 0)["log_end_offset"] == n
    m3 = produce(cluster, topic, ((0, value(i)) for i in range(2000, 2050)), {"acks": "1", "enable.idempotence": False},
                 bootstrap=f"127.0.0.1:{cluster.kafka_port(b)}")
    assert sorted(o for _, o, _ in m3.acked) == list(range(n, n + 50)) and not m3.failed

    assert checkpointed_hw(cluster.log_dir(a), topic, 0) == n + 100  # premise: the HW rule would keep m2
    cluster.start_broker(a)
    cluster.wait_until_ready(60)
    wait_for(lambda: in_sync(cluster, topic, 0, [a, b]) and sorted(zk_state(zk, topic, 0)["isr"]) == [a, b], 30,
             f"broker {a} caught up and back in the ISR")
    cut = truncations(cluster, a, topic)
    print("\n".join(cut))
    assert_identical_logs(cluster, topic, 0, [a, b])
    assert any(f"truncated to offset {n} " in line for line in cut), cut
    records = consume(cluster, topic, [0])
    assert [seq_of(v) for _, v in records[0]] == list(range(1000)) + list(range(2000, 2050))


# -- 5. not enough replicas -------------------------------------------------------------------------
def test_acks_all_refused_with_two_replicas_down_then_recovers(make_cluster):
    cluster, zk = make_cluster(3, properties={"replica.lag.time.max.ms": "3000"})
    leader, (x, y) = non_controllers(cluster)  # the controller leads: it survives the two kills
    topic, assignment = "min-isr", [[leader, x, y]]
    create_topic(cluster, zk, topic, assignment, {"min.insync.replicas": "2"})
    config = {"acks": "all", "enable.idempotence": False, "retries": 0, "message.timeout.ms": 20_000}
    first = produce(cluster, topic, ((0, value(i)) for i in range(1000)), config)
    assert len(first.acked) == 1000 and not first.failed

    cluster.signal_broker(x, signal.SIGKILL)
    cluster.signal_broker(y, signal.SIGKILL)
    wait_for(lambda: zk_state(zk, topic, 0)["isr"] == [leader]
             and (v := view(cluster, leader, topic, 0)) and v["isr"] == [leader], SESSION_MS / 1000 + 15,
             "the ISR to shrink to the leader")
    leo = view(cluster, leader, topic, 0)["log_end_offset"]
    assert leo == 1000
    refused = produce(cluster, topic, ((0, value(i)) for i in range(1000, 1100)), config, flush_timeout=30)
    codes = sorted({err.code() for _, _, err in refused.failed})
    assert not refused.acked and refused.unfinished == 0, f"{len(refused.acked)} acked, {refused.unfinished} pending"
    assert codes == [KafkaError.NOT_ENOUGH_REPLICAS], [str(err) for _, _, err in refused.failed[:3]]
    assert view(cluster, leader, topic, 0)["log_end_offset"] == leo, "a refused acks=all produce was appended"
    assert log_lines(cluster, leader, "rejecting produce", "min.insync.replicas=2")

    cluster.start_broker(x)
    cluster.start_broker(y)
    cluster.wait_until_ready(60)
    wait_for(lambda: sorted(zk_state(zk, topic, 0)["isr"]) == [1, 2, 3]
             and sorted(view(cluster, leader, topic, 0)["isr"]) == [1, 2, 3], 30, "the ISR to recover")
    last = produce(cluster, topic, ((0, value(i)) for i in range(2000, 3000)), config)
    assert len(last.acked) == 1000 and not last.failed, [str(e) for _, _, e in last.failed[:3]]
    records = consume(cluster, topic, [0])
    assert [seq_of(v) for _, v in records[0]] == list(range(1000)) + list(range(2000, 3000))
    wait_for(lambda: in_sync(cluster, topic, 0, assignment[0]), 20, "all replicas in sync")
    assert_identical_logs(cluster, topic, 0, assignment[0])


def test_topic_config_overrides_survive_a_broker_restart(make_cluster):
    """A restarted broker loads its logs with the topics' overrides read from ZooKeeper (as Kafka's
    LogManager does), not the broker defaults: min.insync.replicas=2 on a one-replica topic refuses
    acks=all before the restart and still after it."""
    cluster, zk = make_cluster(1)
    (only,) = cluster.broker_ids
    topic = "overrides"
    create_topic(cluster, zk, topic, [[only]], {"min.insync.replicas": "2"})
    config = {"acks": "all", "enable.idempotence": False, "retries": 0, "message.timeout.ms": 20_000}

    def refused() -> None:
        run = produce(cluster, topic, ((0, value(i)) for i in range(10)), config, flush_timeout=30)
        assert not run.acked and run.unfinished == 0, f"{len(run.acked)} acked, {run.unfinished} pending"
        assert sorted({err.code() for _, _, err in run.failed}) == [KafkaError.NOT_ENOUGH_REPLICAS]

    refused()
    cluster.stop_broker(only)
    cluster.start_broker(only)
    cluster.wait_until_ready(60)
    wait_for(lambda: (v := view(cluster, only, topic, 0)) and v["leader"] == only, 30, f"{topic}-0 led again")
    refused()
    assert view(cluster, only, topic, 0)["log_end_offset"] == 0, "a refused acks=all produce was appended"
