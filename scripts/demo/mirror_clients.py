"""The moving parts ``zkafka demo mirror`` drives besides the clusters and the mirror: the paced producer at
cluster a (a thread), orders-app's process (``scripts/demo/mirror_app.py``) with what it reported, and a
group's committed offsets read with an admin client."""
from __future__ import annotations

import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from scripts.demo.mirror_report import Record, parse_event

ADMIN_TIMEOUT_S = 10.0


def group_offsets(admin: AdminClient, group: str) -> dict[tuple[str, int], int]:
    """The group's committed offsets: (topic, partition) -> offset (none: {})."""
    request = [ConsumerGroupTopicPartitions(group)]
    result = admin.list_consumer_group_offsets(request, request_timeout=ADMIN_TIMEOUT_S)[group].result()
    return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions or [] if tp.offset >= 0}


class PacedProducer:
    """Values ``0 .. records-1`` to ``topic``, value ``i`` to partition ``i % partitions``, at ``rate`` per
    second (acks=all, idempotent), on a thread; ``done`` once the last is acknowledged or failed."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, records: int, rate: int):
        self.topic, self.partitions, self.records, self.rate = topic, partitions, records, rate
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                                  "linger.ms": 5})
        self._acked: list[int] = []
        self._lock = threading.Lock()
        self.error: str | None = None
        self.done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="demo-producer", daemon=True)

    def start(self) -> "PacedProducer":
        self._thread.start()
        return self

    def _delivered(self, error, msg) -> None:
        if error is not None:
            self.error = self.error or str(error)
            return
        with self._lock:
            self._acked.append(int(msg.value()))

    def _run(self) -> None:
        began = time.monotonic()
        try:
            for i in range(self.records):
                wait = began + i / self.rate - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                self._produce(i)
            if self.producer.flush(60):
                self.error = self.error or "records unacknowledged 60 s after the last was sent"
        except KafkaException as exc:
            self.error = str(exc)
        finally:
            self.producer = None  # no connection to cluster a outlives the producing (a is killed later)
            self.done.set()

    def _produce(self, i: int) -> None:
        while True:
            try:
                self.producer.produce(self.topic, str(i).encode(), partition=i % self.partitions,
                                      on_delivery=self._delivered)
                self.producer.poll(0)
                return
            except BufferError:
                self.producer.poll(0.05)

    def acked_count(self) -> int:
        with self._lock:
            return len(self._acked)

    def acked_values(self) -> list[int]:
        with self._lock:
            return list(self._acked)


class MemberProcess:
    """orders-app as a process; its report lines gathered on a thread: the records it processed, the offsets
    it last saw committed, the group's committed offsets when it was assigned its partitions."""

    def __init__(self, name: str, bootstrap: str, topic: str, group: str, partitions: int, rate: int,
                 exit_at_end: bool, log: Path):
        self.name = name
        self.records: list[Record] = []
        self.committed: dict[int, int] = {}
        self.assigned: queue.Queue = queue.Queue()
        self.errors: list[str] = []
        self._ended = threading.Event()
        argv = [sys.executable, "-m", "scripts.demo.mirror_app", "--bootstrap-server", bootstrap, "--topic", topic,
                "--group", group, "--partitions", str(partitions), "--rate", str(rate)]
        with open(log, "ab") as err:
            self.proc = subprocess.Popen(argv + (["--exit-at-end"] if exit_at_end else []), stdin=subprocess.DEVNULL,
                                         stdout=subprocess.PIPE, stderr=err, text=True, bufsize=1,
                                         start_new_session=True)
        self._reader = threading.Thread(target=self._read, name=f"read-{name}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            event = parse_event(line)
            if event is None:
                continue
            kind = event["event"]
            if kind == "processed":
                self.records.extend((p, o, v) for p, o, v in event["records"])
            elif kind == "committed":
                self.committed.update({int(p): o for p, o in event["offsets"].items()})
            elif kind == "assigned":
                self.assigned.put({int(p): o for p, o in event["committed"].items()})
            elif kind == "end":
                self._ended.set()
            elif kind == "error":
                self.errors.append(event.get("error", ""))

    def processed_count(self) -> int:
        return len(self.records)

    def ended(self) -> bool:
        return self._ended.is_set()

    def wait_assigned(self, timeout: float) -> dict[int, int]:
        """The group's committed offsets at the first assignment."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_alive()
            try:
                return self.assigned.get(timeout=0.2)
            except queue.Empty:
                continue
        raise RuntimeError(f"{self.name}: no partitions assigned in {timeout:.0f} s")

    def check_alive(self) -> None:
        if self.proc.poll() is not None and not self._ended.is_set():
            self._reader.join(5)
            if not self._ended.is_set():
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}: {'; '.join(self.errors[-3:])}")

    def kill(self) -> None:
        """SIGKILL (if it still runs), then every line it wrote before it died is read."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        self._reader.join(10)
