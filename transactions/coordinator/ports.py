"""What the transaction coordinator is handed by the composition root (``brokers.app``): its log, the
channel its markers leave by and the producer-id blocks. Plain Protocols; the coordinator never imports
``brokers.storage`` or ``brokers.replication``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

from brokers.model import TopicPartition



class TransactionLog(Protocol):
    """``__transaction_state`` as the coordinator sees it: the partitions this broker leads."""

    def leader_epoch(self, partition: int) -> int | None:
        """This broker's leader epoch of ``__transaction_state-<partition>`` (the coordinator epoch), None when it
        does not lead it."""

    async def append(self, partition: int, coordinator_epoch: int, records: bytes) -> None:
        """Append one record batch (built by ``transactions.coordinator.log_records``) as leader and return once the
        high watermark has passed it (acks=all, ``transaction.state.log.min.isr``). Raises ``KafkaError``:
        NOT_COORDINATOR when this broker no longer leads the partition at ``coordinator_epoch``,
        NOT_ENOUGH_REPLICAS(_AFTER_APPEND), REQUEST_TIMED_OUT."""

    async def read(self, partition: int) -> list[tuple[bytes, bytes | None]]:
        """Every record's (key, value) of the local replica from its log start to its log end, in offset order
        (for loading a partition on election; the reading happens off the event loop). A batch that cannot be
        decoded ends the read: the records before it are returned (Kafka keeps such a partial load and logs
        it). Raises (``KafkaError`` NOT_LEADER_OR_FOLLOWER when the partition is not hosted here, ``OSError``)
        when the log cannot be read at all; the coordinator then reads again later, it never loads nothing."""


@dataclass(frozen=True, slots=True)
class TxnMarker:
    """One WriteTxnMarkers entry: COMMIT (``commit``) or ABORT of ``producer_id``'s transaction on ``partitions``."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    partitions: frozenset[TopicPartition]


class MarkerSender(Protocol):
    """Kafka's ``TransactionMarkerChannelManager``."""

    async def send_markers(self, marker: TxnMarker, is_current: Callable[[], bool]) -> bool:
        """Write ``marker`` to the leader of each of its partitions (WriteTxnMarkers, batched per broker), retrying
        the others while ``is_current()`` (this coordinator still owns the transaction at that coordinator epoch).
        True once every partition's leader has answered NONE or a final error (the topic or partition is gone):
        the coordinator writes Complete*. False when the sending was aborted: a leader refused the marker as
        fenced (INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED: a newer producer or coordinator epoch
        owns the transaction) or ``is_current()`` turned false; then nothing more is written for it."""


class ProducerIdAllocator(Protocol):
    async def allocate_producer_id(self) -> int:
        """A fresh producer id (ZooKeeper's ``/latest_producer_id_block``, blocks of 1000)."""
