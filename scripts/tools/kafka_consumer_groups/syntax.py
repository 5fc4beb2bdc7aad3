"""``kafka-consumer-groups``' flags: the parser and what Kafka's ``checkArgs`` refuses (pure).

``--topic`` is ``TOPIC`` or ``TOPIC:P1,P2``; ``--to-datetime`` is ``YYYY-MM-DDTHH:mm:SS[.sss][Z|±HH[:MM]]``
with no zone meaning UTC, as Kafka's ``Utils.getDateTime``.
"""
from __future__ import annotations

import argparse
import re
from datetime import datetime, timezone

ACTIONS = ("--list", "--describe", "--delete", "--reset-offsets")
SCENARIOS = ("--to-earliest", "--to-latest", "--to-offset", "--to-datetime", "--shift-by")
DESCRIBE_ONLY = ("--members", "--offsets", "--state")
RESET_ONLY = ("--topic", "--all-topics", "--execute", "--dry-run") + SCENARIOS
DRY_RUN_WARNING = ("WARN: No action will be performed as the --execute option is missing. In a future major release, "
                   "the default behavior of this command will be to prompt the user before executing the reset rather "
                   "than doing a dry run. You should add the --dry-run option explicitly if you are scripting this "
                   "command and want to keep the current default behavior without prompting.")
DATETIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,3})?(Z|[+-]\d\d(:?\d\d)?)?")
TOPIC_ARG = re.compile(r"([^:]+)(?::(\d+(?:,\d+)*))?")

TP = tuple[str, int]


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
