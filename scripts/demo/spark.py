"""``zkafka demo spark``: Spark Structured Streaming over zkafka, live: click events in, windowed counts out.

Without ``--bootstrap-server`` a 1-broker cluster (real ZooKeeper) is started in a temp dir and stopped at
the end (also on Ctrl-C, SIGTERM or an error; its logs are kept, and named, when the demo fails).

* topics ``clicks`` (6 partitions) and ``page-counts`` (1 partition);
* a producer thread sends msgpack click events ``{"page": "/p<k>", "user": "u<n>", "ts": <epoch ms>}``
  at ``--rate`` per second (default 200);
* a Spark streaming query (``local[2]``) reads ``clicks`` with the ``zkafka`` format (startingOffsets
  earliest), decodes the values with ``from_msgpack``, counts clicks per page per 10-second tumbling
  event-time window (watermark 10 s, append mode: a window's final count once the watermark passes its end;
  the ``zkafka`` sink, a Python data source, does not support update mode) and writes it to ``page-counts`` with the
  ``zkafka`` sink (key = page, value = JSON of window start/end, page, count), a micro-batch every 5 s,
  checkpoint in the temp dir;
* ``kafka-console-consumer --from-beginning --property print.key=true`` reads ``page-counts``; its lines
  are printed as they come, with a progress line every 5 s (records produced, micro-batches done).

After ``--duration-s`` (counted from the query's start) everything stops; exit 0 if at least one window
count came back through the console consumer, 1 otherwise.
"""
from __future__ import annotations

import argparse
import json
import queue
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import msgpack

from scripts.demo.runner import run_on_scratch_cluster, stopped_by_sigterm

ROOT = Path(__file__).resolve().parents[1]
CLICKS, COUNTS = "clicks", "page-counts"
CLICK_PARTITIONS, COUNT_PARTITIONS = 6, 1
DEFAULT_DURATION_S = 60.0
MIN_DURATION_S = 10.0
DEFAULT_RATE = 200
PAGES, USERS = 8, 50
WINDOW, WATERMARK, TRIGGER = "10 seconds", "10 seconds", "5 seconds"
PROGRESS_EVERY_S = 5.0
FINAL_WAIT_S = 15.0  # after the duration: how long to wait for a first count if none came yet
CLUSTER_PROPERTIES = {"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "1"}


# -- pure helpers (tests/unit/scripts/test_demo_spark.py) ----------------------------------------
def click_event(rng: random.Random, now_ms: int, pages: int = PAGES, users: int = USERS) -> dict:
    """One click: a page among ``pages`` (skewed: low numbers are more popular), a user, the time."""
    page = min(int(rng.expovariate(0.5)), pages - 1)
    return {"page": f"/p{page}", "user": f"u{rng.randrange(users)}", "ts": now_ms}


def encode_click(event: dict) -> bytes:
    return msgpack.packb(event, use_bin_type=True)


def parse_count_line(line: str) -> dict | None:
    """A console-consumer line ``<page>\\t<json>`` (print.key=true) as the count's fields, or None."""
    key, sep, value = line.rstrip("\n").partition("\t")
    if not sep:
        return None
    try:
        count = json.loads(value)
    except ValueError:
        return None
    if not isinstance(count, dict) or not {"window_start", "window_end", "page", "count"} <= count.keys():
        return None
    return {**count, "key": key}


def _clock(iso: str) -> str:
    """``2026-11-23T14:50:10.000Z`` -> ``14:50:10``."""
    _, _, rest = str(iso).partition("T")
    return rest[:8] if rest else str(iso)


def format_count(count: dict) -> str:
    return (f"window {_clock(count['window_start'])}-{_clock(count['window_end'])}  "
            f"{count['page']:<5} {int(count['count']):>5} clicks")


def progress_line(produced: int, progress: dict | None, counts_seen: int) -> str:
    """Records produced, micro-batches done (from ``query.lastProgress``), count records read back."""
    if not progress:
        return f"progress: {produced:,} clicks produced; no micro-batch done yet; {counts_seen} counts read back"
    batches = int(progress.get("batchId", -1)) + 1
    rows = int(progress.get("numInputRows", 0))
    rate = float(progress.get("processedRowsPerSecond") or 0.0)
    return (f"progress: {produced:,} clicks produced; {batches} micro-batches done (last: {rows:,} rows, "
            f"{rate:,.0f} rows/s); {counts_seen} counts read back")


# -- the demo ------------------------------------------------------------------------------------
class ClickProducer(threading.Thread):
    def __init__(self, bootstrap: str, rate: int, seed: int = 1):
        super().__init__(daemon=True, name="demo-spark-producer")
        from confluent_kafka import Producer

        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                                  "client.id": "demo-spark-producer"})
        self.rate, self.rng = rate, random.Random(seed)
        self.sent = self.acked = self.failed = 0
        self._halt = threading.Event()

    def _delivered(self, err, _message) -> None:
        if err is None:
            self.acked += 1
        else:
            self.failed += 1

    def run(self) -> None:
        start = time.monotonic()
        while not self._halt.is_set():
            due = int((time.monotonic() - start) * self.rate)
            while self.sent < due and not self._halt.is_set():
                event = click_event(self.rng, int(time.time() * 1000))
                try:
                    self.producer.produce(CLICKS, encode_click(event), key=event["user"].encode(),
                                          on_delivery=self._delivered)
                except BufferError:
                    break
                self.sent += 1
            self.producer.poll(0.02)
        self.producer.flush(30)

    def stop(self) -> None:
        self._halt.set()
        self.join(60)


def create_topics(bootstrap: str, topics: dict[str, int]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(t, n, 1) for t, n in topics.items()], operation_timeout=30)
    for topic, future in futures.items():
        try:
            future.result(60)
        except Exception as exc:  # noqa: BLE001 - an existing topic is fine (an existing cluster, a re-run)
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise
    deadline = time.monotonic() + 30  # every partition has a leader before anyone uses the topics
    while time.monotonic() < deadline:
        meta = admin.list_topics(timeout=10).topics
        if all(t in meta and len(meta[t].partitions) == n and all(p.leader >= 0 for p in meta[t].partitions.values())
               for t, n in topics.items()):
            return
        time.sleep(0.1)


def _error_summary(text: str) -> str:
    """A Spark error's first line, and the Python exception line inside it if there is one."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    python = [line for line in lines if "Error:" in line or "Exception:" in line]
    return " / ".join(dict.fromkeys(lines[:1] + python[-1:]))


class QueryFailed(RuntimeError):
    """The streaming query stopped with an error (its first line is the message)."""


class SparkDemo:
    def __init__(self, bootstrap: str, workdir: Path, duration_s: float, rate: int,
                 out: Callable[[str], None] = print):
        self.bootstrap, self.workdir, self.duration_s, self.rate, self._out = bootstrap, workdir, duration_s, rate, out
        self.start = time.monotonic()
        self.lines: queue.Queue = queue.Queue()
        self.counts: list[dict] = []
        self.producer: ClickProducer | None = None
        self.consumer: subprocess.Popen | None = None
        self.spark = self.query = None

    def say(self, text: str) -> None:
        self._out(f"[{time.monotonic() - self.start:6.1f}s] {text}")

    def _start_query(self):
        from consumer_group.spark import local_session, register
        from consumer_group.spark.pipelines import page_window_counts

        self.say("starting Spark (local[2]) ...")
        began = time.monotonic()
        self.spark = local_session("zkafka-demo-spark", conf={"spark.sql.shuffle.partitions": "2",
                                                                 "spark.ui.showConsoleProgress": "false"})
        register(self.spark)
        clicks = (self.spark.readStream.format("zkafka").option("kafka.bootstrap.servers", self.bootstrap)
                  .option("subscribe", CLICKS).option("startingOffsets", "earliest").load())
        counts = page_window_counts(clicks, WINDOW, WATERMARK)
        self.query = (counts.writeStream.format("zkafka").outputMode("append")
                      .option("kafka.bootstrap.servers", self.bootstrap).option("topic", COUNTS)
                      .option("checkpointLocation", str(self.workdir / "checkpoint"))
                      .trigger(processingTime=TRIGGER).start())
        self.say(f"query started in {time.monotonic() - began:.1f} s: zkafka {CLICKS} -> from_msgpack -> "
                 f"count per page per {WINDOW} window (watermark {WATERMARK}, append mode) -> zkafka {COUNTS}, "
                 f"trigger {TRIGGER}")

    def _start_console_consumer(self) -> None:
        exe = Path(sys.executable).with_name("kafka-console-consumer")
        command = ([str(exe)] if exe.exists() else [sys.executable, "-m", "scripts.tools.console_consumer"])
        command += ["--bootstrap-server", self.bootstrap, "--topic", COUNTS, "--from-beginning",
                    "--property", "print.key=true"]
        self.consumer = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                         text=True, bufsize=1, start_new_session=True)
        threading.Thread(target=self._read_consumer, daemon=True, name="read-console-consumer").start()
        self.say(f"kafka-console-consumer --topic {COUNTS} --from-beginning --property print.key=true "
                 f"(pid {self.consumer.pid})")

    def _read_consumer(self) -> None:
        for line in self.consumer.stdout:
            self.lines.put(line)

    def _pump(self, until: float, condition: Callable[[], bool] | None = None) -> None:
        next_progress = time.monotonic() + PROGRESS_EVERY_S
        while time.monotonic() < until and not (condition and condition()):
            try:
                line = self.lines.get(timeout=max(0.0, min(until, next_progress) - time.monotonic()))
            except queue.Empty:
                line = None
            if line is not None:
                count = parse_count_line(line)
                if count is not None:
                    self.counts.append(count)
                    self.say(f"page-counts: {line.rstrip()}")
                elif line.strip():
                    self.say(f"console-consumer: {line.rstrip()}")
            if time.monotonic() >= next_progress:
                next_progress += PROGRESS_EVERY_S
                self._progress()
            if self.query is not None and self.query.exception() is not None:
                raise QueryFailed(_error_summary(str(self.query.exception())))

    def _progress(self) -> None:
        from consumer_group.spark.pipelines import last_progress

        self.say(progress_line(self.producer.sent if self.producer else 0, last_progress(self.query),
                               len(self.counts)))

    def run(self) -> int:
        create_topics(self.bootstrap, {CLICKS: CLICK_PARTITIONS, COUNTS: COUNT_PARTITIONS})
        self.say(f"topics {CLICKS} ({CLICK_PARTITIONS} partitions) and {COUNTS} ({COUNT_PARTITIONS}) ready")
        try:
            self.producer = ClickProducer(self.bootstrap, self.rate)
            self.producer.start()
            self.say(f"producer: {self.rate} msgpack clicks/s to {CLICKS}")
            self._start_console_consumer()
            self._start_query()
            self._pump(time.monotonic() + self.duration_s)
            if not self.counts:
                self.say(f"no window count yet: waiting up to {FINAL_WAIT_S:.0f} s more")
                self._pump(time.monotonic() + FINAL_WAIT_S, lambda: bool(self.counts))
            self._progress()
            self._stop_query()
            self.producer.stop()
            self._pump(time.monotonic() + 1.5)  # whatever the console consumer has left
            self.say(f"done: {self.producer.sent:,} clicks produced ({self.producer.acked:,} acknowledged, "
                     f"{self.producer.failed} failed); {len(self.counts)} window counts read back from {COUNTS}")
            if not self.counts:
                self.say("FAILED: no window count arrived")
                return 1
            return 0
        finally:
            self._stop_everything()

    def _stop_query(self) -> None:
        if self.query is not None:
            try:
                self.query.stop()
            except Exception as exc:  # noqa: BLE001 - e.g. the JVM already gone after Ctrl-C
                self.say(f"stopping the query: {exc}")
            self.query = None

    def _stop_everything(self) -> None:
        self._stop_query()
        if self.producer is not None and self.producer.is_alive():
            self.producer.stop()
        if self.consumer is not None and self.consumer.poll() is None:
            self.consumer.terminate()
            try:
                self.consumer.wait(10)
            except subprocess.TimeoutExpired:
                self.consumer.kill()
                self.consumer.wait(10)
        if self.spark is not None:
            try:
                self.spark.stop()
            except Exception:  # noqa: BLE001
                pass
            self.spark = None


def run_demo(bootstrap: str | None, duration_s: float = DEFAULT_DURATION_S, rate: int = DEFAULT_RATE,
             brokers: int = 1, out: Callable[[str], None] = print) -> int:
    def demo(scratch) -> int:
        try:
            return SparkDemo(scratch.bootstrap, scratch.directory, duration_s, rate, out).run()
        except QueryFailed as exc:
            out(f"FAILED: the streaming query stopped: {exc}")
            return 1

    return run_on_scratch_cluster("zkafka-demo-spark-", brokers, CLUSTER_PROPERTIES, bootstrap, out, demo)


def demo_command(bootstrap: str | None, duration_s: float, rate: int = DEFAULT_RATE, brokers: int = 1) -> int:
    """The CLI entry: SIGTERM stops the demo like Ctrl-C (query, producer, consumer and cluster cleaned up)."""
    if duration_s < MIN_DURATION_S or rate < 1 or brokers not in (1, 3):
        raise ValueError(f"--duration-s must be at least {MIN_DURATION_S:g}, --rate positive, --brokers 1 or 3")
    return stopped_by_sigterm(
        lambda: run_demo(bootstrap, duration_s, rate, brokers, out=lambda line: print(line, flush=True)))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--bootstrap-server", default=None)
    parser.add_argument("--duration-s", type=float, default=DEFAULT_DURATION_S)
    parser.add_argument("--rate", type=int, default=DEFAULT_RATE)
    parser.add_argument("--brokers", type=int, default=1, choices=(1, 3))
    args = parser.parse_args(argv)
    return demo_command(args.bootstrap_server, args.duration_s, args.rate, args.brokers)


if __name__ == "__main__":
    sys.exit(main())
