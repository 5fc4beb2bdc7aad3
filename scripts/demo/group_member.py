"""One member of ``zkafka demo groups``, run as its own process (``python -m scripts.demo.groups --member``)
so that the demo can really kill it: consume, report each batch and rebalance as a JSON line on
stdout, commit after processing (asynchronously at most every ``COMMIT_INTERVAL_S``, synchronously
before giving partitions up).
"""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, KafkaException

SESSION_TIMEOUT_MS = 6000
HEARTBEAT_INTERVAL_MS = 500
MAX_POLL_INTERVAL_MS = 20000  # also the JoinGroup rebalance timeout: bounds a rebalance a dead member stalls
COMMIT_INTERVAL_S = 0.2
GROUP_METADATA_MAGIC = b"CGMDv2:"


@dataclass(frozen=True)
class GroupMetadata:
    generation_id: int
    group_id: str
    member_id: str
    group_instance_id: str | None


def parse_group_metadata(blob: bytes) -> GroupMetadata | None:
    """librdkafka's ``rd_kafka_consumer_group_metadata_write`` blob, which is what confluent-kafka's
    ``consumer_group_metadata()`` returns: ``CGMDv2:``, the generation id (int32, host byte order),
    the group id and the member id (each NUL-terminated), an int8 "instance id is null" flag and, if
    it is 0, the NUL-terminated group instance id. None for anything else."""
    if not isinstance(blob, bytes | bytearray) or not blob.startswith(GROUP_METADATA_MAGIC):
        return None
    at = len(GROUP_METADATA_MAGIC)
    if len(blob) < at + 4:
        return None
    generation = int.from_bytes(blob[at:at + 4], sys.byteorder, signed=True)
    parts = bytes(blob[at + 4:]).split(b"\0", 2)
    if len(parts) < 3 or not parts[2]:
        return None
    group_id, member_id, rest = parts
    instance = None
    if rest[0] == 0:
        instance = rest[1:].split(b"\0", 1)[0].decode(errors="replace")
    return GroupMetadata(generation, group_id.decode(errors="replace"), member_id.decode(errors="replace"), instance)


def consumer_config(bootstrap: str, group: str, name: str) -> dict:
    return {"bootstrap.servers": bootstrap, "group.id": group, "client.id": name, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "session.timeout.ms": SESSION_TIMEOUT_MS,
            "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS, "max.poll.interval.ms": MAX_POLL_INTERVAL_MS,
            "fetch.wait.max.ms": 100}


class GroupMember:
    """One group member: consume, report every batch and rebalance as a JSON line, commit after processing.

    ``stop`` ends the consume loop; the member then commits what is left and closes (LeaveGroup).
    """

    def __init__(self, bootstrap: str, group: str, topic: str, name: str) -> None:
        self.name, self.topic = name, topic
        self.stop = threading.Event()
        self.write_lock = threading.Lock()
        self.stats = {"commits": 0, "commit_errors": 0}
        self.pending, self.last_commit = False, time.monotonic()
        self.consumer = Consumer({**consumer_config(bootstrap, group, name), "on_commit": self.on_commit})

    def emit(self, kind: str, **fields) -> None:
        line = json.dumps({"event": kind, "member": self.name, **fields})
        with self.write_lock:
            try:
                sys.stdout.write(line + "\n")
                sys.stdout.flush()
            except (BrokenPipeError, ValueError):  # the demo is gone: nobody to report to, stop
                sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - no second BrokenPipeError at exit
                self.stop.set()

    def watch_stdin(self) -> None:
        """Stop on a ``close`` line or at EOF (the demo is gone)."""
        for line in sys.stdin:
            if line.strip() == "close":
                break
        self.stop.set()

    def on_commit(self, err, _partitions) -> None:
        if err is None:
            self.stats["commits"] += 1
        elif err.code() != KafkaError._NO_OFFSET:
            self.stats["commit_errors"] += 1
            self.emit("commit_failed", error=str(err))

    def describe(self, partitions) -> dict:
        meta = parse_group_metadata(self.consumer.consumer_group_metadata())
        return {"member_id": self.consumer.memberid(), "generation": meta.generation_id if meta else None,
                "partitions": sorted(p.partition for p in partitions)}

    def commit_now(self) -> bool:
        """A synchronous commit of the current positions; False if there was nothing to commit."""
        try:
            self.consumer.commit(asynchronous=False)
            return True
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError._NO_OFFSET:
                self.stats["commit_errors"] += 1
                self.emit("commit_failed", error=str(exc.args[0]))
            return False

    def commit_async(self) -> None:
        try:
            self.consumer.commit(asynchronous=True)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError._NO_OFFSET:
                self.emit("commit_failed", error=str(exc.args[0]))

    def _in_callback(self, callback: str, report) -> None:
        """An exception in a rebalance callback would surface in consume(): it becomes an ``error`` event."""
        try:
            report()
        except Exception as exc:  # noqa: BLE001
            self.emit("error", error=f"{callback}: {exc!r}")

    def on_assign(self, _consumer, partitions) -> None:
        self._in_callback("on_assign", lambda: self.emit("assigned", **self.describe(partitions)))

    def on_revoke(self, _consumer, partitions) -> None:
        def revoke() -> None:
            # what was processed is committed before the partitions go to another member: fewer duplicates
            committed = self.commit_now() if partitions else False
            self.emit("revoked", committed=committed, **self.describe(partitions))
        self._in_callback("on_revoke", revoke)

    def on_lost(self, _consumer, partitions) -> None:
        self._in_callback("on_lost", lambda: self.emit("lost", **self.describe(partitions)))

    def consume_batch(self) -> None:
        """One consume(): the values go to the demo (processed), to be committed within COMMIT_INTERVAL_S."""
        values = []
        for message in self.consumer.consume(500, timeout=0.1):
            if message.error() is not None:
                if message.error().code() != KafkaError._PARTITION_EOF:
                    self.emit("error", error=str(message.error()))
                continue
            values.append(int(message.value()))
        if values:
            self.emit("consumed", values=values)
            self.pending = True
        if self.pending and time.monotonic() - self.last_commit >= COMMIT_INTERVAL_S:
            self.commit_async()
            self.pending, self.last_commit = False, time.monotonic()

    def run(self) -> int:
        self.consumer.subscribe([self.topic], on_assign=self.on_assign, on_revoke=self.on_revoke,
                                on_lost=self.on_lost)
        self.emit("started", pid=os.getpid())
        try:
            while not self.stop.is_set():
                self.consume_batch()
            if self.pending:
                self.commit_now()
            self.consumer.close()  # eager: the revoke callback commits once more, then LeaveGroup
        except KafkaException as exc:
            self.emit("error", error=str(exc))
            return 1
        self.emit("closed", **self.stats)
        return 0


def run_member(bootstrap: str, group: str, topic: str, name: str) -> int:
    """One group member until ``close`` or EOF on stdin, or SIGTERM. SIGINT is ignored: the demo decides when a
    member stops."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    member = GroupMember(bootstrap, group, topic, name)
    signal.signal(signal.SIGTERM, lambda *_: member.stop.set())
    threading.Thread(target=member.watch_stdin, daemon=True).start()
    return member.run()
