"""retention.segments_to_delete, the pure decision behind Log.delete_old_segments."""
from __future__ import annotations

from typing import NamedTuple

import pytest

from brokers.storage.log_config import LogConfig
from brokers.storage.retention import segments_to_delete


class Seg(NamedTuple):
    base_offset: int
    size: int
    largest_timestamp: int


# three segments of 100 bytes: offsets 0-9, 10-19, 20-29 (the active one), timestamps 1000, 2000, 3000
SEGMENTS = [Seg(0, 100, 1000), Seg(10, 100, 2000), Seg(20, 100, 3000)]


def decide(segments=SEGMENTS, hw=30, start=0, now=3000, **config):
    return segments_to_delete(segments, 30, hw, start, LogConfig(**config), now)


@pytest.mark.parametrize("start, expected", [(0, 0), (9, 0), (10, 1), (25, 2), (30, 3)])
def test_segments_wholly_below_the_log_start_go(start, expected):
    assert decide(start=start, retention_ms=-1) == expected


@pytest.mark.parametrize("retention_ms, expected", [(-1, 0), (5000, 0), (1500, 1), (999, 2), (0, 2)])
def test_time_retention_goes_by_the_largest_timestamp(retention_ms, expected):
    assert decide(retention_ms=retention_ms) == expected


@pytest.mark.parametrize("retention_bytes, expected", [(-1, 0), (300, 0), (200, 1), (150, 1), (100, 2), (0, 3)])
def test_size_retention_keeps_the_log_at_or_above_retention_bytes(retention_bytes, expected):
    assert decide(retention_ms=-1, retention_bytes=retention_bytes) == expected


@pytest.mark.parametrize("hw, expected", [(30, 3), (29, 2), (10, 1), (9, 0)])
def test_nothing_at_or_past_the_high_watermark_goes(hw, expected):
    assert decide(hw=hw, retention_ms=0, retention_bytes=0) == expected


def test_an_empty_active_segment_stays():
    segments = SEGMENTS[:2] + [Seg(20, 0, -1)]
    assert segments_to_delete(segments, 20, 20, 0, LogConfig(retention_ms=0), 3000) == 2


def test_the_rules_continue_where_the_previous_one_stopped():
    assert decide(start=10, retention_ms=1500) == 1
    assert decide(start=10, retention_ms=-1, retention_bytes=100) == 2  # 200 bytes left after the start rule


def test_compact_only_applies_just_the_log_start():
    assert decide(start=10, retention_ms=0, retention_bytes=0, cleanup_policy="compact") == 1
