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

DESCRIBED = {
    "partitions": {
        3: {"coordinator_epoch": 2, "transactions": [
            {"transactional_id": "b", "producer_id": 11, "producer_epoch": 1, "state": "Ongoing",
             "start_time_ms": 1000, "timeout_ms": 60000, "partitions": [("t", 1), TopicPartition("t", 0)]},
            {"transactional_id": "a", "producer_id": 10, "producer_epoch": 0,
             "txn_state": SimpleNamespace(kafka_name="CompleteCommit"), "start_time_ms": -1, "timeout_ms": 60000,
             "partitions": []}]},
        7: {"coordinator_epoch": 1, "transactions": [
            {"transactional_id": "c", "producer_id": 12, "producer_epoch": 4, "state": "PrepareAbort",
             "start_time_ms": 2000, "timeout_ms": 1000, "partitions": {"u": [0]}}]}},
    "markers_written": 9, "aborts_by_timeout": 2,
}


def test_local_transactions_flatten_describe_with_the_coordinator_and_its_partition():
    rows = views.local_transactions(DESCRIBED, broker_id=2)
    assert [(r["transactional_id"], r["coordinator"], r["coordinator_partition"], r["state"], r["ongoing"],
             r["partitions"]) for r in rows] == [
        ("a", 2, 3, "CompleteCommit", False, []), ("b", 2, 3, "Ongoing", True, ["t-0", "t-1"]),
        ("c", 2, 7, "PrepareAbort", True, ["u-0"])]
    assert (rows[1]["producer_id"], rows[1]["producer_epoch"], rows[1]["start_time_ms"], rows[1]["timeout_ms"]) == (
        11, 1, 1000, 60000)
    assert views.local_transactions({}, 1) == []


def test_counters_top_level_or_under_counters():
    assert views.transaction_counters(DESCRIBED) == {"markers_written": 9, "aborts_by_timeout": 2}
    assert views.transaction_counters({"counters": {"markers_written": 3}}) == {"markers_written": 3,
                                                                                "aborts_by_timeout": 0}


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
    assert samples["kafka_coordinator_transaction_ongoing_count"] == 2
    assert samples['kafka_coordinator_transaction_count{state="Ongoing"}'] == 1
    assert samples['kafka_coordinator_transaction_count{state="CompleteCommit"}'] == 1
    assert samples['kafka_coordinator_transaction_count{state="PrepareAbort"}'] == 1
    assert samples['kafka_coordinator_transaction_count{state="Empty"}'] == 0
    assert samples["kafka_coordinator_transaction_markers_written_total"] == 9
    assert samples["kafka_coordinator_transaction_aborts_by_timeout_total"] == 2
    assert samples['kafka_cluster_partition_last_stable_offset_lag{partition="0",topic="t"}'] == 6
    assert samples['kafka_log_last_stable_offset{partition="0",topic="t"}'] == 4
    assert not any(k.startswith("kafka_log_last_stable_offset") and 'partition="1"' in k for k in samples)  # follower


def test_metrics_without_a_coordinator_are_zero():
    samples = scrape(fake_broker({}))
    assert samples["kafka_coordinator_transaction_ongoing_count"] == 0
    assert samples["kafka_coordinator_transaction_markers_written_total"] == 0
