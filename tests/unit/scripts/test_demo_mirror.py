"""``zkafka demo mirror``'s pure parts: the MM2 properties it writes (read back by the mirror's own loader), the
member's report lines, translate-offsets' table, the re-read window and the failover tally with its verdict."""
from __future__ import annotations

import pytest

from scripts.cli import main
from scripts.demo.mirror_report import (
    mirror_properties, offsets_text, parse_event, parse_translate_table, progress_line, reread_window, tally)
from scripts.tools.kafka_mirror_maker.config import load
from scripts.tools.kafka_mirror_maker.records import Checkpoint
from scripts.tools.kafka_mirror_maker.translate import table


# -- the properties file -------------------------------------------------------------------------
@pytest.mark.parametrize("exactly_once", [False, True])
def test_the_properties_file_is_one_flow_a_to_b_of_the_topic_with_short_intervals(tmp_path, exactly_once):
    path = tmp_path / "mm2.properties"
    path.write_text(mirror_properties("127.0.0.1:1", "127.0.0.1:2", "orders", 1.5, 100, exactly_once))
    config = load(path)
    assert config.clusters["a"].client["bootstrap.servers"] == "127.0.0.1:1"
    assert config.clusters["b"].client["bootstrap.servers"] == "127.0.0.1:2"
    [flow] = config.flows
    assert (flow.source, flow.target, flow.exactly_once) == ("a", "b", exactly_once)
    assert flow.topic_allowed("orders") and not flow.topic_allowed("orders-archive")
    assert flow.group_allowed("orders-app")
    assert flow.emit_checkpoints_interval_s == flow.sync_group_offsets_interval_s == 1.5
    assert flow.sync_group_offsets_enabled and flow.refresh_topics_interval_s == 1.0
    assert flow.offset_lag_max == 100 and flow.offset_flush_interval_s == 1.0
    assert (flow.replication_factor, flow.offset_syncs_topic_replication_factor,
            flow.checkpoints_topic_replication_factor, flow.heartbeats_topic_replication_factor) == (1, 1, 1, 1)
    assert config.ignored == ()


# -- what the member and the tool print ----------------------------------------------------------
def test_parse_event_accepts_report_lines_and_ignores_everything_else():
    assert parse_event('{"event": "committed", "offsets": {"0": 5}}\n') == {"event": "committed", "offsets": {"0": 5}}
    for line in ["", "hello", '{"event": 3}', '["event"]', '{"event": "processed", "records": [[0, 1', "{}"]:
        assert parse_event(line) is None


def test_translate_table_rows_by_partition_of_the_topic_only():
    rows = {("a.orders", p): Checkpoint("orders-app", "a.orders", p, 100 + p, 200 + p) for p in range(3)}
    rows[("a.other", 0)] = Checkpoint("orders-app", "a.other", 0, 7, 7)
    lines = table(rows)  # the tool's own formatting
    assert lines[0].split() == ["GROUP", "TOPIC", "PARTITION", "UPSTREAM-OFFSET", "TRANSLATED-OFFSET"]
    assert parse_translate_table(lines, "a.orders") == {0: (100, 200), 1: (101, 201), 2: (102, 202)}
    assert parse_translate_table(["Error: no checkpoints of group 'x'"], "a.orders") == {}


def test_offsets_and_progress_lines():
    assert offsets_text({2: 30, 0: 10}, "orders") == "orders-0@10 orders-2@30"
    assert offsets_text({1: 5}) == "1@5" and offsets_text({}) == "none"
    assert progress_line(3000, 2500, 9, 1200, 1180) == (
        "a: produced 3,000 | mirror: copied 2,500 to b, 9 checkpoints | orders-app at a: processed 1,200, "
        "committed 1,180")
    assert ", 1 checkpoint |" in progress_line(10, 10, 1, 0, 0)


def test_the_window_is_one_checkpoint_interval_of_reading_plus_offset_lag_max_per_partition():
    assert reread_window(400, 1.0, 100, 3) == 700
    assert reread_window(333, 1.5, 10, 2) == 500 + 20  # 499.5 rounded up
    assert reread_window(400, 1.0, 0, 3) == 400


# -- the tally -----------------------------------------------------------------------------------
def records(partition: int, start: int, end: int, partitions: int = 2) -> list[tuple[int, int, int]]:
    """Records ``start..end-1`` of ``partition`` as produced: value ``offset * partitions + partition``."""
    return [(partition, o, o * partitions + partition) for o in range(start, end)]


def scenario(**change):
    """Two partitions of 100 records (values 0..199). At a the group processed offsets 0..59 of each, committed
    0..49 (p0) and 0..54 (p1); the newest checkpoint: upstream 40 and 50, translated to 40 and 50 at b (the same
    offsets: no markers). At b it read from those offsets to the end."""
    args = dict(produced=range(200), at_a=records(0, 0, 60) + records(1, 0, 60), committed_at_a={0: 50, 1: 55},
                translated={0: (40, 40), 1: (50, 50)}, start_at_b={0: 40, 1: 50},
                at_b=records(0, 40, 100) + records(1, 50, 100), window=50)
    return tally(**{**args, **change})


def test_nothing_lost_and_the_reread_split_by_cause():
    result = scenario()
    assert (result.produced, result.consumed, result.at_a, result.at_b, result.lost) == (200, 200, 120, 110, ())
    assert result.reread == 20 + 10
    assert (result.uncommitted, result.after_checkpoint, result.translation) == (10 + 5, 10 + 5, 0)
    assert result.resumed_as_translated and result.duplicates_at_b == 0 and result.ok
    lines = result.lines(400, 1.0, 100, 2)
    assert lines[0] == "produced 200, consumed 200 distinct (120 at a, 110 at b), lost 0"
    assert "re-read 30 at b (already processed at a): 15 processed but not yet committed when a failed, 15 " \
           "committed after the newest checkpoint, 0 from offset translation" == lines[1]
    assert lines[2] == ("re-read 30 <= 50 (one checkpoint interval of orders-app's reading, 1 s x 400/s, "
                        "+ offset.lag.max 100 x 2 partitions): held")
    assert len(lines) == 3


def test_reading_from_before_the_checkpoint_counts_as_translation_and_can_break_the_bound():
    result = scenario(start_at_b={0: 10, 1: 50}, at_b=records(0, 10, 100) + records(1, 50, 100))
    assert result.translation == 30 and result.reread == 60 and result.window == 50
    assert not result.ok and not result.resumed_as_translated
    lines = result.lines(400, 1.0, 100, 2)
    assert lines[2].startswith("re-read 60 > 50 (one checkpoint interval") and lines[2].endswith(": NOT held")
    assert "orders-app did NOT start at b from the translated offsets" in lines


def test_a_record_read_nowhere_is_lost():
    result = scenario(at_b=records(0, 40, 100) + records(1, 50, 99))  # p1's last record (value 199) never read
    assert result.lost == (199,) and result.consumed == 199 and not result.ok
    assert result.lines(400, 1.0, 100, 2)[0].endswith("lost 1: 199")


def test_a_translation_past_the_group_would_lose_records():
    skipped = scenario(translated={0: (40, 70), 1: (50, 50)}, start_at_b={0: 70, 1: 50},
                       at_b=records(0, 70, 100) + records(1, 50, 100))
    assert skipped.lost == tuple(o * 2 for o in range(60, 70)) and not skipped.ok
    assert skipped.lines(400, 1.0, 100, 2)[0].endswith("lost 10: 120, 122, 124, 126, 128, 130, 132, 134, 136, 138")


def test_values_read_twice_at_b_are_reported_and_do_not_count_twice():
    result = scenario(at_b=records(0, 40, 100) + records(1, 50, 100) + records(1, 90, 100))
    assert result.duplicates_at_b == 10 and result.at_b == 110 and result.reread == 30 and result.ok
    assert result.lines(400, 1.0, 100, 2)[-1] == "10 values read more than once at b (re-sent by the mirror)"


def test_without_translated_offsets_the_group_did_not_resume_from_them():
    assert not scenario(translated={}, start_at_b={}).resumed_as_translated


# -- the command line ----------------------------------------------------------------------------
@pytest.mark.parametrize("argv", [["demo", "mirror", "--records", "10"], ["demo", "mirror", "--rate", "0"],
                                  ["demo", "mirror", "--read-rate", "-1"],
                                  ["demo", "mirror", "--checkpoint-interval-s", "0"]])
def test_cli_rejects_bad_flags(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert "--records must be at least" in capsys.readouterr().err
