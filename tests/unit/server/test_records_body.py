"""The REST proxy's record bodies: produce bodies parsed from JSON and msgpack, fetched records rendered
back, symmetric round trips, every bad input named by its field, and Kafka's murmur2 partitioner."""
from __future__ import annotations

import base64
import json
from collections import Counter

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from brokers.http.records_body import (
    JSON_TYPES,
    MAX_RECORDS,
    MSGPACK_TYPES,
    BodyError,
    ProduceRecord,
    body_format,
    choose_partition,
    murmur2,
    parse_produce_body,
    render_records,
    render_records_msgpack,
)
from brokers.protocol.record import ConsumerRecord

NOT_UTF8 = b"\xff\xfe\x00\x80binary"
RECORDS = [
    ConsumerRecord(0, 1_700_000_000_000, b"k1", b'{"amount":3}', (("trace", b"t-1"),)),
    ConsumerRecord(1, 1_700_000_000_001, None, NOT_UTF8, (("bin", b"\x00\xff"), ("null", None))),
    ConsumerRecord(2, 1_700_000_000_002, NOT_UTF8, None, ()),
    ConsumerRecord(3, 0, b"", b"", (("empty", b""),)),
    ConsumerRecord(4, 5, "ключ ✓".encode(), "значение".encode(), (("ü", "ö".encode()),)),
]


def _as_post(rendered: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "offset"} for r in rendered]


def _same_bytes(parsed: list[ProduceRecord], records: list[ConsumerRecord]) -> None:
    assert [(p.key, p.value, p.headers, p.timestamp_ms) for p in parsed] == [
        (r.key, r.value, r.headers, r.timestamp) for r in records
    ]


def _json(doc) -> bytes:
    return json.dumps(doc).encode()


def _one(record: dict, content_type: str = "application/json") -> ProduceRecord:
    [parsed] = parse_produce_body(_json({"records": [record]}), content_type)
    return parsed


# --- round trips -------------------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["auto", "base64"])
def test_json_round_trip_gives_the_same_bytes(encoding):
    body = _json({"records": _as_post(render_records(RECORDS, encoding=encoding))})
    _same_bytes(parse_produce_body(body, "application/json; charset=utf-8"), RECORDS)


def test_msgpack_round_trip_gives_the_same_bytes():
    body = msgpack.packb({"records": _as_post(render_records_msgpack(RECORDS))})
    _same_bytes(parse_produce_body(body, "application/x-msgpack"), RECORDS)


_bytes_or_none = st.none() | st.binary(max_size=40)
_records = st.lists(
    st.builds(
        ConsumerRecord,
        offset=st.integers(0, 2**63 - 1),
        timestamp=st.integers(0, 2**63 - 1),
        key=_bytes_or_none,
        value=_bytes_or_none | st.text(max_size=20).map(str.encode),
        headers=st.lists(st.tuples(st.text(min_size=1, max_size=8), _bytes_or_none), max_size=3).map(tuple),
    ),
    min_size=1,
    max_size=5,
)


@given(_records, st.sampled_from(["auto", "base64"]))
def test_any_records_round_trip_through_json(records, encoding):
    body = _json({"records": _as_post(render_records(records, encoding=encoding))})
    _same_bytes(parse_produce_body(body, "application/json"), records)


@given(_records)
def test_any_records_round_trip_through_msgpack(records):
    body = msgpack.packb({"records": _as_post(render_records_msgpack(records))})
    _same_bytes(parse_produce_body(body, "application/msgpack"), records)


# --- rendering -------------------------------------------------------------------------------------


def test_render_auto_gives_text_and_base64_only_where_needed():
    rendered = render_records(RECORDS[:3])
    assert rendered[0] == {
        "offset": 0, "timestamp": 1_700_000_000_000, "key": "k1", "value": '{"amount":3}',
        "headers": [{"key": "trace", "value": "t-1"}],
    }
    assert rendered[1] == {
        "offset": 1, "timestamp": 1_700_000_000_001, "key": None,
        "value": base64.b64encode(NOT_UTF8).decode(), "value_encoding": "base64",
        "headers": [{"key": "bin", "value": "AP8=", "value_encoding": "base64"}, {"key": "null", "value": None}],
    }
    assert rendered[2]["key_encoding"] == "base64" and "value_encoding" not in rendered[2]


def test_render_base64_encodes_every_non_null_field():
    [r] = render_records([ConsumerRecord(7, 8, b"k", None, (("h", b"v"), ("n", None)))], encoding="base64")
    assert r == {
        "offset": 7, "timestamp": 8, "key": "aw==", "key_encoding": "base64", "value": None,
        "headers": [{"key": "h", "value": "dg==", "value_encoding": "base64"}, {"key": "n", "value": None}],
    }


def test_render_rejects_an_unknown_encoding():
    with pytest.raises(ValueError, match="encoding"):
        render_records(RECORDS, encoding="hex")


def test_render_msgpack_gives_raw_bytes():
    assert render_records_msgpack(RECORDS[1:2]) == [{
        "offset": 1, "timestamp": 1_700_000_000_001, "key": None, "value": NOT_UTF8,
        "headers": [{"key": "bin", "value": b"\x00\xff"}, {"key": "null", "value": None}],
    }]


# --- parsing ---------------------------------------------------------------------------------------


def test_json_values_that_are_not_strings_become_compact_json_text():
    record = _one({"key": {"id": 1, "name": "ü"}, "value": [1, 2.5, True, None]})
    assert record.key == '{"id":1,"name":"ü"}'.encode()
    assert record.value == b"[1,2.5,true,null]"
    assert _one({"key": 42, "value": False}) == ProduceRecord(b"42", b"false")


def test_missing_key_and_value_are_null_and_optional_fields_default():
    assert _one({}) == ProduceRecord(key=None, value=None, headers=(), partition=None, timestamp_ms=None)
    assert _one({"partition": 3, "timestamp": 99, "headers": None}) == ProduceRecord(None, None, (), 3, 99)


def test_headers_as_an_object_and_as_a_list_keep_order():
    assert _one({"headers": {"a": "1", "b": None}}).headers == (("a", b"1"), ("b", None))
    headers = [{"key": "a", "value": "AP8=", "value_encoding": "base64"}, {"key": "a", "value": "x"}]
    assert _one({"headers": headers}).headers == (("a", b"\x00\xff"), ("a", b"x"))


def test_explicit_encodings():
    record = _one({"key": "AP8=", "key_encoding": "base64", "value": "AP8=", "value_encoding": "utf-8"})
    assert (record.key, record.value) == (b"\x00\xff", b"AP8=")


def test_confluent_binary_type_defaults_to_base64():
    body = _json({"records": [{"key": "a2V5", "value": "dmFs", "headers": {"h": "aA=="}}]})
    [record] = parse_produce_body(body, "application/vnd.kafka.binary.v2+json")
    assert (record.key, record.value, record.headers) == (b"key", b"val", (("h", b"h"),))
    assert _one({"value": "plain", "value_encoding": "utf-8"}, JSON_TYPES[2]).value == b"plain"
    with pytest.raises(BodyError) as info:
        _one({"value": "not base64!"}, "application/vnd.kafka.binary.v2+json")
    assert info.value.field == "records[0].value"


def test_msgpack_bin_str_and_nil():
    body = msgpack.packb({"records": [
        {"key": "text", "value": b"\xff", "headers": [{"key": "h", "value": None}]},
        {"key": None, "value": "AP8=", "value_encoding": "base64", "partition": 1},
    ]})
    assert parse_produce_body(body, "application/vnd.msgpack") == [
        ProduceRecord(b"text", b"\xff", (("h", None),)),
        ProduceRecord(None, b"\x00\xff", (), 1),
    ]


def test_max_records_is_allowed():
    body = _json({"records": [{"value": "v"}] * MAX_RECORDS})
    assert len(parse_produce_body(body, None)) == MAX_RECORDS


# --- bad bodies ------------------------------------------------------------------------------------


def _records_body(*records) -> bytes:
    return _json({"records": list(records)})


BAD_JSON = [
    ("not JSON", b"{records", "body"),
    ("not UTF-8", b'{"records": [{"value": "\xff"}]}', "body"),
    ("NaN", b'{"records": [{"value": NaN}]}', "body"),
    ("huge float", b'{"records": [{"value": 1e999}]}', "body"),
    ("not an object", b"[]", "body"),
    ("missing records", b"{}", "records"),
    ("unknown top-level key", _json({"records": [{}], "topic": "t"}), "topic"),
    ("records not a list", _json({"records": {"value": "v"}}), "records"),
    ("empty records", _records_body(), "records"),
    ("too many records", _json({"records": [{}] * (MAX_RECORDS + 1)}), "records"),
    ("record not an object", _records_body({}, "value"), "records[1]"),
    ("unknown record key", _records_body({}, {}, {"valeu": "v"}), "records[2].valeu"),
    ("offset is not a produce field", _records_body({"offset": 1}), "records[0].offset"),
    ("partition -1", _records_body({"partition": -1}), "records[0].partition"),
    ("partition a string", _records_body({"partition": "1"}), "records[0].partition"),
    ("partition true", _records_body({"partition": True}), "records[0].partition"),
    ("partition 1.5", _records_body({"partition": 1.5}), "records[0].partition"),
    ("partition over int32", _records_body({"partition": 2**31}), "records[0].partition"),
    ("timestamp -1", _records_body({"timestamp": -1}), "records[0].timestamp"),
    ("timestamp a string", _records_body({"timestamp": "2024-01-01"}), "records[0].timestamp"),
    ("timestamp over int64", _records_body({"timestamp": 2**63}), "records[0].timestamp"),
    ("bad base64 key", _records_body({"key": "AP8=!", "key_encoding": "base64"}), "records[0].key"),
    ("base64 with a space", _records_body({"key": "AP 8=", "key_encoding": "base64"}), "records[0].key"),
    ("unpadded base64", _records_body({"value": "AP8", "value_encoding": "base64"}), "records[0].value"),
    ("base64 of a number", _records_body({"value": 1, "value_encoding": "base64"}), "records[0].value"),
    ("bad encoding name", _records_body({"value_encoding": "hex"}), "records[0].value_encoding"),
    ("encoding not a string", _records_body({"key_encoding": 1}), "records[0].key_encoding"),
    ("lone surrogate", b'{"records": [{"value": "\\ud800"}]}', "records[0].value"),
    ("headers a string", _records_body({"headers": "h=v"}), "records[0].headers"),
    ("header not an object", _records_body({"headers": ["h"]}), "records[0].headers[0]"),
    ("header without key", _records_body({"headers": [{"value": "v"}]}), "records[0].headers[0].key"),
    ("header empty key", _records_body({"headers": [{"key": "", "value": "v"}]}), "records[0].headers[0].key"),
    ("header without value", _records_body({"headers": [{"key": "h"}]}), "records[0].headers[0].value"),
    ("header value a number", _records_body({"headers": [{"key": "h", "value": 1}]}), "records[0].headers[0].value"),
    ("header unknown field", _records_body({"headers": [{"key": "h", "value": "", "x": 1}]}),
     "records[0].headers[0].x"),
    ("header bad encoding", _records_body({"headers": [{"key": "h", "value": "", "value_encoding": "b64"}]}),
     "records[0].headers[0].value_encoding"),
    ("object header value a list", _records_body({"headers": {"h": [1]}}), "records[0].headers.h"),
    ("object header empty name", _records_body({"headers": {"": "v"}}), "records[0].headers"),
]


@pytest.mark.parametrize(("body", "field"), [case[1:] for case in BAD_JSON], ids=[case[0] for case in BAD_JSON])
def test_bad_json_bodies_are_named_by_field(body, field):
    with pytest.raises(BodyError) as info:
        parse_produce_body(body, "application/json")
    assert info.value.field == field
    assert info.value.to_dict() == {"error_code": 400, "field": field, "message": str(info.value)}
    assert str(info.value).startswith(f"{field}: ")


BAD_MSGPACK = [
    ("not msgpack", b"\xc1", "body"),
    ("truncated", msgpack.packb({"records": [{}]})[:-1], "body"),
    ("trailing bytes", msgpack.packb({"records": [{}]}) + b"\x00", "body"),
    ("not a map", msgpack.packb([1, 2]), "body"),
    ("value an int", msgpack.packb({"records": [{"value": 1}]}), "records[0].value"),
    ("key a map", msgpack.packb({"records": [{"key": {"a": 1}}]}), "records[0].key"),
    ("value a bool", msgpack.packb({"records": [{}, {"value": True}]}), "records[1].value"),
    ("header value a float", msgpack.packb({"records": [{"headers": {"h": 1.5}}]}), "records[0].headers.h"),
    ("partition bin", msgpack.packb({"records": [{"partition": b"1"}]}), "records[0].partition"),
]


@pytest.mark.parametrize(("body", "field"), [case[1:] for case in BAD_MSGPACK], ids=[case[0] for case in BAD_MSGPACK])
def test_bad_msgpack_bodies_are_named_by_field(body, field):
    with pytest.raises(BodyError) as info:
        parse_produce_body(body, "application/msgpack")
    assert info.value.field == field


# --- content types ---------------------------------------------------------------------------------


@pytest.mark.parametrize("content_type", [None, "", *JSON_TYPES, "Application/JSON; charset=utf-8"])
def test_json_content_types(content_type):
    assert body_format(content_type) == "json"


@pytest.mark.parametrize("content_type", [*MSGPACK_TYPES, "APPLICATION/X-MSGPACK ; q=1"])
def test_msgpack_content_types(content_type):
    assert body_format(content_type) == "msgpack"


@pytest.mark.parametrize("content_type", ["text/plain", "application/xml", "application/jsonx", "multipart/form-data"])
def test_unknown_content_type_is_a_body_error(content_type):
    with pytest.raises(BodyError) as info:
        body_format(content_type)
    assert info.value.field == "Content-Type"
    with pytest.raises(BodyError) as info:
        parse_produce_body(b'{"records": [{}]}', content_type)
    assert info.value.field == "Content-Type"


def test_content_type_picks_the_decoder():
    body = msgpack.packb({"records": [{"value": b"v"}]})
    assert parse_produce_body(body, "application/msgpack") == [ProduceRecord(None, b"v")]
    with pytest.raises(BodyError) as info:
        parse_produce_body(body, "application/json")
    assert info.value.field == "body"


# --- partitioner -----------------------------------------------------------------------------------

KAFKA_MURMUR2 = [  # org.apache.kafka.common.utils.UtilsTest.testMurmur2
    ("21", -973932308),
    ("foobar", -790332482),
    ("a-little-bit-long-string", -985981536),
    ("a-little-bit-longer-string", -1486304829),
    ("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    ("abc", 479470107),
]


@pytest.mark.parametrize(("text", "expected"), KAFKA_MURMUR2)
def test_murmur2_matches_kafka(text, expected):
    assert murmur2(text.encode()) == expected


def _signed(n: int) -> int:
    return n - (1 << 32) if n & 0x80000000 else n


@given(st.binary(max_size=64))
def test_murmur2_matches_kafka_python(data):
    assert murmur2(data) == _signed(kafka_python_murmur2(data))


def test_murmur2_of_every_tail_length():
    for n in range(9):
        data = bytes(range(1, n + 1))
        assert murmur2(data) == _signed(kafka_python_murmur2(data))
        assert -(2**31) <= murmur2(data) < 2**31


def test_keyed_records_follow_kafkas_default_partitioner():
    for text, hashed in KAFKA_MURMUR2:
        for n in (1, 3, 12, 100):
            assert choose_partition(text.encode(), n, round_robin=7) == (hashed & 0x7FFFFFFF) % n


def test_a_key_always_lands_on_the_same_partition():
    for key in (b"", b"user-1", NOT_UTF8):
        assert {choose_partition(key, 6, rr) for rr in range(50)} == {choose_partition(key, 6, 0)}


def test_null_keys_round_robin_evenly():
    picks = [choose_partition(None, 4, rr) for rr in range(100, 112)]
    assert picks == [0, 1, 2, 3] * 3
    assert Counter(choose_partition(None, 7, rr) for rr in range(700)) == Counter({p: 100 for p in range(7)})


def test_keys_spread_over_partitions():
    counts = Counter(choose_partition(f"key-{i}".encode(), 8, 0) for i in range(8000))
    assert set(counts) == set(range(8)) and min(counts.values()) > 800


@pytest.mark.parametrize("n", [0, -1])
def test_choose_partition_needs_a_partition(n):
    with pytest.raises(ValueError):
        choose_partition(b"k", n, 0)
    with pytest.raises(ValueError):
        choose_partition(None, n, 0)
