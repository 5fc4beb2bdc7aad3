"""A transactional copier, run as its own process (``python -m scripts.demo.txn_copier``) so that a demo or a
test can really kill, pause or bounce it: Kafka's TransactionalMessageCopier with confluent-kafka.

Consume-transform-produce, exactly once: a read_committed consumer with ``assign`` (no rebalances; the group
only keeps offsets) reads the input partitions from the group's committed offsets; each transaction copies up
to ``records_per_txn`` records, input partition p to output partition p (so each partition's order is kept),
then commits the consumed positions with ``send_offsets_to_transaction`` and ``commit_transaction``.

* An abortable error aborts the transaction and rewinds the consumer to the committed offsets.
* A fatal error (fenced by a newer producer with the same ``transactional.id``) ends the process: exit 3.
* SIGTERM is a clean bounce: the transaction under way is committed, then the process exits 0.
* A transactional call (flush, send_offsets_to_transaction, commit) that has not returned ``STUCK_S`` after it
  began, although each is given ``API_TIMEOUT_S``, means the client library is stuck: librdkafka 2.16 can block
  forever in ``send_offsets_to_transaction`` when the group coordinator it cached went down (its coordinator
  request timeout is never checked and a decommissioned coordinator broker never re-triggers the lookup:
  confluentinc/librdkafka#5456 and #5511, both open). The process reports ``stuck`` and exits 4, for its
  supervisor to replace it.
* ``--pause-in-txn N``: in the N-th transaction, once its records are produced and flushed (uncommitted), it
  reports ``paused`` and waits for a line on stdin before committing: a deterministic place to kill, stop
  (SIGSTOP) or fence it.

Reports on stdout, one JSON object per line: ``ready``, ``committed`` (txn number, records in it, records this
process committed, positions), ``aborted``, ``paused``, ``fenced``, ``done`` (positions reached the input's end,
with ``--exit-when-done``).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

EXIT_FENCED = 3
EXIT_STUCK = 4
API_TIMEOUT_S = 20
STUCK_S = 2 * API_TIMEOUT_S  # a transactional call not back by then ignored its own timeout: the client is stuck
IDLE_S = 0.3
FENCED_CODES = frozenset({KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH})


def emit(kind: str, **fields) -> None:
    sys.stdout.write(json.dumps({"event": kind, **fields}) + "\n")
    sys.stdout.flush()


def copier_configs(bootstrap: str, group: str, transactional_id: str, timeout_ms: int) -> tuple[dict, dict]:
    consumer = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                "isolation.level": "read_committed", "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100,
                "client.id": transactional_id}
    producer = {"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                "transaction.timeout.ms": timeout_ms, "linger.ms": 5, "client.id": transactional_id}
    return consumer, producer


class Fenced(Exception):
    pass


class Copier:
    def __init__(self, args: argparse.Namespace) -> None:
        consumer_conf, producer_conf = copier_configs(args.bootstrap_server, args.group, args.transactional_id,
                                                      args.transaction_timeout_ms)
        self.args = args
        self.partitions = [TopicPartition(args.input, p) for p in args.partitions]
        self.consumer = Consumer(consumer_conf)
        self.producer = Producer(producer_conf)
        self.stopping = False
        self.in_call: tuple[str, float] | None = None  # (transactional call, monotonic start), for the watchdog
        self.txn = 0
        self.copied = 0
        self._window_start, self._window_count = time.monotonic(), 0

    def run(self) -> int:
        self._init_transactions()
        self.consumer.assign(self.partitions)  # from the group's committed offsets (earliest without)
        emit("ready", transactional_id=self.args.transactional_id)
        while not self.stopping:
            try:
                records = self._transaction()
            except KafkaException as exc:
                self._abort(exc.args[0])
                continue
            if records:
                self.copied += records
                emit("committed", txn=self.txn, records=records, copied=self.copied,
                     positions={tp.partition: tp.offset for tp in self._positions()})
            elif self.args.exit_when_done and self._at_end():
                emit("done", copied=self.copied)
                return 0
        return 0

    def _init_transactions(self, timeout_s: float = 60.0) -> None:
        """InitProducerId, retried while the coordinator is unavailable (a broker bounce, a coordinator moving)."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                self.producer.init_transactions(10)
                return
            except KafkaException as exc:
                self._fatal_if_fenced(exc.args[0])
                if not exc.args[0].retriable() or time.monotonic() > deadline:
                    raise

    def _transaction(self) -> int:
        """One transaction: begun at the first record consumed, each record produced as it is consumed (so a kill
        lands inside a transaction), until ``records_per_txn`` records or the input is idle; then the consumed
        positions and the commit. The number of records committed (0: nothing was consumed, no transaction)."""
        count, idle_since = 0, time.monotonic()
        while count < self.args.records_per_txn and not self.stopping:
            self._throttle()
            msgs = [m for m in self.consumer.consume(min(100, self.args.records_per_txn - count), timeout=0.1)
                    if m.error() is None]
            if not msgs:
                if time.monotonic() - idle_since > IDLE_S:
                    break
                continue
            if count == 0:
                self.txn += 1
                self._call(self.producer.begin_transaction)
            for m in msgs:
                self._produce(m)
            count += len(msgs)
            self._window_count += len(msgs)
            idle_since = time.monotonic()
        if count == 0:
            return 0
        self._watched("flush", lambda: self.producer.flush(API_TIMEOUT_S))
        if self.txn == self.args.pause_in_txn:
            emit("paused", txn=self.txn, records=count)
            sys.stdin.readline()
        self._watched("send_offsets_to_transaction", lambda: self.producer.send_offsets_to_transaction(
            self._positions(), self.consumer.consumer_group_metadata(), API_TIMEOUT_S))
        self._watched("commit_transaction", self._commit)
        return count

    def _watched(self, name: str, call):
        self.in_call = (name, time.monotonic())
        try:
            return call()
        finally:
            self.in_call = None

    def watchdog(self) -> None:
        """A thread: exit 4 if a transactional call outlives ``STUCK_S``."""
        while True:
            time.sleep(1)
            call = self.in_call
            if call is not None and time.monotonic() - call[1] > STUCK_S:
                emit("stuck", call=call[0], txn=self.txn, seconds=round(time.monotonic() - call[1], 1))
                os._exit(EXIT_STUCK)

    def _throttle(self) -> None:
        if not self.args.rate:
            return
        ahead = self._window_count / self.args.rate - (time.monotonic() - self._window_start)
        if ahead > 0:
            time.sleep(min(ahead, 0.5))

    def _abort(self, error: KafkaError) -> None:
        """An abortable error: abort, and rewind the consumer to the group's committed offsets."""
        self._fatal_if_fenced(error)
        if not error.txn_requires_abort():
            raise KafkaException(error)
        emit("aborted", txn=self.txn, error=str(error))
        self._watched("abort_transaction", lambda: self._call(lambda: self.producer.abort_transaction(API_TIMEOUT_S)))
        self._rewind()

    def _produce(self, message) -> None:
        while True:
            try:
                self.producer.produce(self.args.output, message.value(), message.key(), partition=message.partition())
                return
            except BufferError:
                self.producer.poll(0.05)

    def _commit(self) -> None:
        while True:
            try:
                self.producer.commit_transaction(API_TIMEOUT_S)
                return
            except KafkaException as exc:
                if not exc.args[0].retriable():
                    raise

    def _positions(self) -> list[TopicPartition]:
        return [tp for tp in self.consumer.position(self.partitions) if tp.offset >= 0]

    def _rewind(self) -> None:
        committed = self.consumer.committed(self.partitions, timeout=30)
        self.consumer.assign([TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else -2)
                              for tp in committed])

    def _at_end(self) -> bool:
        positions = {tp.partition: tp.offset for tp in self._positions()}
        unread = [tp for tp in self.partitions if tp.partition not in positions]
        if unread:  # nothing consumed there by this process: where the group's committed offset is
            try:
                positions.update((tp.partition, tp.offset) for tp in self.consumer.committed(unread, timeout=10))
            except KafkaException:
                return False
        for tp in self.partitions:
            try:
                _, high = self.consumer.get_watermark_offsets(tp, timeout=10, cached=False)
            except KafkaException:  # no leader right now (a broker bounce): not known to be at the end
                return False
            if positions.get(tp.partition, 0) < high:
                return False
        return True

    def _call(self, action):
        try:
            return action()
        except KafkaException as exc:
            self._fatal_if_fenced(exc.args[0])
            raise

    def _fatal_if_fenced(self, error: KafkaError) -> None:
        if error.code() in FENCED_CODES or error.fatal():
            raise Fenced(str(error))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--bootstrap-server", required=True)
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--partitions", type=lambda s: [int(x) for x in s.split(",")], default=[0],
                   help="input partitions to copy, comma-separated (default 0)")
    p.add_argument("--group", required=True)
    p.add_argument("--transactional-id", required=True)
    p.add_argument("--records-per-txn", type=int, default=750)
    p.add_argument("--transaction-timeout-ms", type=int, default=40000)
    p.add_argument("--rate", type=float, default=0.0, help="records/s at most (default 0: no limit)")
    p.add_argument("--pause-in-txn", type=int, default=0)
    p.add_argument("--exit-when-done", action="store_true")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    copier = Copier(args)

    def stop(*_) -> None:
        copier.stopping = True

    signal.signal(signal.SIGTERM, stop)
    threading.Thread(target=copier.watchdog, daemon=True, name="watchdog").start()
    try:
        code = copier.run()
    except Fenced as exc:
        emit("fenced", txn=copier.txn, error=str(exc))
        return EXIT_FENCED
    try:
        copier.consumer.close()
    finally:
        copier.producer.flush(10)
    emit("stopped", copied=copier.copied)
    return code


if __name__ == "__main__":
    sys.exit(main())
