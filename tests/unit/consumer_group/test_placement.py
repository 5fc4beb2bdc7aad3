"""Group placement: Java's String.hashCode and Kafka's partitionFor, checked against known Java values."""
from __future__ import annotations

import pytest

from consumer_group.coordinator.placement import java_string_hash, partition_for

# Values computed by Java's String.hashCode (documented constants and well-known examples).
JAVA_HASHES = {
    "": 0,
    "a": 97,
    "abc": 96354,
    "hello": 99162322,
    "Hello World": -862545276,
    "polygenelubricants": -2147483648,  # the famous INT32_MIN string
}


@pytest.mark.parametrize("text,expected", list(JAVA_HASHES.items()))
def test_java_string_hash_matches_java(text, expected):
    assert java_string_hash(text) == expected


def test_non_bmp_characters_hash_as_utf16_surrogate_pairs():
    # U+1F600 is the surrogate pair D83D DE00 in UTF-16: 31 * 0xD83D + 0xDE00
    assert java_string_hash("\U0001F600") == 31 * 0xD83D + 0xDE00


def test_partition_for_uses_abs_and_maps_int32_min_to_zero():
    assert partition_for("polygenelubricants", 50) == 0
    assert partition_for("Hello World", 50) == 862545276 % 50
    assert partition_for("abc", 50) == 96354 % 50
    assert all(0 <= partition_for(f"g{i}", 7) < 7 for i in range(200))
    with pytest.raises(ValueError):
        partition_for("g", 0)
