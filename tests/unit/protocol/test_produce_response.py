"""The hand-encoded Produce response against the codec (kio for v3-v9, the legacy layouts for v0-v2), byte
for byte, for every version, with and without v8's record errors and with nulls where they may be."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from brokers.protocol import codec
from brokers.protocol.produce_response import MAX_VERSION, encode_produce_response

VERSIONS = range(MAX_VERSION + 1)
OK = dict(index=0, error_code=0, base_offset=42, log_append_time=-1, log_start_offset=0)
REJECTED = dict(index=3, error_code=87, base_offset=-1, log_append_time=-1, log_start_offset=-1,
                record_errors=[dict(batch_index=1, batch_index_error_message="Compacted topic cannot accept message "
                                    "without key in topic partition t-3."),
                               dict(batch_index=4, batch_index_error_message=None)],
                error_message="One or more records have been rejected")


def kio_bytes(version: int, correlation_id: int, topics, throttle_time_ms: int = 0) -> bytes:
    body = codec.build(codec.response_class(0, version), throttle_time=throttle_time_ms, responses=[
        dict(name=name, partition_responses=[dict(partition, record_errors=partition.get("record_errors", []))
                                             for partition in partitions]) for name, partitions in topics])
    return codec.encode_response(0, version, correlation_id, body)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_version_is_the_codecs_bytes(version):
    topics = [("t", [OK, REJECTED]), ("other", []), ("ünïcode", [dict(OK, index=7, log_append_time=1_700_000_000_123)])]
    assert encode_produce_response(version, 0x0A0B0C0D, topics, 25) == kio_bytes(version, 0x0A0B0C0D, topics, 25)


@pytest.mark.parametrize("version", VERSIONS)
def test_no_topics(version):
    assert encode_produce_response(version, -1, []) == kio_bytes(version, -1, [])


@settings(max_examples=200, deadline=None)
@given(version=st.sampled_from(VERSIONS), partitions=st.lists(st.fixed_dictionaries(dict(
    index=st.integers(0, 2**31 - 1), error_code=st.sampled_from([0, 6, 7, 19, 87]),
    base_offset=st.integers(-1, 2**62), log_append_time=st.integers(-1, 2**41),
    log_start_offset=st.integers(-1, 2**62),
    record_errors=st.lists(st.fixed_dictionaries(dict(batch_index=st.integers(0, 1000),
                                                      batch_index_error_message=st.none() | st.text(max_size=300)))),
    error_message=st.none() | st.text(max_size=200))), max_size=4))
def test_any_answer_is_the_codecs_bytes(version, partitions):
    topics = [("topic", partitions)]
    assert encode_produce_response(version, 1, topics) == kio_bytes(version, 1, topics)


def test_versions_outside_the_window_are_refused():
    for version in (-1, MAX_VERSION + 1):
        with pytest.raises(ValueError, match=f"Produce v{version}"):
            encode_produce_response(version, 1, [])
