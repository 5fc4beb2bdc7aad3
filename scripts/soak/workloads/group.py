"""The soak's consumer-group member: ``subscribe`` to ``--topics`` in ``--group`` (librdkafka's defaults but no
auto commit, earliest reset), ``poll`` ops as the reader's, and after a non-empty poll an asynchronous
``commit`` op of the next offsets of what was read.

Ops: ``subscribe`` (once, ok); ``rebalance`` (ok, as the callbacks run: ``{"assigned": [keys], "revoked": []}``
or ``{"assigned": [], "revoked": [keys]}``; a lost assignment is recorded as revoked); ``poll``; ``commit``
invoked with ``{key: next offset}`` and completed ``ok`` with the offsets the commit's answer names, ``fail``
when the coordinator rejected it for the member's generation (``common.COMMIT_DEFINITE``), ``info`` otherwise
(a timeout: it may have been stored), and ``info`` when no answer came within ``COMMIT_WAIT_S`` (librdkafka
waits for a coordinator for ever; a late answer is only logged). The answer arrives in the ``on_commit``
callback, which the next polls serve: the member polls on meanwhile and sends no other commit; what it read
since the last commit is committed next (next offsets per key; offsets of partitions revoked meanwhile are
dropped).

SIGTERM: the commit under way waited for (polling on, within its deadline), ``close()`` within
``common.CLOSE_S`` (it leaves the group; commits nothing more), exit 0; ``EXIT_CLOSE_TIMEOUT`` if close did
not return (every op is complete).
"""
from __future__ import annotations

import time
import traceback
from dataclasses import dataclass
from typing import Sequence

from confluent_kafka import Consumer, KafkaException, TopicPartition

from scripts.soak.history import INFO, OK, HistoryWriter, key_of, split_key
from scripts.soak.workloads.common import (
    EXIT_CLOSE_TIMEOUT, EXIT_OK, Stopping, base_parser, close_bounded, comma_list, commit_completion,
    error_name, exit_now, log, open_history)
from scripts.soak.workloads.reader import poll_op

COMMIT_WAIT_S = 15.0


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


@dataclass
class PendingCommit:
    op: int
    offsets: dict[str, int]
    deadline: float
    answered: bool = False  # completed: by its callback, or info once past its deadline


class GroupMember:
    def __init__(self, args, history: HistoryWriter) -> None:
        self.args, self.history = args, history
        self.consumer = Consumer({"bootstrap.servers": args.bootstrap, "client.id": args.process,
                                  "group.id": args.group, "enable.auto.commit": False,
                                  "auto.offset.reset": "earliest", "isolation.level": args.isolation,
                                  "on_commit": self._commit_answered})
        self.uncommitted: dict[str, int] = {}
        self.pending: list[PendingCommit] = []  # in the order sent; answers come back in that order

    def _assigned(self, _consumer, partitions) -> None:
        self.history.event("rebalance", [["rebalance", {"assigned": _keys(partitions), "revoked": []}]])

    def _revoked(self, _consumer, partitions) -> None:
        self.history.event("rebalance", [["rebalance", {"assigned": [], "revoked": _keys(partitions)}]])
        for key in _keys(partitions):
            self.uncommitted.pop(key, None)

    def run(self, stopping: Stopping) -> int:
        self.consumer.subscribe(self.args.topics, on_assign=self._assigned, on_revoke=self._revoked,
                                on_lost=self._revoked)
        self.history.event("subscribe", [["subscribe", list(self.args.topics)]])
        while not stopping:
            self.uncommitted.update(next_offsets(poll_op(self.consumer, self.history, self.args.process)))
            self._expire(time.monotonic())
            if self.uncommitted and not self._awaited():
                self.commit(self.uncommitted)
                self.uncommitted = {}
        while self._awaited():  # the commit under way: its answer, or info at its deadline
            poll_op(self.consumer, self.history, self.args.process)
            self._expire(time.monotonic())
        return EXIT_OK

    def _awaited(self) -> bool:
        return any(not c.answered for c in self.pending)

    def commit(self, offsets: dict[str, int]) -> None:
        """An asynchronous commit; its op completes in ``_commit_answered`` (served by the next polls) or
        ``info`` at its deadline."""
        op = self.history.invoke("commit", [["commit", offsets]])
        tps = [TopicPartition(*split_key(key), offset) for key, offset in offsets.items()]
        try:
            self.consumer.commit(offsets=tps, asynchronous=True)
        except KafkaException as exc:
            name = error_name(exc.args[0])
            self.history.complete(op, commit_completion(name), "commit", [["commit", offsets]], name)
            return
        self.pending.append(PendingCommit(op, dict(offsets), time.monotonic() + COMMIT_WAIT_S))

    def _commit_answered(self, err, partitions) -> None:
        """``on_commit``: the answer to the pending commit of these offsets (else the oldest pending)."""
        if not self.pending:
            log(self.args.process, f"a commit answer without a commit: {err} {partitions}")
            return
        answer = {key_of(tp.topic, tp.partition): tp.offset for tp in partitions or []}
        commit = next((c for c in self.pending if c.offsets == answer), self.pending[0])
        self.pending.remove(commit)
        if commit.answered:
            log(self.args.process, f"commit op {commit.op} answered after its deadline: {err}")
            return
        commit.answered = True
        if err is not None:
            name = error_name(err)
            self.history.complete(commit.op, commit_completion(name), "commit", [["commit", commit.offsets]], name)
            return
        type_, committed, error = commit_outcome(partitions or [])
        self.history.complete(commit.op, type_, "commit",
                              [["commit", committed if type_ == OK else commit.offsets]], error)

    def _expire(self, now: float) -> None:
        for commit in self.pending:
            if not commit.answered and now >= commit.deadline:
                log(self.args.process, f"commit of {commit.offsets} not answered within {COMMIT_WAIT_S:g} s")
                commit.answered = True
                self.history.complete(commit.op, INFO, "commit", [["commit", commit.offsets]], "no answer")


def _keys(partitions) -> list[str]:
    return [key_of(tp.topic, tp.partition) for tp in partitions]


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    stopping = Stopping()
    history = open_history(args)
    member = GroupMember(args, history)
    code = 1
    try:
        code = member.run(stopping)
    except Exception:
        traceback.print_exc()
    finally:
        closed = close_bounded(member.consumer.close, args.process)
        history.close()
    exit_now(EXIT_CLOSE_TIMEOUT if code == EXIT_OK and not closed else code)
