"""The kio-backed codec: request decoding, response encoding and ``build`` across versions."""
from __future__ import annotations

import datetime
import io
import struct
import sys
import uuid

import pytest
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.schema.response_header.v0.header import ResponseHeader as KioResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as KioResponseHeaderV1
from kio.serial import entity_writer

from brokers.protocol import errors
from brokers.protocol.api_versions import ApiKey, api_versions_response, is_flexible
from brokers.protocol.codec import (
    build,
    is_legacy,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    error_code,
    request_class,
    response_class,
)
from brokers.protocol.framing import FrameDecoder, ProtocolError, RequestHeader, parse_request_header

RECORDS = bytes(range(70))

# One superset of request fields per API: build() keeps what each version has.
REQUESTS = {
    0: dict(transactional_id=None, acks=-1, timeout=30000,
            topic_data=[dict(name="t", partition_data=[dict(index=0, records=RECORDS)])]),
    1: dict(replica_id=-1, max_wait=500, min_bytes=1, max_bytes=52428800, isolation_level=0, session_id=0,
            session_epoch=-1, rack_id="",
            topics=[dict(topic="t", partitions=[dict(partition=0, fetch_offset=5, partition_max_bytes=1048576)])]),
    2: dict(replica_id=-1, isolation_level=0, topics=[dict(name="t", partitions=[dict(partition_index=0, timestamp=-2)])]),
    3: dict(topics=[dict(name="t")], allow_auto_topic_creation=False),
    10: dict(key="my-group", key_type=0),
    18: dict(client_software_name="zkafka-test", client_software_version="0.1"),
    19: dict(timeout=5000, topics=[dict(name="t", num_partitions=3, replication_factor=1,
                                       configs=[dict(name="cleanup.policy", value="compact")])]),
    20: dict(topic_names=["t"], timeout=5000),
    22: dict(transactional_id=None, transaction_timeout=60000),
    23: dict(replica_id=2, topics=[dict(topic="t", partitions=[dict(partition=0, current_leader_epoch=4, leader_epoch=3)])]),
    32: dict(resources=[dict(resource_type=2, resource_name="t", configuration_keys=None)], include_synonyms=True),
    35: dict(topics=[dict(topic="t", partitions=[0, 1])]),
    37: dict(topics=[dict(name="t", count=4, assignments=[dict(broker_ids=[1, 2])])], timeout=30000,
             validate_only=False),
    33: dict(resources=[dict(resource_type=2, resource_name="t", configs=[dict(name="retention.ms", value="1000")])],
             validate_only=False),
    44: dict(resources=[dict(resource_type=4, resource_name="", configs=[
        dict(name="log.cleanup.policy", config_operation=2, value="compact")])], validate_only=True),
    45: dict(timeout=30000, topics=[dict(name="t", partitions=[dict(partition_index=0, replicas=[3, 4]),
                                                               dict(partition_index=1, replicas=None)])]),
    46: dict(timeout=30000, topics=None),
    8: dict(group_id="g", generation_id_or_member_epoch=3, member_id="m-1", group_instance_id=None, retention_time=-1,
            topics=[dict(name="t", partitions=[dict(partition_index=0, committed_offset=42, committed_leader_epoch=-1,
                                                    committed_metadata="")])]),
    9: dict(group_id="g", topics=[dict(name="t", partition_indexes=[0, 1])]),
    11: dict(group_id="g", session_timeout=10000, rebalance_timeout=300000, member_id="", group_instance_id=None,
             protocol_type="consumer", protocols=[dict(name="range", metadata=b"\x00\x01")]),
    12: dict(group_id="g", generation_id=1, member_id="m-1", group_instance_id=None),
    13: dict(group_id="g", member_id="m-1", members=[dict(member_id="m-1", group_instance_id=None)]),
    14: dict(group_id="g", generation_id=1, member_id="m-1", group_instance_id=None,
             assignments=[dict(member_id="m-1", assignment=b"\x00")]),
    15: dict(groups=["g"], include_authorized_operations=False),
    16: dict(),
    42: dict(groups_names=["g"]),
    47: dict(group_id="g", topics=[dict(name="t", partitions=[dict(partition_index=0)])]),
    43: dict(election_type=0, topic_partitions=[dict(topic="t", partitions=[0, 1])], timeout=60000),
    29: dict(resource_type_filter=2, resource_name_filter="t", pattern_type_filter=2, principal_filter=None,
             host_filter=None, operation=1, permission_type=1),
    30: dict(creations=[dict(resource_type=2, resource_name="t", resource_pattern_type=4, principal="User:alice",
                             host="*", operation=3, permission_type=3)]),
    31: dict(filters=[dict(resource_type_filter=3, resource_name_filter=None, pattern_type_filter=1,
                           principal_filter="User:bob", host_filter="*", operation=2, permission_type=2)]),
    17: dict(mechanism="SCRAM-SHA-512"),
    36: dict(auth_bytes=b"n,,n=alice,r=abc"),
    24: dict(v3_and_below_transactional_id="txn", v3_and_below_producer_id=7, v3_and_below_producer_epoch=1,
             v3_and_below_topics=[dict(name="t", partitions=[0, 1])],
             transactional_id="txn", producer_id=7, producer_epoch=1, topics=[dict(name="t", partitions=[0, 1])]),
    25: dict(transactional_id="txn", producer_id=7, producer_epoch=1, group_id="g"),
    26: dict(transactional_id="txn", producer_id=7, producer_epoch=1, committed=True),
    27: dict(markers=[dict(producer_id=7, producer_epoch=1, transaction_result=True, coordinator_epoch=3,
                           topics=[dict(name="t", partition_indexes=[0, 2])])]),
    28: dict(transactional_id="txn", group_id="g", producer_id=7, producer_epoch=1, generation_id=4, member_id="m-1",
             group_instance_id=None, topics=[dict(name="t", partitions=[dict(
                 partition_index=0, committed_offset=42, committed_leader_epoch=-1, committed_metadata="")])]),
    61: dict(topics=[dict(name="t", partition_indexes=[0])]),
    21: dict(topics=[dict(name="t", partitions=[dict(partition_index=0, offset=42), dict(partition_index=1, offset=-1)])],
             timeout=30000),
    60: dict(include_cluster_authorized_operations=True),
    34: dict(dirs=[dict(path="/var/lib/kafka/b", topics=[dict(name="t", partitions=[0, 2])])]),
    65: dict(transactional_ids=["txn"]),
    66: dict(state_filters=["Ongoing"], producer_id_filters=[7]),
    48: dict(components=[dict(entity_type="user", match_type=0, match="alice")], strict=False),
    49: dict(entries=[dict(entity=[dict(entity_type="client-id", entity_name="app")],
                           ops=[dict(key="producer_byte_rate", value=1048576.0, remove=False)])], validate_only=False),
    50: dict(users=[dict(name="alice")]),
    51: dict(deletions=[dict(name="bob", mechanism=2)], upsertions=[dict(
        name="alice", mechanism=1, iterations=8192, salt=b"salt", salted_password=b"x" * 32)]),
}

DECODABLE = [(int(k), v) for k in sorted(ApiKey) for v in range(k.min_version, k.max_version + 1)
             if not is_legacy(k, v)]  # the legacy versions: test_legacy_codec


def one_frame(raw: bytes) -> bytes:
    (frame,) = FrameDecoder().feed(raw)
    return frame


def parse(frame: bytes) -> RequestHeader:
    key, version = struct.unpack_from(">hh", frame)
    return parse_request_header(frame, is_flexible(key, version))


@pytest.mark.parametrize("key, version", DECODABLE)
def test_decode_every_supported_request_version(key, version):
    body = build(request_class(key, version), **REQUESTS[key])
    frame = one_frame(encode_request(key, version, 42, "client-1", body))
    header = parse(frame)
    assert header[:4] == (key, version, 42, "client-1")
    for buffer in (frame, bytearray(frame), memoryview(frame), memoryview(bytearray(frame))):
        assert decode_request(header, buffer) == body


def test_decode_kafka_python_like_metadata_v4():
    frame = (b"\x00\x03\x00\x04\x00\x00\x00\x01\x00\x13kafka-python-3.0.12"
             b"\x00\x00\x00\x02\x00\x01a\x00\x01b\x01")
    header = parse(frame)
    request = decode_request(header, frame)
    assert header.client_id == "kafka-python-3.0.12"
    assert [t.name for t in request.topics] == ["a", "b"] and request.allow_auto_topic_creation is True


def test_decode_librdkafka_like_produce_v7():
    body = (b"\xff\xff" b"\xff\xff" b"\x00\x00\x75\x30" b"\x00\x00\x00\x01\x00\x01t"
            b"\x00\x00\x00\x01\x00\x00\x00\x00" + struct.pack(">i", len(RECORDS)) + RECORDS)
    frame = b"\x00\x00\x00\x07\x00\x00\x00\x05\x00\x07rdkafka" + body
    request = decode_request(parse(frame), bytearray(frame))
    assert request.transactional_id is None and request.acks == -1
    assert request.timeout == datetime.timedelta(seconds=30)
    assert request.topic_data[0].partition_data[0].records == RECORDS


def test_decode_flexible_api_versions_v3_with_header_tags():
    frame = b"\x00\x12\x00\x03\x00\x00\x00\x02\x00\x07rdkafka" + b"\x01\x00\x01z" + b"\x0blibrdkafka\x072.16.0\x00"
    request = decode_request(parse(frame), frame)
    assert (request.client_software_name, request.client_software_version) == ("librdkafka", "2.16.0")


def test_decode_librdkafka_like_describe_configs_v1():
    frame = (b"\x00\x20\x00\x01\x00\x00\x00\x03\xff\xff"
             b"\x00\x00\x00\x01\x02\x00\x01t\xff\xff\xff\xff\x01")
    request = decode_request(parse(frame), frame)
    assert request.resources[0].resource_name == "t" and request.resources[0].configuration_keys is None
    assert request.include_synonyms is True


def test_unknown_tagged_field_is_a_protocol_error_not_a_key_error():
    frame = b"\x00\x12\x00\x03\x00\x00\x00\x02\xff\xff\x00" + b"\x02a\x02b" + b"\x01\x05\x01\x00"
    with pytest.raises(ProtocolError, match="unknown tagged field") as info:
        decode_request(parse(frame), frame)
    assert isinstance(info.value.__cause__, KeyError)


def test_truncated_body_is_a_protocol_error():
    body = build(request_class(1, 11), **REQUESTS[1])
    frame = one_frame(encode_request(1, 11, 1, None, body))
    header = parse(frame)
    for cut in range(header.body_offset, len(frame)):
        with pytest.raises(ProtocolError, match="malformed"):
            decode_request(header, frame[:cut])


@pytest.mark.parametrize("key, version", [(0, -1), (4, 0), (999, 0), (3, 99)])
def test_versions_kio_lacks_are_protocol_errors(key, version):
    frame = struct.pack(">hhih", key, version, 1, -1) + b"\x00" * 16
    with pytest.raises(ProtocolError, match="cannot decode"):
        decode_request(parse_request_header(frame, False), frame)
    with pytest.raises(KeyError):
        request_class(key, version)


def metadata_v4(**overrides):
    fields = dict(throttle_time=0, brokers=[dict(node_id=1, host="localhost", port=9092)], controller_id=1,
                  cluster_id="c", topics=[])
    return build(response_class(3, 4), **(fields | overrides))


def test_encode_response_uses_header_v0_for_non_flexible_versions():
    body = metadata_v4()
    framed = encode_response(3, 4, 77, body)
    header = io.BytesIO()
    entity_writer(KioResponseHeaderV0)(header, KioResponseHeaderV0(correlation_id=77))
    buffer = io.BytesIO()
    entity_writer(type(body))(buffer, body)
    assert framed == struct.pack(">i", len(framed) - 4) + header.getvalue() + buffer.getvalue()
    assert decode_response(3, 4, framed[4:]) == (77, body)


def test_encode_response_uses_header_v1_for_flexible_versions():
    body = build(response_class(3, 9), brokers=[dict(node_id=1, host="h", port=1)])
    framed = encode_response(3, 9, 5, body)
    header = io.BytesIO()
    entity_writer(KioResponseHeaderV1)(header, KioResponseHeaderV1(correlation_id=5))
    assert framed[4:9] == header.getvalue() == b"\x00\x00\x00\x05\x00"
    assert decode_response(3, 9, framed[4:]) == (5, body)


def test_encode_api_versions_v3_matches_the_pre_encoded_response():
    cls = response_class(18, 3)
    keys = [dict(api_key=k, min_version=k.min_version, max_version=k.max_version) for k in sorted(ApiKey)]
    body = build(cls, error_code=0, api_keys=keys, throttle_time=0)
    assert encode_response(18, 3, 9, body) == api_versions_response(9, 3)


def test_encode_response_rejects_a_body_of_another_version():
    with pytest.raises(ValueError):
        encode_response(3, 5, 1, metadata_v4())
    with pytest.raises(ValueError):
        encode_request(3, 5, 1, None, build(request_class(3, 4)))


# --- build ------------------------------------------------------------------------------------------

def kio_range(key):
    return [v for v in range(20) if _has_response(key, v) and not is_legacy(key, v)]


def _has_response(key, version):
    try:
        response_class(key, version)
    except KeyError:
        return False
    return True


def roundtrip(key, version, body):
    correlation_id, decoded = decode_response(key, version, encode_response(key, version, 3, body)[4:])
    assert correlation_id == 3 and decoded == body
    return decoded


TOPIC_ID = uuid.UUID("12345678-1234-5678-1234-567812345678")


@pytest.mark.parametrize("version", kio_range(3))
def test_build_metadata_response_for_every_version(version):
    body = build(
        response_class(3, version), throttle_time=0, error_code=errors.ErrorCode.NONE, cluster_id="zk", controller_id=2,
        brokers=[dict(node_id=1, host="h1", port=9092, rack=None), dict(node_id=2, host="h2", port=9093, rack="r")],
        topics=[dict(error_code=0, name="t", topic_id=TOPIC_ID, is_internal=False,
                     partitions=[dict(error_code=0, partition_index=0, leader_id=1, leader_epoch=4,
                                      replica_nodes=[1, 2], isr_nodes=[1], offline_replicas=[])])],
    )
    decoded = roundtrip(3, version, body)
    partition = decoded.topics[0].partitions[0]
    assert (partition.leader_id, partition.replica_nodes, partition.isr_nodes) == (1, (1, 2), (1,))
    assert [b.port for b in decoded.brokers] == [9092, 9093]
    assert version < 1 or decoded.controller_id == 2
    assert version < 2 or decoded.cluster_id == "zk"
    assert version < 7 or partition.leader_epoch == 4
    assert version < 10 or decoded.topics[0].topic_id == TOPIC_ID


@pytest.mark.parametrize("version", kio_range(0))
def test_build_produce_response_for_every_version(version):
    body = build(
        response_class(0, version), throttle_time=0,
        responses=[dict(name="t", topic_id=TOPIC_ID, partition_responses=[
            dict(index=0, error_code=errors.ErrorCode.NONE, base_offset=100, log_append_time=-1, log_start_offset=0,
                 record_errors=[], error_message=None),
            dict(index=1, error_code=KioErrorCode.not_leader_or_follower, base_offset=-1,
                 log_append_time=1_700_000_000_123),
        ])],
    )
    decoded = roundtrip(0, version, body)
    first, second = decoded.responses[0].partition_responses
    assert first.base_offset == 100 and first.log_append_time is None
    assert second.error_code is KioErrorCode.not_leader_or_follower
    assert round(second.log_append_time.timestamp() * 1000) == 1_700_000_000_123
    assert version < 5 or first.log_start_offset == 0


@pytest.mark.parametrize("version", kio_range(2))
def test_build_list_offsets_response_for_every_version(version):
    body = build(response_class(2, version), throttle_time=0, topics=[
        dict(name="t", partitions=[dict(partition_index=0, error_code=0, timestamp=-1, offset=42, leader_epoch=3)])])
    partition = roundtrip(2, version, body).topics[0].partitions[0]
    assert partition.offset == 42 and partition.timestamp == -1
    assert version < 4 or partition.leader_epoch == 3


@pytest.mark.parametrize("version", kio_range(19))
def test_build_create_topics_response_for_every_version(version):
    body = build(response_class(19, version), throttle_time=0, topics=[
        dict(name="t", topic_id=TOPIC_ID, error_code=errors.ErrorCode.TOPIC_ALREADY_EXISTS, error_message="exists",
             num_partitions=3, replication_factor=1,
             configs=[dict(name="cleanup.policy", value="delete", read_only=False, config_source=5, is_sensitive=False)]),
        dict(name="u", error_code=0)])
    decoded = roundtrip(19, version, body)
    exists, created = decoded.topics
    assert exists.error_code is KioErrorCode.topic_already_exists and created.error_code is KioErrorCode.none
    assert exists.error_message == "exists" and created.error_message is None
    assert version < 5 or (exists.num_partitions, exists.configs[0].value) == (3, "delete")


@pytest.mark.parametrize("version", range(1, 4))
def test_build_describe_configs_response_for_the_window(version):
    body = build(response_class(32, version), throttle_time=0, results=[dict(
        error_code=0, error_message=None, resource_type=2, resource_name="t",
        configs=[dict(name="retention.ms", value="604800000", read_only=False, config_source=5, is_sensitive=False,
                      is_default=True, synonyms=[], config_type=5, documentation=None)])])
    config = roundtrip(32, version, body).results[0].configs[0]
    assert config.value == "604800000"
    assert version < 3 or config.config_type == 5


def test_build_zero_fills_missing_fields():
    body = build(response_class(3, 4))
    assert (body.brokers, body.topics, body.cluster_id, body.controller_id) == ((), (), None, -1)
    assert body.throttle_time == datetime.timedelta(0)
    topic = build(sys.modules[response_class(3, 4).__module__].MetadataResponseTopic)
    assert (topic.error_code, topic.name, topic.is_internal, topic.partitions) == (KioErrorCode.none, "", False, ())
    roundtrip(3, 4, body)


def test_build_drops_unknown_fields_and_converts_other_versions():
    module_v0 = sys.modules[response_class(3, 0).__module__]
    broker_v0 = module_v0.MetadataResponseBroker(node_id=3, host="h", port=1)
    body = metadata_v4(brokers=[broker_v0], bogus=1, throttle_time=datetime.timedelta(milliseconds=20))
    assert body.brokers[0].rack is None and type(body.brokers[0]) is not type(broker_v0)
    assert body.throttle_time == datetime.timedelta(milliseconds=20)
    with pytest.raises(TypeError):
        metadata_v4(brokers=[3])


def test_error_code():
    assert error_code(35) is KioErrorCode.unsupported_version
    assert error_code(errors.ErrorCode.NOT_CONTROLLER) is KioErrorCode.not_controller
    assert error_code(KioErrorCode.none) is KioErrorCode.none
    with pytest.raises(ValueError):
        error_code(31337)


def test_codec_is_the_only_module_that_imports_kio():
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    importers = set()
    for package in ("brokers", "coordinator", "consumer_group", "scripts"):
        for path in (root / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                    [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
                if any(name == "kio" or name.startswith("kio.") for name in names):
                    importers.add(path.relative_to(root).as_posix())
    assert importers == {"brokers/protocol/codec.py"}


def test_describe_transactions_start_time_minus_one_round_trips_as_none():
    """Kafka answers -1 for a transaction not started; kio's own class cannot read a negative timestamp."""
    cls = response_class(65, 0)
    for sent in (-1, None):
        body = build(cls, throttle_time=0, transaction_states=[{
            "error_code": 0, "transactional_id": "x", "transaction_state": "Empty", "transaction_timeout": 60000,
            "transaction_start_time": sent, "producer_id": 5, "producer_epoch": 0, "topics": []}])
        frame = encode_response(65, 0, 9, body)
        assert frame[-21:-13] == b"\xff" * 8  # the int64 start time on the wire: -1
        assert decode_response(65, 0, frame[4:])[1].transaction_states[0].transaction_start_time is None
    started = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    body = build(cls, throttle_time=0, transaction_states=[{
        "error_code": 0, "transactional_id": "x", "transaction_state": "Ongoing", "transaction_timeout": 60000,
        "transaction_start_time": started, "producer_id": 5, "producer_epoch": 0, "topics": []}])
    decoded = decode_response(65, 0, encode_response(65, 0, 9, body)[4:])[1]
    assert decoded.transaction_states[0].transaction_start_time == started
