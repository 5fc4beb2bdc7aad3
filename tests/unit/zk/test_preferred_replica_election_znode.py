"""``/admin/preferred_replica_election``: Kafka 2.8's JSON both ways, bad content named clearly."""
from __future__ import annotations

import json

import pytest

from brokers.model import TopicPartition
from brokers.zk.paths import PERSISTENT_ROOTS, PreferredReplicaElectionZNode as Z


def test_path_is_kafkas_and_not_created_at_start_up():
    assert Z.PATH == "/admin/preferred_replica_election"
    assert Z.PATH not in PERSISTENT_ROOTS  # its existence is the request


def test_encode_is_kafkas_format():
    data = Z.encode([TopicPartition("t", 0), TopicPartition("u.v", 3)])
    assert data == b'{"version":1,"partitions":[{"topic":"t","partition":0},{"topic":"u.v","partition":3}]}'
    assert Z.decode(data) == {TopicPartition("t", 0), TopicPartition("u.v", 3)}


def test_decodes_what_kafkas_tool_writes_and_merges_duplicates():
    kafka = json.dumps({"version": 1, "partitions": [{"topic": "t", "partition": 1}, {"partition": 1, "topic": "t"},
                                                      {"topic": "x", "partition": 0}]}, indent=2).encode()
    assert Z.decode(kafka) == {TopicPartition("t", 1), TopicPartition("x", 0)}
    assert Z.decode(b'{"version":1,"partitions":[]}') == set()


@pytest.mark.parametrize("data, words", [
    (b"", "empty"),
    (b"not json", "not JSON"),
    (b"[1]", "JSON object"),
    (b'{"version":1}', '"partitions" must be a list'),
    (b'{"version":1,"partitions":{"t":0}}', '"partitions" must be a list'),
    (b'{"version":1,"partitions":[{"topic":"t"}]}', "bad entry"),
    (b'{"version":1,"partitions":[{"topic":"t","partition":"0"}]}', "bad entry"),
    (b'{"version":1,"partitions":[{"topic":1,"partition":0}]}', "bad entry"),
    (b'{"version":1,"partitions":[{"topic":"t","partition":true}]}', "bad entry"),
    (b'{"version":1,"partitions":["t-0"]}', "bad entry"),
])
def test_bad_content_is_a_value_error_naming_the_znode(data, words):
    with pytest.raises(ValueError, match="/admin/preferred_replica_election") as info:
        Z.decode(data)
    assert words in str(info.value)
