"""``kafka-transactions`` against a real broker with transactions: a transactional producer SIGKILLed in the
middle of its transaction (transaction.timeout.ms 10 minutes) is listed, described (Ongoing, its partition)
and seen by describe-producers; it is not hanging (its coordinator still holds the partition and will abort it
on timeout), so find-hanging leaves it out. A transaction the coordinator never heard of (a transactional
Produce with no AddPartitionsToTxn, verification off) is hanging: find-hanging lists it, ``abort
--start-offset`` ends it and the partition's last stable offset (ListOffsets read_committed) reaches the high
watermark; the killed producer's transaction is then aborted with the older brokers' form (producer id,
epoch, coordinator epoch) and its partition's LSO advances too. A killed producer with a short timeout is
aborted by its coordinator's scan and counted in /metrics; the admin API and /metrics show an open
transaction and the LSO held below the HW until it commits."""
from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from brokers.protocol.api_versions import ApiKey
from brokers.protocol.record import Record, build_batch
from scripts.local.cluster import Cluster, running_cluster
from tests.integration.conditions import wait_for
from tests.integration.raw_client import RawConnection

REPO = Path(__file__).resolve().parents[2]
TOPIC = "txn-tool"
KILLED_ID = "killed-producer"
ORPHAN_ID = "orphan-producer"

KILLED_PRODUCER = """
import sys, time
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": sys.argv[2],
              "transaction.timeout.ms": int(sys.argv[4])})
p.init_transactions(60)
p.begin_transaction()
for i in range(3):
    p.produce(sys.argv[3], value=b"open-%d" % i, partition=int(sys.argv[5]))
assert p.flush(60) == 0
print("ready", flush=True)
time.sleep(600)
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("txn-tool") / "cluster", 1, tick_time=500, session_timeout_ms=6000,
                         properties={"transaction.state.log.num.partitions": "3",
                                     "transaction.state.log.replication.factor": "1",
                                     "transaction.state.log.min.isr": "1",
                                     "transaction.partition.verification.enable": "false",
                                     "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
                                     "offsets.topic.num.partitions": "1"}) as c:
        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})  # must outlive the future
        admin.create_topics([NewTopic(TOPIC, 2, 1)])[TOPIC].result(30)
        yield c


def tool(cluster: Cluster, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scripts.tools.kafka_transactions",
                           "--bootstrap-server", cluster.bootstrap_servers, *argv],
                          capture_output=True, text=True, timeout=120, cwd=REPO)


def rows(out: str) -> list[list[str]]:
    """The table's cells (header first); Kafka's rows are tab-separated padded columns."""
    return [[cell.strip() for cell in line.split("\t")[:-1]] for line in out.splitlines() if line.strip()]


def last_stable_offset(cluster: Cluster, partition: int) -> int:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "lso-probe",
                         "isolation.level": "read_committed"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(TOPIC, partition), timeout=30, cached=False)[1]
    finally:
        consumer.close()


def high_watermark(cluster: Cluster, partition: int) -> int:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "hw-probe",
                         "isolation.level": "read_uncommitted"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(TOPIC, partition), timeout=30, cached=False)[1]
    finally:
        consumer.close()


def kill_mid_transaction(cluster: Cluster, transactional_id: str = KILLED_ID, timeout_ms: int = 600000,
                         topic: str = TOPIC, partition: int = 0) -> None:
    process = subprocess.Popen([sys.executable, "-c", KILLED_PRODUCER, cluster.bootstrap_servers, transactional_id,
                                topic, str(timeout_ms), str(partition)], stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert process.stdout.readline().strip() == "ready"
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(30)


def orphan_transaction(cluster: Cluster) -> int:
    """A transactional batch on partition 1 that no AddPartitionsToTxn announced: its coordinator (the one
    broker) has the id Empty, with no partitions. Its timestamp is a minute old, so that find-hanging's
    ``--max-transaction-timeout 0`` (older than 0 minutes, from the producer's last timestamp) holds for it.
    Returns the batch's offset."""
    host, port = cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
    with RawConnection(host, int(port)) as raw:
        errors = []

        def init():
            response = raw.request(ApiKey.INIT_PRODUCER_ID, 1, transactional_id=ORPHAN_ID,
                                   transaction_timeout=600000)
            errors.append(int(response.error_code))
            return response if response.error_code == 0 else None
        try:
            init_response = wait_for(init, 30, "InitProducerId for the orphan")
        except AssertionError:
            raise AssertionError(f"InitProducerId answered {sorted(set(errors))}") from None
        pid, epoch = int(init_response.producer_id), int(init_response.producer_epoch)
        batch = build_batch([Record(0, 0, None, b"orphan")], base_timestamp=int(time.time() * 1000) - 60_000,
                            producer_id=pid, producer_epoch=epoch, base_sequence=0, transactional=True)
        response = raw.request(ApiKey.PRODUCE, 3, transactional_id=ORPHAN_ID, acks=-1, timeout=30000,
                               topic_data=[{"name": TOPIC, "partition_data": [{"index": 1, "records": bytes(batch)}]}])
    partition = response.responses[0].partition_responses[0]
    assert partition.error_code == 0, partition
    return int(partition.base_offset)


def check_killed_transaction_described(cluster: Cluster) -> dict[str, str]:
    """list, describe and describe-producers show the killed producer's open transaction on partition 0;
    its describe-producers row."""
    listed = tool(cluster, "list")
    assert listed.returncode == 0, listed.stderr
    assert rows(listed.stdout)[0] == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    killed = next(r for r in rows(listed.stdout)[1:] if r[0] == KILLED_ID)
    assert killed[1] == "1" and killed[3] == "Ongoing"

    described = tool(cluster, "describe", "--transactional-id", KILLED_ID)
    assert described.returncode == 0, described.stderr
    header, row = rows(described.stdout)
    fields = dict(zip(header, row))
    assert (fields["TransactionState"], fields["TransactionTimeoutMs"], fields["TopicPartitions"]) == (
        "Ongoing", "600000", f"{TOPIC}-0")
    assert fields["ProducerId"] == killed[2]

    producers = tool(cluster, "describe-producers", "--topic", TOPIC, "--partition", "0")
    assert producers.returncode == 0, producers.stderr
    open_row = dict(zip(rows(producers.stdout)[0], rows(producers.stdout)[1]))
    assert (open_row["ProducerId"], open_row["CurrentTransactionStartOffset"]) == (killed[2], "0")
    assert last_stable_offset(cluster, 0) == 0 < high_watermark(cluster, 0)
    return open_row


def check_orphan_found_and_aborted(cluster: Cluster) -> None:
    """The orphan transaction on partition 1 is Empty on its coordinator, found hanging, aborted by its start
    offset; then nothing is hanging there and aborting it again finds nothing."""
    orphan_offset = orphan_transaction(cluster)
    assert last_stable_offset(cluster, 1) == orphan_offset
    idle = tool(cluster, "describe", "--transactional-id", ORPHAN_ID)  # Empty: no start time (Kafka's -1)
    assert idle.returncode == 0, idle.stderr
    fields = dict(zip(*rows(idle.stdout)))
    assert (fields["TransactionState"], fields["CurrentTransactionStartTimeMs"], fields["TransactionDurationMs"],
            fields["TopicPartitions"]) == ("Empty", "None", "None", "")
    hanging = tool(cluster, "find-hanging", "--broker-id", "1", "--max-transaction-timeout", "0")
    assert hanging.returncode == 0, hanging.stderr
    found = rows(hanging.stdout)
    assert found[0] == ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
                        "LastTimestamp", "Duration(min)"]
    assert [(r[0], r[1], r[5]) for r in found[1:]] == [(TOPIC, "1", str(orphan_offset))]  # not the killed one

    aborted = tool(cluster, "abort", "--topic", TOPIC, "--partition", "1", "--start-offset", str(orphan_offset))
    assert aborted.returncode == 0, aborted.stderr
    wait_for(lambda: last_stable_offset(cluster, 1) == high_watermark(cluster, 1) > orphan_offset, 30,
             "the LSO of partition 1 to reach the high watermark")
    again = tool(cluster, "find-hanging", "--topic", TOPIC, "--max-transaction-timeout", "0")
    assert rows(again.stdout)[1:] == []

    nothing = tool(cluster, "abort", "--topic", TOPIC, "--partition", "1", "--start-offset", str(orphan_offset))
    assert nothing.returncode == 1 and "Could not find any open transactions starting at offset" in nothing.stderr


def test_find_and_abort_hanging_transactions(cluster):
    kill_mid_transaction(cluster)
    open_row = check_killed_transaction_described(cluster)
    missing = tool(cluster, "describe", "--transactional-id", "nobody")
    assert missing.returncode == 1 and "Failed to describe transaction state of transactional-id `nobody`" in \
        missing.stderr
    check_orphan_found_and_aborted(cluster)

    aborted = tool(cluster, "abort", "--topic", TOPIC, "--partition", "0", "--producer-id", open_row["ProducerId"],
                   "--producer-epoch", open_row["ProducerEpoch"],
                   "--coordinator-epoch", open_row["LatestCoordinatorEpoch"])
    assert aborted.returncode == 0, aborted.stderr
    wait_for(lambda: last_stable_offset(cluster, 0) == high_watermark(cluster, 0) > 3, 30,
             "the LSO of partition 0 to reach the high watermark")


def open_http_transaction(cluster: Cluster, topic: str):
    """``topic`` (1 partition) with one plain record, then transaction "http-txn" with 4 records, flushed and
    left open; its producer."""
    from confluent_kafka import Producer

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})  # must outlive the future
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    plain = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    plain.produce(topic, b"before")
    assert plain.flush(30) == 0
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "http-txn"})
    producer.init_transactions(60)
    producer.begin_transaction()
    for i in range(4):
        producer.produce(topic, f"in-{i}".encode(), partition=0)
    assert producer.flush(30) == 0
    return producer


def metric_samples(base: str) -> dict:
    """/metrics' samples by (name, sorted labels)."""
    import requests
    from prometheus_client.parser import text_string_to_metric_families

    text = requests.get(f"{base}/metrics", timeout=10).text
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def http_transactions(base: str) -> list[dict]:
    import requests

    return requests.get(f"{base}/api/v1/transactions", timeout=10).json()["transactions"]


def test_http_api_and_metrics_show_the_open_transaction_and_the_lso(cluster):
    """/api/v1/transactions lists a transaction in progress, /api/v1/partitions the LSO held at its first
    offset below the HW, /metrics the ongoing count and LastStableOffsetLag; after the commit the LSO reaches
    the HW and the coordinator counts the markers it had written."""
    import requests

    topic, base = "txn-http", f"http://127.0.0.1:{cluster.http_port(1)}"
    producer = open_http_transaction(cluster, topic)

    def partition_row() -> dict:
        rows = requests.get(f"{base}/api/v1/partitions?topic={topic}", timeout=10).json()["partitions"]
        return rows[0]

    mine = next(t for t in http_transactions(base) if t["transactional_id"] == "http-txn")
    assert (mine["state"], mine["partitions"], mine["coordinator"]) == ("Ongoing", [f"{topic}-0"], 1)
    assert any(t["transactional_id"] == "http-txn" for t in
               requests.get(f"{base}/api/v1/overview", timeout=10).json()["transactions"])
    wait_for(lambda: partition_row()["high_watermark"] == 5, 30, "the transaction's records below the HW")
    assert partition_row()["last_stable_offset"] == 1
    lag = ("kafka_cluster_partition_last_stable_offset_lag", (("partition", "0"), ("topic", topic)))
    markers = ("kafka_coordinator_transaction_markers_written_total", ())
    scraped = metric_samples(base)
    assert scraped[lag] == 4
    assert scraped[("kafka_coordinator_transaction_ongoing_count", (("state", "Ongoing"),))] >= 1
    markers_before = scraped[markers]

    producer.commit_transaction(60)
    wait_for(lambda: partition_row()["last_stable_offset"] == partition_row()["high_watermark"] == 6, 30,
             "the LSO at the HW after the commit marker")
    wait_for(lambda: metric_samples(base)[lag] == 0, 30, "no LSO lag")
    # the coordinator counts the markers and writes CompleteCommit once WriteTxnMarkers is answered: later
    wait_for(lambda: metric_samples(base)[markers] >= markers_before + 1, 30,
             "the coordinator to count the COMMIT marker")
    wait_for(lambda: all(t["transactional_id"] != "http-txn" for t in http_transactions(base)), 30,
             "http-txn no longer listed (CompleteCommit)")


def test_a_killed_producers_transaction_is_aborted_on_timeout_and_counted(cluster):
    """Not hanging: the coordinator aborts it once transaction.timeout.ms passes (its scan every 500 ms here);
    /metrics counts the abort by timeout and the partition's LSO reaches the HW."""
    import requests
    from prometheus_client.parser import text_string_to_metric_families

    topic = "txn-timeout"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})  # must outlive the future
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)

    def aborts() -> float:
        text = requests.get(f"http://127.0.0.1:{cluster.http_port(1)}/metrics", timeout=10).text
        return next(s.value for family in text_string_to_metric_families(text) for s in family.samples
                    if s.name == "kafka_coordinator_transaction_aborts_by_timeout_total")

    def stable(partition: int) -> tuple[int, int]:
        """(LSO, HW): ListOffsets read_committed and read_uncommitted."""
        ends = []
        for level in ("read_committed", "read_uncommitted"):
            consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "probe",
                                 "isolation.level": level})
            try:
                ends.append(consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30,
                                                           cached=False)[1])
            finally:
                consumer.close()
        return ends[0], ends[1]

    before = aborts()
    kill_mid_transaction(cluster, "timed-out-producer", 10_000, topic, 0)  # ample for the reads below
    lso, hw = stable(0)
    assert (lso, hw) == (0, 3)
    wait_for(lambda: aborts() >= before + 1, 30, "the coordinator to abort the transaction on timeout")
    wait_for(lambda: stable(0) == (4, 4), 30, "the abort marker and the LSO at the HW")
    hanging = tool(cluster, "find-hanging", "--topic", topic, "--max-transaction-timeout", "0")
    assert hanging.returncode == 0 and rows(hanging.stdout)[1:] == []
