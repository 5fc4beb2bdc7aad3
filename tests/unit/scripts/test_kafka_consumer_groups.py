"""``kafka-consumer-groups``: flag checks, the reset-offset arithmetic, Kafka's tables, and the glue
(state checks, Dead groups, dry run) against a fake AdminClient."""
from __future__ import annotations

from concurrent.futures import Future
from datetime import datetime, timezone
from types import SimpleNamespace

import pytest
from confluent_kafka import ConsumerGroupState, KafkaError, KafkaException, TopicPartition

from scripts.tools.kafka_consumer_groups import command, reset_plan, syntax, tables
from scripts.tools.kafka_consumer_groups.reset_plan import ResetSpec
from scripts.tools.kafka_consumer_groups.tables import Member, OffsetRow

BOOT = ["--bootstrap-server", "localhost:9092"]


def parse(*argv: str):
    return syntax.build_parser().parse_args([*BOOT, *argv])


def problem(*argv: str) -> str | None:
    return syntax.problem(parse(*argv))


# --- flags -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, expected", [
    ((), "exactly one action"),
    (("--list", "--describe", "--group", "g"), "exactly one action"),
    (("--describe",), "Option --describe takes one of these options: --group, --all-groups"),
    (("--delete",), "Option --delete takes one of these options: --group, --all-groups"),
    (("--reset-offsets", "--to-earliest", "--all-topics"), "Option --reset-offsets takes one of these options"),
    (("--describe", "--group", "g", "--all-groups"), "--group cannot be used with --all-groups"),
    (("--list", "--group", "g"), "--list takes neither --group nor --all-groups"),
    (("--describe", "--group", "g", "--members", "--state"), "at most one of these options: --members"),
    (("--list", "--members"), "Option --members cannot be used with --list"),
    (("--delete", "--group", "g", "--topic", "t"), "Option --topic cannot be used with --delete"),
    (("--describe", "--group", "g", "--to-earliest"), "Option --to-earliest cannot be used with --describe"),
    (("--reset-offsets", "--group", "g", "--all-topics"), "requires one of the following scenarios"),
    (("--reset-offsets", "--group", "g", "--all-topics", "--to-earliest", "--shift-by", "1"),
     "Option --to-earliest cannot be used with --shift-by"),
    (("--reset-offsets", "--group", "g", "--to-latest"), "One of the reset scopes should be defined"),
    (("--reset-offsets", "--group", "g", "--to-latest", "--topic", "t", "--all-topics"),
     "--topic cannot be used with --all-topics"),
    (("--reset-offsets", "--group", "g", "--to-latest", "--all-topics", "--execute", "--dry-run"),
     "only accepts one of --execute and --dry-run"),
    (("--reset-offsets", "--group", "g", "--to-latest", "--topic", "t:0,x"), "--topic takes TOPIC or TOPIC:P1,P2"),
    (("--reset-offsets", "--group", "g", "--to-datetime", "yesterday", "--all-topics"), "--to-datetime 'yesterday'"),
    (("--reset-offsets", "--group", "g", "--to-datetime", "2024-02-30T00:00:00.000", "--all-topics"),
     "day is out of range"),
])
def test_bad_flag_combinations_are_named(argv, expected):
    assert expected in problem(*argv)


@pytest.mark.parametrize("argv", [
    ("--list",),
    ("--describe", "--group", "a", "--group", "b"),
    ("--describe", "--all-groups", "--members"),
    ("--describe", "--group", "g", "--state"),
    ("--delete", "--group", "g"),
    ("--reset-offsets", "--group", "g", "--topic", "t", "--topic", "u:0,2", "--to-offset", "5", "--execute"),
    ("--reset-offsets", "--all-groups", "--all-topics", "--shift-by", "-3", "--dry-run"),
    ("--reset-offsets", "--group", "g", "--all-topics", "--to-datetime", "2024-01-02T03:04:05.678+02:00"),
])
def test_good_flag_combinations_pass(argv):
    assert problem(*argv) is None


def test_a_bad_combination_is_an_argparse_error_with_exit_code_2(capsys):
    with pytest.raises(SystemExit) as exc:
        command.main([*BOOT, "--describe"])
    assert exc.value.code == 2
    assert "Option --describe takes one of these options: --group, --all-groups" in capsys.readouterr().err


def test_bootstrap_server_is_required(capsys):
    with pytest.raises(SystemExit) as exc:
        command.main(["--list"])
    assert exc.value.code == 2
    assert "--bootstrap-server" in capsys.readouterr().err


def test_topic_arguments():
    assert syntax.parse_topics(["a", "b:0,2", "c:1", "b:1"]) == ([("b", 0), ("b", 2), ("c", 1), ("b", 1)], ["a"])
    for bad in ("t:", "t:a", ":1", "t:1,,2"):
        with pytest.raises(ValueError):
            syntax.parse_topics([bad])


def ms(*parts: int, tz=timezone.utc) -> int:
    return int(datetime(*parts, tzinfo=tz).timestamp() * 1000)


def test_datetimes_without_a_zone_are_utc_like_kafka():
    assert syntax.parse_datetime("2024-01-02T03:04:05.678") == ms(2024, 1, 2, 3, 4, 5) + 678
    assert syntax.parse_datetime("2024-01-02T03:04:05") == ms(2024, 1, 2, 3, 4, 5)
    assert syntax.parse_datetime("2024-01-02T03:04:05.678Z") == ms(2024, 1, 2, 3, 4, 5) + 678
    assert syntax.parse_datetime("2024-01-02T03:04:05.000+02:00") == ms(2024, 1, 2, 1, 4, 5)
    assert syntax.parse_datetime("2024-01-02T03:04:05.000-0130") == ms(2024, 1, 2, 4, 34, 5)
    for bad in ("2024-01-02", "2024-01-02 03:04:05", "2024-01-02T03:04:05.1234", "2024-13-01T00:00:00"):
        with pytest.raises(ValueError):
            syntax.parse_datetime(bad)


def test_reset_spec_from_flags():
    assert reset_plan.reset_spec(parse("--reset-offsets", "--group", "g", "--all-topics", "--to-earliest")) == ResetSpec("earliest")
    assert reset_plan.reset_spec(parse("--reset-offsets", "--group", "g", "--all-topics", "--to-latest")) == ResetSpec("latest")
    assert reset_plan.reset_spec(parse("--reset-offsets", "--group", "g", "--all-topics", "--to-offset", "0")) == \
        ResetSpec("offset", 0)
    assert reset_plan.reset_spec(parse("--reset-offsets", "--group", "g", "--all-topics", "--shift-by", "-2")) == \
        ResetSpec("shift", -2)
    assert reset_plan.reset_spec(parse("--reset-offsets", "--group", "g", "--all-topics", "--to-datetime",
                               "1970-01-01T00:00:01.500")) == ResetSpec("datetime", 1500)


# --- the reset arithmetic ----------------------------------------------------------------------------

A0, A1, A2 = ("a", 0), ("a", 1), ("a", 2)
EARLIEST = {A0: 0, A1: 10, A2: 0}
LATEST = {A0: 100, A1: 50, A2: 0}  # a-2 is empty


def plan(spec: ResetSpec, committed=None, by_time=None, partitions=(A0, A1, A2)):
    return reset_plan.new_offsets(spec, list(partitions), EARLIEST, LATEST, committed or {}, by_time or {})


def test_to_earliest_and_to_latest():
    assert plan(ResetSpec("earliest")) == {A0: 0, A1: 10, A2: 0}
    assert plan(ResetSpec("latest")) == {A0: 100, A1: 50, A2: 0}


def test_to_offset_is_clamped_to_the_log():
    assert plan(ResetSpec("offset", 20)) == {A0: 20, A1: 20, A2: 0}
    assert plan(ResetSpec("offset", 5)) == {A0: 5, A1: 10, A2: 0}
    assert plan(ResetSpec("offset", 70)) == {A0: 70, A1: 50, A2: 0}


def test_shift_by_moves_the_committed_offset_within_the_log():
    committed = {A0: 40, A1: 12, A2: 0}
    assert plan(ResetSpec("shift", -5), committed) == {A0: 35, A1: 10, A2: 0}
    assert plan(ResetSpec("shift", 30), committed) == {A0: 70, A1: 42, A2: 0}
    assert plan(ResetSpec("shift", 1000), committed) == {A0: 100, A1: 50, A2: 0}


def test_shift_by_needs_a_committed_offset():
    with pytest.raises(reset_plan.CommandError, match="Cannot shift offset for partition a-1 since there is no current"):
        plan(ResetSpec("shift", 1), {A0: 3})


def test_to_datetime_takes_the_offset_for_the_time_or_the_log_end():
    assert plan(ResetSpec("datetime", 123), by_time={A0: 42, A1: -1}) == {A0: 42, A1: 50, A2: 0}


def test_missing_log_offsets_are_errors():
    with pytest.raises(reset_plan.CommandError, match="Error getting ending offset of topic partition: b-0"):
        plan(ResetSpec("latest"), partitions=[("b", 0)])
    with pytest.raises(reset_plan.CommandError, match="Error getting starting offset of topic partition: b-0"):
        plan(ResetSpec("offset", 3), partitions=[("b", 0)])


# --- lag and tables ----------------------------------------------------------------------------------

def test_lag():
    assert tables.lag(40, 100) == 60
    assert tables.lag(100, 100) == 0
    assert tables.lag(None, 100) is None  # no committed offset
    assert tables.lag(-1, 100) is None
    assert tables.lag(5, None) is None  # no log end offset


def test_offset_rows_owned_first_by_assignment_size_then_unowned_committed():
    members = [Member("c-1", "/10.0.0.1", "one", (A2,)), Member("c-2", "/10.0.0.2", "two", (A1, A0)),
               Member("idle", "/10.0.0.3", "three")]
    committed = {A0: 90, A2: 0, ("b", 0): 7}
    rows = tables.offset_rows("g", members, committed, {A0: 100, A1: 50, A2: 0})
    assert rows == [OffsetRow("g", "a", 0, 90, 100, "c-2", "/10.0.0.2", "two"),
                    OffsetRow("g", "a", 1, None, 50, "c-2", "/10.0.0.2", "two"),
                    OffsetRow("g", "a", 2, 0, 0, "c-1", "/10.0.0.1", "one"),
                    OffsetRow("g", "b", 0, 7, None)]


def test_describe_table_matches_kafkas_padding():
    members = [Member("consumer-1-0123456789abcdef", "/127.0.0.1", "consumer-1", (A0, A1))]
    rows = tables.offset_rows("my-group", members, {A0: 90, ("b", 3): 7}, {A0: 100, A1: 50, ("b", 3): 9})
    assert tables.format_offsets(rows) == [
        "",
        "GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             "
        "CONSUMER-ID                 HOST            CLIENT-ID",
        "my-group        a               0          90              100             10              "
        "consumer-1-0123456789abcdef /127.0.0.1      consumer-1",
        "my-group        a               1          -               50              -               "
        "consumer-1-0123456789abcdef /127.0.0.1      consumer-1",
        "my-group        b               3          7               9               2               "
        "-                           -               -",
    ]


def test_long_group_and_topic_names_widen_their_columns():
    rows = [OffsetRow("a-rather-long-group-name", "a-rather-long-topic-name", 0, 1, 2)]
    header, row = tables.format_offsets(rows)[1:]
    assert header.index("TOPIC") == row.index("a-rather-long-topic-name") == len("a-rather-long-group-name") + 1
    assert header.index("PARTITION") == row.index(" 0 ") + 1


def test_members_state_and_reset_tables():
    members = [Member("c-1", "/127.0.0.1", "cid", (A0, A1)), Member("c-2", "/127.0.0.2", "cid2")]
    assert tables.format_members("g", members) == [
        "",
        "GROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS",
        "g               c-1             /127.0.0.1      cid             2",
        "g               c-2             /127.0.0.2      cid2            0",
    ]
    assert tables.format_state("g", "localhost:9093 (2)", "range", "Stable", 2) == [
        "",
        "GROUP                     COORDINATOR (ID)          ASSIGNMENT-STRATEGY  STATE           #MEMBERS",
        "g                         localhost:9093 (2)        range                Stable          2",
    ]
    assert tables.format_reset({"g": {A1: 10, A0: 0}}) == [
        "",
        "GROUP                          TOPIC                          PARTITION  NEW-OFFSET",
        "g                              a                              0          0",
        "g                              a                              1          10",
    ]


# --- the glue, against a fake AdminClient --------------------------------------------------------------

def done(value=None, error: int | None = None) -> Future:
    future: Future = Future()
    if error is None:
        future.set_result(value)
    else:
        future.set_exception(KafkaException(KafkaError(error)))
    return future


class FakeAdmin:
    """Answers like confluent-kafka's AdminClient from fixed tables; records what was committed."""

    def __init__(self, groups: dict, committed: dict, log: dict):
        self.groups, self.committed, self.log = groups, committed, log  # log: (topic, p) -> (start, end)
        self.altered: list = []
        self.deleted: list = []

    def list_consumer_groups(self, request_timeout):
        valid = [SimpleNamespace(group_id=g) for g, d in self.groups.items() if d is not None]
        return done(SimpleNamespace(valid=valid, errors=[]))

    def describe_consumer_groups(self, groups, request_timeout):
        return {g: done(self.groups[g]) if self.groups.get(g) else done(error=KafkaError.GROUP_ID_NOT_FOUND)
                for g in groups}

    def list_consumer_group_offsets(self, request, request_timeout):
        group = request[0].group_id
        tps = [TopicPartition(t, p, o) for (t, p), o in self.committed.get(group, {}).items()]
        return {group: done(SimpleNamespace(topic_partitions=tps))}

    def list_offsets(self, specs, request_timeout):
        def answer(tp, spec):
            start, end = self.log[(tp.topic, tp.partition)]
            return done(SimpleNamespace(offset=start if "Earliest" in type(spec).__name__ else end))
        return {tp: answer(tp, spec) for tp, spec in specs.items()}

    def list_topics(self, timeout):
        topics: dict = {}
        for t, p in self.log:
            topics.setdefault(t, SimpleNamespace(error=None, partitions={}))
            topics[t].partitions[p] = None
        return SimpleNamespace(topics=topics)

    def alter_consumer_group_offsets(self, request, request_timeout):
        self.altered.append((request[0].group_id, {(tp.topic, tp.partition): tp.offset
                                                   for tp in request[0].topic_partitions}))
        return {request[0].group_id: done(SimpleNamespace(topic_partitions=request[0].topic_partitions))}

    def delete_consumer_groups(self, groups, request_timeout):
        def answer(group):
            description = self.groups.get(group)
            if description is None:
                return done(error=KafkaError.GROUP_ID_NOT_FOUND)
            return done(error=KafkaError.NON_EMPTY_GROUP) if description.members else done()
        return {g: answer(g) for g in groups}


def description(state, members=()):
    return SimpleNamespace(state=state, members=list(members), partition_assignor="range",
                           coordinator=SimpleNamespace(id=2, host="localhost", port=9093))


def member(consumer_id, *partitions):
    return SimpleNamespace(member_id=consumer_id, client_id="cid", host="/127.0.0.1",
                           assignment=SimpleNamespace(topic_partitions=[TopicPartition(*tp) for tp in partitions]))


@pytest.fixture
def admin(monkeypatch):
    fake = FakeAdmin(
        groups={"active": description(ConsumerGroupState.STABLE, [member("m-1", A0, A1)]),
                "idle": description(ConsumerGroupState.EMPTY), "ghost": description(ConsumerGroupState.DEAD),
                "gone": None},
        committed={"active": {A0: 90}, "idle": {A0: 30, A1: 20}, "ghost": {A2: 0}},
        log={A0: (0, 100), A1: (10, 50), A2: (0, 0)})
    monkeypatch.setattr(command, "AdminClient", lambda config: fake)
    return fake


def run(capsys, *argv) -> tuple[int, str, str]:
    code = command.main([*BOOT, *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_list(admin, capsys):
    assert run(capsys, "--list") == (0, "active\nghost\nidle\n", "")


def test_describe_active_group(admin, capsys):
    code, out, err = run(capsys, "--describe", "--group", "active")
    assert (code, err) == (0, "")
    assert [line.split() for line in out.splitlines()[2:]] == [
        ["active", "a", "0", "90", "100", "10", "m-1", "/127.0.0.1", "cid"],
        ["active", "a", "1", "-", "50", "-", "m-1", "/127.0.0.1", "cid"]]


def test_describe_empty_group_says_so_first(admin, capsys):
    code, out, err = run(capsys, "--describe", "--group", "idle")
    assert (code, err) == (0, "Consumer group 'idle' has no active members.\n")
    assert [line.split()[:6] for line in out.splitlines()[2:]] == [
        ["idle", "a", "0", "30", "100", "70"], ["idle", "a", "1", "20", "50", "30"]]


def test_describe_unknown_group_is_an_error(admin, capsys):
    assert run(capsys, "--describe", "--group", "gone") == (1, "", "Error: Consumer group 'gone' does not exist.\n")


def test_a_dead_group_with_offsets_in_zookeeper_is_described_as_empty(admin, capsys):
    code, out, err = run(capsys, "--describe", "--group", "ghost")
    assert (code, err) == (0, "Consumer group 'ghost' has no active members.\n")
    assert out.splitlines()[2].split() == ["ghost", "a", "2", "0", "0", "0", "-", "-", "-"]


def test_describe_members_and_state(admin, capsys):
    code, out, _ = run(capsys, "--describe", "--group", "active", "--members")
    assert out.splitlines()[2].split() == ["active", "m-1", "/127.0.0.1", "cid", "2"]
    code, out, _ = run(capsys, "--describe", "--group", "active", "--state")
    assert out.splitlines()[2].split() == ["active", "localhost:9093", "(2)", "range", "Stable", "1"]


def test_reset_refuses_an_active_group(admin, capsys):
    code, out, err = run(capsys, "--reset-offsets", "--group", "active", "--all-topics", "--to-earliest", "--execute")
    assert code == 1 and out == "" and not admin.altered
    assert err == ("Error: Assignments can only be reset if the group 'active' is inactive, "
                   "but the current state is Stable.\n")


def test_reset_dry_run_is_the_default_and_commits_nothing(admin, capsys):
    code, out, err = run(capsys, "--reset-offsets", "--group", "idle", "--topic", "a:0,1", "--shift-by", "-25")
    assert code == 0 and not admin.altered
    assert err.startswith("WARN: No action will be performed as the --execute option is missing.")
    assert [line.split() for line in out.splitlines()[1:]] == [
        ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], ["idle", "a", "0", "5"], ["idle", "a", "1", "10"]]


def test_reset_execute_commits_the_plan(admin, capsys):
    code, out, err = run(capsys, "--reset-offsets", "--group", "idle", "--all-topics", "--to-latest", "--execute")
    assert (code, err) == (0, "")
    assert admin.altered == [("idle", {A0: 100, A1: 50})]
    assert "idle                           a                              1          50" in out.splitlines()


def test_reset_of_an_unknown_topic(admin, capsys):
    code, _, err = run(capsys, "--reset-offsets", "--group", "idle", "--topic", "nope", "--to-latest", "--dry-run")
    assert (code, err) == (1, "Error: Topic 'nope' does not exist\n")


def test_delete(admin, capsys):
    assert run(capsys, "--delete", "--group", "idle", "--group", "ghost") == (
        0, "Deletion of requested consumer groups ('idle', 'ghost') was successful.\n", "")
    code, out, err = run(capsys, "--delete", "--group", "active", "--group", "idle")
    assert code == 1
    assert err == ("Error: Deletion of some consumer groups failed:\n"
                   "* Group 'active' could not be deleted due to: NON_EMPTY_GROUP: Broker: The group is not empty\n")
    assert out == "These consumer groups were deleted successfully: 'idle'\n"


def test_all_groups_when_there_are_none(admin, capsys):
    admin.groups = {}
    assert run(capsys, "--delete", "--all-groups") == (0, "Deletion of requested consumer groups () was successful.\n", "")
    assert run(capsys, "--describe", "--all-groups") == (0, "", "")
