"""The soak's reader: ``assign`` every partition of ``--topics`` from offset 0 (no group, no commits) at
``--isolation``, one ``assign`` op, then ``poll`` ops until SIGTERM.

A ``poll`` op is invoked before ``consume(1000, 0.5)`` and completes ``ok`` with what it returned,
``{key: [[offset, value], ...]}``. Empty polls are recorded too (``{}``): the history then shows when the
reader was polling and saw nothing, which a checker of unseen writes can use. A message error is not an op:
``_PARTITION_EOF`` is ignored, any other is logged to stderr. A value that is not one of the soak's integers
is logged and left out. SIGTERM: ``close()`` within ``common.CLOSE_S``, exit 0 (``EXIT_CLOSE_TIMEOUT`` if
close did not return).
"""
from __future__ import annotations

import time
import traceback
from typing import Sequence

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition, OFFSET_BEGINNING

from scripts.soak.history import OK, HistoryWriter, key_of
from scripts.soak.workloads.common import (
    EXIT_CLOSE_TIMEOUT, EXIT_OK, Stopping, base_parser, close_bounded, comma_list, decode_value, exit_now, log,
    open_history)

POLL_RECORDS = 1000
POLL_TIMEOUT_S = 0.5


def parser():
    p = base_parser("reader", __doc__.split("\n", 1)[0])
    p.add_argument("--topics", required=True, type=comma_list, help="comma-separated")
    p.add_argument("--isolation", choices=("read_committed", "read_uncommitted"), default="read_committed")
    return p


def polled(messages, process: str) -> dict[str, list[list[int]]]:
    """A consume()'s messages as a poll micro-op's value: ``{key: [[offset, value], ...]}`` in the order read."""
    out: dict[str, list[list[int]]] = {}
    for m in messages:
        err = m.error()
        if err is not None:
            if err.code() != KafkaError._PARTITION_EOF:
                log(process, f"message error on {m.topic()}/{m.partition()}: {err.name()} {err.str()}")
            continue
        value = decode_value(m.value())
        if value is None:
            log(process, f"not a soak value at {m.topic()}/{m.partition()}@{m.offset()}: {m.value()[:40]!r}")
            continue
        out.setdefault(key_of(m.topic(), m.partition()), []).append([m.offset(), value])
    return out


def poll_op(consumer: Consumer, history: HistoryWriter, process: str) -> dict[str, list[list[int]]]:
    """One ``poll`` op: invoke, consume, ok with what was read (also when nothing was)."""
    op = history.invoke("poll", [["poll", None]])
    read = polled(consumer.consume(num_messages=POLL_RECORDS, timeout=POLL_TIMEOUT_S), process)
    history.complete(op, OK, "poll", [["poll", read]])
    return read


def partitions_of(consumer: Consumer, topics: list[str], stopping: Stopping, process: str) -> list[TopicPartition]:
    """Every partition of the topics, from the cluster's metadata (waiting while a topic has none yet)."""
    while True:
        try:
            meta = consumer.list_topics(timeout=2)
            found = {t: meta.topics.get(t) for t in topics}
            if all(m is not None and m.error is None and m.partitions for m in found.values()):
                return [TopicPartition(t, p, OFFSET_BEGINNING) for t in topics for p in sorted(found[t].partitions)]
            log(process, f"waiting for the metadata of {topics}")
        except KafkaException as exc:
            log(process, f"metadata: {exc}")
        if stopping:
            return []
        time.sleep(0.5)


def consumer_config(args, group: str) -> dict:
    return {"bootstrap.servers": args.bootstrap, "client.id": args.process, "group.id": group,
            "enable.auto.commit": False, "auto.offset.reset": "earliest", "isolation.level": args.isolation}


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    stopping = Stopping()
    history = open_history(args)
    consumer = Consumer(consumer_config(args, f"soak-reader-{args.process}"))
    code = 1
    try:
        partitions = partitions_of(consumer, args.topics, stopping, args.process)
        if partitions:
            consumer.assign(partitions)
            history.event("assign", [["assign", [key_of(tp.topic, tp.partition) for tp in partitions]]])
        while partitions and not stopping:
            poll_op(consumer, history, args.process)
        code = EXIT_OK
    except Exception:
        traceback.print_exc()
    finally:
        closed = close_bounded(consumer.close, args.process)
        history.close()
    exit_now(EXIT_CLOSE_TIMEOUT if code == EXIT_OK and not closed else code)
