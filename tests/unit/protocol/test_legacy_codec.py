"""The Kafka 2.8 versions kio lacks: byte layouts from the 2.8.2 schemas, decoded into kio's base version."""
from __future__ import annotations

import datetime
import struct

import pytest
from kio.index import KioIndexError, load_request_schema

from brokers.protocol import codec, legacy_codec
from brokers.protocol.framing import ProtocolError, parse_request_header
from brokers.protocol.legacy_schemas import (
    BASE_VERSION, INT32_MAX, PATTERN_LITERAL, REQUESTS, RESPONSES, Array, Struct,
)

LEGACY = sorted(REQUESTS)


def i8(v): return struct.pack(">b", v)
def i16(v): return struct.pack(">h", v)
def i32(v): return struct.pack(">i", v)
def i64(v): return struct.pack(">q", v)
def s16(text): return i16(len(text)) + text.encode()


def header(key: int, version: int, correlation_id: int = 7, client_id: str = "c") -> bytes:
    return i16(key) + i16(version) + i32(correlation_id) + s16(client_id)


def decode(key: int, version: int, body: bytes):
    frame = header(key, version) + body
    return codec.decode_request(parse_request_header(frame, False), frame)


def sample(type_, depth: int = 0):
    """A value of every field, distinct per position, two items per array."""
    if isinstance(type_, Struct):
        return {f.name: _sample_field(f, depth + 1) for f in type_.fields}
    if isinstance(type_, Array):
        return [sample(type_.item, depth + 1) for _ in range(2)]
    return {"int8": 3, "int16": 300 + depth, "int32": 70000 + depth, "int64": 2**40 + depth, "bool": True,
            "string": f"s{depth}", "nullable_string": None if depth % 2 else f"n{depth}", "bytes": b"\x01\x02",
            "records": b"\x00" * 5}[type_]


def _sample_field(field, depth: int):
    if field.name == "error_code":
        return 3
    if field.put is not None:  # read back into base fields: one offset, a default config
        return [2**40] if isinstance(field.type, Array) else True
    return sample(field.type, depth)


def test_the_table_covers_exactly_the_versions_kio_lacks_below_each_base():
    assert set(REQUESTS) == set(RESPONSES)
    for key, version in LEGACY:
        assert version < BASE_VERSION[key]
        with pytest.raises(KioIndexError):
            load_request_schema(key, version)
    assert {key for key, _ in LEGACY} == set(BASE_VERSION)


@pytest.mark.parametrize(("key", "version"), LEGACY)
@pytest.mark.parametrize("table", [REQUESTS, RESPONSES], ids=["request", "response"])
def test_write_then_read_is_the_identity_on_the_wire(key, version, table):
    layout = table[key, version]
    raw = legacy_codec.write(layout, sample(layout))
    values = legacy_codec.read_all(layout, raw, 0)
    assert legacy_codec.write(layout, _with_gets(layout, values)) == raw


def _with_gets(layout, values):
    """Read values put back where a field's ``put`` renamed them (ListOffsets' offsets, DescribeConfigs' default)."""
    out = dict(values)
    for field in layout.fields:
        if isinstance(field.type, Struct):
            out[field.name] = _with_gets(field.type, values[field.name])
        elif isinstance(field.type, Array) and isinstance(field.type.item, Struct) and values[field.name] is not None:
            out[field.name] = [_with_gets(field.type.item, item) for item in values[field.name]]
    return out


@pytest.mark.parametrize(("key", "version"), LEGACY)
def test_a_legacy_request_round_trips_through_kios_base_entity(key, version):
    """encode_request(legacy) -> decode_request -> the base entity -> encode_request again: same bytes."""
    layout = REQUESTS[key, version]
    body = codec.build(codec.request_class(key, version), **legacy_codec.read_all(
        layout, legacy_codec.write(layout, sample(layout)), 0))
    framed = codec.encode_request(key, version, 5, "client", body)
    assert struct.unpack_from(">i", framed)[0] == len(framed) - 4
    frame = framed[4:]
    decoded = codec.decode_request(parse_request_header(frame, False), frame)
    assert type(decoded).__version__ == BASE_VERSION[key]
    assert codec.encode_request(key, version, 5, "client", decoded) == framed


@pytest.mark.parametrize(("key", "version"), LEGACY)
def test_a_legacy_response_is_written_from_the_base_entity_with_header_v0(key, version):
    layout = RESPONSES[key, version]
    entity = codec.build(codec.response_class(key, version), **legacy_codec.read_all(
        layout, legacy_codec.write(layout, sample(layout)), 0))
    framed = codec.encode_response(key, version, 0x0A0B0C0D, entity)
    assert framed[4:8] == i32(0x0A0B0C0D)  # no tagged-field byte: response header v0
    correlation_id, back = codec.decode_response(key, version, framed[4:])
    assert correlation_id == 0x0A0B0C0D and back == entity


def test_produce_v0_request_bytes():
    body = i16(-1) + i32(1500) + i32(1) + s16("t") + i32(1) + i32(2) + i32(3) + b"abc"
    request = decode(0, 0, body)
    assert (request.acks, request.timeout, request.transactional_id) == (-1, datetime.timedelta(milliseconds=1500), None)
    (topic,) = request.topic_data
    assert topic.name == "t" and [(p.index, bytes(p.records)) for p in topic.partition_data] == [(2, b"abc")]
    assert codec.encode_request(0, 0, 7, "c", request)[4:] == header(0, 0) + body


@pytest.mark.parametrize("version", [0, 1, 2])
def test_produce_response_layouts(version):
    response = codec.build(codec.response_class(0, version), throttle_time=25, responses=[
        {"name": "t", "partition_responses": [{"index": 1, "error_code": 0, "base_offset": 42, "log_append_time": -1}]}])
    expected = i32(1) + s16("t") + i32(1) + i32(1) + i16(0) + i64(42)
    expected += i64(-1) if version >= 2 else b""
    expected += i32(25) if version >= 1 else b""
    assert codec.encode_response(0, version, 9, response) == i32(4 + len(expected)) + i32(9) + expected


@pytest.mark.parametrize(("version", "max_bytes"), [(0, INT32_MAX), (2, INT32_MAX), (3, 1000)])
def test_fetch_v0_to_3_requests_take_kafkas_defaults(version, max_bytes):
    body = i32(-1) + i32(500) + i32(1) + (i32(1000) if version == 3 else b"")
    body += i32(1) + s16("t") + i32(1) + i32(0) + i64(17) + i32(4096)
    request = decode(1, version, body)
    assert (request.replica_id, request.max_bytes, request.isolation_level) == (-1, max_bytes, 0)
    assert request.topics[0].partitions[0].fetch_offset == 17


def test_list_offsets_v0_answers_old_style_offsets():
    request = decode(2, 0, i32(-1) + i32(1) + s16("t") + i32(1) + i32(0) + i64(-1) + i32(5))
    assert request.topics[0].partitions[0].timestamp == -1
    found = {"partition_index": 0, "error_code": 0, "timestamp": -1, "offset": 12}
    missing = {"partition_index": 1, "error_code": 0, "timestamp": -1, "offset": -1}
    response = codec.build(codec.response_class(2, 0), topics=[{"name": "t", "partitions": [found, missing]}])
    body = i32(1) + s16("t") + i32(2) + i32(0) + i16(0) + i32(1) + i64(12) + i32(1) + i16(0) + i32(0)
    assert codec.encode_response(2, 0, 1, response)[8:] == body


def test_offset_commit_v0_has_no_generation_and_v1_carries_one():
    partitions = i32(1) + s16("t") + i32(1) + i32(0) + i64(99)
    v0 = decode(8, 0, s16("g") + partitions + s16("m"))
    assert (v0.generation_id_or_member_epoch, v0.member_id) == (-1, "")
    v1 = decode(8, 1, s16("g") + i32(4) + s16("member") + partitions + i64(-1) + i16(-1))
    assert (v1.generation_id_or_member_epoch, v1.member_id) == (4, "member")
    assert v1.topics[0].partitions[0].committed_metadata is None


def test_v0_acl_requests_mean_literal_names():
    filter_ = i8(2) + s16("t") + i16(-1) + i16(-1) + i8(1) + i8(1)
    assert decode(29, 0, filter_).pattern_type_filter == PATTERN_LITERAL
    assert decode(31, 0, i32(1) + filter_).filters[0].pattern_type_filter == PATTERN_LITERAL
    creation = i8(2) + s16("t") + s16("User:a") + s16("*") + i8(3) + i8(3)
    assert decode(30, 0, i32(1) + creation).creations[0].resource_pattern_type == PATTERN_LITERAL


def test_describe_configs_v0_reports_is_default_from_the_config_source():
    config = {"name": "retention.ms", "value": "1", "read_only": False, "config_source": 5, "is_sensitive": False}
    response = codec.build(codec.response_class(32, 0), results=[
        {"error_code": 0, "error_message": None, "resource_type": 2, "resource_name": "t",
         "configs": [config, {**config, "config_source": 1}]}])
    body = codec.encode_response(32, 0, 1, response)[8:]
    one = s16("retention.ms") + s16("1") + b"\x00"
    assert body.endswith(i32(2) + one + b"\x01\x00" + one + b"\x00\x00")


@pytest.mark.parametrize("cut", [1, 5, 9])
def test_a_truncated_legacy_body_is_a_protocol_error(cut):
    body = i16(-1) + i32(1500) + i32(1) + s16("t") + i32(1) + i32(2) + i32(3) + b"abc"
    with pytest.raises(ProtocolError, match="malformed request body for API key 0 v0"):
        decode(0, 0, body[:-cut])


def test_trailing_bytes_and_bad_lengths_are_protocol_errors():
    with pytest.raises(ProtocolError, match="left over"):
        decode(20, 0, i32(0) + i32(100) + b"\x00")
    with pytest.raises(ProtocolError, match="negative length"):
        decode(20, 0, i32(1) + i16(-1) + i32(100))  # a topic name may not be null
    with pytest.raises(ProtocolError, match="negative array length"):
        decode(20, 0, i32(-2) + i32(100))


def test_the_fields_kio_lacks_reach_the_handler_and_a_legacy_answer_can_be_written_from_its_own_fields():
    """ListOffsets v0's max_num_offsets (request) and list of offsets (response) have no place in kio's v1."""
    body = i32(-1) + i32(1) + s16("t") + i32(1) + i32(0) + i64(-1) + i32(4)
    frame = header(2, 0) + body
    entity, fields = codec.decode_legacy_request(parse_request_header(frame, False), frame)
    assert type(entity).__version__ == 1 and entity.topics[0].partitions[0].timestamp == -1
    assert fields["topics"][0]["partitions"][0]["max_num_offsets"] == 4
    answer = codec.encode_legacy_response(2, 0, 3, {"topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "error_code": 0, "old_style_offsets": [9, 4, 0]}]}]})
    expected = i32(3) + i32(1) + s16("t") + i32(1) + i32(0) + i16(0) + i32(3) + i64(9) + i64(4) + i64(0)
    assert answer == i32(len(expected)) + expected
