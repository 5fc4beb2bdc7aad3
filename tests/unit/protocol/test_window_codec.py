"""Every (API, version) pair the table advertises has codec support both ways, without a broker: a request
with a value in every field (two items per array) encodes and decodes back to the same bytes, and so does
a response; the Fetch and ApiVersions responses, which the broker encodes by hand, decode with the codec
to what was encoded. A table row widened without codec support fails here first."""
from __future__ import annotations

import datetime
import struct
import uuid
from dataclasses import fields

import pytest
from kio.serial._introspect import EntityField, EntityTupleField, PrimitiveTupleField, classify_field

from brokers.protocol import codec
from brokers.protocol.api_versions import ApiKey, api_versions_response, is_flexible
from brokers.protocol.errors import ErrorCode
from brokers.protocol import fetch_response
from brokers.protocol.fetch_response import FetchPartitionData
from brokers.protocol.framing import FrameDecoder, parse_request_header

PAIRS = [(key, version) for key in ApiKey for version in range(key.min_version, key.max_version + 1)]
IDS = [f"{key.api_name}-v{version}" for key, version in PAIRS]
BATCH = bytes(range(61))  # a records field's bytes pass through unread
SAMPLES = {
    "bool": True, "int8": 1, "int16": 2, "int32": 3, "int64": 2**40, "string": "s", "bytes": b"\x01\x02",
    "records": BATCH, "uuid": uuid.UUID(int=7), "error_code": ErrorCode.NONE, "timedelta_i32": 5,
    "timedelta_i64": 6, "datetime_i64": 1_600_000_000_000, "float64": 1.5,
}


def sample(cls: type):
    """An entity of ``cls`` with a value in every field and two items in every array."""
    values = {}
    for field in fields(cls):
        kind = classify_field(field)
        if isinstance(kind, EntityField):
            values[field.name] = sample(kind.type_)
        elif isinstance(kind, EntityTupleField):
            values[field.name] = [sample(kind.type_), sample(kind.type_)]
        elif isinstance(kind, PrimitiveTupleField):
            values[field.name] = [SAMPLES[field.metadata["kafka_type"]]] * 2
        else:
            values[field.name] = SAMPLES[field.metadata["kafka_type"]]
    return codec.build(cls, **values)


def one_frame(raw: bytes) -> bytes:
    (frame,) = FrameDecoder().feed(raw)
    return bytes(frame)


def payload(raw: bytes) -> bytes:
    """A response frame's payload, its size prefix checked."""
    assert struct.unpack_from(">i", raw)[0] == len(raw) - 4
    return raw[4:]


@pytest.mark.parametrize(("key", "version"), PAIRS, ids=IDS)
def test_a_request_encodes_and_decodes(key, version):
    raw = codec.encode_request(key, version, 9, "window", sample(codec.request_class(key, version)))
    frame = one_frame(raw)
    header = parse_request_header(frame, is_flexible(key, version))
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (key, version, 9, "window")
    decoded = codec.decode_request(header, frame)
    assert codec.encode_request(key, version, 9, "window", decoded) == raw


HAND_ENCODED = (ApiKey.FETCH, ApiKey.API_VERSIONS)
CODEC_ENCODED = [(key, version) for key, version in PAIRS if key not in HAND_ENCODED]


@pytest.mark.parametrize(("key", "version"), CODEC_ENCODED, ids=[f"{k.api_name}-v{v}" for k, v in CODEC_ENCODED])
def test_a_response_encodes_and_decodes(key, version):
    raw = codec.encode_response(key, version, 11, sample(codec.response_class(key, version)))
    correlation_id, decoded = codec.decode_response(key, version, payload(raw))
    assert correlation_id == 11
    assert codec.encode_response(key, version, 11, decoded) == raw


def encode_fetch(version: int, correlation_id: int, topics: list) -> list:
    """The broker's own encoder of a Fetch response of ``version``: the message-set era's layout below v4."""
    if version < fetch_response.MIN_VERSION:
        return fetch_response.encode_legacy_fetch_response(version, correlation_id, topics)
    return fetch_response.encode_fetch_response(version, correlation_id, topics)


FETCHES = range(ApiKey.FETCH.min_version, ApiKey.FETCH.max_version + 1)


@pytest.mark.parametrize("version", FETCHES, ids=[f"Fetch-v{v}" for v in FETCHES])
def test_the_fetch_response_the_broker_encodes_decodes(version):
    partition = FetchPartitionData(0, ErrorCode.NONE, 10, 9, 1, BATCH)
    segments = encode_fetch(version, 12, [("t", [partition])])
    raw = b"".join(bytes(segment) for segment in segments)
    correlation_id, decoded = codec.decode_response(ApiKey.FETCH, version, payload(raw))
    assert correlation_id == 12
    (topic,) = decoded.responses
    (answer,) = topic.partitions
    assert (topic.topic, answer.partition_index, answer.error_code, answer.high_watermark) == ("t", 0, 0, 10)
    assert bytes(answer.records) == BATCH
    if version >= 4:
        assert answer.last_stable_offset == 9
    if version >= 5:
        assert answer.log_start_offset == 1


VERSIONS = range(ApiKey.API_VERSIONS.min_version, ApiKey.API_VERSIONS.max_version + 1)


@pytest.mark.parametrize("version", VERSIONS, ids=[f"ApiVersions-v{v}" for v in VERSIONS])
def test_the_api_versions_response_decodes_to_the_table(version):
    correlation_id, decoded = codec.decode_response(ApiKey.API_VERSIONS, version,
                                                    payload(api_versions_response(13, version)))
    assert correlation_id == 13 and decoded.error_code == ErrorCode.NONE
    assert [(k.api_key, k.min_version, k.max_version) for k in decoded.api_keys] == [
        (int(key), key.min_version, key.max_version) for key in sorted(ApiKey)]
    if version >= 1:
        assert decoded.throttle_time == datetime.timedelta(0)
