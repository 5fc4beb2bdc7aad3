"""kafka-reassign-partitions' pure half: Kafka's files, the generated plan, --verify's lines, the throttles."""
from __future__ import annotations

import json
import random

import pytest

from brokers.model import TopicPartition
from scripts.tools.kafka_reassign_partitions import plan
from scripts.tools.kafka_reassign_partitions.command import build_parser, check_flags

T0, T1, U0 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)


def test_a_reassignment_file_round_trips_through_kafkas_format():
    text = plan.format_assignment({T1: [3, 4], T0: [4, 3]})
    assert json.loads(text) == {"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [4, 3], "log_dirs": ["any", "any"]},
        {"topic": "t", "partition": 1, "replicas": [3, 4], "log_dirs": ["any", "any"]}]}
    assert plan.parse_reassignment(text) == {T0: [4, 3], T1: [3, 4]}


@pytest.mark.parametrize("text, fragment", [
    ("nope", "not JSON"),
    ("[]", "JSON object"),
    ('{"partitions": []}', "non-empty"),
    ('{"partitions": [{"topic": "t", "partition": "0", "replicas": [1]}]}', '"partition" integer'),
    ('{"partitions": [{"topic": "t", "partition": 0, "replicas": []}]}', 'non-empty "replicas"'),
    ('{"partitions": [{"topic": "t", "partition": 0, "replicas": [1, 1]}]}', "duplicate replicas"),
    ('{"partitions": [{"topic": "t", "partition": 0, "replicas": [1], "log_dirs": ["d"]}]}', '"any" or an absolute path'),
    ('{"partitions": [{"topic": "t", "partition": 0, "replicas": [1], "log_dirs": [3]}]}', '"any" or an absolute path'),
    ('{"partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["any"]}]}', "one entry per replica"),
    ('{"partitions": [{"topic": "t", "partition": 0, "replicas": [1]}, {"topic": "t", "partition": 0, "replicas": [2]}]}',
     "more than once"),
])
def test_bad_reassignment_files_name_their_problem(text, fragment):
    with pytest.raises(plan.PlanError) as info:
        plan.parse_reassignment(text)
    assert fragment in str(info.value)


def test_topics_to_move():
    assert plan.parse_topics_to_move('{"topics":[{"topic":"a"},{"topic":"b"}],"version":1}') == ["a", "b"]
    for bad in ('{"topics": []}', '{"topics": [{"name": "a"}]}', '{"topics": [{"topic": "a"}, {"topic": "a"}]}'):
        with pytest.raises(plan.PlanError):
            plan.parse_topics_to_move(bad)


def test_generate_spreads_each_topic_over_the_broker_list_keeping_its_replication_factor():
    current = {T0: [1, 2], T1: [2, 1], U0: [1]}
    proposed = plan.generate(current, [3, 4, 5], random.Random(7))
    assert set(proposed) == set(current)
    assert all(len(proposed[tp]) == len(current[tp]) and set(proposed[tp]) <= {3, 4, 5} for tp in current)
    assert proposed[T0][0] != proposed[T1][0]  # leaders round robin
    with pytest.raises(plan.PlanError, match="replication factor 2"):
        plan.generate(current, [3], random.Random(7))


def test_verify_lines_say_completed_in_progress_or_wrong():
    lines, done = plan.verify_lines({T0: [3, 4], T1: [3, 4], U0: [2]}, {T0: [3, 4], T1: [3, 4, 1], U0: [1]}, {T1})
    assert lines == ["Reassignment of partition t-0 is completed.",
                     "Reassignment of partition t-1 is still in progress.",
                     "There is no active reassignment of partition u-0, but replica set is [1] rather than [2]."]
    assert not done
    assert plan.verify_lines({T0: [3, 4]}, {T0: [3, 4]}, set()) == (["Reassignment of partition t-0 is completed."], True)


def test_throttles_name_the_serving_replicas_leader_side_and_the_added_ones_follower_side():
    configs = plan.throttled_replicas({T0: [3, 4], T1: [2, 3], U0: [1]}, {T0: [1, 2], T1: [1, 2], U0: [1]})
    assert configs == {"t": {"leader.replication.throttled.replicas": "0:1,0:2,1:1,1:2",
                             "follower.replication.throttled.replicas": "0:3,0:4,1:3"}}
    assert plan.brokers_involved({T0: [3, 4]}, {T0: [1, 2]}) == [1, 2, 3, 4]


@pytest.mark.parametrize("argv, fragment", [
    (["--execute"], "--reassignment-json-file"),
    (["--generate", "--broker-list", "1"], "--topics-to-move-json-file"),
    (["--generate", "--topics-to-move-json-file", "f", "--broker-list", "1,x"], "--broker-list"),
    (["--verify", "--reassignment-json-file", "f", "--throttle", "10"], "--throttle"),
])
def test_bad_flags_exit_2_naming_the_flag(argv, fragment, capsys):
    parser = build_parser()
    with pytest.raises(SystemExit) as exit_info:
        check_flags(parser, parser.parse_args(["--bootstrap-server", "h:1", *argv]))
    assert exit_info.value.code == 2 and fragment in capsys.readouterr().err


def test_replica_log_dirs_are_the_entries_other_than_any():
    text = json.dumps({"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["/a", "any"]},
        {"topic": "t", "partition": 1, "replicas": [2, 1]}]})
    assert plan.parse_replica_log_dirs(text) == {(T0, 1): "/a"}
    assert plan.replica_name((T0, 1)) == "t-0-1"


def test_move_state_lines_are_kafkas():
    targets = {(T0, 1): "/b", (T0, 2): "/b", (T1, 1): "/b", (T1, 2): "/b", (U0, 1): "/b", (U0, 2): "/b"}
    found = {(T0, 1): ("/b", None), (T0, 2): ("/a", "/b"), (T1, 1): ("/a", "/c"), (T1, 2): ("/a", None),
             (U0, 2): (None, "/b")}
    lines, done = plan.move_state_lines(targets, found)
    assert lines == [
        "Reassignment of replica t-0-1 completed successfully.",
        "Reassignment of replica t-0-2 is still in progress.",
        "Partition t-1 on broker 1 is being moved to log dir /c instead of /b.",
        "Partition t-1 on broker 2 is not being moved from log dir /a to /b.",
        "Partition u-0 cannot be found in any live log directory on broker 1.",
        "Partition u-0 is not found in any live log dir on broker 2. There is likely an offline log directory on "
        "the broker."]
    assert not done
    assert plan.move_state_lines({(T0, 1): "/b"}, {(T0, 1): ("/b", None)}) == (
        ["Reassignment of replica t-0-1 completed successfully."], True)


def test_generate_with_racks_puts_each_partition_in_distinct_racks():
    racks = {1: "a", 2: "a", 3: "b", 4: "c"}
    current = {TopicPartition("t", p): [1, 2, 3] for p in range(8)}
    proposed = plan.generate(current, racks, rng=random.Random(7))
    assert all(sorted(racks[b] for b in replicas) == ["a", "b", "c"] for replicas in proposed.values())
    unaware = plan.generate(current, list(racks), rng=random.Random(7))
    assert any(len({racks[b] for b in replicas}) < 3 for replicas in unaware.values())


def test_disable_rack_aware_is_a_reassign_flag():
    assert build_parser().parse_args(["--bootstrap-server", "h:1", "--generate", "--disable-rack-aware"]
                                     ).disable_rack_aware
