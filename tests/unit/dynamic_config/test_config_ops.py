"""The pure override-set arithmetic of AlterConfigs / IncrementalAlterConfigs (brokers.dynamic_config.config_ops)."""
from __future__ import annotations

import pytest

from brokers.dynamic_config.config_ops import (
    APPEND,
    DELETE,
    SET,
    SUBTRACT,
    ConfigOp,
    InvalidRequestError,
    apply_incremental,
    replace_all,
)


def test_set_adds_and_replaces_and_leaves_the_input_alone():
    current = {"retention.ms": "1000"}
    result = apply_incremental(current, [ConfigOp("retention.ms", SET, "2000"), ConfigOp("segment.bytes", SET, "1024")])
    assert result == {"retention.ms": "2000", "segment.bytes": "1024"}
    assert current == {"retention.ms": "1000"}


def test_delete_drops_an_override_and_ignores_a_missing_one():
    result = apply_incremental({"retention.ms": "1000", "segment.ms": "5"},
                               [ConfigOp("retention.ms", DELETE, None), ConfigOp("flush.ms", DELETE, None)])
    assert result == {"segment.ms": "5"}


def test_append_starts_from_the_default_list_and_skips_present_values():
    result = apply_incremental({}, [ConfigOp("cleanup.policy", APPEND, "compact")], {"cleanup.policy": "delete"})
    assert result == {"cleanup.policy": "delete,compact"}
    again = apply_incremental(result, [ConfigOp("cleanup.policy", APPEND, "compact,delete")])
    assert again == {"cleanup.policy": "delete,compact"}


def test_append_to_throttled_replicas_and_subtract_removes_every_given_item():
    current = {"leader.replication.throttled.replicas": "0:1,1:2"}
    appended = apply_incremental(current, [ConfigOp("leader.replication.throttled.replicas", APPEND, "2:3, 0:1")])
    assert appended == {"leader.replication.throttled.replicas": "0:1,1:2,2:3"}
    subtracted = apply_incremental(appended, [ConfigOp("leader.replication.throttled.replicas", SUBTRACT, "0:1,9:9")])
    assert subtracted == {"leader.replication.throttled.replicas": "1:2,2:3"}


def test_subtract_without_an_override_works_on_the_default():
    result = apply_incremental({}, [ConfigOp("cleanup.policy", SUBTRACT, "delete")], {"cleanup.policy": "delete"})
    assert result == {"cleanup.policy": ""}


@pytest.mark.parametrize("op", [APPEND, SUBTRACT])
def test_append_and_subtract_need_a_list_key(op):
    with pytest.raises(InvalidRequestError, match="retention.ms"):
        apply_incremental({}, [ConfigOp("retention.ms", op, "1")])


@pytest.mark.parametrize("ops, match", [
    ([ConfigOp("retention.ms", SET, "1"), ConfigOp("retention.ms", DELETE, None)], "duplicate config keys: retention.ms"),
    ([ConfigOp("retention.ms", 7, "1")], "Unknown alter config operation type 7"),
    ([ConfigOp("retention.ms", SET, None)], "null"),
    ([ConfigOp("cleanup.policy", APPEND, None)], "null"),
])
def test_bad_operations_are_invalid_requests(ops, match):
    with pytest.raises(InvalidRequestError, match=match):
        apply_incremental({}, ops)


def test_replace_all_is_the_request_exactly():
    assert replace_all([("a", "1"), ("b", "2")]) == {"a": "1", "b": "2"}
    assert replace_all([]) == {}
    with pytest.raises(InvalidRequestError, match="duplicate config keys: a"):
        replace_all([("a", "1"), ("a", "2")])
    with pytest.raises(InvalidRequestError, match="null value.*b"):
        replace_all([("a", "1"), ("b", None)])
