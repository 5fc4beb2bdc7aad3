"""The hand-written Metadata response encoder (``brokers/protocol/metadata_response.py``) writes exactly the bytes
kio's generic writer does, at every version of Kafka 2.8's window (v0-v11)."""
from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from brokers.protocol import codec
from brokers.protocol.metadata_response import encode_metadata_response, encode_topic, topic_tail

METADATA = 3
NO_OPERATIONS = -2147483648
ids = st.integers(-1, 2**31 - 1)
node_lists = st.lists(st.integers(0, 2**31 - 1), max_size=5)
partitions = st.lists(st.fixed_dictionaries(dict(
    error_code=st.sampled_from([0, 5, 9, 72]), partition_index=st.integers(0, 2**31 - 1), leader_id=ids,
    leader_epoch=ids, replica_nodes=node_lists, isr_nodes=node_lists, offline_replicas=node_lists)), max_size=4)
names = st.text(min_size=1, max_size=12)
topics = st.lists(st.fixed_dictionaries(dict(
    error_code=st.sampled_from([0, 3, 29]), name=names, topic_id=st.uuids(), is_internal=st.booleans(),
    partitions=partitions, topic_authorized_operations=st.sampled_from([NO_OPERATIONS, 0, 1512]))), max_size=4)
brokers = st.lists(st.fixed_dictionaries(dict(
    node_id=st.integers(0, 2**31 - 1), host=names, port=st.integers(0, 65535), rack=st.none() | names)), max_size=3)


def kio_bytes(version: int, correlation_id: int, brokers_, cluster_id, controller_id, topics_, cluster_ops) -> bytes:
    body = codec.build(codec.response_class(METADATA, version), throttle_time=0, brokers=brokers_,
                       cluster_id=cluster_id, controller_id=controller_id, topics=topics_,
                       cluster_authorized_operations=cluster_ops)
    return codec.encode_response(METADATA, version, correlation_id, body)


def ours(version: int, correlation_id: int, brokers_, cluster_id, controller_id, topics_, cluster_ops) -> bytes:
    entries = [encode_topic(version, t["error_code"], t["name"], t["topic_id"], t["is_internal"], t["partitions"])
               + topic_tail(version, t["topic_authorized_operations"]) for t in topics_]
    return encode_metadata_response(version, correlation_id, brokers_, cluster_id, controller_id, entries, cluster_ops)


@settings(max_examples=60, deadline=None)
@given(version=st.integers(0, 11), correlation_id=st.integers(0, 2**31 - 1), brokers_=brokers,
       cluster_id=st.none() | names, controller_id=ids, topics_=topics,
       cluster_ops=st.sampled_from([NO_OPERATIONS, 0, 3968]))
def test_the_bytes_are_kios_at_every_version(version, correlation_id, brokers_, cluster_id, controller_id, topics_,
                                             cluster_ops):
    if version < 1:  # v0 has no rack: kio writes none, so neither may the dicts carry one that matters
        brokers_ = [dict(b, rack=None) for b in brokers_]
    args = (version, correlation_id, brokers_, cluster_id, controller_id, topics_, cluster_ops)
    assert ours(*args) == kio_bytes(*args)


def test_a_ten_thousand_partition_answer_matches_too():
    partition = [dict(error_code=0, partition_index=p, leader_id=1 + p % 3, leader_epoch=7, replica_nodes=[1, 2, 3],
                      isr_nodes=[1, 2, 3], offline_replicas=[]) for p in range(100)]
    topics_ = [dict(error_code=0, name=f"topic-{t}", topic_id=uuid.UUID(int=t + 1), is_internal=False,
                    partitions=partition, topic_authorized_operations=NO_OPERATIONS) for t in range(100)]
    brokers_ = [dict(node_id=b, host="127.0.0.1", port=9092 + b, rack=None) for b in (1, 2, 3)]
    for version in (1, 9, 11):
        args = (version, 5, brokers_, "cluster", 1, topics_, NO_OPERATIONS)
        assert ours(*args) == kio_bytes(*args)
