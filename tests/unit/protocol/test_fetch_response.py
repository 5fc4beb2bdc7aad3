"""The hand-written Fetch v4-v11 encoder, byte for byte against kio."""
from __future__ import annotations

import struct
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brokers.protocol.codec import build, decode_response, encode_response, response_class
from brokers.protocol.fetch_response import (
    FetchPartitionData,
    encode_fetch_response,
    encode_legacy_fetch_response,
    records_size,
    segments_size,
)

VERSIONS = range(4, 12)


@dataclass(frozen=True)
class FakeRange:
    """What the I/O layer passes for a file slice: only a size, plus the bytes it stands for in tests."""

    data: bytes

    @property
    def size(self) -> int:
        return len(self.data)


def joined(segments: list) -> bytes:
    return b"".join(s.data if isinstance(s, FakeRange) else bytes(s) for s in segments)


def wire_bytes(records) -> bytes:
    if records is None:
        return b""
    return records.data if isinstance(records, FakeRange) else bytes(records)


def kio_encoding(version, correlation_id, topics, throttle_time_ms=0, error_code=0, session_id=0) -> bytes:
    body = build(
        response_class(1, version), throttle_time=throttle_time_ms, error_code=error_code, session_id=session_id,
        responses=[dict(topic=name, partitions=[dict(
            partition_index=p.partition_index, error_code=p.error_code, high_watermark=p.high_watermark,
            last_stable_offset=p.last_stable_offset, log_start_offset=p.log_start_offset, aborted_transactions=None,
            preferred_read_replica=p.preferred_read_replica, records=wire_bytes(p.records),
        ) for p in partitions]) for name, partitions in topics],
    )
    return encode_response(1, version, correlation_id, body)


errors = st.sampled_from([0, 1, 3, 6, 74, -1])  # codes kio's ErrorCode knows
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
records = st.one_of(
    st.none(),
    st.binary(max_size=64),
    st.binary(max_size=64).map(memoryview),
    st.binary(max_size=64).map(bytearray),
    st.binary(max_size=64).map(FakeRange),
)
partitions = st.builds(
    FetchPartitionData, int32, errors, int64, int64, int64, records, int32,
)
topics = st.lists(st.tuples(st.text(max_size=20), st.lists(partitions, max_size=4)), max_size=4)


@given(st.sampled_from(VERSIONS), int32, topics, int32, errors, int32)
@settings(max_examples=400)
def test_segments_join_to_kio_bytes(version, correlation_id, by_topic, throttle, error, session):
    segments = encode_fetch_response(version, correlation_id, by_topic, throttle_time_ms=throttle,
                                     error_code=error, session_id=session)
    expected_error, expected_session = (error, session) if version >= 7 else (0, 0)
    assert joined(segments) == kio_encoding(version, correlation_id, by_topic, throttle, expected_error,
                                            expected_session)


@pytest.mark.parametrize("version", VERSIONS)
def test_multiple_topics_and_partitions_decode_with_kio(version):
    blob, file_range = b"B" * 100, FakeRange(b"F" * 300)
    by_topic = [
        ("alpha", [FetchPartitionData(0, 0, 10, 9, 2, blob), FetchPartitionData(1, 1, 7, 7, 0, None)]),
        ("beta", [FetchPartitionData(5, 0, 20, 20, 5, file_range, preferred_read_replica=3)]),
        ("empty", []),
    ]
    segments = encode_fetch_response(version, 77, by_topic, throttle_time_ms=12, error_code=0, session_id=4)
    raw = joined(segments)
    assert raw == kio_encoding(version, 77, by_topic, 12, 0, 4 if version >= 7 else 0)
    correlation_id, body = decode_response(1, version, raw[4:])
    assert correlation_id == 77 and body.throttle_time.total_seconds() == 0.012
    alpha, beta, empty = body.responses
    assert [p.records for p in alpha.partitions] == [blob, b""]
    assert beta.partitions[0].records == file_range.data and empty.partitions == ()
    assert alpha.partitions[0].aborted_transactions is None
    assert version < 5 or alpha.partitions[0].log_start_offset == 2
    assert version < 7 or body.session_id == 4
    assert version < 11 or beta.partitions[0].preferred_read_replica == 3


@pytest.mark.parametrize("version", VERSIONS)
def test_records_objects_pass_through_untouched(version):
    view, file_range = memoryview(b"m" * 10), FakeRange(b"f" * 5)
    segments = encode_fetch_response(version, 1, [("t", [
        FetchPartitionData(0, 0, 1, 1, 0, view), FetchPartitionData(1, 0, 1, 1, 0, b""),
        FetchPartitionData(2, 0, 1, 1, 0, file_range), FetchPartitionData(3, 0, 1, 1, 0, FakeRange(b"")),
    ])])
    assert [type(s) for s in segments] == [bytes, memoryview, bytes, FakeRange, bytes]
    assert segments[1] is view and segments[3] is file_range
    total = segments_size(segments)
    assert total == len(joined(segments))
    assert struct.unpack_from(">i", segments[0])[0] == total - 4


@pytest.mark.parametrize("version", VERSIONS)
def test_no_topics_is_one_fixed_segment(version):
    segments = encode_fetch_response(version, 9, [], error_code=3 if version >= 7 else 0)
    assert len(segments) == 1 and type(segments[0]) is bytes
    assert segments[0] == kio_encoding(version, 9, [], 0, 3 if version >= 7 else 0)


def test_null_records_are_written_as_empty_not_null():
    raw = joined(encode_fetch_response(11, 1, [("t", [FetchPartitionData(0, 3, -1, -1, -1, None)])]))
    assert raw.endswith(b"\xff\xff\xff\xff" + b"\xff\xff\xff\xff" + b"\x00\x00\x00\x00")  # aborted, replica, records


def test_records_size():
    assert records_size(None) == 0
    assert records_size(b"abc") == 3 and records_size(bytearray(4)) == 4
    assert records_size(memoryview(b"abcdef").cast("H")) == 6
    assert records_size(FakeRange(b"xy")) == 2


@pytest.mark.parametrize("version", [3, 12, 0])
def test_versions_outside_4_to_11_are_refused(version):
    with pytest.raises(ValueError):
        encode_fetch_response(version, 1, [])


# --- v0-v3 ---------------------------------------------------------------------------------------


def test_legacy_v0_golden_bytes():
    """v0 from the schema: no throttle_time_ms, and per partition only index, error, high watermark, records."""
    segments = encode_legacy_fetch_response(0, 77, [("ab", [FetchPartitionData(2, 0, 9, 9, 0, b"xyz")]),
                                                     ("c", [FetchPartitionData(0, 6, -1, -1, -1, None)])])
    expected = bytes.fromhex(
        "0000003e"  # size 62 (all that follows)
        "0000004d"  # correlation id 77
        "00000002"  # two topics
        "0002" "6162" "00000001"  # "ab", one partition
        "00000002" "0000" "0000000000000009" "00000003"  # index 2, no error, high watermark 9, 3 record bytes
    ) + b"xyz" + bytes.fromhex(
        "0001" "63" "00000001"  # "c", one partition
        "00000000" "0006" "ffffffffffffffff" "00000000"  # NOT_LEADER_OR_FOLLOWER, hw -1, empty records
    )
    assert joined(segments) == expected
    assert struct.unpack(">i", expected[:4])[0] == len(expected) - 4
    assert segments[1] == b"xyz"  # records passed through, not copied into the fixed parts


@pytest.mark.parametrize("version", [1, 2, 3])
def test_legacy_v1_to_v3_match_kafka_python(version):
    """kafka-python 3 encodes every Fetch version from Kafka's JSON schema: an independent reference."""
    from kafka.protocol.consumer.fetch import FetchResponse

    topics = [("t1", [FetchPartitionData(0, 0, 12, 12, 0, b"m" * 40), FetchPartitionData(1, 1, -1, -1, -1, None)]),
              ("t2", [FetchPartitionData(3, 0, 5, 5, 0, FakeRange(b"r" * 7))])]
    reference = FetchResponse(version=version, throttle_time_ms=25, responses=[
        FetchResponse.FetchableTopicResponse(topic=name, partitions=[
            FetchResponse.FetchableTopicResponse.PartitionData(
                partition_index=p.partition_index, error_code=p.error_code, high_watermark=p.high_watermark,
                records=wire_bytes(p.records))
            for p in partitions])
        for name, partitions in topics]).encode(version=version)
    ours = joined(encode_legacy_fetch_response(version, 1234, topics, throttle_time_ms=25))
    assert ours[8:] == bytes(reference)
    assert struct.unpack(">ii", ours[:8]) == (len(ours) - 4, 1234)


@pytest.mark.parametrize("version", [-1, 4, 11])
def test_legacy_encoder_takes_only_v0_to_v3(version):
    with pytest.raises(ValueError):
        encode_legacy_fetch_response(version, 1, [])
