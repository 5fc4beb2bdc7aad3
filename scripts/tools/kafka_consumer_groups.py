"""``kafka-consumer-groups --bootstrap-server HOST:PORT``: Kafka 2.8's ``ConsumerGroupCommand``.

confluent-kafka's AdminClient sends ListGroups, DescribeGroups, OffsetFetch, ListOffsets, OffsetCommit and
DeleteGroups, as Kafka's tool does. Exactly one action:

* ``--list``: every group id, sorted, one per line.
* ``--describe (--group G ... | --all-groups)``: per group (sorted), after a blank line, Kafka's table
  ``GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID``, left-aligned and
  padded as Kafka pads it (GROUP, TOPIC, CONSUMER-ID, HOST >= 15 wide; PARTITION 10; offsets and LAG 15).
  Assigned partitions first, member by member (largest assignment first), then partitions with a committed
  offset and no owner (CONSUMER-ID/HOST/CLIENT-ID ``-``). No committed offset: CURRENT-OFFSET and LAG
  ``-``. LOG-END-OFFSET is the high watermark (ListOffsets latest). ``--members``: GROUP CONSUMER-ID HOST
  CLIENT-ID #PARTITIONS; ``--state``: GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS.
  First, on stderr as in Kafka: ``Consumer group 'G' has no active members.`` (state Empty) or
  ``Warning: Consumer group 'G' is rebalancing.``. State Dead (or GROUP_ID_NOT_FOUND) without committed
  offsets: ``Error: Consumer group 'G' does not exist.``; with committed offsets (they live in ZooKeeper,
  the coordinator may not have loaded the group) it is shown as Empty.
* ``--reset-offsets (--group G ... | --all-groups) (--topic T[:P1,P2] ... | --all-topics)`` and one of
  ``--to-earliest``, ``--to-latest``, ``--to-offset N``, ``--shift-by N``, ``--to-datetime
  YYYY-MM-DDTHH:mm:SS.sss[Z|±HH:MM]`` (no zone: UTC, as Kafka's ``Utils.getDateTime``), then ``--execute``
  or ``--dry-run`` (the default, with Kafka's WARN on stderr): the table GROUP TOPIC PARTITION NEW-OFFSET.
  ``--to-offset``/``--shift-by`` are clamped to [log start, high watermark]; ``--to-datetime`` takes the
  first offset with a timestamp at or after the time, else the high watermark. ``--all-topics``: the
  partitions with committed offsets. Only Empty or Dead groups may be reset, otherwise ``Error: Assignments
  can only be reset if the group 'G' is inactive, but the current state is S.`` ``--execute`` commits.
* ``--delete (--group G ... | --all-groups)``: ``Deletion of requested consumer groups ('G1', 'G2') was
  successful.``, else ``Error: Deletion of some consumer groups failed:`` and ``* Group 'G' could not be
  deleted due to: NON_EMPTY_GROUP: ...`` on stderr.

``--command-config`` is Kafka's client properties file (``scripts.tools.common.client_properties``: security.protocol,
sasl.*, PEM ssl.*); SASL credentials the brokers refuse are one ``Error: ...`` line.
No ``--delete-offsets``: confluent-kafka's AdminClient has no OffsetDelete call.
Exit codes: 0 ok, 1 a Kafka error (``Error: NAME: message`` on stderr), 2 bad flags.
"""
from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from datetime import datetime, timezone

from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from scripts.tools.common import client_properties

TIMEOUT_S = 30.0
MISSING = "-"
ACTIONS = ("--list", "--describe", "--delete", "--reset-offsets")
SCENARIOS = ("--to-earliest", "--to-latest", "--to-offset", "--to-datetime", "--shift-by")
DESCRIBE_ONLY = ("--members", "--offsets", "--state")
RESET_ONLY = ("--topic", "--all-topics", "--execute", "--dry-run") + SCENARIOS
STATE_NAMES = {ConsumerGroupState.STABLE: "Stable", ConsumerGroupState.EMPTY: "Empty", ConsumerGroupState.DEAD: "Dead",
               ConsumerGroupState.PREPARING_REBALANCING: "PreparingRebalance",
               ConsumerGroupState.COMPLETING_REBALANCING: "CompletingRebalance", ConsumerGroupState.UNKNOWN: "Unknown"}
DRY_RUN_WARNING = ("WARN: No action will be performed as the --execute option is missing. In a future major release, "
                   "the default behavior of this command will be to prompt the user before executing the reset rather "
                   "than doing a dry run. You should add the --dry-run option explicitly if you are scripting this "
                   "command and want to keep the current default behavior without prompting.")
DATETIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,3})?(Z|[+-]\d\d(:?\d\d)?)?")
TOPIC_ARG = re.compile(r"([^:]+)(?::(\d+(?:,\d+)*))?")

TP = tuple[str, int]


class CommandError(Exception):
    """A failure printed as ``Error: <message>``, exit code 1."""


# --- arguments -----------------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-consumer-groups", description=(
        "List all consumer groups, describe a consumer group, delete consumer group info, "
        "or reset consumer group offsets."))
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,HOST:PORT]")
    parser.add_argument("--command-config", metavar="command config property file",
                        help="the admin client's properties (security.protocol, sasl.*, ssl.*)")
    for flag in ACTIONS + ("--all-groups", "--all-topics", "--execute", "--dry-run", "--to-earliest", "--to-latest"):
        parser.add_argument(flag, action="store_true")
    for flag in DESCRIBE_ONLY:
        parser.add_argument(flag, action="store_true")
    parser.add_argument("--group", action="append", default=[], help="repeatable")
    parser.add_argument("--topic", action="append", default=[], metavar="TOPIC[:P1,P2]", help="repeatable")
    parser.add_argument("--to-offset", type=int, metavar="OFFSET")
    parser.add_argument("--shift-by", type=int, metavar="N")
    parser.add_argument("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss")
    return parser


def _given(args: argparse.Namespace, flag: str) -> bool:
    value = getattr(args, flag.lstrip("-").replace("-", "_"))
    return value not in (None, False, [])


def problem(args: argparse.Namespace) -> str | None:
    """What Kafka's ``checkArgs`` refuses, or None; ``main`` makes it an argparse error (exit 2)."""
    actions = [flag for flag in ACTIONS if _given(args, flag)]
    if len(actions) != 1:
        return "Command must include exactly one action: " + ", ".join(ACTIONS)
    action = actions[0]
    if args.group and args.all_groups:
        return "Option --group cannot be used with --all-groups"
    if action == "--list" and (args.group or args.all_groups):
        return "Option --list takes neither --group nor --all-groups"
    if action != "--list" and not (args.group or args.all_groups):
        return f"Option {action} takes one of these options: --group, --all-groups"
    misplaced = [flag for flag in DESCRIBE_ONLY if action != "--describe" and _given(args, flag)]
    misplaced += [flag for flag in RESET_ONLY if action != "--reset-offsets" and _given(args, flag)]
    if misplaced:
        return f"Option {misplaced[0]} cannot be used with {action}"
    if action == "--describe" and sum(_given(args, f) for f in ("--members", "--offsets", "--state")) > 1:
        return "Option --describe takes at most one of these options: --members, --offsets, --state"
    return _reset_problem(args) if action == "--reset-offsets" else None


def _reset_problem(args: argparse.Namespace) -> str | None:
    if args.execute and args.dry_run:
        return "Option --reset-offsets only accepts one of --execute and --dry-run"
    scenarios = [flag for flag in SCENARIOS if _given(args, flag)]
    if not scenarios:
        return "Option --reset-offsets requires one of the following scenarios: " + ", ".join(SCENARIOS)
    if len(scenarios) > 1:
        return f"Option {scenarios[0]} cannot be used with {scenarios[1]}"
    if not args.topic and not args.all_topics:
        return "One of the reset scopes should be defined: --all-topics, --topic."
    if args.topic and args.all_topics:
        return "Option --topic cannot be used with --all-topics"
    try:
        parse_topics(args.topic)
        if args.to_datetime is not None:
            parse_datetime(args.to_datetime)
    except ValueError as exc:
        return str(exc)
    return None


def parse_topics(values: list[str]) -> tuple[list[TP], list[str]]:
    """``--topic`` values: the partitions named as ``T:0,1`` and the topics named whole."""
    partitions: list[TP] = []
    whole: list[str] = []
    for value in values:
        match = TOPIC_ARG.fullmatch(value)
        if not match:
            raise ValueError(f"--topic takes TOPIC or TOPIC:P1,P2,...: {value!r}")
        if match.group(2) is None:
            whole.append(match.group(1))
        else:
            partitions += [(match.group(1), int(p)) for p in match.group(2).split(",")]
    return partitions, whole


def parse_datetime(text: str) -> int:
    """``YYYY-MM-DDTHH:mm:SS[.sss][Z|±HH[:MM]]`` as epoch milliseconds; no zone means UTC."""
    try:
        if not DATETIME.fullmatch(text):
            raise ValueError("not YYYY-MM-DDTHH:mm:SS.sss[Z|+HH:MM|-HH:MM]")
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise ValueError(f"--to-datetime {text!r}: {exc}") from None
    return int((moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp() * 1000)


# --- pure computations ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class ResetSpec:
    mode: str  # earliest | latest | offset | shift | datetime
    value: int = 0  # the offset, the shift, or the timestamp (ms)


def reset_spec(args: argparse.Namespace) -> ResetSpec:
    if args.to_datetime is not None:
        return ResetSpec("datetime", parse_datetime(args.to_datetime))
    for mode, value in (("offset", args.to_offset), ("shift", args.shift_by)):
        if value is not None:
            return ResetSpec(mode, value)
    return ResetSpec("earliest" if args.to_earliest else "latest")


def clamp(offset: int, earliest: int, latest: int) -> int:
    """Kafka's ``checkOffsetsRange``: above the high watermark -> it; below the log start -> it."""
    return latest if offset > latest else max(offset, earliest)


def new_offsets(spec: ResetSpec, partitions: list[TP], earliest: dict[TP, int], latest: dict[TP, int],
                committed: dict[TP, int], by_time: dict[TP, int]) -> dict[TP, int]:
    """Each partition's new offset; ``by_time`` holds -1 (or nothing) where no record is at/after the time."""
    return {tp: _new_offset(spec, tp, earliest, latest, committed, by_time) for tp in partitions}


def _new_offset(spec: ResetSpec, tp: TP, earliest: dict[TP, int], latest: dict[TP, int],
                committed: dict[TP, int], by_time: dict[TP, int]) -> int:
    name = f"{tp[0]}-{tp[1]}"
    if spec.mode == "datetime" and by_time.get(tp, -1) >= 0:
        return by_time[tp]
    if spec.mode in ("latest", "datetime"):
        return _known(latest, tp, f"Error getting ending offset of topic partition: {name}")
    start = _known(earliest, tp, f"Error getting starting offset of topic partition: {name}")
    if spec.mode == "earliest":
        return start
    if spec.mode == "shift" and tp not in committed:
        raise CommandError(f"Cannot shift offset for partition {name} since there is no current committed offset")
    requested = committed[tp] + spec.value if spec.mode == "shift" else spec.value
    return clamp(requested, start, _known(latest, tp, f"Error getting ending offset of topic partition: {name}"))


def _known(offsets: dict[TP, int], tp: TP, error: str) -> int:
    if offsets.get(tp, -1) < 0:
        raise CommandError(error)
    return offsets[tp]


def lag(current: int | None, end: int | None) -> int | None:
    """Kafka's ``getLag``: unknown without a committed offset (or -1) or without a log end offset."""
    if current is None or current < 0 or end is None:
        return None
    return end - current


@dataclass(frozen=True)
class Member:
    consumer_id: str
    host: str
    client_id: str
    partitions: tuple[TP, ...] = ()


@dataclass(frozen=True)
class OffsetRow:
    group: str
    topic: str
    partition: int
    current: int | None
    end: int | None
    consumer_id: str = MISSING
    host: str = MISSING
    client_id: str = MISSING


def offset_rows(group: str, members: list[Member], committed: dict[TP, int], ends: dict[TP, int]) -> list[OffsetRow]:
    """Owned partitions (largest assignment first), then committed partitions nobody owns."""
    rows: list[OffsetRow] = []
    owned: set[TP] = set()
    for m in sorted((m for m in members if m.partitions), key=lambda m: (-len(m.partitions), m.consumer_id)):
        for tp in sorted(m.partitions):
            owned.add(tp)
            rows.append(OffsetRow(group, *tp, committed.get(tp), ends.get(tp), m.consumer_id, m.host, m.client_id))
    rows += [OffsetRow(group, *tp, committed[tp], ends.get(tp)) for tp in sorted(set(committed) - owned)]
    return rows


def _cell(value: object) -> str:
    return MISSING if value is None else str(value)


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]], widths: list[int]) -> list[str]:
    """Kafka's ``%-Ns`` columns (the last one unpadded), after a blank line; no trailing blanks."""
    return [""] + [" ".join(c.ljust(w) for c, w in zip(cells, widths + [0])).rstrip() for cells in [header] + rows]


def _width(minimum: int, values: list[str]) -> int:
    return max([minimum] + [len(v) for v in values])


def format_offsets(rows: list[OffsetRow]) -> list[str]:
    cells = [(r.group, r.topic, str(r.partition), _cell(r.current), _cell(r.end), _cell(lag(r.current, r.end)),
              r.consumer_id, r.host, r.client_id) for r in rows]
    widths = [_width(15, [c[0] for c in cells]), _width(15, [c[1] for c in cells]), 10, 15, 15, 15,
              _width(15, [c[6] for c in cells]), _width(15, [c[7] for c in cells])]
    return _table(("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
                   "CLIENT-ID"), cells, widths)


def format_members(group: str, members: list[Member]) -> list[str]:
    cells = [(group, m.consumer_id, m.host, m.client_id, str(len(m.partitions))) for m in members]
    widths = [_width(15, [c[i] for c in cells]) for i in range(4)]
    return _table(("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"), cells, widths)


def format_state(group: str, coordinator: str, strategy: str, state: str, members: int) -> list[str]:
    widths = [_width(25, [group]), _width(25, [coordinator]), 20, 15]
    return _table(("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"),
                  [(group, coordinator, strategy, state, str(members))], widths)


def format_reset(plans: dict[str, dict[TP, int]]) -> list[str]:
    cells = [(group, t, str(p), str(offset)) for group, plan in plans.items() for (t, p), offset in sorted(plan.items())]
    return _table(("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"), cells, [30, 30, 10])


# --- talking to the brokers ----------------------------------------------------------------------------

def run(args: argparse.Namespace, properties: dict[str, str] | None = None) -> int:
    """``properties``: Kafka's client properties of ``--command-config`` (``scripts.tools.common.client_properties``)."""
    admin = client_properties.admin_client(AdminClient, args.bootstrap_server, properties or {})
    if admin is None:
        return 1
    try:
        if args.list:
            for group in _group_ids(admin):
                print(group)
            return 0
        groups = list(dict.fromkeys(args.group)) if args.group else _group_ids(admin)
        if args.describe:
            return max([_describe(admin, group, description, args)
                        for group, description in sorted(_descriptions(admin, groups).items())], default=0)
        if args.delete:
            return _delete(admin, groups)
        return _reset(admin, groups, args)
    except CommandError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    except KafkaException as exc:
        print(f"Error: {_error_text(exc)}", file=sys.stderr)
        return 1


def _error_text(exc: KafkaException) -> str:
    err = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
    return f"{err.name()}: {err.str()}" if err else str(exc)


def _code(exc: KafkaException) -> int | None:
    return exc.args[0].code() if exc.args and isinstance(exc.args[0], KafkaError) else None


def _group_ids(admin: AdminClient) -> list[str]:
    result = admin.list_consumer_groups(request_timeout=TIMEOUT_S).result()
    if result.errors:  # a broker that could not answer: the list would be incomplete
        error = result.errors[0]
        raise error if isinstance(error, KafkaException) else KafkaException(error)
    return sorted({listing.group_id for listing in result.valid})


def _descriptions(admin: AdminClient, groups: list[str]) -> dict[str, object | None]:
    """Each group's ConsumerGroupDescription; None when the coordinator answers GROUP_ID_NOT_FOUND."""
    if not groups:
        return {}
    out: dict[str, object | None] = {}
    for group, future in admin.describe_consumer_groups(groups, request_timeout=TIMEOUT_S).items():
        try:
            out[group] = future.result()
        except KafkaException as exc:
            if _code(exc) != KafkaError.GROUP_ID_NOT_FOUND:
                raise
            out[group] = None
    return out


def _committed(admin: AdminClient, group: str) -> dict[TP, int]:
    request = [ConsumerGroupTopicPartitions(group)]
    answer = admin.list_consumer_group_offsets(request, request_timeout=TIMEOUT_S)[group].result()
    return {(tp.topic, tp.partition): tp.offset for tp in answer.topic_partitions or []
            if tp.error is None and tp.offset >= 0}


def _log_offsets(admin: AdminClient, partitions: list[TP], spec: OffsetSpec) -> dict[TP, int]:
    """ListOffsets for each partition; the ones that fail are left out."""
    if not partitions:
        return {}
    futures = admin.list_offsets({TopicPartition(t, p): spec for t, p in partitions}, request_timeout=TIMEOUT_S)
    out = {}
    for tp, future in futures.items():
        try:
            out[(tp.topic, tp.partition)] = future.result().offset
        except KafkaException:
            continue
    return out


def _members(description: object | None) -> list[Member]:
    return [Member(m.member_id, m.host, m.client_id,
                   tuple((tp.topic, tp.partition) for tp in (m.assignment.topic_partitions if m.assignment else [])))
            for m in (description.members if description is not None else [])]


def _state(description: object | None) -> str:
    return STATE_NAMES.get(description.state, str(description.state)) if description is not None else "Dead"


def _describe(admin: AdminClient, group: str, description: object | None, args: argparse.Namespace) -> int:
    state = _state(description)
    if state == "Dead" and _committed(admin, group):
        state = "Empty"  # offsets in ZooKeeper, a group the coordinator has not loaded: Kafka would say Empty
    if state == "Dead":
        print(f"Error: Consumer group '{group}' does not exist.", file=sys.stderr)
        return 1
    if state == "Empty":
        print(f"Consumer group '{group}' has no active members.", file=sys.stderr)
    elif state in ("PreparingRebalance", "CompletingRebalance"):
        print(f"Warning: Consumer group '{group}' is rebalancing.", file=sys.stderr)
    for line in _describe_lines(admin, group, description, state, args):
        print(line)
    return 0


def _describe_lines(admin: AdminClient, group: str, description: object | None, state: str,
                    args: argparse.Namespace) -> list[str]:
    members = _members(description)
    if args.state:
        node = description.coordinator if description is not None else None
        coordinator = f"{node.host}:{node.port} ({node.id})" if node is not None else MISSING
        strategy = (description.partition_assignor if description is not None else "") or ""
        return format_state(group, coordinator, strategy, state, len(members))
    if args.members:
        return format_members(group, members) if members else []
    committed = _committed(admin, group)
    owned = {tp for m in members for tp in m.partitions}
    rows = offset_rows(group, members, committed, _log_offsets(admin, sorted(owned | set(committed)), OffsetSpec.latest()))
    return format_offsets(rows) if rows else []


def _delete(admin: AdminClient, groups: list[str]) -> int:
    futures = admin.delete_consumer_groups(groups, request_timeout=TIMEOUT_S) if groups else {}
    deleted, failed = [], {}
    for group in groups:
        try:
            futures[group].result()
            deleted.append(group)
        except KafkaException as exc:
            failed[group] = _error_text(exc)
    if not failed:
        print(f"Deletion of requested consumer groups ({_quoted(deleted)}) was successful.")
        return 0
    print("Error: Deletion of some consumer groups failed:", file=sys.stderr)
    for group, error in failed.items():
        print(f"* Group '{group}' could not be deleted due to: {error}", file=sys.stderr)
    if deleted:
        print(f"These consumer groups were deleted successfully: {_quoted(deleted)}")
    return 1


def _quoted(groups: list[str]) -> str:
    return ", ".join(f"'{g}'" for g in groups)


def _reset(admin: AdminClient, groups: list[str], args: argparse.Namespace) -> int:
    spec = reset_spec(args)
    plans: dict[str, dict[TP, int]] = {}
    status = 0
    for group, description in _descriptions(admin, groups).items():
        state = _state(description)
        if state not in ("Empty", "Dead"):
            print(f"Error: Assignments can only be reset if the group '{group}' is inactive, "
                  f"but the current state is {state}.", file=sys.stderr)
            status = 1
            continue
        plans[group] = _plan(admin, group, spec, args)
        if args.execute and plans[group]:
            _commit(admin, group, plans[group])
    if plans:
        print("\n".join(format_reset(plans)))
    return status


def _plan(admin: AdminClient, group: str, spec: ResetSpec, args: argparse.Namespace) -> dict[TP, int]:
    committed = _committed(admin, group) if args.all_topics or spec.mode == "shift" else {}
    partitions = sorted(committed) if args.all_topics else _partitions(admin, args.topic)
    earliest = _log_offsets(admin, partitions, OffsetSpec.earliest()) if spec.mode not in ("latest", "datetime") else {}
    latest = _log_offsets(admin, partitions, OffsetSpec.latest()) if spec.mode != "earliest" else {}
    by_time = _log_offsets(admin, partitions, OffsetSpec.for_timestamp(spec.value)) if spec.mode == "datetime" else {}
    return new_offsets(spec, partitions, earliest, latest, committed, by_time)


def _partitions(admin: AdminClient, topic_args: list[str]) -> list[TP]:
    """The ``--topic`` partitions: the ones named, and every partition of the topics named whole."""
    named, whole = parse_topics(topic_args)
    if whole:
        # All topics, never Metadata for one name: the AdminClient's metadata requests allow auto-creation.
        topics = admin.list_topics(timeout=TIMEOUT_S).topics
        for topic in whole:
            if topic not in topics or topics[topic].error is not None:
                raise CommandError(f"Topic '{topic}' does not exist")
            named += [(topic, p) for p in topics[topic].partitions]
    return sorted(set(named))


def _commit(admin: AdminClient, group: str, plan: dict[TP, int]) -> None:
    offsets = [TopicPartition(t, p, offset) for (t, p), offset in sorted(plan.items())]
    request = [ConsumerGroupTopicPartitions(group, offsets)]
    answer = admin.alter_consumer_group_offsets(request, request_timeout=TIMEOUT_S)[group].result()
    failed = [tp for tp in answer.topic_partitions or [] if tp.error is not None]
    if failed:
        raise KafkaException(failed[0].error)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if problem(args):
        parser.error(problem(args))
    properties = client_properties.parse_flag(parser, "--command-config", args.command_config)
    if args.reset_offsets and not (args.execute or args.dry_run):
        print(DRY_RUN_WARNING, file=sys.stderr)
    return run(args, properties)


if __name__ == "__main__":
    sys.exit(main())
