"""The soak's consumer-group member: ``subscribe`` to ``--topics`` in ``--group`` (librdkafka's defaults but no
auto commit, earliest reset), ``poll`` ops as the reader's, and after each non-empty poll a synchronous
``commit`` op of the next offsets of what that poll read.

Ops: ``subscribe`` (once, ok); ``rebalance`` (ok, as the callbacks run: ``{"assigned": [keys], "revoked": []}``
or ``{"assigned": [], "revoked": [keys]}``; a lost assignment is recorded as revoked); ``poll``; ``commit``
invoked with ``{key: next offset}`` and completed ``ok`` with the offsets ``commit(asynchronous=False)``
returned, ``fail`` when the coordinator rejected it for the member's generation (``common.COMMIT_DEFINITE``),
``info`` otherwise (a timeout: it may have been stored).

SIGTERM: ``close()`` (leaves the group; commits nothing more: every poll was committed already), exit 0.
"""
from __future__ import annotations

from typing import Sequence

from confluent_kafka import Consumer, KafkaException, TopicPartition

from scripts.soak.history import INFO, OK, HistoryWriter, key_of, split_key
from scripts.soak.workloads.common import (
    EXIT_OK, Stopping, base_parser, comma_list, commit_completion, error_name, open_history)
from scripts.soak.workloads.reader import poll_op


def parser():
    p = base_parser("group", __doc__.split("\n", 1)[0])
    p.add_argument("--topics", required=True, type=comma_list, help="comma-separated")
    p.add_argument("--group", required=True)
    p.add_argument("--isolation", choices=("read_committed", "read_uncommitted"), default="read_committed")
    return p


def next_offsets(read: dict[str, list[list[int]]]) -> dict[str, int]:
    """What to commit after a poll: per key, one past the highest offset it read."""
    return {key: max(o for o, _ in records) + 1 for key, records in read.items() if records}


def commit_outcome(results: list[TopicPartition]) -> tuple[str, dict[str, int], str | None]:
    """(type, committed offsets, error) of a synchronous commit's per-partition results: ok when no partition
    failed; else fail if every failure is definite, info if any is not."""
    committed = {key_of(tp.topic, tp.partition): tp.offset for tp in results if tp.error is None}
    errors = [error_name(tp.error) for tp in results if tp.error is not None]
    if not errors:
        return OK, committed, None
    definite = all(commit_completion(e) != INFO for e in errors)
    return (commit_completion(errors[0]) if definite else INFO), committed, errors[0]


class GroupMember:
    def __init__(self, args, history: HistoryWriter) -> None:
        self.args, self.history = args, history
        self.consumer = Consumer({"bootstrap.servers": args.bootstrap, "client.id": args.process,
                                  "group.id": args.group, "enable.auto.commit": False,
                                  "auto.offset.reset": "earliest", "isolation.level": args.isolation})

    def _assigned(self, _consumer, partitions) -> None:
        self.history.event("rebalance", [["rebalance", {"assigned": _keys(partitions), "revoked": []}]])

    def _revoked(self, _consumer, partitions) -> None:
        self.history.event("rebalance", [["rebalance", {"assigned": [], "revoked": _keys(partitions)}]])

    def run(self, stopping: Stopping) -> int:
        self.consumer.subscribe(self.args.topics, on_assign=self._assigned, on_revoke=self._revoked,
                                on_lost=self._revoked)
        self.history.event("subscribe", [["subscribe", list(self.args.topics)]])
        while not stopping:
            read = poll_op(self.consumer, self.history, self.args.process)
            if read:
                self.commit(next_offsets(read))
        return EXIT_OK

    def commit(self, offsets: dict[str, int]) -> None:
        op = self.history.invoke("commit", [["commit", offsets]])
        tps = [TopicPartition(*split_key(key), offset) for key, offset in offsets.items()]
        try:
            results = self.consumer.commit(offsets=tps, asynchronous=False)
        except KafkaException as exc:
            name = error_name(exc.args[0])
            self.history.complete(op, commit_completion(name), "commit", [["commit", offsets]], name)
            return
        type_, committed, error = commit_outcome(results or [])
        self.history.complete(op, type_, "commit", [["commit", committed if type_ == OK else offsets]], error)


def _keys(partitions) -> list[str]:
    return [key_of(tp.topic, tp.partition) for tp in partitions]


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    stopping = Stopping()
    history = open_history(args)
    member = GroupMember(args, history)
    try:
        return member.run(stopping)
    finally:
        member.consumer.close()
        history.close()
