"""Framing: the size-prefix stream decoder and the request header's fixed prefix."""
from __future__ import annotations

import io
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.request_header.v1.header import RequestHeader as KioHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as KioHeaderV2
from kio.serial import entity_writer

from brokers.protocol.framing import (
    MIN_RESPONSE_FRAME_BYTES,
    DEFAULT_MAX_FRAME_BYTES,
    FrameDecoder,
    ProtocolError,
    RequestHeader,
    frame_size_prefix,
    parse_request_header,
)


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def split(stream: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(c, len(stream)) for c in cuts})
    chunks, start = [], 0
    for point in points + [len(stream)]:
        chunks.append(stream[start:point])
        start = point
    return chunks


payloads = st.lists(st.binary(min_size=8, max_size=300), max_size=12)


@given(payloads, st.lists(st.integers(min_value=0, max_value=4000), max_size=30),
       st.sampled_from([bytes, bytearray, memoryview]))
@settings(max_examples=300)
def test_any_split_of_a_stream_yields_the_same_frames(frames, cuts, chunk_type):
    stream = b"".join(framed(f) for f in frames)
    decoder = FrameDecoder()
    out = []
    for chunk in split(stream, cuts):
        out.extend(decoder.feed(chunk_type(chunk)))
    assert out == frames
    assert all(type(f) is bytes for f in out)
    assert decoder.buffered == 0


@given(payloads, st.binary(min_size=1, max_size=30))
def test_an_incomplete_tail_is_kept_until_completed(frames, extra):
    last = framed(b"x" * 8 + extra)
    stream = b"".join(framed(f) for f in frames) + last
    decoder = FrameDecoder()
    assert decoder.feed(stream[:-1]) == frames
    assert decoder.buffered == len(last) - 1
    assert decoder.feed(stream[-1:]) == [b"x" * 8 + extra]


def test_a_reused_receive_buffer_is_copied():
    decoder = FrameDecoder()
    buffer = bytearray(framed(b"abcdefgh-1")[:-3])
    assert decoder.feed(memoryview(buffer)) == []
    buffer[:] = b"\x00" * len(buffer)  # the caller reuses its buffer
    assert decoder.feed(b"h-1") == [b"abcdefgh-1"]


@pytest.mark.parametrize("size", [0, 1, 7, -1, -(2**31)])
def test_a_size_below_eight_raises_on_the_prefix_alone(size):
    with pytest.raises(ProtocolError, match="too small"):
        FrameDecoder().feed(struct.pack(">i", size))


def test_a_response_reader_takes_frames_down_to_a_bare_correlation_id():
    decoder = FrameDecoder(min_frame_bytes=MIN_RESPONSE_FRAME_BYTES)
    assert decoder.feed(framed(b"\x00\x00\x00\x07")) == [b"\x00\x00\x00\x07"]
    with pytest.raises(ProtocolError, match="below 4, too small for a response header"):
        decoder.feed(struct.pack(">i", 3))


def test_a_size_above_the_limit_raises_before_the_body_is_buffered():
    decoder = FrameDecoder(max_frame_bytes=100)
    assert decoder.feed(framed(b"y" * 100)) == [b"y" * 100]  # the limit itself is allowed
    with pytest.raises(ProtocolError, match="exceeds"):
        decoder.feed(struct.pack(">i", 101))


def test_a_2_gib_prefix_raises_immediately():
    decoder = FrameDecoder()
    with pytest.raises(ProtocolError, match="exceeds"):
        decoder.feed(b"\x7f\xff")
        decoder.feed(b"\xff\xff")
    assert decoder.buffered < 4  # nothing beyond the prefix was ever held


def test_a_bad_size_after_good_frames_raises():
    with pytest.raises(ProtocolError):
        FrameDecoder().feed(framed(b"12345678") + struct.pack(">i", 3) + b"abc")


def test_max_frame_bytes_is_validated():
    with pytest.raises(ValueError):
        FrameDecoder(max_frame_bytes=4)
    assert DEFAULT_MAX_FRAME_BYTES == 100 * 1024 * 1024


def test_one_100_mib_frame_in_64_kib_chunks():
    payload = bytes(range(256)) * (DEFAULT_MAX_FRAME_BYTES // 256)
    stream = memoryview(framed(payload))
    decoder = FrameDecoder()
    out = []
    step = 64 * 1024
    for start in range(0, len(stream), step):
        out.extend(decoder.feed(stream[start : start + step]))
        assert len(out) == 1 or decoder.buffered == min(start + step, len(stream))
    assert len(out) == 1 and out[0] == payload


def test_many_small_frames_in_one_chunk():
    frames = [b"%08d" % i for i in range(10_000)]
    assert FrameDecoder().feed(b"".join(framed(f) for f in frames)) == frames


def test_frame_size_prefix():
    assert frame_size_prefix(0) == b"\x00\x00\x00\x00"
    assert frame_size_prefix(258) == b"\x00\x00\x01\x02"
    assert frame_size_prefix(2**31 - 1) == b"\x7f\xff\xff\xff"
    for bad in (-1, 2**31):
        with pytest.raises(ValueError):
            frame_size_prefix(bad)


# --- request headers --------------------------------------------------------------------------------

def kio_header(flexible: bool, key: int, version: int, correlation_id: int, client_id: str | None) -> bytes:
    cls = KioHeaderV2 if flexible else KioHeaderV1
    buffer = io.BytesIO()
    entity_writer(cls)(buffer, cls(request_api_key=key, request_api_version=version,
                                   correlation_id=correlation_id, client_id=client_id))
    return buffer.getvalue()


@given(st.booleans(), st.integers(-(2**15), 2**15 - 1), st.integers(-(2**15), 2**15 - 1),
       st.integers(-(2**31), 2**31 - 1), st.none() | st.text(max_size=40), st.binary(max_size=20))
def test_header_matches_kio(flexible, key, version, correlation_id, client_id, body):
    raw = kio_header(flexible, key, version, correlation_id, client_id)
    header = parse_request_header(raw + body, flexible)
    assert header == RequestHeader(key, version, correlation_id, client_id, len(raw))


def test_header_v1_layout():
    frame = b"\x00\x03\x00\x04\x00\x00\x00\x07\x00\x03abc" + b"BODY"
    assert parse_request_header(frame, False) == RequestHeader(3, 4, 7, "abc", 13)
    assert parse_request_header(bytearray(frame), False).body_offset == 13
    assert parse_request_header(memoryview(frame), False).client_id == "abc"


def test_null_and_empty_client_id():
    assert parse_request_header(b"\x00\x12\x00\x00\x00\x00\x00\x01\xff\xff", False).client_id is None
    assert parse_request_header(b"\x00\x12\x00\x00\x00\x00\x00\x01\x00\x00", False).client_id == ""


def test_flexible_header_skips_tagged_fields():
    prefix = b"\x00\x12\x00\x03\x00\x00\x00\x09\x00\x02id"
    tags = b"\x02" + b"\x00\x03xyz" + b"\x81\x01\x01!"  # tag 0 (3 bytes), tag 129 (1 byte)
    header = parse_request_header(prefix + tags + b"BODY", True)
    assert header == RequestHeader(18, 3, 9, "id", len(prefix) + len(tags))
    assert parse_request_header(prefix + b"\x00", True).body_offset == len(prefix) + 1


def test_a_long_tag_payload_uses_a_multibyte_varint():
    prefix = b"\x00\x12\x00\x03\x00\x00\x00\x09\xff\xff"
    tags = b"\x01\x05\xac\x02" + b"t" * 300  # size 300 = 0xac 0x02
    assert parse_request_header(prefix + tags, True).body_offset == len(prefix) + len(tags)


@pytest.mark.parametrize("flexible", [False, True])
def test_every_truncated_header_raises(flexible):
    full = b"\x00\x12\x00\x03\x00\x00\x00\x09\x00\x05hello"
    if flexible:
        full += b"\x01\x00\x02ab"
    parse_request_header(full, flexible)
    for cut in range(len(full)):
        with pytest.raises(ProtocolError):
            parse_request_header(full[:cut], flexible)


@pytest.mark.parametrize("frame, flexible, message", [
    (b"\x00\x00\x00\x00\x00\x00\x00\x01\xff\xfe", False, "client_id length"),
    (b"\x00\x00\x00\x00\x00\x00\x00\x01\x00\x02\xff\xfe", False, "UTF-8"),
    (b"\x00\x00\x00\x00\x00\x00\x00\x01\xff\xff\xff\xff\xff\xff\xff\x01", True, "longer than"),
    (b"\x00\x00\x00\x00\x00\x00\x00\x01\xff\xff\x01\x00\x09abc", True, "overruns"),
])
def test_malformed_headers_raise(frame, flexible, message):
    with pytest.raises(ProtocolError, match=message):
        parse_request_header(frame, flexible)
