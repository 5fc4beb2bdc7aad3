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


def run_member(bootstrap: str, group: str, topic: str, name: str) -> int:
    """One group member: consume, report, commit after processing; stop cleanly on ``close`` or EOF on
    stdin (the demo is gone). SIGINT is ignored: the demo decides when a member stops."""
    from confluent_kafka import Consumer, KafkaError, KafkaException

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    write_lock = threading.Lock()
    stats = {"commits": 0, "commit_errors": 0}

    def emit(kind: str, **fields) -> None:
        line = json.dumps({"event": kind, "member": name, **fields})
        with write_lock:
            try:
                sys.stdout.write(line + "\n")
                sys.stdout.flush()
            except (BrokenPipeError, ValueError):  # the demo is gone: nobody to report to, stop
                sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - no second BrokenPipeError at exit
                stop.set()

    def watch_stdin() -> None:
        for line in sys.stdin:
            if line.strip() == "close":
                break
        stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()

    def on_commit(err, _partitions) -> None:
        if err is None:
            stats["commits"] += 1
        elif err.code() != KafkaError._NO_OFFSET:
            stats["commit_errors"] += 1
            emit("commit_failed", error=str(err))

    consumer = Consumer({**consumer_config(bootstrap, group, name), "on_commit": on_commit})

    def describe(partitions) -> dict:
        meta = parse_group_metadata(consumer.consumer_group_metadata())
        return {"member_id": consumer.memberid(), "generation": meta.generation_id if meta else None,
                "partitions": sorted(p.partition for p in partitions)}

    def commit_now() -> bool:
        """A synchronous commit of the current positions; False if there was nothing to commit."""
        try:
            consumer.commit(asynchronous=False)
            return True
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError._NO_OFFSET:
                stats["commit_errors"] += 1
                emit("commit_failed", error=str(exc.args[0]))
            return False

    def on_assign(_consumer, partitions) -> None:
        try:
            emit("assigned", **describe(partitions))
        except Exception as exc:  # noqa: BLE001 - an exception here would surface in consume()
            emit("error", error=f"on_assign: {exc!r}")

    def on_revoke(_consumer, partitions) -> None:
        try:
            # what was processed is committed before the partitions go to another member: fewer duplicates
            committed = commit_now() if partitions else False
            emit("revoked", committed=committed, **describe(partitions))
        except Exception as exc:  # noqa: BLE001
            emit("error", error=f"on_revoke: {exc!r}")

    def on_lost(_consumer, partitions) -> None:
        try:
            emit("lost", **describe(partitions))
        except Exception as exc:  # noqa: BLE001
            emit("error", error=f"on_lost: {exc!r}")

    consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    emit("started", pid=os.getpid())
    pending, last_commit = False, time.monotonic()
    try:
        while not stop.is_set():
            values = []
            for message in consumer.consume(500, timeout=0.1):
                if message.error() is not None:
                    if message.error().code() != KafkaError._PARTITION_EOF:
                        emit("error", error=str(message.error()))
                    continue
                values.append(int(message.value()))
            if values:
                emit("consumed", values=values)  # processed: the demo has them
                pending = True
            if pending and time.monotonic() - last_commit >= COMMIT_INTERVAL_S:
                try:
                    consumer.commit(asynchronous=True)
                except KafkaException as exc:
                    if exc.args[0].code() != KafkaError._NO_OFFSET:
                        emit("commit_failed", error=str(exc.args[0]))
                pending, last_commit = False, time.monotonic()
        if pending:
            commit_now()
        consumer.close()  # eager: the revoke callback commits once more, then LeaveGroup
    except KafkaException as exc:
        emit("error", error=str(exc))
        return 1
    emit("closed", **stats)
    return 0

