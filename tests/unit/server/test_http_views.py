"""brokers.http.views: how the admin API merges the metadata cache with the brokers' local facts."""
from __future__ import annotations

from brokers.control import PartitionState
from brokers.http.views import (
    broker_rows,
    leaders_facts,
    only_groups,
    only_topics,
    partition_rows,
    topic_rows,
    with_lag,
)
from brokers.model import BrokerInfo, EndPoint, TopicPartition


def state(topic: str, partition: int, leader: int, isr: tuple, replicas: tuple = (1, 2, 3)) -> PartitionState:
    return PartitionState(topic, partition, 1, leader, 5, isr, 0, replicas)


def broker(broker_id: int) -> BrokerInfo:
    return BrokerInfo(broker_id, (EndPoint("PLAINTEXT", "127.0.0.1", 9091 + broker_id),), None, 1, 8079 + broker_id)


STATES = {TopicPartition("t", 0): state("t", 0, 1, (1, 2, 3)),
          TopicPartition("t", 1): state("t", 1, 2, (2, 1)),
          TopicPartition("t", 2): state("t", 2, 3, (3,)),
          TopicPartition("u", 0): state("u", 0, -1, (3,), (3,))}
LIVE = {1: broker(1), 2: broker(2)}


def fact(topic: str, partition: int, leader: bool, hw: int) -> dict:
    return {"topic": topic, "partition": partition, "is_leader": leader, "high_watermark": hw,
            "log_end_offset": hw + 1, "log_start_offset": 2, "size_bytes": 100 * hw, "segments": 1}


FACTS = leaders_facts({1: [fact("t", 0, True, 10), fact("t", 1, False, 99)], 2: [fact("t", 1, True, 20)],
                       3: None})


def test_only_leaders_facts_count():
    assert {tp: f["high_watermark"] for tp, f in FACTS.items()} == {TopicPartition("t", 0): 10,
                                                                     TopicPartition("t", 1): 20}


def test_partition_rows_flag_under_replicated_and_offline_and_leave_unknown_facts_none():
    rows = partition_rows(STATES, LIVE, FACTS)
    assert [(r["topic"], r["partition"], r["leader"], r["under_replicated"], r["offline"], r["high_watermark"])
            for r in rows] == [("t", 0, 1, False, False, 10), ("t", 1, 2, True, False, 20),
                               ("t", 2, -1, True, True, None), ("u", 0, -1, False, True, None)]
    assert [r["partition"] for r in partition_rows(STATES, LIVE, FACTS, topic="u")] == [0]


def test_topic_rows_sum_only_when_every_partition_is_known():
    rows = topic_rows(partition_rows(STATES, LIVE, FACTS), {"t": {"retention.ms": "5"}})
    t, u = rows
    assert (t["name"], t["partitions"], t["replication_factor"], t["under_replicated_partitions"],
            t["offline_partitions"]) == ("t", 3, 3, 2, 1)
    assert (t["messages"], t["size_bytes"], t["configs"]) == (None, None, {"retention.ms": "5"})  # t-2 unknown
    assert (u["messages"], u["size_bytes"], u["configs"], u["internal"]) == (None, None, {}, False)
    known = {tp: s for tp, s in STATES.items() if tp.partition < 2 and tp.topic == "t"}
    (t,) = topic_rows(partition_rows(known, LIVE, FACTS), {})
    assert (t["messages"], t["size_bytes"]) == ((10 - 2) + (20 - 2), 3000)


def test_brokers_named_as_replicas_but_not_live_are_down():
    rows = broker_rows(LIVE, 2, STATES.values())
    assert [(r["id"], r["alive"], r["controller"], r["port"], r["http_port"]) for r in rows] == [
        (1, True, False, 9092, 8080), (2, True, True, 9093, 8081), (3, False, False, None, None)]


def test_lag_is_high_watermark_minus_committed_never_negative_none_when_unknown():
    groups = [{"group_id": "b", "offsets": [{"topic": "t", "partition": 0, "committed_offset": 4},
                                            {"topic": "t", "partition": 1, "committed_offset": 25},
                                            {"topic": "t", "partition": 2, "committed_offset": 1}]},
              {"group_id": "a", "offsets": []}]
    a, b = with_lag(groups, partition_rows(STATES, LIVE, FACTS))
    assert (a["group_id"], a["total_lag"]) == ("a", 0)
    assert [(o["high_watermark"], o["lag"]) for o in b["offsets"]] == [(10, 6), (20, 0), (None, None)]
    assert b["total_lag"] is None  # not 6: one partition's lag is unknown
    (b,) = with_lag([{**groups[0], "offsets": groups[0]["offsets"][:2]}], partition_rows(STATES, LIVE, FACTS))
    assert b["total_lag"] == 6


def test_only_topics_and_groups_the_caller_may_describe():
    groups = [{"group_id": "g1", "offsets": [{"topic": "a", "partition": 0}, {"topic": "b", "partition": 0}]},
              {"group_id": "g2", "offsets": [{"topic": "a", "partition": 1}]}]
    may_topic = {"a"}.__contains__
    assert only_topics([{"topic": "a"}, {"topic": "b"}], may_topic) == [{"topic": "a"}]
    assert only_topics([{"name": "b"}], may_topic, key="name") == []
    assert only_groups(groups, {"g1"}.__contains__, may_topic) == [
        {"group_id": "g1", "offsets": [{"topic": "a", "partition": 0}]}]
    assert only_groups(groups, lambda g: True, lambda t: False) == [{"group_id": "g1", "offsets": []},
                                                                   {"group_id": "g2", "offsets": []}]
