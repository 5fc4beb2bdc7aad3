"""KIP-320 against real processes: a returning leader's divergent suffix is cut by the new leader's
``diverging_epoch`` answer to its Fetch v12, and a raw Fetch v12 with a stale ``last_fetched_epoch``
gets that answer too.

Three brokers, topic [[A, B, C]]: B and C are SIGSTOPped (well within their sessions and
replica.lag.time.max.ms, so the ISR stays [A, B, C]) while A takes m2 with acks=1; then all three are
killed with -9 (B and C while stopped: a Fetch response carrying m2 that A had already written to their
sockets dies with them, and the controller dies too, so the partition state in ZooKeeper stays leader
A, ISR [A, B, C]). B starts first, becomes controller and leader at the next epoch (the first live ISR
replica), C follows it; B takes m3 at the offsets A used for m2; A comes back as B's follower,
fetches from its own log end with its last epoch, is told where that epoch ends on B, truncates there
and copies m3.
"""
from __future__ import annotations

import asyncio
import signal

from confluent_kafka import Producer

from brokers.client.connection import KafkaConnection
from brokers.protocol import codec
from brokers.protocol.api_versions import ApiKey
from brokers.protocol.errors import ErrorCode
from brokers.protocol.record import iter_records
from scripts.local.cluster import Cluster
from tests.integration.conditions import wait_for
from tests.integration.test_replication import (
    assert_identical_logs,
    consume,
    create_topic,
    in_sync,
    log_lines,
    produce,
    seq_of,
    value,
    view,
    wait_all_dead,
    zk_state,
)

TOPIC = "kip320"


async def fetch_v12(port: int, fetch_offset: int, last_fetched_epoch: int, current_leader_epoch: int):
    """One consumer Fetch v12 for TOPIC-0; the partition's answer as kio decodes it."""
    connection = KafkaConnection("127.0.0.1", port, "kip320-test")
    await connection.connect(10)
    try:
        body = codec.build(codec.request_class(ApiKey.FETCH, 12), replica_id=-1, max_wait=0, min_bytes=1,
                           max_bytes=1 << 20, isolation_level=0, session_id=0, session_epoch=-1,
                           topics=[dict(topic=TOPIC, partitions=[dict(
                               partition=0, current_leader_epoch=current_leader_epoch, fetch_offset=fetch_offset,
                               last_fetched_epoch=last_fetched_epoch, log_start_offset=-1,
                               partition_max_bytes=1 << 20)])])
        response = await connection.request(ApiKey.FETCH, 12, body, 10)
    finally:
        connection.close()
    (topic,) = response.responses
    (partition,) = topic.partitions
    return partition


def diverge_and_fail_over(cluster: Cluster, zk, a: int, b: int, c: int, n: int) -> tuple[int, int]:
    """m2 (100 records) only on A, then B leading and C following it, A down: (A's epoch, B's epoch)."""
    warm = Producer({"bootstrap.servers": f"127.0.0.1:{cluster.kafka_port(a)}", "acks": "1",
                     "enable.idempotence": False, "linger.ms": 0})
    warm.list_topics(TOPIC, timeout=10)
    cluster.signal_broker(b, signal.SIGSTOP)
    cluster.signal_broker(c, signal.SIGSTOP)
    m2: list = []
    for i in range(1000, 1100):
        warm.produce(TOPIC, value=value(i), partition=0, on_delivery=lambda err, msg: m2.append((err, msg.offset())))
    assert warm.flush(10) == 0 and all(err is None for err, _ in m2), m2[:3]
    assert sorted(o for _, o in m2) == list(range(n, n + 100))
    for broker in (a, b, c):
        cluster.signal_broker(broker, signal.SIGKILL)  # works on a stopped process
    wait_all_dead(zk)
    old = zk_state(zk, TOPIC, 0)
    assert (old["leader"], sorted(old["isr"])) == (a, sorted([a, b, c])), f"premise broken: {old}"

    cluster.start_broker(b)
    cluster.wait_until_ready(60)
    wait_for(lambda: (v := view(cluster, b, TOPIC, 0)) and v["is_leader"], 30, f"broker {b} to lead")
    assert view(cluster, b, TOPIC, 0)["log_end_offset"] == n, "m2 reached a follower: premise broken"
    cluster.start_broker(c)
    cluster.wait_until_ready(60)
    wait_for(lambda: in_sync(cluster, TOPIC, 0, [b, c]) and sorted(zk_state(zk, TOPIC, 0)["isr"]) == sorted([b, c]),
             30, f"broker {c} following {b} in the ISR")
    new = zk_state(zk, TOPIC, 0)
    assert new["leader_epoch"] > old["leader_epoch"], new
    return old["leader_epoch"], new["leader_epoch"]


def test_returning_leader_truncates_its_divergent_suffix_on_the_diverging_epoch_answer(make_cluster):
    cluster, zk = make_cluster(3, properties={"replica.lag.time.max.ms": "10000"})
    a, b, c = cluster.broker_ids
    create_topic(cluster, zk, TOPIC, [[a, b, c]], {"min.insync.replicas": "2"})
    m1 = produce(cluster, TOPIC, ((0, value(i)) for i in range(1000)),
                 {"acks": "all", "enable.idempotence": False, "batch.num.messages": 200})
    assert len(m1.acked) == 1000 and not m1.failed
    n = 1000
    wait_for(lambda: in_sync(cluster, TOPIC, 0, [a, b, c]), 20, "followers caught up")

    old_epoch, new_epoch = diverge_and_fail_over(cluster, zk, a, b, c, n)
    m3 = produce(cluster, TOPIC, ((0, value(i)) for i in range(2000, 2050)),
                 {"acks": "all", "enable.idempotence": False}, bootstrap=f"127.0.0.1:{cluster.kafka_port(b)}")
    assert sorted(o for _, o, _ in m3.acked) == list(range(n, n + 50)) and not m3.failed  # m2's offsets

    # a fetcher that still has m2 (last epoch old_epoch, log end n + 100) is told where old_epoch ends on B
    port = cluster.kafka_port(b)
    stale = asyncio.run(fetch_v12(port, n + 100, old_epoch, new_epoch))
    assert stale.error_code == ErrorCode.NONE and not stale.records
    assert (stale.diverging_epoch.epoch, stale.diverging_epoch.end_offset) == (old_epoch, n)
    assert stale.high_watermark == n + 50
    current = asyncio.run(fetch_v12(port, n, new_epoch, new_epoch))
    assert (current.diverging_epoch.epoch, current.diverging_epoch.end_offset) == (-1, -1)
    assert [r.offset for r in iter_records(current.records)][:1] == [n]
    ahead = asyncio.run(fetch_v12(port, n, new_epoch + 1, new_epoch))
    assert ahead.error_code == ErrorCode.OFFSET_OUT_OF_RANGE

    cluster.start_broker(a)  # A follows B: m2 diverges from B's log and must go
    cluster.wait_until_ready(60)
    wait_for(lambda: in_sync(cluster, TOPIC, 0, [a, b, c]), 30, f"broker {a} to catch up with {b}")
    cut = log_lines(cluster, a, f"{TOPIC}-0: truncated to offset")
    assert cut and all(f"truncated to offset {n} (leader {b}'s epoch {old_epoch} ends at {n}; "
                       f"our log end was {n + 100})" in line for line in cut), f"{cut}\n{cluster.tail(a, 40)}"
    assert_identical_logs(cluster, TOPIC, 0, [b, a, c])
    records = consume(cluster, TOPIC, [0])
    assert [seq_of(v) for _, v in records[0]] == list(range(1000)) + list(range(2000, 2050))
