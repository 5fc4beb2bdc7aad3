"""``--reset-offsets``' arithmetic (pure): each partition's new offset from the scenario and the log's ends.

``--to-offset``/``--shift-by`` are clamped to [log start, high watermark] (Kafka's ``checkOffsetsRange``);
``--to-datetime`` takes the first offset with a timestamp at or after the time, else the high watermark.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass

from scripts.tools.kafka_consumer_groups.syntax import TP, parse_datetime


class CommandError(Exception):
    """A failure printed as ``Error: <message>``, exit code 1."""


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
