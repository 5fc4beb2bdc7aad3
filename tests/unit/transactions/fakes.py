"""In-memory fakes of the transaction coordinator's ports (``transactions.coordinator.ports``), a world
that runs a ``TransactionCoordinator`` over them on a real event loop with a fake clock, and the steps the
coordinator's tests share (``begin`` a transaction, wait until it ``completed``)."""
from __future__ import annotations

import asyncio
import time

from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.protocol.record import iter_records
from transactions.coordinator import log_records
from transactions.coordinator.config import TransactionConfig
from transactions.coordinator.coordinator import TransactionCoordinator
from transactions.coordinator.placement import partition_for
from transactions.coordinator.ports import TxnMarker
from transactions.coordinator.state import TransactionState

PARTITIONS = 4
T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
TX = "tx-1"
P = partition_for(TX, PARTITIONS)  # TX's __transaction_state partition


class FakeLog:
    """``__transaction_state``: per partition the (key, value) records appended, and this broker's epochs."""

    def __init__(self) -> None:
        self.records: dict[int, list[tuple[bytes, bytes | None]]] = {}
        self.epochs: dict[int, int] = {}
        self.fail_with: ErrorCode | None = None
        self.appends: list[tuple[int, int]] = []  # (partition, coordinator epoch) of every append attempted
        self.gate: asyncio.Event | None = None  # when set, appends wait for it
        self.read_gate: asyncio.Event | None = None
        self.read_failures: list[Exception] = []  # raised by the next reads, in order
        self.reads = 0

    def leader_epoch(self, partition: int) -> int | None:
        return self.epochs.get(partition)

    async def append(self, partition: int, coordinator_epoch: int, records: bytes) -> None:
        self.appends.append((partition, coordinator_epoch))
        if self.gate is not None:
            await self.gate.wait()
        if self.fail_with is not None:
            raise KafkaError("append refused", self.fail_with)
        self.records.setdefault(partition, []).extend((r.key, r.value) for r in iter_records(records))

    async def read(self, partition: int) -> list[tuple[bytes, bytes | None]]:
        self.reads += 1
        if self.read_gate is not None:
            await self.read_gate.wait()
        if self.read_failures:
            raise self.read_failures.pop(0)
        return list(self.records.get(partition, []))

    def decoded(self, partition: int) -> list[tuple[str, object]]:
        return [log_records.decode(k, v) for k, v in self.records.get(partition, [])]

    def states(self, transactional_id: str) -> list[str | None]:
        """The states written for an id, in order (None: a tombstone)."""
        return [None if m is None else m.state.kafka_name
                for txn_id, m in self.decoded(partition_for(transactional_id, PARTITIONS)) if txn_id == transactional_id]


class FakeMarkers:
    def __init__(self) -> None:
        self.sent: list[TxnMarker] = []
        self.gate: asyncio.Event | None = None  # when set, sending waits for it
        self.fail_times = 0
        self.fenced = False  # when set, a leader refuses the markers as fenced

    async def send_markers(self, marker: TxnMarker, is_current) -> bool:
        if self.gate is not None:
            await self.gate.wait()
        if self.fail_times:
            self.fail_times -= 1
            raise KafkaError("broker unreachable", ErrorCode.REQUEST_TIMED_OUT)
        if self.fenced:
            return False
        self.sent.append(marker)
        return True


class FakeProducerIds:
    def __init__(self, first: int = 1000) -> None:
        self.next = first

    async def allocate_producer_id(self) -> int:
        self.next += 1
        return self.next - 1


class FakeClock:
    def __init__(self, seconds: float = 1_700_000_000.0) -> None:
        self.seconds = seconds

    def __call__(self) -> float:
        return self.seconds

    def advance_ms(self, ms: int) -> None:
        self.seconds += ms / 1000

    def ms(self) -> int:
        return int(self.seconds * 1000)


class World:
    def __init__(self, log: FakeLog | None = None, **config) -> None:
        self.log = log or FakeLog()
        self.markers = FakeMarkers()
        self.producer_ids = FakeProducerIds()
        self.clock = FakeClock()
        settings = dict(transaction_log_num_partitions=PARTITIONS, marker_retry_backoff_ms=1) | config
        self.coordinator = TransactionCoordinator(1, TransactionConfig(**settings), self.log, self.markers,
                                                  self.producer_ids, clock=self.clock)

    async def elect_all(self, epoch: int = 5) -> None:
        for p in range(PARTITIONS):
            self.log.epochs[p] = epoch
            await self.coordinator.on_elected(p, epoch)

    def meta(self, transactional_id: str):
        _, found = self.coordinator.state.get_transaction_state(transactional_id)
        return None if found is None else found.metadata


async def wait_for(condition, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met before the deadline")
        await asyncio.sleep(0.001)


def run(scenario, **config) -> None:
    """Run ``scenario(world)`` on a fresh loop with every partition elected at epoch 5."""
    async def main():
        world = World(**config)
        await world.elect_all()
        try:
            await scenario(world)
        finally:
            await world.coordinator.shutdown()
    asyncio.run(asyncio.wait_for(main(), 15))


async def begin(w: World, txn_id: str = TX, partitions=(T0,)) -> tuple[int, int]:
    """InitProducerId then AddPartitionsToTxn: an Ongoing transaction; its (producer id, epoch)."""
    pid, epoch, error = await w.coordinator.handle_init_producer_id(txn_id, 60000)
    assert error == ErrorCode.NONE
    assert await w.coordinator.handle_add_partitions_to_transaction(txn_id, pid, epoch, set(partitions)) == 0
    return pid, epoch


def completed(w: World, txn_id: str = TX):
    """A condition for ``wait_for``: the transaction is CompleteCommit or CompleteAbort with nothing pending."""
    return lambda: (m := w.meta(txn_id)) is not None and m.pending_state is None and m.state in (
        TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT)
