"""scripts.tools.kafka_mirror_maker.translate's pure parts: the newest checkpoint of each partition for one group,
and the table ``translate-offsets`` prints (``kafka-consumer-groups``' alignment)."""
from __future__ import annotations

import pytest

from scripts.tools.kafka_mirror_maker.config import parse
from scripts.tools.kafka_mirror_maker.records import Checkpoint
from scripts.tools.kafka_mirror_maker.translate import HEADER, TranslateError, _policy, newest, table


def test_newest_keeps_the_last_checkpoint_read_per_partition():
    checkpoints = [Checkpoint("g", "a.t", 0, 10, 8), Checkpoint("g", "a.t", 1, 5, 5),
                   Checkpoint("g", "a.t", 0, 20, 17, "meta"), Checkpoint("g", "a.t", 0, 15, 12)]
    assert newest(checkpoints, "g") == {("a.t", 0): Checkpoint("g", "a.t", 0, 15, 12),
                                        ("a.t", 1): Checkpoint("g", "a.t", 1, 5, 5)}


def test_newest_ignores_other_groups():
    checkpoints = [Checkpoint("g", "a.t", 0, 10, 8), Checkpoint("other", "a.t", 0, 99, 99),
                   Checkpoint("g2", "a.u", 0, 1, 1), Checkpoint("G", "a.t", 0, 50, 50)]
    assert newest(checkpoints, "g") == {("a.t", 0): Checkpoint("g", "a.t", 0, 10, 8)}
    assert newest(checkpoints, "nobody") == {}
    assert newest([], "g") == {}


def test_newest_is_sorted_by_topic_then_partition():
    checkpoints = [Checkpoint("g", "a.z", 0, 1, 1), Checkpoint("g", "a.t", 10, 1, 1), Checkpoint("g", "a.t", 2, 1, 1)]
    assert list(newest(checkpoints, "g")) == [("a.t", 2), ("a.t", 10), ("a.z", 0)]


def test_table_aligns_columns_under_kafka_consumer_groups_header():
    rows = newest([Checkpoint("billing", "a.orders", 0, 1234, 1200), Checkpoint("billing", "a.orders", 11, 7, 7),
                   Checkpoint("billing", "a.x", 2, 123456789, 3)], "billing")
    assert table(rows) == [
        "GROUP   TOPIC    PARTITION UPSTREAM-OFFSET TRANSLATED-OFFSET",
        "billing a.orders 0         1234            1200",
        "billing a.orders 11        7               7",
        "billing a.x      2         123456789       3"]


def test_table_widens_a_column_to_its_longest_cell_and_strips_trailing_blanks():
    rows = {("a.t", 0): Checkpoint("a-very-long-group-name", "a.t", 0, 1, 99999999999999999)}
    header, row = table(rows)
    assert header.split() == list(HEADER)
    assert header.index("TOPIC") == row.index("a.t") == len("a-very-long-group-name") + 1
    assert header.index("TRANSLATED-OFFSET") == row.index("99999999999999999")
    assert not header.endswith(" ") and not row.endswith(" ")


def test_table_of_no_rows_is_the_header():
    assert table({}) == [" ".join(HEADER)]


def flows(**extra: str):
    props = {"clusters": "a, b, c", "a.bootstrap.servers": "a:9", "b.bootstrap.servers": "b:9",
             "c.bootstrap.servers": "c:9", **extra}
    return parse(props)


def test_policy_of_the_flow_else_of_the_first_flow_else_an_error():
    config = flows(**{"a->b.enabled": "true", "c->b.enabled": "true", "c->b.replication.policy.separator": "_"})
    assert _policy(config, "c", "b").separator == "_"
    assert _policy(config, "a", "b").separator == "."
    assert _policy(config, "b", "a").separator == "."           # no b->a flow: the first one's
    with pytest.raises(TranslateError, match="no enabled flow"):
        _policy(flows(), "a", "b")
