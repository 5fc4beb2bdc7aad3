"""What the runner watches while the workloads run and drain, from the history files as they grow (no client of
its own in the workloads' way): whether the workload is under way, whether the readers and the copiers have
caught up, and when each key got a live leader after the final heal.

- ``HistoryTail``: reads the complete new lines of every ``history-*.jsonl`` of a directory since the last call.
- ``Progress`` (pure): folds ops into what was sent and read. A reader is a process with an ``assign`` op (it
  reads its assigned keys); a copier is a process with ``txn`` ops. Caught up (``lagging`` empty): every
  reader has read each of its keys up to the key's high watermark - 1, except on a copier's output topic,
  where it has read up to the highest offset a committed (``ok``) transaction wrote (a transactional topic
  ends with control records, which no reader returns); every copier input key is polled by a committed
  transaction up to its high watermark - 1.
- ``AvailabilityClock`` (pure): from what time after the heal each key was led by a live broker in every
  live broker's metadata, and stayed so, in seconds from the heal.
"""
from __future__ import annotations

from pathlib import Path

from scripts.soak.history import OK, Op, split_key


class HistoryTail:
    """Incremental reader of ``history-*.jsonl`` files; a line without its newline yet waits for the next call."""

    def __init__(self, directory: Path):
        self.directory = directory
        self._offsets: dict[Path, int] = {}
        self._partial: dict[Path, bytes] = {}

    def read(self) -> list[Op]:
        ops: list[Op] = []
        for path in sorted(self.directory.glob("history-*.jsonl")):
            offset = self._offsets.get(path, 0)
            try:
                with open(path, "rb") as f:
                    f.seek(offset)
                    data = f.read()
            except FileNotFoundError:
                continue
            self._offsets[path] = offset + len(data)
            data = self._partial.pop(path, b"") + data
            *lines, rest = data.split(b"\n")
            if rest:
                self._partial[path] = rest
            ops.extend(Op.from_json(line.decode()) for line in lines if line)
        return ops


class Progress:
    """What the ops seen so far sent and read (see the module docstring)."""

    def __init__(self, eos_pairs: dict[str, str] | None = None):
        self.copy_inputs = set(eos_pairs or {})
        self.copy_outputs = set((eos_pairs or {}).values())
        self.sends_ok = 0
        self.polls_ok = 0
        self.assigned: dict[str, set[str]] = {}          # reader -> keys
        self.read: dict[str, dict[str, int]] = {}         # process -> key -> highest offset read
        self.copied: dict[str, int] = {}                  # copier input key -> highest offset a committed txn polled
        self.committed_sends: dict[str, int] = {}         # key -> highest offset a committed txn wrote

    def absorb(self, ops: list[Op]) -> None:
        for op in ops:
            if op.type != OK:
                continue
            if op.f == "assign":
                for micro in op.value or []:
                    self.assigned.setdefault(op.process, set()).update(micro[1] or [])
            elif op.f == "send":
                self.sends_ok += 1
            elif op.f == "poll":
                self.polls_ok += 1
                self._polled(op.process, op.value, self.read.setdefault(op.process, {}))
            elif op.f == "txn":
                self._txn(op)

    @staticmethod
    def _polled(process: str, value, into: dict[str, int]) -> None:
        for micro in value or []:
            if micro[0] == "poll" and micro[1]:
                for key, pairs in micro[1].items():
                    offsets = [pair[0] for pair in pairs if pair[0] is not None]
                    if offsets:
                        into[key] = max(into.get(key, -1), max(offsets))

    def _txn(self, op: Op) -> None:
        self._polled(op.process, op.value, self.copied)
        for micro in op.value or []:
            if micro[0] == "send" and isinstance(micro[2], list) and micro[2][0] is not None:
                key = micro[1]
                self.committed_sends[key] = max(self.committed_sends.get(key, -1), micro[2][0])

    @property
    def under_way(self) -> bool:
        return self.sends_ok > 0 and self.polls_ok > 0

    def lagging(self, high_watermarks: dict[str, int]) -> dict[str, dict[str, tuple[int, int]]]:
        """process (or ``copiers``) -> key -> (highest offset read, offset it must reach); empty: caught up."""
        behind: dict[str, dict[str, tuple[int, int]]] = {}
        for reader, keys in self.assigned.items():
            for key in keys:
                target = self._target(key, high_watermarks)
                got = self.read.get(reader, {}).get(key, -1)
                if got < target:
                    behind.setdefault(reader, {})[key] = (got, target)
        for key, high in high_watermarks.items():
            if split_key(key)[0] in self.copy_inputs and self.copied.get(key, -1) < high - 1:
                behind.setdefault("copiers", {})[key] = (self.copied.get(key, -1), high - 1)
        return behind

    def _target(self, key: str, high_watermarks: dict[str, int]) -> int:
        if split_key(key)[0] in self.copy_outputs:
            return self.committed_sends.get(key, -1)
        return high_watermarks.get(key, 0) - 1


class AvailabilityClock:
    """Seconds from the heal until each key was led everywhere for good: from the sample that saw it led after
    the last sample that did not (``observe`` per sample; a broker that comes back without metadata makes its
    keys leaderless again)."""

    def __init__(self, healed_at_ns: int, keys: list[str]):
        self.healed_at_ns = healed_at_ns
        self.keys = list(keys)
        self.led_since: dict[str, int] = {}
        self.last_ns = healed_at_ns

    def observe(self, now_ns: int, led: set[str]) -> None:
        self.last_ns = max(self.last_ns, now_ns)
        for key in self.keys:
            if key not in led:
                self.led_since.pop(key, None)
            else:
                self.led_since.setdefault(key, now_ns)

    @property
    def all_led(self) -> bool:
        return all(k in self.led_since for k in self.keys)

    def leaderless_after_heal(self) -> dict[str, float]:
        """Every key: seconds until led for good; a key not led at the last sample counts the whole
        observation."""
        return {k: (self.led_since.get(k, self.last_ns) - self.healed_at_ns) / 1e9 for k in self.keys}
