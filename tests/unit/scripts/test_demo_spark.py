"""The pure parts of ``zkafka demo spark``: click events and their msgpack encoding, the console-consumer lines
of ``page-counts`` and how they and the progress are printed."""
from __future__ import annotations

import json
import random

import msgpack

from scripts.demo.spark import PAGES, USERS, click_event, encode_click, format_count, parse_count_line, progress_line


def test_click_events_are_pages_users_and_the_time():
    rng = random.Random(7)
    events = [click_event(rng, 1_700_000_000_123) for _ in range(2000)]
    assert {e["page"] for e in events} <= {f"/p{k}" for k in range(PAGES)}
    assert {e["user"] for e in events} <= {f"u{n}" for n in range(USERS)}
    assert {e["ts"] for e in events} == {1_700_000_000_123}
    pages = [e["page"] for e in events]
    assert pages.count("/p0") > pages.count(f"/p{PAGES - 2}")  # skewed: some pages are popular
    assert click_event(random.Random(1), 5) == click_event(random.Random(1), 5)  # seeded: reproducible


def test_encode_click_is_a_msgpack_map_with_the_three_fields():
    event = {"page": "/p3", "user": "u12", "ts": 1_700_000_000_123}
    data = encode_click(event)
    assert isinstance(data, bytes)
    assert msgpack.unpackb(data, raw=False) == event


def test_parse_count_line_reads_key_tab_json():
    value = {"window_start": "2026-11-23T14:50:10.000Z", "window_end": "2026-11-23T14:50:20.000Z",
             "page": "/p1", "count": 42}
    parsed = parse_count_line(f"/p1\t{json.dumps(value)}\n")
    assert parsed == {**value, "key": "/p1"}
    assert format_count(parsed) == "window 14:50:10-14:50:20  /p1      42 clicks"


def test_parse_count_line_ignores_other_lines():
    assert parse_count_line("Processed a total of 3 messages\n") is None
    assert parse_count_line("/p1\tnot json\n") is None
    assert parse_count_line('/p1\t{"page": "/p1"}\n') is None  # not a window count
    assert parse_count_line("/p1\t[1, 2]\n") is None
    assert parse_count_line("") is None


def test_progress_line_before_and_after_the_first_micro_batch():
    assert progress_line(1234, None, 0) == ("progress: 1,234 clicks produced; no micro-batch done yet; "
                                            "0 counts read back")
    line = progress_line(5000, {"batchId": 3, "numInputRows": 1000, "processedRowsPerSecond": 812.5}, 7)
    assert line == ("progress: 5,000 clicks produced; 4 micro-batches done (last: 1,000 rows, 812 rows/s); "
                    "7 counts read back")
    assert "1 micro-batches" in progress_line(1, {"batchId": 0, "numInputRows": 0, "processedRowsPerSecond": None}, 0)
