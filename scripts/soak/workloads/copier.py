"""The soak's transactional copier, one per input partition (Kafka's transactions_test): a read_committed
consumer ``assign``s ``--input-topic``/``--partition`` (no auto commit; it starts at the group ``--group``'s
committed offset, else the earliest) and a transactional producer (``--transactional-id``) copies each value
unchanged to the same partition number of ``--output-topic``.

One ``txn`` op per transaction: up to ``--max-txn-records`` records polled within ``BATCH_S`` (none: no
transaction), then invoke ``[["poll", {in_key: [[o, v], ...]}], ["send", out_key, v], ...]``;
``begin_transaction``, the sends, ``send_offsets_to_transaction`` of the position after the last record; then
with probability ``--abort-probability`` ``abort_transaction``, else ``commit_transaction``. Completion:
- ``ok``: committed, with ``["send", out_key, [offset, v]]`` (offsets from the delivery reports; null if none);
- ``fail``: aborted (by choice, or after an abortable error and a successful ``abort_transaction``), or any
  error before ``commit_transaction`` was called (an uncommitted transaction is never committed: a timeout or
  the next producer with this ``transactional.id`` aborts it);
- ``info``: an error from ``commit_transaction`` that is not abortable (a timeout, retriable errors that ran
  out, fenced): the commit may have happened.
After an abort the consumer rewinds to the group's committed offset (KAFKA-17582: a consumer does not rewind by
itself). When only a new producer can settle the transaction (outcome unknown, the abort itself failed) the
process exits ``EXIT_UNKNOWN_TXN`` (its replacement's InitProducerId completes or aborts it and starts from the
committed offset); a fatal error (fenced) exits ``EXIT_FATAL``; a transactional call that outlives
``STUCK_S`` (librdkafka hangs: confluentinc/librdkafka#5456, #5511) exits ``EXIT_STUCK`` from the watchdog.
The start position (and the one after an abort) is the group's committed offset read explicitly (retried for
up to ``RETRY_S``: while the group coordinator moves it answers NOT_COORDINATOR, and a partition assigned
without an offset whose OffsetFetch failed is never fetched again), else ``EXIT_NO_OFFSETS``; a consumer error
re-assigns the partition at the copier's own position. The launcher restarts a copier that exited by itself.
SIGTERM: the transaction under way completes (its calls' timeouts cut to what is left of ``STOP_S``, no
retries), ``close()`` within ``common.CLOSE_S``, exit 0 (every op complete, even when the transaction's outcome
is left to the next producer or the coordinator's timeout).
"""
from __future__ import annotations

import os
import random
import threading
import time
import traceback
from typing import Callable, Sequence

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition, OFFSET_BEGINNING

from scripts.soak.history import FAIL, INFO, OK, HistoryWriter, key_of
from scripts.soak.workloads.common import (
    EXIT_CLOSE_TIMEOUT, EXIT_FATAL, EXIT_NO_OFFSETS, EXIT_OK, EXIT_STUCK, EXIT_UNKNOWN_TXN, Stopping, base_parser,
    close_bounded, decode_value, error_name, exit_now, log, open_history)

API_TIMEOUT_S = 20.0
STUCK_S = 2 * API_TIMEOUT_S + 10  # a call not back by then ignored its own timeout: the client is stuck
RETRY_S = 2 * API_TIMEOUT_S  # how long a retriable error of one transactional call is retried
BATCH_S = 0.5
COMMITTED_TIMEOUT_S = 5.0  # one read of the committed offset (retried for up to RETRY_S)
STOP_S = 30.0  # after SIGTERM, the transaction under way gets this long in all
FENCED = frozenset({KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH})


def parser():
    p = base_parser("copier", __doc__.split("\n", 1)[0])
    p.add_argument("--input-topic", required=True)
    p.add_argument("--output-topic", required=True)
    p.add_argument("--partition", type=int, required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--transactional-id", required=True)
    p.add_argument("--abort-probability", type=float, default=0.1)
    p.add_argument("--max-txn-records", type=int, default=100)
    p.add_argument("--transaction-timeout-ms", type=int, default=30000)
    p.add_argument("--seed", type=int, default=None, help="of the abort choices (default: random)")
    return p


class Unsettled(Exception):
    """The transaction's outcome is for a new producer with the same transactional.id to settle."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def txn_value(read: list[list[int]], in_key: str, out_key: str, offsets: dict[int, int] | None = None) -> list:
    """A txn op's value: the poll, then one send per record; with ``offsets`` (value -> output offset) the
    sends as completed."""
    sends = [["send", out_key, v if offsets is None else [offsets.get(v), v]] for _, v in read]
    return [["poll", {in_key: read}], *sends]


def failure_type(committing: bool) -> str:
    """A transaction that failed without a successful abort: definitely not committed unless the error came
    from ``commit_transaction`` itself."""
    return INFO if committing else FAIL


class SoakCopier:
    def __init__(self, args, history: HistoryWriter, stopping: Stopping) -> None:
        self.args, self.history, self.stopping = args, history, stopping
        self.tp = TopicPartition(args.input_topic, args.partition)
        self.in_key, self.out_key = key_of(args.input_topic, args.partition), key_of(args.output_topic, args.partition)
        self.consumer = Consumer({"bootstrap.servers": args.bootstrap, "client.id": args.process,
                                  "group.id": args.group, "enable.auto.commit": False,
                                  "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
        self.producer = Producer({"bootstrap.servers": args.bootstrap, "client.id": args.process,
                                  "transactional.id": args.transactional_id, "linger.ms": 5,
                                  "transaction.timeout.ms": args.transaction_timeout_ms})
        self.random = random.Random(args.seed)
        self.in_call: tuple[str, float] | None = None
        self.offsets: dict[int, int] = {}
        self.position: int | None = None  # the next input offset to copy, once known

    def timeout_s(self) -> float:
        """A client call's timeout: ``API_TIMEOUT_S``, or what is left of ``STOP_S`` after SIGTERM."""
        return API_TIMEOUT_S if not self.stopping else min(API_TIMEOUT_S, max(1.0, STOP_S - self.stopping.since_s()))

    def run(self) -> int:
        try:
            self._call("init_transactions", lambda: self.producer.init_transactions(self.timeout_s()))
        except KafkaException as exc:
            log(self.args.process, f"init_transactions: {exc}")
            return EXIT_OK if self.stopping else EXIT_FATAL if exc.args[0].fatal() else EXIT_UNKNOWN_TXN
        try:
            self._rewind(EXIT_NO_OFFSETS)
            while not self.stopping:
                read = self._poll_batch()
                if read:
                    self._transaction(read)
        except Unsettled as exc:
            return EXIT_OK if self.stopping else exc.code  # every op is complete: its outcome is settled later
        return EXIT_OK

    def _poll_batch(self) -> list[list[int]]:
        read: list[list[int]] = []
        deadline = time.monotonic() + BATCH_S
        while len(read) < self.args.max_txn_records and (left := deadline - time.monotonic()) > 0:
            for m in self.consumer.consume(self.args.max_txn_records - len(read), timeout=left):
                if m.error() is not None:
                    if m.error().code() != KafkaError._PARTITION_EOF:
                        log(self.args.process, f"consumer error {m.error()}: re-assigned at {self.position}")
                        self._assign(self.position)
                        return read  # what this consume() returned after the error is fetched again
                    continue
                value = decode_value(m.value())
                if value is None:
                    log(self.args.process, f"skipped {m.value()!r} at offset {m.offset()}")
                    continue
                read.append([m.offset(), value])
                self.position = m.offset() + 1
        return read

    def _assign(self, offset: int | None) -> None:
        self.position = offset
        start = offset if offset is not None else OFFSET_BEGINNING
        self.consumer.assign([TopicPartition(self.tp.topic, self.tp.partition, start)])

    def _transaction(self, read: list[list[int]]) -> None:
        value = txn_value(read, self.in_key, self.out_key)
        op = self.history.invoke("txn", value)
        self.offsets = {}
        committing = False
        try:
            self._call("begin_transaction", self.producer.begin_transaction)
            for _, v in read:
                self._produce(v)
            self._call("flush", lambda: self.producer.flush(self.timeout_s()))
            position = TopicPartition(self.tp.topic, self.tp.partition, read[-1][0] + 1)
            self._call("send_offsets_to_transaction", lambda: self.producer.send_offsets_to_transaction(
                [position], self.consumer.consumer_group_metadata(), self.timeout_s()))
            if self.random.random() < self.args.abort_probability:
                self._abort(op, value, None)
                return
            committing = True
            self._call("commit_transaction", lambda: self.producer.commit_transaction(self.timeout_s()))
        except KafkaException as exc:
            self._failed(op, value, exc.args[0], committing)
            return
        self.history.complete(op, OK, "txn", txn_value(read, self.in_key, self.out_key, self.offsets))

    def _produce(self, value: int) -> None:
        def delivered(err, msg) -> None:
            if err is None and msg.offset() >= 0:
                self.offsets[value] = msg.offset()

        while True:
            try:
                self.producer.produce(self.args.output_topic, str(value).encode(), partition=self.tp.partition,
                                      on_delivery=delivered)
                return
            except BufferError:
                self.producer.poll(0.05)

    def _failed(self, op: int, value: list, error: KafkaError, committing: bool) -> None:
        name = error_name(error)
        log(self.args.process, f"transaction failed{' in commit' if committing else ''}: {name} {error.str()}")
        if error.fatal() or error.code() in FENCED:
            self.history.complete(op, failure_type(committing), "txn", value, name)
            raise Unsettled(EXIT_FATAL)
        if error.txn_requires_abort():
            self._abort(op, value, name)
            return
        self.history.complete(op, failure_type(committing), "txn", value, name)
        raise Unsettled(EXIT_UNKNOWN_TXN)

    def _abort(self, op: int, value: list, error: str | None) -> None:
        """Abort (by choice, or after an abortable error), complete the op ``fail``, rewind the consumer."""
        try:
            self._call("abort_transaction", lambda: self.producer.abort_transaction(self.timeout_s()))
        except KafkaException as exc:
            self.history.complete(op, FAIL, "txn", value, error or error_name(exc.args[0]))
            raise Unsettled(EXIT_FATAL if exc.args[0].fatal() else EXIT_UNKNOWN_TXN)
        self.history.complete(op, FAIL, "txn", value, error)
        self._rewind(EXIT_NO_OFFSETS)

    def _rewind(self, code: int) -> None:
        """Assign the partition at the group's committed offset (the earliest without one). Reading it is
        retried on any error for up to ``RETRY_S`` (the coordinator moving answers NOT_COORDINATOR, which
        librdkafka does not flag retriable here), then ``Unsettled(code)``: a read, not an op."""
        deadline = time.monotonic() + RETRY_S
        while True:
            try:
                timeout = min(COMMITTED_TIMEOUT_S, self.timeout_s())
                committed = self._call("committed", lambda: self.consumer.committed([self.tp], timeout=timeout))
                break
            except KafkaException as exc:
                if time.monotonic() > deadline or self.stopping:
                    log(self.args.process, f"cannot read the committed offset: {exc}")
                    raise Unsettled(code)
                log(self.args.process, f"committed offset: {error_name(exc.args[0])}, retrying")
                time.sleep(0.5)
        self._assign(committed[0].offset if committed and committed[0].offset >= 0 else None)

    def _call(self, name: str, call: Callable):
        """A transactional call, retried while its error is retriable (the client's own contract for these
        calls: the same call again, not a new op) for up to ``RETRY_S``, watched for hangs."""
        deadline = time.monotonic() + RETRY_S
        while True:
            self.in_call = (name, time.monotonic())
            try:
                return call()
            except KafkaException as exc:
                err = exc.args[0]
                if (not err.retriable() or err.fatal() or err.txn_requires_abort() or time.monotonic() > deadline
                        or self.stopping):
                    raise
                log(self.args.process, f"{name}: {error_name(err)}, retrying")
                time.sleep(0.2)
            finally:
                self.in_call = None

    def watchdog(self) -> None:
        """A thread: exit ``EXIT_STUCK`` if a transactional call outlives ``STUCK_S``."""
        while True:
            time.sleep(1)
            call = self.in_call
            if call is not None and time.monotonic() - call[1] > STUCK_S:
                log(self.args.process, f"stuck in {call[0]} for {time.monotonic() - call[1]:.0f} s")
                os._exit(EXIT_STUCK)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    stopping = Stopping()
    history = open_history(args)
    copier = SoakCopier(args, history, stopping)
    threading.Thread(target=copier.watchdog, daemon=True, name="watchdog").start()
    code = 1
    try:
        code = copier.run()
    except Exception:
        traceback.print_exc()
    finally:
        closed = close_bounded(copier.consumer.close, args.process)
        history.close()
    exit_now(EXIT_CLOSE_TIMEOUT if code == EXIT_OK and not closed else code)
