"""The transaction coordinator (Kafka's ``TransactionCoordinator``) of the transactional ids whose
``__transaction_state`` partition this broker leads.

Every change goes the same way: a pure check and ``TransactionMetadata.prepare_*`` (the transition becomes
pending), the record appended through ``TransactionStateManager.append_transaction_to_log`` with the coordinator
epoch (the partition's leader epoch), then the transition applied; a failed append leaves the metadata as it
was. EndTxn writes PrepareCommit / PrepareAbort, answers, then sends the markers (``MarkerSender``) and writes
CompleteCommit / CompleteAbort; the completion stays pending meanwhile, so the id's next requests answer
CONCURRENT_TRANSACTIONS. A coordinator elected for a partition whose log ends in a prepared transaction
finishes it the same way. Two timers run: the abort of Ongoing transactions older than their timeout (through
PrepareEpochFence, so the zombie producer is fenced) and the expiration of idle transactional ids.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any, Awaitable, Callable, NamedTuple

from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode, KafkaError
from transactions.coordinator import views
from transactions.coordinator.config import TransactionConfig
from transactions.coordinator.detached import DetachedRequests
from transactions.coordinator.metadata import (
    NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TransactionMetadata, TxnTransitMetadata, is_epoch_exhausted,
)
from transactions.coordinator.ports import MarkerSender, ProducerIdAllocator, TransactionLog, TxnMarker
from transactions.coordinator.state import TransactionState
from transactions.coordinator.state_manager import EpochAndMetadata, TransactionStateManager

log = logging.getLogger(__name__)
S = TransactionState
_GIVE_UP = (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)  # another owner finishes it


class InitProducerIdResult(NamedTuple):
    producer_id: int
    producer_epoch: int
    error: ErrorCode


def _init_error(error: ErrorCode) -> InitProducerIdResult:
    return InitProducerIdResult(NO_PRODUCER_ID, NO_PRODUCER_EPOCH, error)


def _log_failure(task: asyncio.Task) -> None:
    """A completion task that died of a bug leaves its transaction pending until the partition moves: say so."""
    if not task.cancelled() and task.exception() is not None:
        log.error("%s failed; the transaction stays pending until its partition is loaded again",
                  task.get_name(), exc_info=task.exception())


class TransactionCoordinator:
    def __init__(self, broker_id: int, config: TransactionConfig, log: TransactionLog, markers: MarkerSender,
                 producer_ids: ProducerIdAllocator, clock: Callable[[], float] = time.time):
        self.broker_id = broker_id
        self.config = config
        self._markers = markers
        self._producer_ids = producer_ids
        self._clock = clock
        self.state = TransactionStateManager(config, log, self._now_ms)
        self._completions: dict[int, set[asyncio.Task]] = {}  # partition -> its marker-and-complete tasks
        self._timers: list[asyncio.Task] = []
        self._requests = DetachedRequests()  # client requests, finished even when their connection closes
        self._shut_down = False  # no task is started once set
        self.counters = {"markers_written": 0, "aborts_by_timeout": 0, "transactions_committed": 0,
                         "transactions_aborted": 0, "expired_transactional_ids": 0}

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def partition_for(self, transactional_id: str) -> int:
        return self.state.partition_for(transactional_id)

    # -- InitProducerId ------------------------------------------------------------------------------------
    async def handle_init_producer_id(self, transactional_id: str | None, transaction_timeout_ms: int,
                                      expected: tuple[int, int] | None = None) -> InitProducerIdResult:
        return await self._requests.run(self._init_producer_id(transactional_id, transaction_timeout_ms, expected),
                                        f"InitProducerId of {transactional_id}")

    async def _init_producer_id(self, transactional_id: str | None, transaction_timeout_ms: int,
                                expected: tuple[int, int] | None) -> InitProducerIdResult:
        """``expected``: KIP-360's (producer id, epoch) of a v3+ request resuming after an error, else None.
        The errors are the coordinator's (PRODUCER_FENCED at every version: the handler maps it). Kafka's steps:
        validate, prepare the transition (creating the id's metadata), append it, answer. No await between the
        prepare and the append's start: the pending state is set and consumed on one stretch of the loop."""
        if transactional_id is None:  # an idempotent producer: blindly a new producer id
            return await self._init_idempotent_producer()
        error = self._validate_init(transactional_id, transaction_timeout_ms)
        if error != ErrorCode.NONE:
            return _init_error(error)
        prepared = await self._prepare_init(transactional_id, transaction_timeout_ms, expected)
        if isinstance(prepared, ErrorCode):
            return _init_error(prepared)
        coordinator_epoch, transit = prepared
        return await self._append_init(transactional_id, coordinator_epoch, transit)

    async def _init_idempotent_producer(self) -> InitProducerIdResult:
        try:
            return InitProducerIdResult(await self._producer_ids.allocate_producer_id(), 0, ErrorCode.NONE)
        except KafkaError as exc:
            return _init_error(exc.code)

    def _validate_init(self, transactional_id: str, transaction_timeout_ms: int) -> ErrorCode:
        if transactional_id == "":
            return ErrorCode.INVALID_REQUEST
        if not self.config.valid_timeout(transaction_timeout_ms):
            return ErrorCode.INVALID_TRANSACTION_TIMEOUT
        return ErrorCode.NONE

    async def _prepare_init(self, transactional_id: str, timeout_ms: int, expected: tuple[int, int] | None
                            ) -> tuple[int, TxnTransitMetadata] | ErrorCode:
        """The id's metadata (created with a new producer id if unknown) and its transition prepared (pending),
        with the coordinator epoch it was read at. A producer id is allocated (an await) only when one is
        needed; the metadata is then read and checked again from the start."""
        new_producer_id = None
        while True:
            error, found = self.state.get_transaction_state(transactional_id)
            if error == ErrorCode.NONE and found is None and new_producer_id is not None:
                error, found = self.state.put_transaction_state_if_not_exists(TransactionMetadata(
                    transactional_id, new_producer_id, txn_timeout_ms=timeout_ms,
                    txn_last_update_timestamp=self._now_ms()))
                new_producer_id = None
            if error != ErrorCode.NONE:
                return error
            if found is not None:
                transit = self._prepare_init_producer_id_transit(found, timeout_ms, expected, new_producer_id)
                if transit is not None:
                    return transit if isinstance(transit, ErrorCode) else (found.coordinator_epoch, transit)
            try:
                new_producer_id = await self._producer_ids.allocate_producer_id()
            except KafkaError as exc:
                return exc.code

    async def _append_init(self, transactional_id: str, coordinator_epoch: int,
                           transit: TxnTransitMetadata) -> InitProducerIdResult:
        """Write the prepared transition and answer; an Ongoing transaction is aborted (its producer fenced)
        instead, and the client asked to retry."""
        if transit.txn_state == S.PREPARE_EPOCH_FENCE:
            error = await self._end_transaction(transactional_id, transit.producer_id, transit.producer_epoch,
                                                commit=False, from_client=False)
            return _init_error(ErrorCode.CONCURRENT_TRANSACTIONS if error == ErrorCode.NONE else error)
        error = await self.state.append_transaction_to_log(transactional_id, coordinator_epoch, transit)
        if error != ErrorCode.NONE:
            return _init_error(error)
        log.info("initialized transactional id %s with producer id %d epoch %d", transactional_id,
                 transit.producer_id, transit.producer_epoch)
        return InitProducerIdResult(transit.producer_id, transit.producer_epoch, ErrorCode.NONE)

    def _prepare_init_producer_id_transit(self, found: EpochAndMetadata, timeout_ms: int,
                                          expected: tuple[int, int] | None,
                                          new_producer_id: int | None) -> TxnTransitMetadata | ErrorCode | None:
        """Kafka's ``prepareInitProducerIdTransit``; None when the producer's epochs are exhausted and no new
        producer id is at hand yet (the caller allocates one and prepares again)."""
        metadata = found.metadata
        if metadata.pending_transition_in_progress:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if expected is not None and not (
                metadata.producer_epoch == NO_PRODUCER_EPOCH or expected[0] == metadata.producer_id
                or (expected[0] == metadata.last_producer_id and is_epoch_exhausted(expected[1]))):
            return ErrorCode.PRODUCER_FENCED
        if metadata.state in (S.PREPARE_ABORT, S.PREPARE_COMMIT):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if metadata.state in (S.COMPLETE_ABORT, S.COMPLETE_COMMIT, S.EMPTY):
            if metadata.is_producer_epoch_exhausted and (expected is None or expected[1] == metadata.producer_epoch):
                if new_producer_id is None:
                    return None
                return metadata.prepare_producer_id_rotation(new_producer_id, timeout_ms, self._now_ms(),
                                                             record_last_epoch=expected is not None)
            return metadata.prepare_increment_producer_epoch(timeout_ms, None if expected is None else expected[1],
                                                             self._now_ms())
        if metadata.state == S.ONGOING:
            return metadata.prepare_fence_producer_epoch()
        raise RuntimeError(f"{metadata.transactional_id} found in state {metadata.state.kafka_name}")

    # -- AddPartitionsToTxn / AddOffsetsToTxn ------------------------------------------------------------
    def _lookup(self, transactional_id: str) -> EpochAndMetadata | ErrorCode:
        """A client request's transaction: INVALID_REQUEST for an empty id, the state manager's error (not the
        coordinator, loading), INVALID_PRODUCER_ID_MAPPING for an id it does not know."""
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        error, found = self.state.get_transaction_state(transactional_id)
        if error != ErrorCode.NONE:
            return error
        return ErrorCode.INVALID_PRODUCER_ID_MAPPING if found is None else found

    async def handle_add_partitions_to_transaction(self, transactional_id: str, producer_id: int,
                                                   producer_epoch: int,
                                                   partitions: set[TopicPartition] | frozenset[TopicPartition]
                                                   ) -> ErrorCode:
        return await self._requests.run(self._add_partitions(transactional_id, producer_id, producer_epoch,
                                                             partitions), f"AddPartitionsToTxn of {transactional_id}")

    async def _add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                              partitions: set[TopicPartition] | frozenset[TopicPartition]) -> ErrorCode:
        found = self._lookup(transactional_id)
        if isinstance(found, ErrorCode):
            return found
        metadata = found.metadata
        if metadata.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if metadata.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        if metadata.pending_transition_in_progress or metadata.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if metadata.state == S.ONGOING and set(partitions) <= metadata.topic_partitions:
            return ErrorCode.NONE
        transit = metadata.prepare_add_partitions(frozenset(partitions), self._now_ms())
        return await self.state.append_transaction_to_log(transactional_id, found.coordinator_epoch, transit)

    # -- EndTxn --------------------------------------------------------------------------------------------
    async def handle_end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                     commit: bool) -> ErrorCode:
        return await self._requests.run(
            self._end_transaction(transactional_id, producer_id, producer_epoch, commit, from_client=True),
            f"EndTxn of {transactional_id}")

    def _prepare_end(self, found: EpochAndMetadata, producer_id: int, producer_epoch: int, commit: bool,
                     from_client: bool) -> tuple[TxnTransitMetadata | ErrorCode, bool]:
        """The Prepare* transition of an EndTxn (or of the coordinator's own abort), and whether it fences."""
        metadata = found.metadata
        if metadata.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, False
        if (from_client and producer_epoch != metadata.producer_epoch) or producer_epoch < metadata.producer_epoch:
            return ErrorCode.PRODUCER_FENCED, False
        if metadata.pending_transition_in_progress and metadata.pending_state != S.PREPARE_EPOCH_FENCE:
            return ErrorCode.CONCURRENT_TRANSACTIONS, False
        state = metadata.state
        if state == S.ONGOING:
            fencing = not commit and metadata.pending_state == S.PREPARE_EPOCH_FENCE
            if fencing:  # the fence's epoch becomes the abort's
                metadata.pending_state = None
                metadata.producer_epoch, metadata.last_producer_epoch = producer_epoch, NO_PRODUCER_EPOCH
            target = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
            return metadata.prepare_abort_or_commit(target, self._now_ms()), fencing
        if state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):  # a retry of an EndTxn that succeeded
            return (ErrorCode.NONE if commit == (state == S.COMPLETE_COMMIT) else ErrorCode.INVALID_TXN_STATE), False
        if state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            same = commit == (state == S.PREPARE_COMMIT)
            return (ErrorCode.CONCURRENT_TRANSACTIONS if same else ErrorCode.INVALID_TXN_STATE), False
        if state == S.EMPTY:
            return ErrorCode.INVALID_TXN_STATE, False
        raise RuntimeError(f"{metadata.transactional_id} found in state {state.kafka_name}")

    async def _end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool,
                               from_client: bool) -> ErrorCode:
        found = self._lookup(transactional_id)
        if isinstance(found, ErrorCode):
            return found
        transit, fencing = self._prepare_end(found, producer_id, producer_epoch, commit, from_client)
        if isinstance(transit, ErrorCode):
            return transit
        coordinator_epoch = found.coordinator_epoch
        error = await self.state.append_transaction_to_log(transactional_id, coordinator_epoch, transit)
        if error != ErrorCode.NONE:
            if fencing and self.state.is_current(transactional_id, coordinator_epoch, found.metadata):
                found.metadata.has_failed_epoch_fence = True
            return error
        return self._start_completion(transactional_id, coordinator_epoch, producer_id, producer_epoch, commit)

    def _start_completion(self, transactional_id: str, coordinator_epoch: int, producer_id: int,
                          producer_epoch: int, commit: bool) -> ErrorCode:
        """After Prepare* is written: prepare Complete* and send the markers in the background."""
        error, found = self.state.get_transaction_state(transactional_id)
        if error != ErrorCode.NONE or found is None:
            return error if error != ErrorCode.NONE else ErrorCode.NOT_COORDINATOR
        if found.coordinator_epoch != coordinator_epoch:
            return ErrorCode.NOT_COORDINATOR
        metadata = found.metadata
        if metadata.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if metadata.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        if metadata.pending_transition_in_progress:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if metadata.state != (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT):
            return ErrorCode.INVALID_TXN_STATE
        self._send_markers(coordinator_epoch, metadata, metadata.prepare_complete(self._now_ms()), commit)
        return ErrorCode.NONE

    def _send_markers(self, coordinator_epoch: int, metadata: TransactionMetadata, transit: TxnTransitMetadata,
                      commit: bool) -> None:
        if self._shut_down:
            return
        partition = self.partition_for(metadata.transactional_id)
        task = asyncio.get_running_loop().create_task(self._complete(coordinator_epoch, metadata, transit, commit),
                                                      name=f"txn-complete-{metadata.transactional_id}")
        tasks = self._completions.setdefault(partition, set())
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        task.add_done_callback(_log_failure)

    async def _complete(self, coordinator_epoch: int, metadata: TransactionMetadata, transit: TxnTransitMetadata,
                        commit: bool) -> None:
        """Kafka's ``TransactionMarkerChannelManager`` path: the markers to every partition's leader, then
        Complete* written, retried while this coordinator still owns the transaction."""
        txn_id = metadata.transactional_id

        def is_current() -> bool:
            return self.state.is_current(txn_id, coordinator_epoch, metadata)

        marker = TxnMarker(txn_id, metadata.producer_id, metadata.producer_epoch, commit, coordinator_epoch,
                           frozenset(metadata.topic_partitions))
        if marker.partitions and not await self._write_markers(marker, is_current):
            return
        self.counters["markers_written"] += len(marker.partitions)
        while is_current():
            error = await self.state.append_transaction_to_log(txn_id, coordinator_epoch, transit,
                                                               retry_on_error=lambda e: e not in _GIVE_UP)
            if error == ErrorCode.NONE:
                self.counters["transactions_committed" if commit else "transactions_aborted"] += 1
                return
            if error in _GIVE_UP:
                return
            await asyncio.sleep(self.config.marker_retry_backoff_ms / 1000)

    async def _write_markers(self, marker: TxnMarker, is_current: Callable[[], bool]) -> bool:
        """Send the markers, again after any failure, while the transaction is ours; were they written. Not when
        a leader refused them as fenced (a newer coordinator or producer epoch owns the transaction): as Kafka's
        ``abortSending``, no Complete* is written then, and the completion stays pending until the partition
        moves to its new owner."""
        while is_current():
            try:
                written = await self._markers.send_markers(marker, is_current)
            except Exception:  # a background task: whatever failed, retry while the transaction is ours
                log.exception("sending the markers of %s failed, retrying", marker.transactional_id)
                await asyncio.sleep(self.config.marker_retry_backoff_ms / 1000)
                continue
            if not written and is_current():
                log.warning("the markers of %s (producer id %d epoch %d) were refused as fenced; not writing its "
                            "completion", marker.transactional_id, marker.producer_id, marker.producer_epoch)
            return written
        return False

    # -- election -----------------------------------------------------------------------------------------
    async def on_elected(self, partition: int, coordinator_epoch: int) -> None:
        """Load the partition; transactions it holds prepared get their markers (re)sent and are completed."""
        if self._shut_down:
            return
        entry = self.state.cache.get(partition)
        if self.state.loading.get(partition) == coordinator_epoch or (
                entry is not None and entry.coordinator_epoch == coordinator_epoch):
            return  # already loaded (or loading) at this epoch: a repeated LeaderAndIsr
        log.info("elected as the transaction coordinator of partition %d at epoch %d", partition, coordinator_epoch)
        self._cancel_completions(partition)
        pending = await self.state.load_partition(partition, coordinator_epoch)
        for completion in pending or ():
            self._send_markers(completion.coordinator_epoch, completion.metadata, completion.transit,
                               completion.commit)

    def on_resigned(self, partition: int) -> None:
        log.info("resigned as the transaction coordinator of partition %d", partition)
        self.state.remove_partition(partition)
        self._cancel_completions(partition)

    def _cancel_completions(self, partition: int) -> None:
        for task in self._completions.pop(partition, set()):
            task.cancel()

    # -- timers ----------------------------------------------------------------------------------------------
    async def abort_timed_out_transactions(self) -> int:
        """Abort (through PrepareEpochFence) every Ongoing transaction older than its timeout; how many."""
        aborted = 0
        for txn_id, producer_id, producer_epoch in self.state.timed_out_transactions(self._now_ms()):
            error, found = self.state.get_transaction_state(txn_id)
            if error != ErrorCode.NONE or found is None:
                continue
            metadata = found.metadata  # read again: the previous abort's append was awaited since the scan
            if (metadata.producer_id, metadata.producer_epoch) != (producer_id, producer_epoch) \
                    or metadata.pending_transition_in_progress or metadata.state != S.ONGOING:
                continue
            fence = metadata.prepare_fence_producer_epoch()
            error = await self._end_transaction(txn_id, fence.producer_id, fence.producer_epoch, commit=False,
                                                from_client=False)
            if error == ErrorCode.NONE:
                aborted += 1
                log.info("aborting the transaction of %s: it timed out", txn_id)
            else:
                log.info("the timeout abort of %s was not written: %s", txn_id, error.name)
        self.counters["aborts_by_timeout"] += aborted
        return aborted

    async def remove_expired_transactional_ids(self) -> int:
        removed = await self.state.remove_expired_transactional_ids()
        self.counters["expired_transactional_ids"] += removed
        return removed

    async def startup(self) -> None:
        if self._shut_down or self._timers:
            return
        self._timers = [
            asyncio.get_running_loop().create_task(self._every(self.config.abort_timed_out_transactions_interval_ms,
                                                               self.abort_timed_out_transactions)),
            asyncio.get_running_loop().create_task(self._every(
                self.config.remove_expired_transactional_ids_interval_ms, self.remove_expired_transactional_ids)),
        ]

    async def _every(self, interval_ms: int, job: Callable[[], Awaitable[Any]]) -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                await job()
            except Exception:  # a timer outlives one bad run, as Kafka's scheduler does
                log.exception("transaction coordinator timer failed")

    async def shutdown(self) -> None:
        self._shut_down = True
        tasks = self._timers + [t for ts in self._completions.values() for t in ts] + self._requests.tasks()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._timers, self._completions = [], {}
        self.state.clear()

    # -- KIP-890 verification and the views ---------------------------------------------------------------
    async def verify_partition(self, transactional_id: str, producer_id: int, producer_epoch: int,
                               tp: TopicPartition) -> ErrorCode:
        """NONE when ``tp`` is in the producer's Ongoing transaction at that epoch (Kafka 3.6's verification)."""
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        return views.verification(self.state.get_transaction_state(transactional_id), producer_id, producer_epoch,
                                  tp)

    def describe(self) -> dict:
        return views.describe(self.state, self.counters, self.broker_id)

    def list_transactions(self, state_filters: list[str], producer_id_filters: list[int]
                          ) -> tuple[ErrorCode, list[str], list[tuple[str, int, str]]]:
        return views.list_transactions(self.state, state_filters, producer_id_filters)

    def describe_transactions(self, transactional_ids: list[str]) -> list[dict]:
        return [views.describe_transaction(self.state, txn_id) for txn_id in transactional_ids]
