"""brokers.model: TopicPartition and its partition directory names."""
from __future__ import annotations

import dataclasses

import pytest

from brokers.model import NO_LEADER_EPOCH, NO_TIMESTAMP, TopicPartition


def test_dir_name_is_topic_dash_partition():
    tp = TopicPartition("orders", 7)
    assert tp.dir_name == "orders-7"
    assert str(tp) == "orders-7"


@pytest.mark.parametrize(
    "topic, partition",
    [
        ("orders", 0),
        ("my-topic", 3),
        ("my.dotted.topic", 12),
        ("a-b-c-1", 4),  # ends in a dash and a number itself
        ("__consumer_offsets", 49),
        ("x", 2**31 - 1),
        ("trailing-", 1),  # dir name "trailing--1": a legal topic ending in a dash, not partition -1
    ],
)
def test_dir_name_round_trip(topic, partition):
    tp = TopicPartition(topic, partition)
    assert TopicPartition.from_dir_name(tp.dir_name) == tp


def test_topic_with_dashes_splits_on_last_dash():
    assert TopicPartition.from_dir_name("my-topic-3") == TopicPartition("my-topic", 3)
    assert TopicPartition.from_dir_name("a-1-2") == TopicPartition("a-1", 2)


@pytest.mark.parametrize(
    "name",
    [
        "",
        "topic",  # no dash
        "topic-",  # no partition
        "-3",  # no topic
        "topic-x",
        "topic-1a",
        "topic-1.5",
        "topic- 1",
        "my-topic-",
    ],
)
def test_invalid_dir_names_raise_value_error(name):
    with pytest.raises(ValueError, match="partition directory"):
        TopicPartition.from_dir_name(name)


def test_ordering_is_topic_then_partition_number():
    tps = [TopicPartition("b", 0), TopicPartition("a", 10), TopicPartition("a", 2)]
    assert sorted(tps) == [TopicPartition("a", 2), TopicPartition("a", 10), TopicPartition("b", 0)]


def test_is_frozen_hashable_value():
    tp = TopicPartition("t", 1)
    assert {tp: 1}[TopicPartition("t", 1)] == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        tp.partition = 2  # type: ignore[misc]


def test_sentinels():
    assert NO_LEADER_EPOCH == -1
    assert NO_TIMESTAMP == -1
