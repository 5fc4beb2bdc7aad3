"""Produce v0-2 and Fetch v0-3 through the handlers: magic 0/1 message sets up-converted on append and
v2 batches down-converted for old fetchers. Requests arrive as kio's lowest versions of each API
(Produce v3, Fetch v4), which is how the codec decodes the old versions; the header carries the real one."""
from __future__ import annotations

import struct
import threading

import pytest

from brokers.protocol import codec, compression
from brokers.protocol.errors import ErrorCode
from brokers.protocol.framing import RequestHeader
from brokers.protocol.message_set import build_message_set, encode_message, iter_messages, shallow_messages
from brokers.protocol.record import Record, build_batch, iter_records
from brokers.protocol.record_batch import iter_batches
from brokers.server.handlers import fetch_down_conversion
from brokers.server.handlers.fetch import handle_fetch
from brokers.server.handlers.fetch_down_conversion import OVERFLOW_MARKER
from brokers.server.handlers.produce import handle_produce
from brokers.storage.log_config import LogConfig
from tests.unit.server.test_handlers import World, batch, fetch_request, run

PRODUCE, FETCH = 0, 1
T0 = 1_700_000_000_000
ENTRIES = [(i, T0 + i, b"key%d" % i, b"value%d" % i) for i in range(4)]


@pytest.fixture
def world(tmp_path):
    w = World(tmp_path)
    yield w
    w.log_manager.shutdown()


async def produce(world, version, records, topic="t", partition=0, acks=1):
    request = codec.build(codec.request_class(PRODUCE, 3), transactional_id=None, acks=acks, timeout=1000,
                          topic_data=[dict(name=topic, partition_data=[dict(index=partition, records=records)])])
    (framed,) = await handle_produce(world.context, RequestHeader(PRODUCE, version, 7, "old-client", 0), request)
    correlation_id, response = codec.decode_response(PRODUCE, version, framed[4:])
    assert correlation_id == 7
    ((topic_response,),) = [response.responses]
    (partition_response,) = topic_response.partition_responses
    return partition_response


def parse_legacy_fetch(version: int, frame: bytes) -> dict:
    """{(topic, partition): (error, high watermark, records)} of a Fetch v0-3 response frame."""
    size, correlation_id = struct.unpack_from(">ii", frame)
    assert (size, correlation_id) == (len(frame) - 4, 7)
    position = 8 + (4 if version >= 1 else 0)
    (topics,) = struct.unpack_from(">i", frame, position)
    position += 4
    out = {}
    for _ in range(topics):
        (length,) = struct.unpack_from(">h", frame, position)
        name = frame[position + 2 : position + 2 + length].decode()
        (partitions,) = struct.unpack_from(">i", frame, position + 2 + length)
        position += 6 + length
        for _ in range(partitions):
            index, error, high_watermark, records_size = struct.unpack_from(">ihqi", frame, position)
            position += 18
            out[(name, index)] = (error, high_watermark, frame[position : position + records_size])
            position += records_size
    assert position == len(frame)
    return out


async def fetch(world, version, partitions, **kwargs):
    request = codec.build(codec.request_class(FETCH, 4), **fetch_request(partitions, **kwargs))
    segments = await handle_fetch(world.context, RequestHeader(FETCH, version, 7, "old-client", 0), request)
    frame = b"".join(s if isinstance(s, (bytes, bytearray)) else s.read() for s in segments)
    return parse_legacy_fetch(version, frame)


@pytest.mark.parametrize("codec_id", [0, 1, 2, 3])
@pytest.mark.parametrize("version, magic", [(0, 0), (1, 0), (2, 1)])
def test_produce_v0_to_v2_up_converts_and_fetch_v0_to_v3_down_converts(world, version, magic, codec_id):
    response = run(produce(world, version, build_message_set(ENTRIES, magic, codec=codec_id)))
    assert (response.error_code, response.base_offset) == (0, 0)
    response = run(produce(world, version, build_message_set(ENTRIES, magic, codec=codec_id)))
    assert response.base_offset == 4
    stored = world.log().read(0, 1 << 20).records.read()
    assert [h.compression for h in iter_batches(stored)] == [codec_id, codec_id]
    expected_ts = [T0 + i for i in range(4)] * 2 if magic else [-1] * 8
    assert [r.timestamp for r in iter_records(stored)] == expected_ts
    for fetch_version in range(4):
        messages = consume(world, fetch_version, 8)
        assert [(m.offset, m.key) for m in messages] == [(i, b"key%d" % (i % 4)) for i in range(8)]
        assert [m.timestamp for m in messages] == (expected_ts if fetch_version >= 2 else [-1] * 8)
        assert {m.magic for m in messages} == {0 if fetch_version <= 1 else 1}
        error, high_watermark, records = run(fetch(world, fetch_version, [("t", 0, 0, 1 << 20)]))[("t", 0)]
        assert (error, high_watermark) == (0, 8)
        assert {m.compression for m in shallow_messages(records)[0]} == {codec_id}


def consume(world, version, end):
    """Fetch from offset 0 to ``end`` as an old consumer does: the next fetch starts after the last message."""
    out, offset = [], 0
    while offset < end:
        error, _, records = run(fetch(world, version, [("t", 0, offset, 1 << 20)]))[("t", 0)]
        assert error == 0
        messages = [m for m in iter_messages(records) if m.offset >= offset]
        assert messages, "a fetch below the high watermark returned no message"
        out += messages
        offset = messages[-1].offset + 1
    return out


def test_conversions_are_counted_as_kafkas_message_conversions(world):
    run(produce(world, 1, build_message_set(ENTRIES, 0, codec=1)))
    run(produce(world, 3, batch([1, 2, 3])))
    traffic = world.context.stats.topics["t"]
    assert (traffic.produce_message_conversions, traffic.fetch_message_conversions) == (4, 0)
    run(fetch(world, 2, [("t", 0, 4, 1 << 20)]))  # the v2-produced batch: 3 records
    run(fetch(world, 0, [("t", 0, 5, 1 << 20)]))  # from inside it: 2 records
    assert (traffic.produce_message_conversions, traffic.fetch_message_conversions) == (4, 3 + 2)
    run(fetch(world, 2, [("t", 0, 0, 1 << 20)]))  # the gzip batch, whole
    assert traffic.fetch_message_conversions in (3 + 2 + 4, 3 + 2 + 4 + 3)  # and the v2 batch if it fits


def test_produce_v2_log_append_time_claim_is_invalid_timestamp(world):
    response = run(produce(world, 2, build_message_set(ENTRIES, 1, log_append_time=T0)))
    assert (response.error_code, response.base_offset) == (ErrorCode.INVALID_TIMESTAMP, -1)
    assert world.log().log_end_offset == 0


def test_produce_v0_bad_crc_is_corrupt_message(world):
    data = bytearray(build_message_set(ENTRIES, 0))
    data[-1] ^= 0x01
    assert run(produce(world, 0, bytes(data))).error_code == ErrorCode.CORRUPT_MESSAGE
    assert world.log().log_end_offset == 0


@pytest.mark.parametrize("records", [b"", b"\x00" * 10, build_message_set(ENTRIES, 1, codec=1) * 2])
def test_produce_v1_invalid_message_sets(world, records):
    assert run(produce(world, 1, records)).error_code == ErrorCode.INVALID_RECORD


def test_produce_v2_accepts_a_v2_batch_too(world):
    assert run(produce(world, 2, batch([1, 2]))).base_offset == 0
    assert world.log().log_end_offset == 2


def test_produce_v0_to_a_compacted_topic_needs_keys(world):
    world.log().update_config(LogConfig(cleanup_policy="compact"))
    keyless = build_message_set([(0, T0, None, b"v")], 1)
    assert run(produce(world, 2, keyless)).error_code == ErrorCode.INVALID_RECORD


def test_fetch_v2_drops_records_below_the_fetch_offset_and_keeps_headers_out(world):
    records = [Record(i, i, b"k", b"v%d" % i, (("h", b"x"),)) for i in range(5)]
    run(produce(world, 3, bytes(build_batch(records, base_timestamp=T0))))
    _, _, data = run(fetch(world, 2, [("t", 0, 3, 1 << 20)]))[("t", 0)]
    assert [(m.offset, m.value, m.timestamp) for m in iter_messages(data)] == [(3, b"v3", T0 + 3), (4, b"v4", T0 + 4)]


def test_fetch_v0_v2_partition_max_bytes_is_a_hard_limit(world):
    run(produce(world, 3, batch(list(range(50)))))
    for version in (0, 2):
        error, _, data = run(fetch(world, version, [("t", 0, 0, 100)]))[("t", 0)]
        assert (error, data) == (0, OVERFLOW_MARKER)  # the client reports a message bigger than its fetch size
    _, _, data = run(fetch(world, 3, [("t", 0, 0, 100)]))[("t", 0)]  # v3: KIP-74, the first batch whole
    assert len(list(iter_messages(data))) == 50


def test_fetch_v3_converted_size_is_bounded_by_the_read(world):
    for _ in range(5):
        run(produce(world, 3, batch(list(range(20)))))
    one_batch = len(world.log().read(0, 1).records.read())
    one_converted = len(build_message_set([(i, 1000 + i, b"k%d" % i, b"v%d" % i) for i in range(20)], 1))
    assert 2 * one_converted > 3 * one_batch > one_converted  # magic 1 takes more bytes than v2
    _, _, data = run(fetch(world, 3, [("t", 0, 0, 3 * one_batch)]))[("t", 0)]
    assert [m.offset for m in iter_messages(data)] == list(range(20))  # whole batches within the read's size
    _, _, data = run(fetch(world, 3, [("t", 0, 0, one_batch)]))[("t", 0)]
    assert len(data) == one_converted > one_batch  # the first batch always whole


def test_downconversion_disabled_is_unsupported_version(world):
    run(produce(world, 3, batch([1, 2])))
    world.log().update_config(LogConfig(message_downconversion_enable="false"))
    assert run(fetch(world, 1, [("t", 0, 0, 1 << 20)]))[("t", 0)] == (ErrorCode.UNSUPPORTED_VERSION, -1, b"")
    # nothing to convert: no error, as in Kafka
    assert run(fetch(world, 1, [("t", 0, 2, 1 << 20)]))[("t", 0)] == (0, 2, b"")


def test_fetch_v1_zstd_is_unsupported_compression_type(world):
    run(produce(world, 7, batch([1, 2], codec_=compression.ZSTD)))
    error, _, _ = run(fetch(world, 1, [("t", 0, 0, 1 << 20)]))[("t", 0)]
    assert error == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


def test_fetch_v0_errors_and_empty_partitions(world):
    body = run(fetch(world, 0, [("t", 0, 0, 1 << 20), ("t", 1, 0, 1 << 20), ("t", 0, 99, 1 << 20)]))
    assert body[("t", 1)] == (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, b"")


def test_max_timestamp_of_an_up_converted_set_is_the_records(world):
    run(produce(world, 2, b"".join(encode_message(0, 1, 0, ts, None, b"v") for ts in (T0 + 5, T0 + 9, T0 + 1))))
    (header,) = iter_batches(world.log().read(0, 1 << 20).records.read())
    assert (header.base_timestamp, header.max_timestamp) == (T0 + 5, T0 + 9)
    assert world.log().offset_for_timestamp(T0 + 6) == (1, T0 + 9)


def test_big_reads_convert_on_a_worker_thread(world, monkeypatch):
    threads = []
    real = fetch_down_conversion.converted

    def spy(*args):
        threads.append(threading.current_thread() is threading.main_thread())
        return real(*args)

    monkeypatch.setattr(fetch_down_conversion, "converted", spy)
    run(produce(world, 3, batch(list(range(10)))))
    run(fetch(world, 2, [("t", 0, 0, 1 << 20)]))
    assert threads == [True]  # small: on the loop
    big = bytes(build_batch([Record(i, i, None, b"x" * 300) for i in range(10)], base_timestamp=T0))
    for _ in range(30):
        run(produce(world, 3, big, topic="u"))
    assert fetch_down_conversion.OFFLOAD_BYTES < len(world.log("u").read(0, 1 << 20).records.read())
    data = run(fetch(world, 2, [("u", 0, 0, 1 << 20)]))[("u", 0)][2]
    assert threads == [True, False]  # big: on a worker thread
    assert [m.offset for m in iter_messages(data)][:10] == list(range(10))


def test_log_append_time_topic_stamps_up_converted_sets_and_fetch_v2_sees_the_stamp(world):
    response = run(produce(world, 2, build_message_set(ENTRIES, 1, codec=1), topic="lat"))
    assert response.error_code == 0 and response.log_append_time is not None
    appended = int(response.log_append_time.timestamp() * 1000)
    (header,) = iter_batches(world.log("lat").read(0, 1 << 20).records.read())
    assert header.timestamp_type == "LogAppendTime" and header.max_timestamp == appended
    _, _, data = run(fetch(world, 2, [("lat", 0, 0, 1 << 20)]))[("lat", 0)]
    (wrapper,) = shallow_messages(data)[0]
    assert wrapper.log_append_time and wrapper.timestamp == appended
    assert [(m.timestamp, m.log_append_time) for m in iter_messages(data)] == [(appended, True)] * 4
