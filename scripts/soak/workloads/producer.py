"""The soak's producer: consecutive integer values from ``--value-base`` round-robin over the partitions of
``--topic`` at ``--rate`` records/s, asynchronously, one ``send`` op per record.

The op is invoked once ``produce()`` has accepted the record (a ``BufferError`` is librdkafka's queue being
full: poll and hand it the same record again; that is queueing, not a retry) and completes in the delivery
report: ``ok`` with ``[offset, value]`` (offset null when librdkafka acknowledged it without one, an implicit
ack of an idempotent batch), ``fail`` when the record was definitely not written, ``info`` for any other
delivery error (``common.send_completion``). Nothing is retried above the client.

SIGTERM: stop producing, flush for at most ``--flush-timeout-s``, then exit 0. When the flush ran out, what is
still queued or in flight is purged (those sends complete ``info``: a queued record may be waiting for a retry
after an attempt that was written) and the exit is 0 once every send completed, else ``EXIT_UNFINISHED``;
``EXIT_FATAL`` after a fatal client error (the idempotent producer's fatal state: it can send nothing more).

An idempotent producer logs librdkafka's ``eos`` debug context into its log: the producer id it got, every
error on a sequence (ERRSEQ, UNKPID) and every drain and epoch bump. librdkafka re-sends what waits for a retry
under the bumped epoch from sequence 0 (librdkafka #4953): a record a broker had written but not acknowledged
(a timed-out or NOT_ENOUGH_REPLICAS_AFTER_APPEND attempt) is written again. So each bump librdkafka begins is
also an ``epoch-bump`` op in the history (``EosLog``), and the checker tells a duplicate whose send spanned
one apart (``duplicate-after-bump``) from a broker's; the brokers' dumps (``evidence/``) show the epochs.
"""
from __future__ import annotations

import re
import sys
import time
import traceback
from typing import Sequence

from confluent_kafka import KafkaException, Producer

from scripts.soak.history import OK, HistoryWriter, key_of
from scripts.soak.workloads.common import (
    EXIT_FATAL, EXIT_OK, EXIT_UNFINISHED, Pacer, Stopping, base_parser, encode_value, error_name, exit_now, log,
    open_history, partition_of, send_completion, value_of)


def parser():
    p = base_parser("producer", __doc__.split("\n", 1)[0])
    p.add_argument("--topic", required=True)
    p.add_argument("--partitions", type=int, required=True)
    p.add_argument("--rate", type=float, default=500.0, help="records/s")
    p.add_argument("--value-base", type=int, required=True)
    p.add_argument("--acks", choices=("all", "1", "0"), default="all")
    p.add_argument("--idempotence", choices=("true", "false"), default="true")
    p.add_argument("--message-timeout-ms", type=int, default=120000,
                   help="how long librdkafka keeps trying a record (long enough to ride through a fault)")
    p.add_argument("--flush-timeout-s", type=float, default=30.0)
    return p


def producer_config(args) -> dict:
    return {"bootstrap.servers": args.bootstrap, "client.id": args.process, "acks": args.acks,
            "enable.idempotence": args.idempotence == "true", "linger.ms": 5,
            "message.timeout.ms": args.message_timeout_ms, **({"debug": "eos"} if args.idempotence == "true" else {})}


class EosLog:
    """librdkafka's log lines (confluent-kafka's ``logger``, served by ``poll()`` in order with the delivery
    reports): each goes to stderr in librdkafka's own format, and a drain begun for an epoch bump is also an
    ``epoch-bump`` op."""

    SYSLOG = {10: 7, 20: 6, 30: 4, 40: 3, 50: 2}  # Python's levels back to librdkafka's

    def __init__(self, history: HistoryWriter, process: str) -> None:
        self.history, self.process = history, process

    def log(self, level: int, fmt: str, *args) -> None:
        fac, name, text = (args + ("", "", ""))[:3] if fmt == "%s [%s] %s" else ("LOG", self.process, fmt % args)
        sys.stderr.write(f"%{self.SYSLOG.get(level, 6)}|{time.time():.3f}|{fac}|{name}| {text}\n")
        reason = epoch_bump_reason(fac, text)
        if reason is not None:
            self.history.event("epoch-bump", [["epoch-bump", reason]])


BUMP_LINE = re.compile(r"Beginning partition drain .* epoch bump for \d+ partition\(s\) with in-flight requests: (.*)$")


def epoch_bump_reason(fac: str, text: str) -> str | None:
    """The reason of librdkafka's ``DRAIN`` line that starts an idempotent producer's epoch bump
    (``rd_kafka_idemp_drain_epoch_bump``: "[thrd:...]: Beginning partition drain in state Assigned for
    PID{Id:3,Epoch:0} epoch bump for 2 partition(s) with in-flight requests: skipped sequence numbers"); else
    None."""
    match = BUMP_LINE.search(text) if fac == "DRAIN" else None
    return match.group(1) if match else None


class SoakProducer:
    def __init__(self, args, history: HistoryWriter, stopping: Stopping) -> None:
        self.args, self.history, self.stopping = args, history, stopping
        self.fatal: str | None = None
        self.pending = 0  # invoked, not yet completed
        self.producer = Producer({**producer_config(args), "error_cb": self._error,
                                  "logger": EosLog(history, args.process)})

    def _error(self, err) -> None:
        if err.fatal():
            self.fatal = error_name(err)
        log(self.args.process, f"client error {error_name(err)}: {err.str()}")

    def run(self) -> int:
        pacer, sent, start = Pacer(self.args.rate), 0, time.monotonic()
        while not self.stopping and self.fatal is None:
            elapsed = time.monotonic() - start
            while sent < pacer.due(elapsed) and not self.stopping and self.fatal is None:
                self._send(sent)
                sent += 1
            try:
                self.producer.poll(pacer.wait_s(sent, time.monotonic() - start))
            except SystemError as exc:
                # confluent-kafka 2.16 can raise this from poll() while librdkafka reports its brokers going down
                # ("exception <class 'str'> is not a BaseException subclass"); the sends stay recorded
                log(self.args.process, f"client raised from poll(): {exc}")
        return self._finish()

    def _send(self, n: int) -> None:
        """Record n: handed to the client (waiting out a full queue), then its op invoked."""
        key = key_of(self.args.topic, partition_of(n, self.args.partitions))
        value = value_of(self.args.value_base, n)
        op: list[int] = []  # the op id, known once produce() returned; delivery reports run in poll() only

        def delivered(err, msg) -> None:
            self._delivered(op[0], key, value, err, msg)

        while True:
            try:
                self.producer.produce(self.args.topic, encode_value(value),
                                      partition=partition_of(n, self.args.partitions), on_delivery=delivered)
                break
            except BufferError:
                self.producer.poll(0.05)
                if self.stopping:
                    return
            except KafkaException as exc:
                name = error_name(exc.args[0])
                rejected = self.history.invoke("send", [["send", key, value]])
                self.history.complete(rejected, send_completion(name, at_produce=True), "send", [["send", key, value]],
                                      name)
                return
        op.append(self.history.invoke("send", [["send", key, value]]))
        self.pending += 1

    def _delivered(self, op: int, key: str, value: int, err, msg) -> None:
        self.pending -= 1
        if err is None:
            offset = msg.offset()
            self.history.complete(op, OK, "send", [["send", key, [offset if offset >= 0 else None, value]]])
        else:
            name = error_name(err)
            self.history.complete(op, send_completion(name, at_produce=False), "send", [["send", key, value]], name)

    def _finish(self) -> int:
        self.producer.flush(self.args.flush_timeout_s)
        unfinished = self.pending > 0
        if unfinished:
            log(self.args.process, f"{self.pending} sends unfinished after {self.args.flush_timeout_s} s: purging")
            self.producer.purge(in_queue=True, in_flight=True)  # each purged send completes info
            self.producer.poll(1)
            unfinished = self.pending > 0
        if self.fatal is not None:
            log(self.args.process, f"fatal client error {self.fatal}")
            return EXIT_FATAL
        return EXIT_UNFINISHED if unfinished else EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    stopping = Stopping()
    history = open_history(args)
    code = 1
    try:
        code = SoakProducer(args, history, stopping).run()
    except Exception:
        traceback.print_exc()
    finally:
        history.close()
    exit_now(code)  # the client's destroy would wait for requests still in flight
