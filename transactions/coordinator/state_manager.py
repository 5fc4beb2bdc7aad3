"""The transaction metadata of the ``__transaction_state`` partitions this broker leads (Kafka's
``TransactionStateManager``): loading a partition on election, dropping it on resignation, and writing every
transition through ``TransactionLog.append`` before applying it.

Invariants: a partition is either loading (every lookup of its ids answers COORDINATOR_LOAD_IN_PROGRESS), cached
at one coordinator epoch (its leader epoch), or unknown here (NOT_COORDINATOR). A partition is cached only from
a read of its log that succeeded: a read that fails is retried with a growing backoff while the partition is
still loading at that epoch, never replaced by an empty cache (which would forget prepared and ongoing
transactions and hand their ids new producer ids). A transition's record is appended
with the coordinator epoch it was prepared under, and applied only if the partition is still cached at that epoch
after the append; a failed append drops the pending state (unless the caller will retry it), so the metadata is
exactly what the log holds. Everything here runs on the broker's event loop: no await between a check and the
change it guards, except the append itself, which the pending state protects.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

from brokers.model import TRANSACTION_STATE_TOPIC
from brokers.protocol.errors import ErrorCode, KafkaError
from transactions.coordinator import log_records
from transactions.coordinator.config import TransactionConfig
from transactions.coordinator.metadata import TransactionMetadata, TxnTransitMetadata
from transactions.coordinator.placement import partition_for
from transactions.coordinator.ports import TransactionLog
from transactions.coordinator.state import TransactionState

log = logging.getLogger(__name__)
S = TransactionState
TOMBSTONES_PER_BATCH = 1000  # well below message.max.bytes for any transactional id Kafka accepts


@dataclass
class TxnPartitionCache:
    """Kafka's ``TxnMetadataCacheEntry``: one partition's transactional ids at the epoch it was loaded with."""

    coordinator_epoch: int
    transactions: dict[str, TransactionMetadata] = field(default_factory=dict)


class EpochAndMetadata(NamedTuple):
    coordinator_epoch: int
    metadata: TransactionMetadata


class PendingCompletion(NamedTuple):
    """A transaction found prepared (PrepareCommit / PrepareAbort) on load: its markers must be (re)sent."""

    coordinator_epoch: int
    metadata: TransactionMetadata
    transit: TxnTransitMetadata
    commit: bool


class TxnIdAndProducer(NamedTuple):
    transactional_id: str
    producer_id: int
    producer_epoch: int


def coordinator_error(append_error: ErrorCode) -> ErrorCode:
    """What a failed ``__transaction_state`` append means to the transaction's client (Kafka's mapping in
    ``appendTransactionToLog``): retriable unavailability, a lost leadership, or a server error."""
    if append_error in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
                        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.REQUEST_TIMED_OUT):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if append_error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if append_error in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE):
        return ErrorCode.UNKNOWN_SERVER_ERROR
    return append_error


def load_transactions(records: list[tuple[bytes, bytes | None]]) -> dict[str, TransactionMetadata]:
    """The last record of each transactional id wins; a tombstone removes it. An unreadable record stops the
    load there, as Kafka's loader does (what was read before it is kept)."""
    loaded: dict[str, TransactionMetadata] = {}
    for key, value in records:
        try:
            transactional_id, metadata = log_records.decode(key, value)
        except log_records.TransactionLogFormatError as exc:
            log.error("stopped loading %s at an unreadable record: %s", TRANSACTION_STATE_TOPIC, exc)
            break
        if metadata is None:
            loaded.pop(transactional_id, None)
        else:
            loaded[transactional_id] = metadata
    return loaded


class TransactionStateManager:
    def __init__(self, config: TransactionConfig, transaction_log: TransactionLog, now_ms: Callable[[], int]):
        self.config = config
        self._log = transaction_log
        self._now_ms = now_ms
        self.loading: dict[int, int] = {}  # partition -> the coordinator epoch it is being loaded at
        self.cache: dict[int, TxnPartitionCache] = {}
        self._load_stopped: dict[int, asyncio.Event] = {}  # partition -> set when its load is abandoned

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.config.transaction_log_num_partitions)

    # -- lookups --------------------------------------------------------------------------------------------
    def get_transaction_state(self, transactional_id: str) -> tuple[ErrorCode, EpochAndMetadata | None]:
        """(NONE, the id's metadata or None when unknown), or (COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR,
        None)."""
        partition = self.partition_for(transactional_id)
        if partition in self.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, None
        entry = self.cache.get(partition)
        if entry is None:
            return ErrorCode.NOT_COORDINATOR, None
        metadata = entry.transactions.get(transactional_id)
        return ErrorCode.NONE, None if metadata is None else EpochAndMetadata(entry.coordinator_epoch, metadata)

    def put_transaction_state_if_not_exists(self, metadata: TransactionMetadata
                                            ) -> tuple[ErrorCode, EpochAndMetadata | None]:
        error, existing = self.get_transaction_state(metadata.transactional_id)
        if error != ErrorCode.NONE or existing is not None:
            return error, existing
        entry = self.cache[self.partition_for(metadata.transactional_id)]
        entry.transactions[metadata.transactional_id] = metadata
        return ErrorCode.NONE, EpochAndMetadata(entry.coordinator_epoch, metadata)

    def is_current(self, transactional_id: str, coordinator_epoch: int, metadata: TransactionMetadata) -> bool:
        """Does this coordinator still own ``metadata`` at ``coordinator_epoch``."""
        error, found = self.get_transaction_state(transactional_id)
        return error == ErrorCode.NONE and found is not None and found.coordinator_epoch == coordinator_epoch \
            and found.metadata is metadata

    def timed_out_transactions(self, now_ms: int) -> list[TxnIdAndProducer]:
        """Ongoing transactions older than their timeout with no transition pending."""
        return [TxnIdAndProducer(txn_id, m.producer_id, m.producer_epoch)
                for entry in self.cache.values() for txn_id, m in entry.transactions.items()
                if m.pending_state is None and m.state == S.ONGOING
                and m.txn_start_timestamp + m.txn_timeout_ms < now_ms]

    # -- election and resignation ------------------------------------------------------------------------
    async def load_partition(self, partition: int, coordinator_epoch: int) -> list[PendingCompletion] | None:
        """Read the partition's log and cache its transactions; the prepared ones come back with their completion
        prepared (pending), for their markers to be sent. A failed read is retried (the partition answers
        COORDINATOR_LOAD_IN_PROGRESS meanwhile); the port's read already keeps the records before an undecodable
        batch. None when the partition was resigned or re-elected before it loaded."""
        self._stop_loading(partition)
        self.loading[partition] = coordinator_epoch
        self._load_stopped[partition] = stopped = asyncio.Event()
        self.cache.pop(partition, None)
        try:
            records = await self._read_until_loaded(partition, coordinator_epoch, stopped)
        except BaseException:  # cancelled: the partition is not left loading for ever
            if self._load_stopped.get(partition) is stopped:
                self._stop_loading(partition)
            raise
        if records is None or self._load_stopped.get(partition) is not stopped:
            return None  # resigned, re-elected or shut down while it read
        loaded = load_transactions(records)
        self.cache[partition] = TxnPartitionCache(coordinator_epoch, loaded)
        now = self._now_ms()
        pending = [PendingCompletion(coordinator_epoch, m, m.prepare_complete(now), m.state == S.PREPARE_COMMIT)
                   for m in loaded.values() if m.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT)]
        del self.loading[partition]
        del self._load_stopped[partition]
        log.info("loaded %d transactional ids from %s-%d at coordinator epoch %d", len(loaded),
                 TRANSACTION_STATE_TOPIC, partition, coordinator_epoch)
        return pending

    async def _read_until_loaded(self, partition: int, coordinator_epoch: int, stopped: asyncio.Event
                                 ) -> list[tuple[bytes, bytes | None]] | None:
        """The partition's records, read again after each failure (the backoff doubling up to its maximum)
        until a read succeeds; None once the load is abandoned (resigned, re-elected, shut down)."""
        backoff_ms = self.config.load_retry_backoff_ms
        while not stopped.is_set():
            try:
                return await self._log.read(partition)
            except Exception:  # an I/O error, not hosted yet, or a bug: never loaded as empty
                log.exception("cannot read %s-%d to load it at coordinator epoch %d; retrying in %d ms",
                              TRANSACTION_STATE_TOPIC, partition, coordinator_epoch, backoff_ms)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stopped.wait(), backoff_ms / 1000)
            backoff_ms = min(backoff_ms * 2, self.config.load_retry_max_backoff_ms)
        return None

    def _stop_loading(self, partition: int) -> None:
        stopped = self._load_stopped.pop(partition, None)
        if stopped is not None:
            stopped.set()
        self.loading.pop(partition, None)

    def remove_partition(self, partition: int) -> None:
        self._stop_loading(partition)
        if self.cache.pop(partition, None) is not None:
            log.info("unloaded the transactions of %s-%d", TRANSACTION_STATE_TOPIC, partition)

    # -- writes ----------------------------------------------------------------------------------------------
    async def _append(self, partition: int, coordinator_epoch: int, batch: bytes) -> ErrorCode:
        try:
            await self._log.append(partition, coordinator_epoch, batch)
        except KafkaError as exc:
            return coordinator_error(exc.code)
        except OSError as exc:
            log.error("cannot append to %s-%d: %s", TRANSACTION_STATE_TOPIC, partition, exc)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        return ErrorCode.NONE

    async def append_transaction_to_log(self, transactional_id: str, coordinator_epoch: int,
                                        transit: TxnTransitMetadata,
                                        retry_on_error: Callable[[ErrorCode], bool] = lambda error: False
                                        ) -> ErrorCode:
        """Write ``transit`` (acks=all) and apply it to the cached metadata; NONE, or the error the client gets.
        On an error the pending state is dropped unless ``retry_on_error(error)`` (the caller retries)."""
        error, found = self.get_transaction_state(transactional_id)
        if error != ErrorCode.NONE:
            return error
        if found is None or found.coordinator_epoch != coordinator_epoch:
            return ErrorCode.NOT_COORDINATOR
        metadata = found.metadata
        batch = log_records.build_record_batch(log_records.encode_key(transactional_id),
                                               log_records.encode_value(transit), self._now_ms())
        append_error = await self._append(self.partition_for(transactional_id), coordinator_epoch, batch)
        error, found = self.get_transaction_state(transactional_id)
        still_ours = found is not None and found.coordinator_epoch == coordinator_epoch and found.metadata is metadata
        if append_error == ErrorCode.NONE:
            if error != ErrorCode.NONE:
                return error
            if not still_ours:  # unloaded (and maybe reloaded) meanwhile: the new owner has the record
                return ErrorCode.NOT_COORDINATOR
            metadata.complete_transition_to(transit)
            return ErrorCode.NONE
        log.info("appending %s of %s failed with %s", transit.txn_state.kafka_name, transactional_id,
                 append_error.name)
        if still_ours and not retry_on_error(append_error):
            metadata.pending_state = None
        return append_error

    async def remove_expired_transactional_ids(self) -> int:
        """Write tombstones for the ids idle in Empty / Complete* for ``transactional.id.expiration.ms`` and drop
        them (Kafka's ``removeExpiredTransactionalIds``); how many were removed."""
        now = self._now_ms()
        removed = 0
        for partition in list(self.cache):
            entry = self.cache.get(partition)  # read again: the previous partition's appends were awaited
            if entry is None:
                continue
            expired = [(m, m.prepare_dead()) for m in list(entry.transactions.values())
                       if m.pending_state is None and m.state.expiration_allowed
                       and m.txn_last_update_timestamp <= now - self.config.transactional_id_expiration_ms]
            for start in range(0, len(expired), TOMBSTONES_PER_BATCH):
                chunk = expired[start:start + TOMBSTONES_PER_BATCH]
                removed += await self._write_tombstones(partition, entry.coordinator_epoch, chunk, now)
        return removed

    async def _write_tombstones(self, partition: int, coordinator_epoch: int,
                                expired: list[tuple[TransactionMetadata, TxnTransitMetadata]], now: int) -> int:
        batch = log_records.build_records_batch(
            [(log_records.encode_key(m.transactional_id), None) for m, _ in expired], now)
        error = await self._append(partition, coordinator_epoch, batch)
        entry = self.cache.get(partition)
        removed = 0
        for metadata, transit in expired:
            txn_id = metadata.transactional_id
            if (error == ErrorCode.NONE and entry is not None and entry.coordinator_epoch == coordinator_epoch
                    and entry.transactions.get(txn_id) is metadata and metadata.pending_state == S.DEAD
                    and metadata.producer_epoch == transit.producer_epoch):
                del entry.transactions[txn_id]
                removed += 1
            else:
                log.warning("could not expire transactional id %s (tombstone append: %s)", txn_id, error.name)
                metadata.pending_state = None
        return removed

    def clear(self) -> None:
        for partition in list(self.loading):
            self._stop_loading(partition)
        self.cache.clear()

