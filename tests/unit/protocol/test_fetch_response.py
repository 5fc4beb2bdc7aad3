"""The hand-written Fetch v4-v12 encoder, byte for byte against kio."""
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
    uvarint,
)

VERSIONS = range(4, 13)


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


def tagged(version: int, p: FetchPartitionData) -> dict:
    """v12's tagged fields of ``p`` as kio takes them (absent ones keep kio's defaults, -1 and -1)."""
    fields: dict = {}
    if version >= 12 and p.diverging_epoch is not None:
        fields["diverging_epoch"] = dict(epoch=p.diverging_epoch[0], end_offset=p.diverging_epoch[1])
    if version >= 12 and p.current_leader is not None:
        fields["current_leader"] = dict(leader_id=p.current_leader[0], leader_epoch=p.current_leader[1])
    return fields


def kio_encoding(version, correlation_id, topics, throttle_time_ms=0, error_code=0, session_id=0) -> bytes:
    body = build(
        response_class(1, version), throttle_time=throttle_time_ms, error_code=error_code, session_id=session_id,
        responses=[dict(topic=name, partitions=[dict(
            partition_index=p.partition_index, error_code=p.error_code, high_watermark=p.high_watermark,
            last_stable_offset=p.last_stable_offset, log_start_offset=p.log_start_offset,
            aborted_transactions=None if p.aborted_transactions is None else [
                dict(producer_id=pid, first_offset=first) for pid, first in p.aborted_transactions],
            preferred_read_replica=p.preferred_read_replica, records=wire_bytes(p.records), **tagged(version, p),
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
epoch_pairs = st.one_of(st.none(), st.tuples(int32, int64))
leader_pairs = st.one_of(st.none(), st.tuples(int32, int32))
aborted = st.one_of(st.none(), st.lists(st.tuples(int64, int64), max_size=3))
partitions = st.builds(
    FetchPartitionData, int32, errors, int64, int64, int64, records, int32, epoch_pairs, leader_pairs, aborted,
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


@pytest.mark.parametrize("version", [3, 13, 0])
def test_versions_outside_4_to_12_are_refused(version):
    with pytest.raises(ValueError):
        encode_fetch_response(version, 1, [])


# -- v12 (flexible, KIP-320) -------------------------------------------------------------------------
def test_v12_without_tagged_fields_ends_each_partition_in_one_zero_byte():
    raw = joined(encode_fetch_response(12, 5, [("t", [FetchPartitionData(0, 0, 3, 3, 0, None)])]))
    assert raw == kio_encoding(12, 5, [("t", [FetchPartitionData(0, 0, 3, 3, 0, None)])])
    assert raw[8] == 0  # response header v1: no tagged fields after the correlation id
    # aborted null (0), preferred replica -1, empty records (1), partition / topic / body tags (0 each)
    assert raw.endswith(b"\x00" + b"\xff\xff\xff\xff" + b"\x01" + b"\x00\x00\x00")


@pytest.mark.parametrize("diverging, leader", [((4, 120), None), (None, (2, 7)), ((4, 120), (2, 7))])
def test_v12_diverging_epoch_and_current_leader_decode_with_kio(diverging, leader):
    by_topic = [("t", [FetchPartitionData(0, 0, 100, 100, 0, None, diverging_epoch=diverging, current_leader=leader),
                       FetchPartitionData(1, 0, 9, 9, 0, FakeRange(b"R" * 40))])]
    raw = joined(encode_fetch_response(12, 3, by_topic))
    assert raw == kio_encoding(12, 3, by_topic)
    _, body = decode_response(1, 12, raw[4:])
    first, second = body.responses[0].partitions
    assert (first.diverging_epoch.epoch, first.diverging_epoch.end_offset) == (diverging or (-1, -1))
    assert (first.current_leader.leader_id, first.current_leader.leader_epoch) == (leader or (-1, -1))
    assert first.records == b"" and second.records == b"R" * 40
    assert (second.diverging_epoch.epoch, second.current_leader.leader_id) == (-1, -1)


def test_v12_records_segment_sits_before_the_partition_tags():
    file_range = FakeRange(b"x" * 7)
    partition = FetchPartitionData(0, 0, 1, 1, 0, file_range, current_leader=(1, 2))
    segments = encode_fetch_response(12, 1, [("t", [partition])])
    assert segments[1] is file_range
    assert segments[0].endswith(b"\xff\xff\xff\xff" + uvarint(8))  # preferred replica, records length + 1
    assert segments[2].startswith(b"\x01\x01")  # one tagged field: tag 1, current_leader
    assert struct.unpack_from(">i", segments[0])[0] == segments_size(segments) - 4


@pytest.mark.parametrize("value", [0, 1, 127, 128, 16383, 16384, 2**21 - 1, 2**21, 2**31 - 1])
def test_uvarint(value):
    encoded = uvarint(value)
    decoded, shift = 0, 0
    for byte in encoded:
        decoded |= (byte & 0x7F) << shift
        shift += 7
    assert decoded == value and all(b & 0x80 for b in encoded[:-1]) and not encoded[-1] & 0x80


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


@pytest.mark.parametrize("version", [4, 5, 11, 12])
def test_aborted_transactions_decode_with_kio(version):
    """READ_COMMITTED answers a list (here two, and an empty one); READ_UNCOMMITTED null."""
    by_topic = [("t", [FetchPartitionData(0, 0, 10, 6, 0, FakeRange(b"R" * 20), aborted_transactions=[(7, 1), (9, 4)]),
                       FetchPartitionData(1, 0, 3, 3, 0, None, aborted_transactions=[]),
                       FetchPartitionData(2, 0, 3, 3, 0, None)])]
    raw = joined(encode_fetch_response(version, 5, by_topic))
    assert raw == kio_encoding(version, 5, by_topic)
    _, body = decode_response(1, version, raw[4:])
    first, empty, null = body.responses[0].partitions
    assert [(a.producer_id, a.first_offset) for a in first.aborted_transactions] == [(7, 1), (9, 4)]
    assert first.last_stable_offset == 6 and first.records == b"R" * 20
    assert list(empty.aborted_transactions) == [] and null.aborted_transactions is None


def test_aborted_transactions_v4_bytes():
    p = FetchPartitionData(0, 0, 10, 6, 0, None, aborted_transactions=[(7, 1)])
    raw = joined(encode_fetch_response(4, 5, [("t", [p])]))
    # ... LSO 6, one aborted transaction: producer 7 from offset 1, then an empty records field
    assert raw.endswith(struct.pack(">qiqqi", 6, 1, 7, 1, 0))
