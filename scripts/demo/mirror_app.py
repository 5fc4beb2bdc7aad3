"""``orders-app``, the application of ``zkafka demo mirror``: one member of a consumer group, run as its own
process (``python -m scripts.demo.mirror_app``) so that the demo can kill it with its cluster.

It reads its topic like a real application: poll a batch, process it (here: report it), then commit
synchronously (``enable.auto.commit=false``), so that what is committed was processed. With ``--rate`` it
reads that many records per second (in 0.1 s steps; a late step catches up at most one step's worth);
with ``--exit-at-end`` it stops once every partition of the topic is read to its end and committed.

Reports on stdout, one JSON object per line:

- ``{"event": "assigned", "partitions": [0, 1, 2], "committed": {"0": 1668, ...}}``: its partitions and the
  group's committed offsets for them at that moment (absent: none committed);
- ``{"event": "processed", "records": [[partition, offset, value], ...]}``: a batch, before its commit;
- ``{"event": "committed", "offsets": {"0": 1700, ...}}``: the commit of that batch acknowledged;
- ``{"event": "end"}`` (``--exit-at-end``), ``{"event": "error", "error": "..."}``.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from collections.abc import Sequence

from confluent_kafka import Consumer, KafkaError, KafkaException

STEP_S = 0.1
MAX_BATCH = 500


def emit(kind: str, **fields) -> None:
    sys.stdout.write(json.dumps({"event": kind, **fields}) + "\n")
    sys.stdout.flush()


class OrdersApp:
    def __init__(self, bootstrap: str, topic: str, group: str, partitions: int, rate: float):
        self.topic, self.partitions, self.rate = topic, partitions, rate
        self.stop = threading.Event()
        self.at_end: set[int] = set()
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": "orders-app",
                                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                                  "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                                  "enable.partition.eof": True, "fetch.wait.max.ms": 100})

    def on_assign(self, consumer, partitions) -> None:
        committed = consumer.committed(partitions, timeout=30)
        emit("assigned", partitions=sorted(tp.partition for tp in partitions),
             committed={str(tp.partition): tp.offset for tp in committed if tp.offset >= 0})

    def step(self, limit: int) -> int:
        """One batch: poll at most ``limit`` records, report them, commit them; how many there were."""
        records = []
        for msg in self.consumer.consume(limit, STEP_S):
            error = msg.error()
            if error is None:
                records.append([msg.partition(), msg.offset(), int(msg.value())])
                self.at_end.discard(msg.partition())
            elif error.code() == KafkaError._PARTITION_EOF:
                self.at_end.add(msg.partition())
            else:
                emit("error", error=str(error))
        if records:
            emit("processed", records=records)
            offsets = self.consumer.commit(asynchronous=False)
            emit("committed", offsets={str(tp.partition): tp.offset for tp in offsets or [] if tp.offset >= 0})
        return len(records)

    def run(self, exit_at_end: bool) -> int:
        """Steps until stopped (or at the end); paced, each step may read what the rate allowed since the last,
        at most two steps' worth (a late step catches up that much, no more)."""
        self.consumer.subscribe([self.topic], on_assign=self.on_assign)
        burst = max(1.0, 2 * self.rate * STEP_S)
        credit, last = 0.0, time.monotonic()
        try:
            while not self.stop.is_set():
                began = time.monotonic()
                if self.rate <= 0:
                    self.step(MAX_BATCH)
                else:
                    credit, last = min(burst, credit + self.rate * (began - last)), began
                    credit -= self.step(int(credit)) if credit >= 1 else 0
                if exit_at_end and len(self.at_end) >= self.partitions:
                    emit("end")
                    break
                if self.rate > 0:
                    self.stop.wait(max(0.0, STEP_S - (time.monotonic() - began)))
            self.consumer.close()
        except KafkaException as exc:
            emit("error", error=str(exc))
            return 1
        return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--bootstrap-server", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--partitions", type=int, required=True, help="the topic's partitions (for --exit-at-end)")
    parser.add_argument("--rate", type=float, default=0.0, help="records/s at most (0: as fast as it can)")
    parser.add_argument("--exit-at-end", action="store_true")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the demo decides when its member stops
    app = OrdersApp(args.bootstrap_server, args.topic, args.group, args.partitions, args.rate)
    signal.signal(signal.SIGTERM, lambda *_: app.stop.set())
    return app.run(args.exit_at_end)


if __name__ == "__main__":
    sys.exit(main())
