"""Transactions in the HTTP layer: the coordinator's ``describe()`` as admin-API rows, the last stable offset
beside the high watermark, and the /metrics families (ongoing transactions, markers written, aborts by
timeout, Kafka's LastStableOffsetLag) rendered from a fake broker."""
from __future__ import annotations

from types import SimpleNamespace

from prometheus_client import CollectorRegistry, generate_latest

from brokers.http import views
from brokers.http.cluster_reader import LOCAL_VIEWS, Visibility
from brokers.http.metrics import BrokerCollector
from brokers.model import TopicPartition

def txn(tid: str, pid: int, state: str, partitions: list[str], start: int = 1000, pending: str | None = None) -> dict:
    return {"transactional_id": tid, "producer_id": pid, "producer_epoch": 1, "state": state,
            "pending_state": pending, "timeout_ms": 60000, "start_ms": start, "last_update_ms": start,
            "partitions": partitions}


# TransactionCoordinator.describe(): per __transaction_state partition led here, the transactions in progress
DESCRIBED = {
    "broker_id": 2, "loading": [],
    "partitions": {
        3: {"coordinator_epoch": 2, "transactional_ids": 5, "ongoing": [
            txn("b", 11, "Ongoing", ["t-1", "t-0"]), txn("a", 10, "Ongoing", [], pending="PrepareEpochFence")]},
        7: {"coordinator_epoch": 1, "transactional_ids": 1, "ongoing": [txn("c", 12, "PrepareAbort", ["u-0"], 2000)]}},
    "counters": {"markers_written": 9, "aborts_by_timeout": 2, "transactions_committed": 4,
                 "transactions_aborted": 3, "expired_transactional_ids": 1},
}


def test_local_transactions_flatten_describe_with_the_coordinator_and_its_partition():
    rows = views.local_transactions(DESCRIBED, broker_id=2)
    assert [(r["transactional_id"], r["coordinator"], r["coordinator_partition"], r["coordinator_epoch"], r["state"],
             r["pending_state"], r["partitions"]) for r in rows] == [
        ("a", 2, 3, 2, "Ongoing", "PrepareEpochFence", []), ("b", 2, 3, 2, "Ongoing", None, ["t-0", "t-1"]),
        ("c", 2, 7, 1, "PrepareAbort", None, ["u-0"])]
    assert (rows[1]["producer_id"], rows[1]["producer_epoch"], rows[1]["start_time_ms"], rows[1]["timeout_ms"]) == (
        11, 1, 1000, 60000)
    assert views.local_transactions({}, 1) == []


def test_counters_and_the_ids_held():
    assert views.transaction_counters(DESCRIBED) == {
        "markers_written": 9, "aborts_by_timeout": 2, "transactions_committed": 4, "transactions_aborted": 3,
        "expired_transactional_ids": 1, "transactional_ids": 6}
    assert views.transaction_counters({}) == dict.fromkeys(views.COUNTERS + ("transactional_ids",), 0)


def test_transaction_rows_merge_every_broker_and_skip_the_silent():
    merged = views.transaction_rows({1: views.local_transactions(DESCRIBED, 1), 2: None,
                                     3: [{"transactional_id": "0", "coordinator": 3}]})
    assert [r["transactional_id"] for r in merged] == ["0", "a", "b", "c"]


def test_lso_lag_is_hw_minus_lso_or_unknown():
    assert views.lso_lag({"high_watermark": 10, "last_stable_offset": 4}) == 6
    assert views.lso_lag({"high_watermark": 10, "last_stable_offset": 10}) == 0
    assert views.lso_lag({"high_watermark": None, "last_stable_offset": 4}) is None


def fake_partition(leader: bool, hw: int, lso: int):
    log = SimpleNamespace(high_watermark=hw, log_end_offset=hw + 2, log_start_offset=0, size=100, segments=[1])
    return SimpleNamespace(is_leader=leader, log=log, last_stable_offset=lso)


PARTITIONS = {TopicPartition("t", 0): fake_partition(True, 10, 4), TopicPartition("t", 1): fake_partition(False, 7, 7)}


def test_local_partitions_report_the_last_stable_offset_and_partition_rows_keep_the_leaders():
    rows = views.local_partitions(PARTITIONS)
    assert [(r["partition"], r["high_watermark"], r["last_stable_offset"]) for r in rows] == [(0, 10, 4), (1, 7, 7)]
    assert "last_stable_offset" in views.LOCAL_FIELDS


def fake_broker(described: dict):
    manager = SimpleNamespace(partitions=PARTITIONS)
    return SimpleNamespace(broker_id=2, transaction_view=lambda: described, replica_manager=manager)


def test_the_local_transactions_view_is_fanned_out_and_filtered_by_describe_rights():
    assert [r["transactional_id"] for r in LOCAL_VIEWS["transactions"](fake_broker(DESCRIBED))] == ["a", "b", "c"]
    visible = Visibility(lambda t: True, lambda g: True, lambda tid: tid != "b")
    rows = views.only_topics(views.local_transactions(DESCRIBED, 2), visible.transactional_id, key="transactional_id")
    assert [r["transactional_id"] for r in rows] == ["a", "c"]


def scrape(broker) -> dict[str, float]:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(BrokerCollector(broker))
    out = {}
    for line in generate_latest(registry).decode().splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def test_metrics_count_transactions_markers_aborts_and_lso_lag():
    samples = scrape(fake_broker(DESCRIBED))
    assert samples['kafka_coordinator_transaction_ongoing_count{state="Ongoing"}'] == 2
    assert samples['kafka_coordinator_transaction_ongoing_count{state="PrepareAbort"}'] == 1
    assert samples['kafka_coordinator_transaction_ongoing_count{state="PrepareCommit"}'] == 0
    assert samples["kafka_coordinator_transactional_id_count"] == 6
    assert samples["kafka_coordinator_transaction_markers_written_total"] == 9
    assert samples["kafka_coordinator_transaction_aborts_by_timeout_total"] == 2
    assert samples["kafka_coordinator_transaction_transactions_committed_total"] == 4
    assert samples["kafka_coordinator_transaction_expired_transactional_ids_total"] == 1
    assert samples['kafka_cluster_partition_last_stable_offset_lag{partition="0",topic="t"}'] == 6
    assert samples['kafka_log_last_stable_offset{partition="0",topic="t"}'] == 4
    assert not any(k.startswith("kafka_log_last_stable_offset") and 'partition="1"' in k for k in samples)  # follower


def test_metrics_count_only_transactions_in_progress_not_idle_ones_with_a_transition_pending():
    described = {**DESCRIBED, "partitions": {**DESCRIBED["partitions"], 9: {
        "coordinator_epoch": 1, "transactional_ids": 3, "ongoing": [
            txn("d", 13, "Empty", [], pending="Ongoing"),  # its first AddPartitionsToTxn being written
            txn("e", 14, "CompleteCommit", [], pending="Empty"),  # an InitProducerId bumping its epoch
            txn("f", 15, "Ongoing", ["t-2"], pending="PrepareCommit")]}}}
    samples = scrape(fake_broker(described))
    counted = {k: v for k, v in samples.items() if k.startswith("kafka_coordinator_transaction_ongoing_count")}
    assert counted == {f'kafka_coordinator_transaction_ongoing_count{{state="{state}"}}': n for state, n in (
        ("Ongoing", 3), ("PrepareCommit", 0), ("PrepareAbort", 1), ("PrepareEpochFence", 0))}


def test_metrics_without_a_coordinator_are_zero():
    samples = scrape(fake_broker({}))
    assert samples['kafka_coordinator_transaction_ongoing_count{state="Ongoing"}'] == 0
    assert samples["kafka_coordinator_transaction_markers_written_total"] == 0
