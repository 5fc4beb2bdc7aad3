"""What ``zkafka demo mirror`` writes, reads and concludes, pure (no client, no process, no clock):

- ``mirror_properties``: the MirrorMaker 2 properties file of the demo (clusters ``a`` and ``b``, the flow
  ``a->b``, short intervals so that the whole story fits in seconds);
- ``parse_event``: the group member's report lines (``scripts/demo/mirror_app.py``: JSON objects);
- ``parse_translate_table``: ``kafka-mirror-maker translate-offsets``' table, partition by partition;
- ``tally``: the failover's outcome — produced, consumed at a and at b, lost, re-read and where the re-read
  records came from — and ``FailoverTally.lines`` / ``ok``, the verdict the demo exits with.

The re-read bound is MirrorMaker 2's: a group moved to the target re-reads at most what it read at the source
after the newest checkpoint the target holds — one ``emit.checkpoints.interval.seconds`` of its reading — plus
what an offset translation may fall behind by, ``offset.lag.max`` records per partition (``reread_window``).
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from scripts.demo import groups_report

Record = tuple[int, int, int]  # (partition, offset, value) as the group member consumed it


def mirror_properties(a: str, b: str, topic: str, interval_s: float, offset_lag_max: int,
                      exactly_once: bool) -> str:
    """MM2's properties file for the flow ``a->b`` of ``topic`` (replication factors 1: b has one broker)."""
    interval = f"{interval_s:g}"
    settings = {
        "clusters": "a, b", "a.bootstrap.servers": a, "b.bootstrap.servers": b, "a->b.enabled": "true",
        "a->b.topics": topic, "replication.factor": "1", "offset-syncs.topic.replication.factor": "1",
        "checkpoints.topic.replication.factor": "1", "heartbeats.topic.replication.factor": "1",
        "refresh.topics.interval.seconds": "1", "emit.checkpoints.interval.seconds": interval,
        "sync.group.offsets.enabled": "true", "sync.group.offsets.interval.seconds": interval,
        "offset.lag.max": str(offset_lag_max), "offset.flush.interval.ms": "1000",
        "exactly.once.source.support": "enabled" if exactly_once else "disabled"}
    header = "# zkafka demo mirror: MirrorMaker 2 (dedicated mode) from cluster a to cluster b\n"
    return header + "".join(f"{key} = {value}\n" for key, value in settings.items())


def parse_event(line: str) -> dict | None:
    """A member's report line (a JSON object with a string ``event``), or None for anything else."""
    return groups_report.parse_event(line, ("event",))


def parse_translate_table(lines: Iterable[str], topic: str) -> dict[int, tuple[int, int]]:
    """``translate-offsets``' rows of ``topic``: partition -> (upstream offset, translated offset)."""
    rows = {}
    for line in lines:
        cells = line.split()
        if len(cells) == 5 and cells[1] == topic and all(c.lstrip("-").isdigit() for c in cells[2:]):
            rows[int(cells[2])] = (int(cells[3]), int(cells[4]))
    return rows


def offsets_text(offsets: Mapping[int, int], topic: str = "") -> str:
    """``orders-0@1668 orders-1@1671`` (or ``0@1668 ...`` without a topic)."""
    prefix = f"{topic}-" if topic else ""
    return " ".join(f"{prefix}{p}@{o}" for p, o in sorted(offsets.items())) or "none"


def reread_window(read_rate: float, interval_s: float, offset_lag_max: int, partitions: int) -> int:
    """The most records the moved group may read twice: one checkpoint interval of its reading at the source
    plus ``offset.lag.max`` per partition."""
    return math.ceil(read_rate * interval_s) + offset_lag_max * partitions


def progress_line(produced: int, copied: int, checkpoints: int, processed: int, committed: int) -> str:
    """Once a second before the failure: the producer, the mirror (records b acknowledged, checkpoint records
    emitted) and the group at a."""
    return (f"a: produced {produced:,} | mirror: copied {copied:,} to b, {checkpoints:,} checkpoint"
            f"{'' if checkpoints == 1 else 's'} | orders-app at a: processed {processed:,}, committed {committed:,}")


@dataclass(frozen=True)
class FailoverTally:
    produced: int             # records cluster a acknowledged
    consumed: int             # distinct produced values the group consumed, at a or at b
    at_a: int                 # distinct values processed at a
    at_b: int                 # distinct values read at b
    lost: tuple[int, ...]     # produced, consumed nowhere
    reread: int               # values read at b that had been processed at a
    uncommitted: int          # ... of which a had not seen committed (processed after the group's last commit)
    after_checkpoint: int     # ... committed at a after the newest checkpoint b holds
    translation: int          # ... before that checkpoint's offset: what translating it lost in precision
    duplicates_at_b: int      # values read more than once at b (a mirror that re-sent records)
    window: int               # reread_window
    resumed_as_translated: bool  # the group's offsets at b when it started there were the translated ones

    @property
    def ok(self) -> bool:
        return not self.lost and self.reread <= self.window and self.resumed_as_translated

    def lines(self, read_rate: float, interval_s: float, offset_lag_max: int, partitions: int) -> list[str]:
        within = self.reread <= self.window
        lines = [
            f"produced {self.produced:,}, consumed {self.consumed:,} distinct ({self.at_a:,} at a, {self.at_b:,} "
            f"at b), lost {len(self.lost)}" + (f": {_sample(self.lost)}" if self.lost else ""),
            f"re-read {self.reread:,} at b (already processed at a): {self.uncommitted:,} processed but not yet "
            f"committed when a failed, {self.after_checkpoint:,} committed after the newest checkpoint, "
            f"{self.translation:,} from offset translation",
            f"re-read {self.reread:,} {'<=' if within else '>'} {self.window:,} (one checkpoint interval of "
            f"orders-app's reading, {interval_s:g} s x {read_rate:g}/s, + offset.lag.max {offset_lag_max} x "
            f"{partitions} partitions): {'held' if within else 'NOT held'}"]
        if not self.resumed_as_translated:
            lines.append("orders-app did NOT start at b from the translated offsets")
        if self.duplicates_at_b:
            lines.append(f"{self.duplicates_at_b:,} values read more than once at b (re-sent by the mirror)")
        return lines


def _sample(values: tuple[int, ...], limit: int = 10) -> str:
    shown = ", ".join(str(v) for v in values[:limit])
    return shown + (f", ... ({len(values) - limit} more)" if len(values) > limit else "")


def _reread_causes(reread: Iterable[Record], committed: Mapping[int, int],
                   checkpoint: Mapping[int, int]) -> tuple[int, int, int]:
    """(uncommitted, after the checkpoint, before it) of the re-read records, by their offset at a."""
    uncommitted = after = before = 0
    for partition, offset, _ in reread:
        if offset >= committed.get(partition, 0):
            uncommitted += 1
        elif offset >= checkpoint.get(partition, 0):
            after += 1
        else:
            before += 1
    return uncommitted, after, before


def tally(produced: Iterable[int], at_a: Iterable[Record], committed_at_a: Mapping[int, int],
          translated: Mapping[int, tuple[int, int]], start_at_b: Mapping[int, int], at_b: Iterable[Record],
          window: int) -> FailoverTally:
    """The failover's outcome from what happened: the values cluster a acknowledged, the records the group
    processed at a (with their offsets there) and its last commit there, ``translate-offsets``' rows, the
    group's committed offsets at b when it started there, and the records it read at b."""
    acked = set(produced)
    by_value_a = {value: (p, o, value) for p, o, value in at_a}
    read_b = Counter(value for _, _, value in at_b)
    consumed = (set(by_value_a) | set(read_b)) & acked
    reread = [by_value_a[v] for v in read_b if v in by_value_a]
    checkpoint = {p: upstream for p, (upstream, _) in translated.items()}
    uncommitted, after, before = _reread_causes(reread, committed_at_a, checkpoint)
    expected_start = {p: downstream for p, (_, downstream) in translated.items()}
    return FailoverTally(
        produced=len(acked), consumed=len(consumed), at_a=len(by_value_a), at_b=len(read_b),
        lost=tuple(sorted(acked - consumed)), reread=len(reread), uncommitted=uncommitted, after_checkpoint=after,
        translation=before, duplicates_at_b=sum(1 for n in read_b.values() if n > 1), window=window,
        resumed_as_translated=bool(expected_start) and dict(start_at_b) == expected_start)
