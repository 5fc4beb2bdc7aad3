"""ReplicaTransactionLog: ``__transaction_state`` as the transaction coordinator sees it (its
``TransactionLog`` port), over this broker's ReplicaManager (Kafka's ``TransactionStateManager`` appending
through ``ReplicaManager.appendRecords`` and loading a partition with ``Log.read``).

* ``leader_epoch(p)``: this broker's leader epoch of ``__transaction_state-p`` (the coordinator epoch), None
  when it does not lead it.
* ``append(p, coordinator_epoch, batch)``: a leader append with acks=all semantics: before the append the
  ISR must hold the topic's ``min.insync.replicas`` (``transaction.state.log.min.isr``, set when the topic is
  created), then the call waits in the partition's purgatory until the high watermark passes the batch.
  NOT_COORDINATOR when this broker is not the leader at ``coordinator_epoch`` (before the append, or when
  leadership is lost while waiting), NOT_ENOUGH_REPLICAS(_AFTER_APPEND) from the ISR checks,
  REQUEST_TIMED_OUT after ``request.timeout.ms``.
* ``read(p)``: every record's (key, value) from the local log start to the log end, decoded off the event
  loop; the log end is pinned before the read starts, so appends made meanwhile are not half-read. A batch
  that cannot be decoded (bad CRC, bad length, undecompressable) ends the read there: the records of the
  batches before it are returned and the error is logged, as Kafka's loader keeps a partial load. A failure
  to read at all (the partition not hosted here, an I/O error, the log start moved) is raised: the caller
  retries it.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from brokers.model import TRANSACTION_STATE_TOPIC, TopicPartition
from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.protocol.record import batch_records
from brokers.protocol.record_batch import iter_batches, whole_batches
from brokers.replication.partition import Partition
from brokers.replication.replica_manager import ReplicaManager
from brokers.storage.log import Log

log = logging.getLogger(__name__)

READ_CHUNK_BYTES = 1 << 20  # a load reads the log this much at a time (at least one whole batch)
# a purgatory outcome that means "no longer the leader of this epoch": the coordinator must move on
_LOST_LEADERSHIP = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH})


class ReplicaTransactionLog:
    """``transactions.coordinator.ports.TransactionLog`` over the ReplicaManager. Holds no state of its own: every
    call looks the partition up again, so a LeaderAndIsr that arrived meanwhile always wins."""

    def __init__(self, replica_manager: ReplicaManager, config: Any):
        self.replica_manager = replica_manager
        self.request_timeout_ms: int = config["request.timeout.ms"]

    def _partition(self, partition: int) -> Partition | None:
        return self.replica_manager.partitions.get(TopicPartition(TRANSACTION_STATE_TOPIC, partition))

    def leader_epoch(self, partition: int) -> int | None:
        replica = self._partition(partition)
        return replica.leader_epoch if replica is not None and replica.is_leader else None

    def _leader_at(self, partition: int, coordinator_epoch: int) -> Partition:
        replica = self._partition(partition)
        if replica is None or not replica.is_leader or replica.leader_epoch != coordinator_epoch:
            epoch = None if replica is None or not replica.is_leader else replica.leader_epoch
            raise KafkaError(f"{TRANSACTION_STATE_TOPIC}-{partition}: not its leader at epoch {coordinator_epoch} "
                             f"(leader epoch here: {epoch})", ErrorCode.NOT_COORDINATOR)
        return replica

    async def append(self, partition: int, coordinator_epoch: int, records: bytes) -> None:
        replica = self._leader_at(partition, coordinator_epoch)
        info = replica.append_as_leader(bytearray(records), -1, int(time.time() * 1000))
        try:
            outcome = await asyncio.wait_for(asyncio.shield(replica.wait_for_acks(info.last_offset + 1)),
                                             self.request_timeout_ms / 1000)
        except asyncio.TimeoutError:
            raise KafkaError(f"{TRANSACTION_STATE_TOPIC}-{partition}: offset {info.last_offset} not replicated "
                             f"within {self.request_timeout_ms} ms", ErrorCode.REQUEST_TIMED_OUT) from None
        outcome = ErrorCode(outcome)
        if outcome in _LOST_LEADERSHIP:
            raise KafkaError(f"{TRANSACTION_STATE_TOPIC}-{partition}: leadership lost while replicating",
                             ErrorCode.NOT_COORDINATOR)
        if outcome != ErrorCode.NONE:
            raise KafkaError(f"{TRANSACTION_STATE_TOPIC}-{partition}: append at {info.last_offset}: {outcome.name}",
                             outcome)
        if self.leader_epoch(partition) != coordinator_epoch:  # replicated, but a new leader epoch began meanwhile
            raise KafkaError(f"{TRANSACTION_STATE_TOPIC}-{partition}: leader epoch moved past {coordinator_epoch}",
                             ErrorCode.NOT_COORDINATOR)

    async def read(self, partition: int) -> list[tuple[bytes, bytes | None]]:
        replica = self._partition(partition)
        if replica is None:
            raise KafkaError(f"{TRANSACTION_STATE_TOPIC}-{partition} is not hosted here",
                             ErrorCode.NOT_LEADER_OR_FOLLOWER)
        local = replica.log
        return await asyncio.to_thread(read_records, local, local.log_start_offset, local.log_end_offset)


def read_records(replica_log: Log, start_offset: int, end_offset: int) -> list[tuple[bytes, bytes | None]]:
    """(key, value) of every record of ``replica_log`` in [``start_offset``, ``end_offset``), in offset order; records
    without a key (none are written to ``__transaction_state``) are skipped. A batch that cannot be decoded
    ends the read: the records of the whole batches before it are returned. I/O errors are raised."""
    records: list[tuple[bytes, bytes | None]] = []
    offset = start_offset
    while offset < end_offset:
        found = replica_log.read(offset, READ_CHUNK_BYTES, max_offset=end_offset).records
        if found is None:
            break
        data = whole_batches(found.read())
        try:
            next_offset = _decode_batches(data, start_offset, end_offset, records)
        except KafkaError as exc:  # CorruptRecordError and the like: the bytes, not the disk, are bad
            log.error("stopped reading %s at offset %d, an undecodable batch: %s; loading the %d records before it",
                      replica_log.topic_partition, offset, exc, len(records))
            break
        if next_offset <= offset:
            break  # nothing whole could be read: a torn tail beyond what recovery left
        offset = next_offset
    return records


def _decode_batches(data: bytes, start_offset: int, end_offset: int,
                    records: list[tuple[bytes, bytes | None]]) -> int:
    """Append the keyed records of ``data``'s batches to ``records``, a batch only once it decoded whole; the
    offset after the last batch. Raises at the first batch that does not decode."""
    next_offset = -1
    for header in iter_batches(data, verify_crc=True):
        if not header.is_control:
            decoded = []
            for record in batch_records(data, header):
                absolute = header.base_offset + record.offset_delta
                if start_offset <= absolute < end_offset and record.key is not None:
                    decoded.append((bytes(record.key), None if record.value is None else bytes(record.value)))
            records.extend(decoded)
        next_offset = header.next_offset
    return next_offset

