"""``zkafka demo groups``' pure parts: the at-least-once check, the members' report lines, librdkafka's
serialized group metadata (where the generation id comes from), the timeline and the live lines."""
from __future__ import annotations

import json
import sys
from collections import Counter

import pytest

from scripts.cli import main
from scripts.demo.groups import (MEMBERS, PARTITIONS, GroupDemo, GroupMetadata, MemberProcess, check_delivery,
                                 describe_event, parse_event, parse_group_metadata, ranges, throughput_line, timeline)


def blob(generation: int, group: str, member: str, instance: str | None = None) -> bytes:
    tail = b"\x01" if instance is None else b"\x00" + instance.encode() + b"\0"
    return (b"CGMDv2:" + generation.to_bytes(4, sys.byteorder, signed=True) + group.encode() + b"\0"
            + member.encode() + b"\0" + tail)


# -- the at-least-once check ---------------------------------------------------------------------
def test_nothing_lost_and_no_duplicates():
    result = check_delivery(range(10), Counter(range(10)))
    assert result.ok and result.lost == () and result.duplicates == 0 and result.redeliveries == 0
    assert result.produced == result.consumed == result.deliveries == 10
    assert "10 records (acknowledged)" in result.describe() and ": 0 lost, 0 duplicates" in result.describe()


def test_lost_values_are_the_acknowledged_ones_never_consumed():
    result = check_delivery([0, 1, 2, 3, 4, 5], Counter([0, 2, 5]))
    assert not result.ok
    assert result.lost == (1, 3, 4)
    assert "3 lost" in result.describe()


def test_duplicates_count_values_seen_more_than_once_not_extra_deliveries():
    consumed = Counter([0, 1, 1, 2, 2, 2, 3])
    result = check_delivery(range(4), consumed)
    assert result.ok
    assert result.duplicates == 2  # 1 and 2
    assert result.deliveries == 7 and result.redeliveries == 3
    assert "0 lost, 2 duplicates" in result.describe()


def test_consumed_but_never_acknowledged_is_neither_lost_nor_an_error():
    # a produce whose acknowledgement failed (timeout) may still be in the log: consumed, not counted as produced
    result = check_delivery([0, 1], Counter([0, 1, 7]))
    assert result.ok and result.unacknowledged == 1 and result.consumed == 3
    assert "1 consumed values the producer never saw acknowledged" in result.describe()


def test_ranges_compress_runs():
    assert ranges([7, 1, 2, 3, 9, 10]) == "1-3, 7, 9-10"
    assert ranges([]) == ""
    assert ranges(range(0, 40, 2), limit=3) == "0, 2, 4, ..."


# -- report lines --------------------------------------------------------------------------------
def test_parse_event_accepts_report_lines_and_ignores_everything_else():
    line = json.dumps({"event": "consumed", "member": "member-1", "values": [1, 2]})
    assert parse_event(line + "\n") == {"event": "consumed", "member": "member-1", "values": [1, 2]}
    assert parse_event("") is None
    assert parse_event("%3|1795439811.928|FAIL|rdkafka#consumer-1| connect failed") is None
    assert parse_event(line[:-5]) is None  # cut off by a SIGKILL
    assert parse_event("[1, 2]") is None
    assert parse_event('{"event": "consumed"}') is None  # no member
    assert parse_event('{"event": 3, "member": "m"}') is None


def test_rebalance_lines_name_member_partitions_member_id_and_generation():
    assigned = describe_event({"event": "assigned", "member": "member-2", "member_id": "rdkafka-abc", "generation": 4,
                               "partitions": [5, 3, 4]})
    assert assigned == "rebalance: member-2 assigned [3,4,5] (generation 4, member id rdkafka-abc)"
    revoked = describe_event({"event": "revoked", "member": "member-1", "member_id": "m1", "generation": 3,
                              "partitions": [0, 1, 2, 3, 4, 5], "committed": True})
    assert revoked.startswith("rebalance: member-1 revoked  [0,1,2,3,4,5] (generation 3")
    assert "committed before giving them up" in revoked
    unknown = describe_event({"event": "lost", "member": "member-3", "partitions": [1], "generation": None})
    assert unknown == "rebalance: member-3 LOST     [1] (generation ?)"
    assert describe_event({"event": "consumed", "member": "m", "values": [1]}) is None
    assert "2 commits acknowledged, 0 failed" in describe_event({"event": "closed", "member": "m", "commits": 2,
                                                                 "commit_errors": 0})


# -- librdkafka's group metadata -----------------------------------------------------------------
def test_group_metadata_with_generation_and_member_id():
    assert parse_group_metadata(blob(7, "demo", "rdkafka-1234")) == GroupMetadata(7, "demo", "rdkafka-1234", None)


def test_group_metadata_before_joining_and_with_a_static_member():
    assert parse_group_metadata(blob(-1, "g", "")) == GroupMetadata(-1, "g", "", None)
    assert parse_group_metadata(blob(2, "g", "m", "instance-a")) == GroupMetadata(2, "g", "m", "instance-a")


def test_group_metadata_rejects_other_blobs():
    assert parse_group_metadata(b"") is None
    assert parse_group_metadata(b"CGMDv1:\x00\x00\x00\x01g\x00m\x00\x01") is None
    assert parse_group_metadata(b"CGMDv2:\x00\x00") is None
    assert parse_group_metadata(b"CGMDv2:\x00\x00\x00\x01g\x00m\x00") is None  # the null flag is missing
    assert parse_group_metadata("CGMDv2:") is None  # type: ignore[arg-type]


def test_group_metadata_of_the_installed_librdkafka():
    """The format parsed is the one this confluent-kafka really returns (a consumer that never joins)."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": "127.0.0.1:9", "group.id": "unit-group", "log_level": 0})
    try:
        assert parse_group_metadata(consumer.consumer_group_metadata()) == GroupMetadata(-1, "unit-group", "", None)
    finally:
        consumer.close()


# -- timeline and live lines ---------------------------------------------------------------------
def test_timeline_joins_one_by_one_then_a_clean_leave_then_a_kill_then_the_producer_stops():
    steps = timeline(20)
    assert [(s.at_s, s.action, s.member) for s in steps] == [
        (0.0, "start", "member-1"), (3.0, "start", "member-2"), (6.0, "start", "member-3"),
        (10.0, "close", "member-2"), (13.0, "kill", "member-3"), (20.0, "stop-producer", "")]
    assert [s.at_s for s in timeline(40)] == sorted(s.at_s for s in timeline(40))
    kill = next(s.at_s for s in timeline(40) if s.action == "kill")
    assert 40 - kill > 6  # the session (6 s) expires before the producer stops


def test_throughput_line_per_member():
    line = throughput_line({"member-1": 250, "member-2": 240, "member-3": 17},
                           {"member-1": {0, 1, 2}, "member-2": {3, 4, 5}},
                           {"member-1": "running", "member-2": "running", "member-3": "killed"}, produced=500)
    assert line == ("records/s  producer 500 | member-1 250 [0,1,2] | member-2 240 [3,4,5] | "
                    "member-3 17 (killed)")
    assert "member-2 - (waiting)" in throughput_line({}, {}, {"member-1": "running"}, 0)


def test_the_demo_tracks_ownership_and_prints_the_group_once_settled():
    lines: list[str] = []
    demo = GroupDemo("127.0.0.1:9", 20, 100, out=lines.append)
    for name in MEMBERS[:2]:
        demo.members[name] = MemberProcess(name, proc=None, reader=None)
        demo.owned[name] = set()
    demo._handle({"event": "assigned", "member": "member-1", "generation": 1, "partitions": list(range(PARTITIONS))})
    demo._handle({"event": "consumed", "member": "member-1", "values": [1, 2, 3]})
    demo._handle({"event": "revoked", "member": "member-1", "generation": 1, "partitions": list(range(PARTITIONS))})
    demo._handle({"event": "assigned", "member": "member-1", "generation": 2, "partitions": [0, 1, 2]})
    demo._handle({"event": "assigned", "member": "member-2", "generation": 2, "partitions": [3, 4, 5]})
    demo._handle({"event": "consumed", "member": "member-2", "values": [3, 4]})
    assert demo.owned == {"member-1": {0, 1, 2}, "member-2": {3, 4, 5}}
    assert demo.consumed == Counter({1: 1, 2: 1, 3: 2, 4: 1})
    assert demo.second_counts == Counter({"member-1": 3, "member-2": 2})
    groups = [line for line in lines if "group:" in line]
    assert len(groups) == 2  # member-1 alone, then member-1 + member-2; none while member-2 was unassigned
    assert groups[-1].endswith("group:     member-1 [0,1,2], member-2 [3,4,5]")
    assert sum("rebalance:" in line for line in lines) == 4


# -- the command line ----------------------------------------------------------------------------
@pytest.mark.parametrize("argv", [["demo", "groups", "--duration-s", "5"], ["demo", "groups", "--rate", "0"],
                                  ["demo"], ["bench", "group", "--delays", "x"], ["bench", "group", "--reps", "0"]])
def test_cli_rejects_bad_flags(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
