"""``zkafka demo transactions``: exactly-once consume-transform-produce, live, with a copier killed mid-transaction.

Without ``--bootstrap-server`` a 3-broker cluster (real ZooKeeper) is started in a temp dir and stopped at the
end (its logs kept, and named, if the demo fails).

What happens:

* an input topic of 3 partitions (RF 3, min ISR 2) is seeded with ``--records`` values (sequence numbers), and an
  empty output topic of 3 partitions is made;
* copier-1, a transactional copier process (scripts/demo/txn_copier.py: a read_committed consumer, a producer with
  ``transactional.id``, 750 records per transaction, the consumed offsets committed inside each transaction with
  ``send_offsets_to_transaction``) copies input partition p to output partition p at ``--rate`` records/s;
* in one of its transactions (about 40 % into the copy) its records are produced but not yet committed: the
  demo kills it there (SIGKILL) and starts copier-2 with the same ``transactional.id``. Its
  ``init_transactions`` bumps the producer epoch (copier-1's epoch is fenced) and the coordinator aborts
  copier-1's open transaction; copier-2 resumes from the offsets committed with the last committed transaction;
* printed once a second: input, output as a read_committed consumer sees it, and the offsets held back by open
  transactions (high watermark - LSO); at the end: ``input N, output N, duplicates 0`` (exit 1 otherwise) and how
  many aborted records the log holds that read_committed never returned.
"""
from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka import IsolationLevel
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from scripts.demo.runner import run_on_scratch_cluster, stopped_by_sigterm

PARTITIONS = 3
PER_TXN = 750
DEFAULT_RECORDS = 30_000
DEFAULT_RATE = 3000
MIN_RECORDS = 3 * PER_TXN
CLUSTER_PROPERTIES = {"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "6",
                      "transaction.state.log.num.partitions": "6"}
COPY_TIMEOUT_S = 300.0


class OutputCounter:
    """A consumer of every output partition from the beginning: each value's count, under ``isolation``."""

    def __init__(self, bootstrap: str, topic: str, isolation: str = "read_committed"):
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"demo-counter-{os.getpid()}",
                                  "enable.auto.commit": False, "isolation.level": isolation,
                                  "enable.partition.eof": True, "fetch.wait.max.ms": 100})
        self.consumer.assign([TopicPartition(topic, p, -2) for p in range(PARTITIONS)])
        self.values: Counter = Counter()
        self.eof: dict[int, int] = {}

    def poll(self, timeout: float) -> None:
        for m in self.consumer.consume(1000, timeout):
            if m.error() is None:
                self.values[int(m.value())] += 1
                self.eof.pop(m.partition(), None)
            elif m.error().code() == KafkaError._PARTITION_EOF:
                self.eof[m.partition()] = m.offset()

    @property
    def total(self) -> int:
        return sum(self.values.values())

    def close(self) -> None:
        self.consumer.close()


class TransactionsDemo:
    def __init__(self, bootstrap: str, records: int, rate: int, out: Callable[[str], None] = print):
        stamp = f"{time.strftime('%H%M%S')}-{os.getpid()}"
        self.bootstrap, self.records, self.rate, self._out = bootstrap, records, rate, out
        self.source, self.sink = f"demo-txn-in-{stamp}", f"demo-txn-out-{stamp}"
        self.group, self.transactional_id = f"demo-txn-group-{stamp}", f"demo-copier-{stamp}"
        self.admin = AdminClient({"bootstrap.servers": bootstrap})
        self.copiers: list[subprocess.Popen] = []
        self.start = time.monotonic()

    def say(self, text: str) -> None:
        self._out(f"[{time.monotonic() - self.start:6.1f}s] {text}")

    def run(self) -> int:
        rf = self._create_topics()
        self._seed()
        self.say(f"input {self.source}: {self.records:,} records in {PARTITIONS} partitions (RF {rf}); "
                 f"output {self.sink}; transactional.id {self.transactional_id}")
        counter = OutputCounter(self.bootstrap, self.sink)
        try:
            kill_txn = max(2, int(0.4 * self.records / PER_TXN))
            first = self._copier("copier-1", "--pause-in-txn", str(kill_txn))
            self._pump(counter, first, lambda e: e.get("event") == "paused")
            held = self._open_offsets()
            self.say(f"copier-1 is inside transaction {kill_txn}: its records are in the log, uncommitted "
                     f"({held} offsets above the LSO); read_committed sees {counter.total:,}")
            first.send_signal(signal.SIGKILL)
            first.wait(10)
            self.say(f"copier-1 killed (SIGKILL, pid {first.pid}) mid-transaction")
            second = self._copier("copier-2")
            self._pump(counter, second, lambda e: e.get("event") == "ready")
            self.say("copier-2: init_transactions done with the same transactional.id: the producer epoch is bumped "
                     "(copier-1's is fenced: PRODUCER_FENCED for any request of it) and copier-1's open "
                     "transaction is aborted")
            self._pump(counter, second, lambda e: e.get("event") == "done")
            self.say("copier-2: input copied to its end")
            return self._tally(counter)
        finally:
            counter.close()
            for proc in self.copiers:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(10)

    def _create_topics(self) -> int:
        rf = min(3, len(self.admin.list_topics(timeout=30).brokers))
        config = {"min.insync.replicas": str(min(2, rf))}
        topics = [NewTopic(t, PARTITIONS, rf, config=config) for t in (self.source, self.sink)]
        futures = self.admin.create_topics(topics, operation_timeout=30)
        for f in futures.values():
            f.result(60)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            topics = self.admin.list_topics(timeout=10).topics
            if all(len(topics[t].partitions) == PARTITIONS and all(p.leader >= 0 for p in topics[t].partitions.values())
                   for t in (self.source, self.sink) if t in topics) and {self.source, self.sink} <= set(topics):
                break
            time.sleep(0.1)
        return rf

    def _seed(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "enable.idempotence": True,
                             "linger.ms": 5})
        for i in range(self.records):
            while True:
                try:
                    producer.produce(self.source, str(i).encode(), partition=i % PARTITIONS)
                    break
                except BufferError:
                    producer.poll(0.05)
        if producer.flush(60):
            raise RuntimeError("the input could not be seeded")

    def _copier(self, name: str, *extra: str) -> subprocess.Popen:
        proc = subprocess.Popen(
            [sys.executable, "-m", "scripts.demo.txn_copier", "--bootstrap-server", self.bootstrap,
             "--input", self.source, "--output", self.sink, "--partitions", ",".join(map(str, range(PARTITIONS))),
             "--group", self.group, "--transactional-id", self.transactional_id, "--records-per-txn", str(PER_TXN),
             "--rate", str(self.rate), "--exit-when-done", *extra],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=tempfile.TemporaryFile(), text=True, bufsize=1,
            start_new_session=True)
        proc.name, proc.events = name, queue.Queue()
        proc.reader = threading.Thread(target=_read_events, args=(proc,), daemon=True, name=f"read-{name}")
        proc.reader.start()
        self.copiers.append(proc)
        self.say(f"{name} starts (pid {proc.pid})")
        return proc

    def _pump(self, counter: OutputCounter, copier: subprocess.Popen, until: Callable[[dict], bool]) -> None:
        """Counts the output and reports copier events until ``until(event)``; a line of counts each second."""
        deadline, next_tick = time.monotonic() + COPY_TIMEOUT_S, time.monotonic() + 1.0
        while time.monotonic() < deadline:
            counter.poll(0.1)
            exited = copier.poll() is not None
            if exited:
                copier.reader.join(10)  # its last events
            while not copier.events.empty():
                event = copier.events.get()
                if event["event"] == "aborted":
                    self.say(f"{copier.name}: transaction {event['txn']} aborted ({event['error']})")
                if until(event):
                    self._counts(counter)  # the tally at each step, however short the step
                    return
            if exited:
                raise RuntimeError(f"{copier.name} exited with {copier.returncode}")
            if time.monotonic() >= next_tick:
                next_tick += 1.0
                self._counts(counter)
        raise RuntimeError(f"{copier.name}: nothing after {COPY_TIMEOUT_S:.0f} s")

    def _counts(self, counter: OutputCounter) -> None:
        self.say(f"input {self.records:,} | output (read_committed) {counter.total:,} | "
                 f"open transactions hold {self._open_offsets()} offsets")

    def _open_offsets(self) -> int:
        tps = {TopicPartition(self.sink, p): OffsetSpec.latest() for p in range(PARTITIONS)}
        ends = {}
        for level in (IsolationLevel.READ_UNCOMMITTED, IsolationLevel.READ_COMMITTED):
            futures = self.admin.list_offsets(tps, isolation_level=level, request_timeout=10)
            ends[level] = sum(f.result().offset for f in futures.values())
        return ends[IsolationLevel.READ_UNCOMMITTED] - ends[IsolationLevel.READ_COMMITTED]

    def _tally(self, counter: OutputCounter) -> int:
        deadline = time.monotonic() + 60
        while self._open_offsets() and time.monotonic() < deadline:  # the last markers
            time.sleep(0.1)
        while (counter.total < self.records or len(counter.eof) < PARTITIONS) and time.monotonic() < deadline:
            counter.poll(0.2)
        everything = OutputCounter(self.bootstrap, self.sink, "read_uncommitted")
        try:
            while len(everything.eof) < PARTITIONS and time.monotonic() < deadline:
                everything.poll(0.2)
        finally:
            everything.close()
        duplicates = sum(c - 1 for c in counter.values.values() if c > 1)
        lost = self.records - len(set(counter.values) & set(range(self.records)))
        self.say(f"the log holds {everything.total - counter.total:,} aborted records that read_committed never "
                 f"returned")
        self.say(f"input {self.records:,}, output {counter.total:,}, duplicates {duplicates}, lost {lost}")
        return 0 if counter.total == self.records and duplicates == 0 and lost == 0 else 1


def _read_events(proc: subprocess.Popen) -> None:
    for line in proc.stdout:
        try:
            proc.events.put(json.loads(line))
        except ValueError:
            continue


def run_demo(bootstrap: str | None, records: int = DEFAULT_RECORDS, rate: int = DEFAULT_RATE,
             out: Callable[[str], None] = print) -> int:
    return run_on_scratch_cluster("zkafka-demo-txn-", 3, CLUSTER_PROPERTIES, bootstrap, out,
                                  lambda scratch: TransactionsDemo(scratch.bootstrap, records, rate, out).run())


def demo_command(bootstrap: str | None, records: int, rate: int) -> int:
    """The CLI entry: SIGTERM stops the demo like Ctrl-C (copiers and cluster cleaned up)."""
    if records < MIN_RECORDS or rate < 1:
        raise ValueError(f"--records must be at least {MIN_RECORDS} and --rate positive")
    return stopped_by_sigterm(lambda: run_demo(bootstrap, records, rate, out=lambda line: print(line, flush=True)))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--bootstrap-server", default=None)
    parser.add_argument("--records", type=int, default=DEFAULT_RECORDS)
    parser.add_argument("--rate", type=int, default=DEFAULT_RATE)
    args = parser.parse_args(argv)
    return demo_command(args.bootstrap_server, args.records, args.rate)


if __name__ == "__main__":
    sys.exit(main())
