"""The steps of a transactional producer the transaction recipes take to reach their own request, each at a
version clients have long sent: FindCoordinator key type 1 (until the coordinator answers), InitProducerId
with a transactional id, AddPartitionsToTxn, AddOffsetsToTxn, a transactional Produce, EndTxn (its
completion awaited); and what they read back: DescribeTransactions, DescribeProducers, and a read_committed
Fetch as a consumer keeps it."""
from __future__ import annotations

from typing import Any, NamedTuple

from brokers.protocol.api_versions import ApiKey
from brokers.protocol.errors import ErrorCode
from brokers.protocol.record import Record, build_batch, iter_records
from brokers.protocol.record_batch import iter_batches
from tests.integration.api_recipes.base import expect, only
from tests.integration.conditions import wait_for
from tests.integration.window_broker import BASE_TS, TIMEOUT, WindowBroker

TRANSACTION_STATE_TOPIC = "__transaction_state"
OFFSETS_TOPIC = "__consumer_offsets"  # one partition on the window broker
TXN_TIMEOUT_MS = 60000
RETRIABLE = {ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR,
             ErrorCode.CONCURRENT_TRANSACTIONS}


def fenced_error(version: int, fenced_from: int = 2) -> ErrorCode:
    """The error of a request with an epoch a newer InitProducerId bumped: PRODUCER_FENCED from the version
    that knows it."""
    return ErrorCode.PRODUCER_FENCED if version >= fenced_from else ErrorCode.INVALID_PRODUCER_EPOCH


class Txn(NamedTuple):
    transactional_id: str
    producer_id: int
    producer_epoch: int

    def ids(self, epoch: int | None = None) -> dict[str, Any]:
        """The request fields naming the producer (AddPartitionsToTxn's v3-and-below names too)."""
        epoch = self.producer_epoch if epoch is None else epoch
        fields = dict(transactional_id=self.transactional_id, producer_id=self.producer_id, producer_epoch=epoch)
        return {**fields, **{f"v3_and_below_{name}": value for name, value in fields.items()}}


class Transactions:
    """The steps of a transactional producer against ``broker``, each at a long-sent version."""

    def __init__(self, broker: WindowBroker):
        self.broker = broker

    def coordinator_ready(self, transactional_id: str) -> None:
        """FindCoordinator key type 1 (creating __transaction_state on first use) until it names this broker."""
        def found() -> bool:
            answer = self.broker.call(ApiKey.FIND_COORDINATOR, 1, key=transactional_id, key_type=1)
            return answer.error_code == ErrorCode.NONE and answer.node_id == self.broker.broker_id
        wait_for(found, TIMEOUT, f"the transaction coordinator of {transactional_id}")

    def init(self, transactional_id: str, version: int = 1) -> Txn:
        """InitProducerId ``version`` with the transactional id, retried while the coordinator loads."""
        self.coordinator_ready(transactional_id)

        def answered() -> Any:
            answer = self.broker.call(ApiKey.INIT_PRODUCER_ID, version, transactional_id=transactional_id,
                                      transaction_timeout=TXN_TIMEOUT_MS, producer_id=-1, producer_epoch=-1)
            return None if answer.error_code in RETRIABLE else answer
        answer = wait_for(answered, TIMEOUT, f"InitProducerId of {transactional_id}")
        expect(answer.error_code, ErrorCode.NONE, answer)
        return Txn(transactional_id, answer.producer_id, answer.producer_epoch)

    def bumped(self, transactional_id: str) -> tuple[Txn, Txn]:
        """(the producer at its first epoch, the same producer id at the next epoch): a second InitProducerId."""
        first = self.init(transactional_id)
        second = self.init(transactional_id)
        assert (second.producer_id, second.producer_epoch) == (first.producer_id, first.producer_epoch + 1)
        return first, second

    def add_partition(self, txn: Txn, topic: str) -> None:
        answer = self.broker.call(ApiKey.ADD_PARTITIONS_TO_TXN, 1, **txn.ids(),
                                  v3_and_below_topics=[dict(name=topic, partitions=[0])])
        result = only(only(answer.results_by_topic_v3_and_below).results_by_partition)
        expect(result.partition_error_code, ErrorCode.NONE, answer)

    def add_offsets(self, txn: Txn, group: str) -> None:
        answer = self.broker.call(ApiKey.ADD_OFFSETS_TO_TXN, 1, **txn.ids(), group_id=group)
        expect(answer.error_code, ErrorCode.NONE, answer)

    def produce(self, txn: Txn, topic: str, values: list[bytes], sequence: int = 0) -> int:
        """One transactional batch to ``topic``-0 (acks=all); its base offset."""
        batch = build_batch([Record(i, 0, None, v) for i, v in enumerate(values)], base_timestamp=BASE_TS,
                            producer_id=txn.producer_id, producer_epoch=txn.producer_epoch, base_sequence=sequence,
                            transactional=True)
        answer = self.broker.call(ApiKey.PRODUCE, 7, acks=-1, timeout=TIMEOUT * 1000,
                                  transactional_id=txn.transactional_id,
                                  topic_data=[dict(name=topic, partition_data=[dict(index=0, records=bytes(batch))])])
        partition = only(only(answer.responses).partition_responses)
        expect(partition.error_code, ErrorCode.NONE, answer)
        return partition.base_offset

    def begin(self, transactional_id: str, topic: str, values: list[bytes]) -> tuple[Txn, int]:
        """A producer whose transaction wrote ``values`` to ``topic``-0; (it, the batch's base offset)."""
        txn = self.init(transactional_id)
        self.add_partition(txn, topic)
        return txn, self.produce(txn, topic, values)

    def end(self, txn: Txn, commit: bool, version: int = 1) -> Any:
        """EndTxn ``version`` (the answer returned unchecked), then, if it succeeded, the transaction's
        completion awaited (its markers written)."""
        answer = self.broker.call(ApiKey.END_TXN, version, **txn.ids(), committed=commit)
        if answer.error_code == ErrorCode.NONE:
            self.wait_for_state(txn.transactional_id, "CompleteCommit" if commit else "CompleteAbort")
        return answer

    def abort(self, txn: Txn) -> None:
        expect(self.end(txn, commit=False).error_code, ErrorCode.NONE, f"aborting {txn}")

    def describe(self, transactional_id: str) -> Any:
        answer = self.broker.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, transactional_ids=[transactional_id])
        return only(answer.transaction_states)

    def wait_for_state(self, transactional_id: str, state: str) -> None:
        wait_for(lambda: self.describe(transactional_id).transaction_state == state, TIMEOUT,
                 f"{transactional_id} in {state}")

    def partitions_of(self, transactional_id: str) -> set[tuple[str, int]]:
        described = self.describe(transactional_id)
        return {(topic.topic, p) for topic in described.topics for p in topic.partitions}

    def read_committed(self, topic: str) -> tuple[int, list[bytes | None], list[tuple[int, int]]]:
        """Fetch v11 read_committed of ``topic``-0 from 0: (LSO, the values a consumer keeps, the aborted
        transactions listed as (producer id, first offset))."""
        partition = dict(partition=0, fetch_offset=0, partition_max_bytes=1 << 20, log_start_offset=-1,
                         current_leader_epoch=-1)
        answer = self.broker.call(ApiKey.FETCH, 11, replica_id=-1, max_wait=0, min_bytes=0, max_bytes=1 << 20,
                                  isolation_level=1, session_id=0, session_epoch=-1, rack_id="",
                                  forgotten_topics_data=[], topics=[dict(topic=topic, partitions=[partition])])
        data = only(only(answer.responses).partitions)
        expect(data.error_code, ErrorCode.NONE, data)
        aborted = [(a.producer_id, a.first_offset) for a in data.aborted_transactions or ()]
        return data.last_stable_offset, committed_values(bytes(data.records or b""), aborted), aborted

    def producers(self, topic: str) -> dict[int, Any]:
        """DescribeProducers v0 of ``topic``-0: its active producers by producer id."""
        answer = self.broker.call(ApiKey.DESCRIBE_PRODUCERS, 0, topics=[dict(name=topic, partition_indexes=[0])])
        partition = only(only(answer.topics).partitions)
        expect(partition.error_code, ErrorCode.NONE, partition)
        return {state.producer_id: state for state in partition.active_producers}


def committed_values(records: bytes, aborted: list[tuple[int, int]]) -> list[bytes | None]:
    """The values a read_committed consumer keeps of fetched ``records`` (the broker sends aborted data along,
    as Kafka does): a producer's data batches from the first offset of its aborted transaction up to its
    marker are dropped, and markers are never values."""
    starts = sorted(aborted, key=lambda entry: entry[1])
    aborting: set[int] = set()
    kept: list[bytes | None] = []
    for header in iter_batches(records):
        while starts and starts[0][1] <= header.base_offset:
            aborting.add(starts.pop(0)[0])
        if header.is_control:
            aborting.discard(header.producer_id)
        elif header.producer_id not in aborting:
            kept += [record.value for record in iter_records(records[header.position:header.end])]
    return kept


def steps(broker: WindowBroker) -> Transactions:
    return Transactions(broker)
