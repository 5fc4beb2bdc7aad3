"""Recipes of the records, offsets and metadata APIs: Produce, Fetch, ListOffsets, Metadata, OffsetCommit,
OffsetFetch, FindCoordinator, OffsetForLeaderEpoch, ApiVersions."""
from __future__ import annotations

import struct
import zlib
from typing import Any, Callable

from brokers.protocol.api_versions import ApiKey
from brokers.protocol.compression import NONE, ZSTD
from brokers.protocol.errors import ErrorCode
from brokers.protocol.record import Record, build_batch, iter_records
from tests.integration.api_recipes.base import NO_UUID, Recipe, RecipeMaker, expect, only, registry
from tests.integration.window_broker import BASE_TS, RECORDS, TIMEOUT, WindowBroker

RECIPES: dict[ApiKey, RecipeMaker] = {}
recipe = registry(RECIPES)

TOPIC_OPERATIONS = 3576  # READ WRITE CREATE DELETE ALTER DESCRIBE DESCRIBE_CONFIGS ALTER_CONFIGS (super user)
CLUSTER_OPERATIONS = 8096  # CREATE ALTER DESCRIBE CLUSTER_ACTION DESCRIBE_CONFIGS ALTER_CONFIGS IDEMPOTENT_WRITE


# --- Produce and Fetch: the message formats of each version --------------------------------------------

def legacy_message_set(magic: int, values: list[bytes], timestamp: int) -> bytes:
    """Kafka's magic 0/1 messages (offsets 0..n-1, uncompressed): the formats Produce v0-2 carry."""
    out = bytearray()
    for offset, value in enumerate(values):
        body = struct.pack(">bb", magic, 0) + (struct.pack(">q", timestamp) if magic == 1 else b"")
        body += struct.pack(">i", -1) + struct.pack(">i", len(value)) + value  # null key
        message = struct.pack(">I", zlib.crc32(body)) + body
        out += struct.pack(">qi", offset, len(message)) + message
    return bytes(out)


def produced_values(version: int) -> list[bytes]:
    return [f"v{version}-{i}".encode() for i in range(2)]


def produce_records(version: int, timestamp: int) -> bytes:
    values = produced_values(version)
    if version <= 2:  # v0-1: magic 0, v2: magic 1 (what the clients of those versions send)
        return legacy_message_set(0 if version < 2 else 1, values, timestamp)
    codec = ZSTD if version >= 7 else NONE  # v3: magic 2 batches, v7: zstd (KIP-110)
    return bytes(build_batch([Record(i, 0, None, v) for i, v in enumerate(values)], base_timestamp=timestamp,
                             codec=codec))


def produce_fields(topic: str, records: bytes) -> dict:
    return dict(transactional_id=None, acks=1, timeout=TIMEOUT * 1000,
                topic_data=[dict(name=topic, partition_data=[dict(index=0, records=records)])])


def assert_record_errors(broker: WindowBroker, version: int) -> None:
    """v8: a record the log validator rejects is named by its index in the batch, with Kafka's message."""
    topic = broker.topic("window-compacted", {"cleanup.policy": "compact"})
    keyless = bytes(build_batch([Record(0, 0, b"k", b"v"), Record(1, 0, None, b"v")], base_timestamp=BASE_TS))
    response = broker.call(ApiKey.PRODUCE, version, **produce_fields(topic, keyless))
    answer = only(only(response.responses).partition_responses)
    expect(answer.error_code, ErrorCode.INVALID_RECORD, answer)
    assert [(e.batch_index, e.batch_index_error_message) for e in answer.record_errors] == [
        (1, f"Compacted topic cannot accept message without key in topic partition {topic}-0.")]
    assert answer.error_message == "One or more records have been rejected"


@recipe(ApiKey.PRODUCE)
def produce(broker: WindowBroker, version: int) -> Recipe:
    topic = broker.topic("window-produce", {"message.timestamp.type": "LogAppendTime"})

    def check(response) -> None:
        answer = only(only(response.responses).partition_responses)
        expect(answer.error_code, ErrorCode.NONE, answer)
        assert broker.values_from(topic, answer.base_offset) == produced_values(version)  # up-converted for v0-2
        if version >= 2:  # v2: the broker's append time, for a LogAppendTime topic
            assert answer.log_append_time is not None and answer.log_append_time.timestamp() * 1000 > BASE_TS
        if version >= 5:  # v5: the log start offset
            assert answer.log_start_offset == 0
        if version >= 8:  # v8: per-record errors and a message, both empty on success
            assert answer.record_errors == () and answer.error_message is None
            assert_record_errors(broker, version)
    return Recipe(produce_fields(topic, produce_records(version, BASE_TS)), check)


def fetched_magic(version: int) -> int:
    """The message format a fetcher of ``version`` reads: Kafka down-converts for v0-3."""
    return 0 if version <= 1 else 1 if version <= 3 else 2


def read_legacy_messages(data: bytes) -> list[tuple[int, int, int | None, bytes]]:
    """(offset, magic, timestamp or None, value) of each uncompressed magic 0/1 message, CRCs checked."""
    messages, position = [], 0
    while position + 12 <= len(data):
        offset, size = struct.unpack_from(">qi", data, position)
        message = data[position + 12:position + 12 + size]
        crc, magic, attributes = struct.unpack_from(">Ibb", message)
        assert crc == zlib.crc32(message[4:]) and attributes & 0x07 == 0, message
        timestamp = struct.unpack_from(">q", message, 6)[0] if magic == 1 else None
        key_at = 14 if magic == 1 else 6
        key_size = struct.unpack_from(">i", message, key_at)[0]
        value_at = key_at + 4 + max(key_size, 0)
        value_size = struct.unpack_from(">i", message, value_at)[0]
        messages.append((offset, magic, timestamp, message[value_at + 4:value_at + 4 + value_size]))
        position += 12 + size
    return messages


def fetched_records(version: int, records: bytes) -> list[tuple[int, int, int | None, bytes]]:
    if version <= 3:
        return read_legacy_messages(records)
    return [(r.offset, 2, r.timestamp, r.value) for r in iter_records(records)]


def filled_records(version: int) -> list[tuple[int, int, int | None, bytes]]:
    """What a fetcher of ``version`` reads of TOPIC: magic 0 has no timestamps, magic 1 keeps CreateTime."""
    magic = fetched_magic(version)
    return [(i, magic, None if magic == 0 else BASE_TS + i * 1000, f"r{i}".encode()) for i in range(RECORDS)]


def fetch_fields(topic: str, version: int, fetch_offset: int, current_leader_epoch: int | None = None) -> dict:
    if current_leader_epoch is None:  # v9: the fetcher's current leader epoch, fenced
        current_leader_epoch = 0 if version >= 9 else -1
    partition = dict(partition=0, fetch_offset=fetch_offset, partition_max_bytes=1 << 20, log_start_offset=-1,
                     current_leader_epoch=current_leader_epoch,
                     last_fetched_epoch=0 if version >= 12 else -1)  # v12: KIP-320's divergence check
    return dict(replica_id=-1, max_wait=100, min_bytes=1, max_bytes=1 << 20, isolation_level=0, session_id=0,
                session_epoch=-1, rack_id="", forgotten_topics_data=[], topics=[dict(topic=topic, partitions=[partition])])


def assert_diverges(broker: WindowBroker, topic: str) -> None:
    """A fetcher past the end of epoch 0 that last fetched epoch 0 is told where epoch 0 ends, no records."""
    response = broker.call(ApiKey.FETCH, 12, **fetch_fields(topic, 12, RECORDS + 1))
    answer = only(only(response.responses).partitions)
    expect(answer.error_code, ErrorCode.NONE, answer)
    assert (answer.diverging_epoch.epoch, answer.diverging_epoch.end_offset) == (0, RECORDS)
    assert not answer.records


@recipe(ApiKey.FETCH)
def fetch(broker: WindowBroker, version: int) -> Recipe:
    topic = broker.filled_topic()

    def check(response) -> None:
        if version >= 7:  # v7: fetch sessions; a sessionless fetch (epoch -1) gets session 0
            expect(response.error_code, ErrorCode.NONE, response)
            assert response.session_id == 0
        answer = only(only(response.responses).partitions)
        expect(answer.error_code, ErrorCode.NONE, answer)
        assert answer.high_watermark == RECORDS
        assert fetched_records(version, bytes(answer.records)) == filled_records(version)
        if version >= 4:
            assert answer.last_stable_offset == RECORDS
        if version >= 5:
            assert answer.log_start_offset == 0
        if version >= 9:
            assert_fenced(lambda epoch: broker.call(ApiKey.FETCH, version, **fetch_fields(topic, version, 0, epoch))
                          .responses)
        if version >= 11:  # v11: no preferred read replica (KIP-392): read from the leader
            assert answer.preferred_read_replica == -1
        if version >= 12:  # epoch 0 is the leader's latest: no divergence at offset 0, one past its end
            assert (answer.diverging_epoch.epoch, answer.diverging_epoch.end_offset) == (-1, -1)
            assert_diverges(broker, topic)
    return Recipe(fetch_fields(topic, version, 0), check)


def assert_fenced(answer_with: Callable[[int], Any]) -> None:
    """KIP-320's fencing: a current leader epoch above the leader's (0) is UNKNOWN_LEADER_EPOCH; ``answer_with``
    sends the request with the given current leader epoch and returns its topics."""
    answer = only(only(answer_with(1)).partitions)
    expect(answer.error_code, ErrorCode.UNKNOWN_LEADER_EPOCH, answer)


@recipe(ApiKey.LIST_OFFSETS)
def list_offsets(broker: WindowBroker, version: int) -> Recipe:
    topic = broker.filled_topic()
    # v0: the latest offset as an old-style list; v1+: by time (the second record's timestamp)
    timestamp = -1 if version == 0 else BASE_TS + 1000

    def check(response) -> None:
        answer = only(only(response.topics).partitions)
        expect(answer.error_code, ErrorCode.NONE, answer)
        if version == 0:
            assert answer.offset == RECORDS  # old_style_offsets == [RECORDS]
            return
        assert (answer.offset, answer.timestamp) == (1, BASE_TS + 1000)
        if version >= 4:  # the epoch of the batch holding the offset found
            assert answer.leader_epoch == 0
            assert_fenced(lambda epoch: broker.call(ApiKey.LIST_OFFSETS, version, **fields(epoch)).topics)

    def fields(current_leader_epoch: int) -> dict:
        partition = dict(partition_index=0, timestamp=timestamp, max_num_offsets=1,
                         current_leader_epoch=current_leader_epoch)
        return dict(replica_id=-1, isolation_level=1 if version >= 2 else 0,  # v2: read_committed
                    topics=[dict(name=topic, partitions=[partition])])
    return Recipe(fields(0 if version >= 4 else -1), check)  # v4: the caller's leader epoch, fenced


@recipe(ApiKey.METADATA)
def metadata(broker: WindowBroker, version: int) -> Recipe:
    topic = broker.filled_topic()

    def check(response) -> None:
        assert [(b.node_id, b.host, b.port) for b in response.brokers] == [
            (broker.broker_id, "127.0.0.1", broker.ports["PLAINTEXT"])]
        answer = only(response.topics)
        expect(answer.error_code, ErrorCode.NONE, answer)
        assert answer.name == topic and only(answer.partitions).leader_id == broker.broker_id
        if version >= 1:
            assert response.controller_id == broker.broker_id
        if version >= 2:
            assert response.cluster_id
        if version >= 5:  # v5: the offline replicas
            assert only(answer.partitions).offline_replicas == ()
        if version >= 7:
            assert only(answer.partitions).leader_epoch == 0
        if version >= 8:  # v8: authorized operations, asked for (cluster: v8-10 only)
            assert answer.topic_authorized_operations == TOPIC_OPERATIONS
        if 8 <= version <= 10:
            assert response.cluster_authorized_operations == CLUSTER_OPERATIONS
        if version >= 10:
            assert answer.topic_id not in (None, NO_UUID)
    return Recipe(dict(topics=[dict(name=topic)], allow_auto_topic_creation=False,
                       include_cluster_authorized_operations=True, include_topic_authorized_operations=True), check)


@recipe(ApiKey.OFFSET_COMMIT)
def offset_commit(broker: WindowBroker, version: int) -> Recipe:
    topic, group = broker.filled_topic(), f"window-commit-v{version}"
    partition = dict(partition_index=0, committed_offset=2, committed_leader_epoch=0, committed_metadata=f"v{version}",
                     commit_timestamp=-1)  # v1 only

    def check(response) -> None:
        expect(only(only(response.topics).partitions).error_code, ErrorCode.NONE, response)
        if version == 0:  # v0: Kafka's ZooKeeper commit, read back by v0, the offset alone (no metadata)
            assert broker.committed(group, 0) == (2, "")
        else:
            assert broker.committed(group) == (2, f"v{version}")
    # v0: no generation; v1+: a simple consumer's generation -1; v2-4: the retention; v7: no instance id
    return Recipe(dict(group_id=group, generation_id_or_member_epoch=-1, member_id="", retention_time=-1,
                       group_instance_id=None, topics=[dict(name=topic, partitions=[partition])]), check)


@recipe(ApiKey.OFFSET_FETCH)
def offset_fetch(broker: WindowBroker, version: int) -> Recipe:
    topic, group = broker.filled_topic(), "window-offsets"
    broker.once("offsets", lambda: broker.commit(group, 2, "m"))

    def check(response) -> None:
        if version >= 2:
            expect(response.error_code, ErrorCode.NONE, response)
        answer = only(only(response.topics).partitions)
        expect(answer.error_code, ErrorCode.NONE, answer)
        # v0 reads the offset ZooKeeper keeps, which has no metadata (Kafka's NO_METADATA)
        assert (only(response.topics).name, answer.committed_offset, answer.metadata) == (
            topic, 2, "" if version == 0 else "m")
        if version >= 5:
            assert answer.committed_leader_epoch == 0
    # v2+: a null topic list means every offset of the group; v7: require_stable (no pending transactions)
    topics = None if version >= 2 else [dict(name=topic, partition_indexes=[0])]
    return Recipe(dict(group_id=group, topics=topics, require_stable=True), check)


@recipe(ApiKey.FIND_COORDINATOR)
def find_coordinator(broker: WindowBroker, version: int) -> Recipe:
    def check(response) -> None:
        expect(response.error_code, ErrorCode.NONE, response)
        assert (response.node_id, response.host, response.port) == (
            broker.broker_id, "127.0.0.1", broker.ports["PLAINTEXT"])
        if version >= 1:
            assert response.error_message is None
    return Recipe(dict(key=f"window-find-v{version}", key_type=0), check)  # v1: key_type 0 = group


@recipe(ApiKey.OFFSET_FOR_LEADER_EPOCH)
def offset_for_leader_epoch(broker: WindowBroker, version: int) -> Recipe:
    topic = broker.filled_topic()

    def check(response) -> None:
        answer = only(only(response.topics).partitions)
        expect(answer.error_code, ErrorCode.NONE, answer)
        assert answer.end_offset == RECORDS  # epoch 0 is the latest: its end is the log end
        if version >= 1:
            assert answer.leader_epoch == 0
        if version >= 2:
            assert_fenced(lambda epoch: broker.call(ApiKey.OFFSET_FOR_LEADER_EPOCH, version, **fields(epoch)).topics)

    def fields(current_leader_epoch: int) -> dict:
        partition = dict(partition=0, leader_epoch=0, current_leader_epoch=current_leader_epoch)
        return dict(replica_id=-1, topics=[dict(topic=topic, partitions=[partition])])  # v3: replica_id
    return Recipe(fields(0 if version >= 2 else -1), check)  # v2: the caller's leader epoch, fenced


@recipe(ApiKey.API_VERSIONS)
def api_versions(broker: WindowBroker, version: int) -> Recipe:
    def check(response) -> None:
        expect(response.error_code, ErrorCode.NONE, response)
        assert {(k.api_key, k.min_version, k.max_version) for k in response.api_keys} == {
            (int(key), key.min_version, key.max_version) for key in ApiKey}
        if version >= 1:
            assert response.throttle_time.total_seconds() == 0
    return Recipe(dict(client_software_name="zkafka-tests", client_software_version="1.0"), check)  # v3

