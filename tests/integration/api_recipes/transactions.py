"""Recipes of the transaction APIs (KIP-98, KIP-664): AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
TxnOffsetCommit, WriteTxnMarkers, DescribeProducers, ListTransactions, DescribeTransactions.

Each recipe runs a transaction of its own (a transactional id per API and version) up to the point its
request belongs to, through the steps of ``Transactions`` at the versions clients have long sent:
FindCoordinator key type 1 until the transaction coordinator answers, InitProducerId with the
transactional id, AddPartitionsToTxn, a transactional Produce, EndTxn. It leaves no transaction open: what
its request began its check ends, so the coordinator never aborts one on timeout behind another recipe.

The versions' differences: PRODUCER_FENCED is answered from AddPartitionsToTxn / AddOffsetsToTxn / EndTxn v2
(older versions get INVALID_PRODUCER_EPOCH for an epoch a newer InitProducerId bumped); TxnOffsetCommit v2
carries the committed leader epoch and v3 the member's generation (KIP-447, ILLEGAL_GENERATION when stale)."""
from __future__ import annotations

from typing import Any, NamedTuple

from brokers.protocol.api_versions import ApiKey
from brokers.protocol.errors import ErrorCode
from brokers.protocol.record import Record, build_batch, iter_records
from brokers.protocol.record_batch import iter_batches
from tests.integration.api_recipes.base import Recipe, RecipeMaker, expect, only, registry
from tests.integration.conditions import wait_for
from tests.integration.window_broker import BASE_TS, TIMEOUT, WindowBroker

RECIPES: dict[ApiKey, RecipeMaker] = {}
recipe = registry(RECIPES)

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

    def init(self, transactional_id: str) -> Txn:
        """InitProducerId v1 with the transactional id, retried while the coordinator loads."""
        self.coordinator_ready(transactional_id)

        def answered() -> Any:
            answer = self.broker.call(ApiKey.INIT_PRODUCER_ID, 1, transactional_id=transactional_id,
                                      transaction_timeout=TXN_TIMEOUT_MS)
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


# --- the producer's requests to the transaction coordinator ---------------------------------------------------

@recipe(ApiKey.ADD_PARTITIONS_TO_TXN)
def add_partitions_to_txn(broker: WindowBroker, version: int) -> Recipe:
    """The second epoch's transaction takes ``topic``-0 (a transactional batch is accepted there after it);
    the first epoch is fenced."""
    txns, topic = steps(broker), broker.topic("txn-add-partitions")
    stale, txn = txns.bumped(f"window-add-partitions-v{version}")

    def add(producer: Txn, epoch: int | None = None) -> dict:
        return dict(**producer.ids(epoch), v3_and_below_topics=[dict(name=topic, partitions=[0])])

    def check(response) -> None:
        result = only(response.results_by_topic_v3_and_below)
        assert result.name == topic and only(result.results_by_partition).partition_index == 0
        expect(only(result.results_by_partition).partition_error_code, ErrorCode.NONE, response)
        assert txns.describe(txn.transactional_id).transaction_state == "Ongoing"
        assert txns.partitions_of(txn.transactional_id) == {(topic, 0)}
        txns.produce(txn, topic, [b"added"])  # KIP-890's verification: the partition is in the transaction
        fenced = broker.call(ApiKey.ADD_PARTITIONS_TO_TXN, version, **add(stale))
        expect(only(only(fenced.results_by_topic_v3_and_below).results_by_partition).partition_error_code,
               fenced_error(version), fenced)
        txns.abort(txn)
        assert txns.read_committed(topic)[1].count(b"added") == 0
    return Recipe(add(txn), check)


@recipe(ApiKey.ADD_OFFSETS_TO_TXN)
def add_offsets_to_txn(broker: WindowBroker, version: int) -> Recipe:
    """The group's offsets partition joins the transaction; the first epoch is fenced."""
    txns, group = steps(broker), f"window-txn-offsets-v{version}"
    stale, txn = txns.bumped(f"window-add-offsets-v{version}")

    def check(response) -> None:
        expect(response.error_code, ErrorCode.NONE, response)
        assert txns.describe(txn.transactional_id).transaction_state == "Ongoing"
        assert txns.partitions_of(txn.transactional_id) == {(OFFSETS_TOPIC, 0)}
        fenced = broker.call(ApiKey.ADD_OFFSETS_TO_TXN, version, **stale.ids(), group_id=group)
        expect(fenced.error_code, fenced_error(version), fenced)
        txns.abort(txn)
    return Recipe(dict(**txn.ids(), group_id=group), check)


@recipe(ApiKey.END_TXN)
def end_txn(broker: WindowBroker, version: int) -> Recipe:
    """The commit of a transaction that wrote two records: CompleteCommit, the COMMIT marker after them, the
    records readable under read_committed; EndTxn from the fenced first epoch is refused."""
    txns, topic = steps(broker), broker.topic(f"txn-end-v{version}")
    stale, txn = txns.bumped(f"window-end-v{version}")
    txns.add_partition(txn, topic)
    values = [f"committed-v{version}-{i}".encode() for i in range(2)]
    base_offset = txns.produce(txn, topic, values)
    assert txns.read_committed(topic)[:2] == (base_offset, [])  # the open transaction holds the LSO

    def check(response) -> None:
        expect(response.error_code, ErrorCode.NONE, response)
        txns.wait_for_state(txn.transactional_id, "CompleteCommit")
        wait_for(lambda: txns.read_committed(topic) == (base_offset + 3, values, []), TIMEOUT,
                 "the committed records under read_committed, past the marker")
        producer = txns.producers(topic)[txn.producer_id]
        assert producer.current_txn_start_offset == -1 and producer.coordinator_epoch >= 0
        fenced = broker.call(ApiKey.END_TXN, version, **stale.ids(), committed=True)
        expect(fenced.error_code, fenced_error(version), fenced)
    return Recipe(dict(**txn.ids(), committed=True), check)


# --- the group coordinator's side: offsets inside a transaction ----------------------------------------------

@recipe(ApiKey.TXN_OFFSET_COMMIT)
def txn_offset_commit(broker: WindowBroker, version: int) -> Recipe:
    """Offsets committed inside a transaction stay pending (OffsetFetch require_stable: UNSTABLE_OFFSET_COMMIT)
    until EndTxn commits them; v3 names the member (a stale generation is ILLEGAL_GENERATION)."""
    txns, topic = steps(broker), broker.filled_topic()
    group, metadata = f"window-txn-commit-v{version}", f"txn-v{version}"
    member = broker.member(group) if version >= 3 else None
    txn = txns.init(f"window-txn-commit-v{version}")
    txns.add_offsets(txn, group)

    def fields(generation: int) -> dict:
        partition = dict(partition_index=0, committed_offset=2, committed_leader_epoch=0,  # v2
                         committed_metadata=metadata)
        return dict(**txn.ids(), group_id=group, generation_id=generation, group_instance_id=None,  # v3
                    member_id=member.member_id if member else "", topics=[dict(name=topic, partitions=[partition])])

    def check(response) -> None:
        answer = only(response.topics)
        assert answer.name == topic and only(answer.partitions).partition_index == 0
        expect(only(answer.partitions).error_code, ErrorCode.NONE, response)
        pending = broker.call(ApiKey.OFFSET_FETCH, 7, group_id=group, require_stable=True,
                              topics=[dict(name=topic, partition_indexes=[0])])
        expect(only(only(pending.topics).partitions).error_code, ErrorCode.UNSTABLE_OFFSET_COMMIT, pending)
        if member is not None:
            stale = broker.call(ApiKey.TXN_OFFSET_COMMIT, version, **fields(member.generation + 1))
            expect(only(only(stale.topics).partitions).error_code, ErrorCode.ILLEGAL_GENERATION, stale)
        expect(txns.end(txn, commit=True).error_code, ErrorCode.NONE, txn)
        wait_for(lambda: broker.committed(group) == (2, metadata), TIMEOUT, "the offset committed with the transaction")
    return Recipe(fields(member.generation if member else -1), check)


# --- the partition leader's side: markers and producers ---------------------------------------------------------

def coordinator_epoch(broker: WindowBroker) -> int:
    """The leader epoch of __transaction_state-0: the epoch the coordinator writes its markers with."""
    answer = broker.call(ApiKey.METADATA, 7, topics=[dict(name=TRANSACTION_STATE_TOPIC)],
                         allow_auto_topic_creation=False)
    partition = only(only(answer.topics).partitions)
    expect(partition.error_code, ErrorCode.NONE, partition)
    return partition.leader_epoch


@recipe(ApiKey.WRITE_TXN_MARKERS)
def write_txn_markers(broker: WindowBroker, version: int) -> Recipe:
    """An ABORT marker, sent as the coordinator would, ends a transaction's batch on its partition: the
    record is skipped under read_committed and listed as aborted, the producer has no open transaction
    there; a marker of an older coordinator epoch is fenced. The coordinator then aborts the transaction
    itself (its own marker, at its epoch, is accepted)."""
    txns, topic = steps(broker), broker.topic(f"txn-markers-v{version}")
    txn, first_offset = txns.begin(f"window-markers-v{version}", topic, [b"aborted"])
    epoch = coordinator_epoch(broker)

    def marker(coordinator_epoch: int) -> dict:
        return dict(markers=[dict(producer_id=txn.producer_id, producer_epoch=txn.producer_epoch,
                                  transaction_result=False, coordinator_epoch=coordinator_epoch,
                                  topics=[dict(name=topic, partition_indexes=[0])])])

    def check(response) -> None:
        written = only(response.markers)
        assert written.producer_id == txn.producer_id
        answer = only(only(written.topics).partitions)
        expect(answer.error_code, ErrorCode.NONE, answer)
        assert txns.read_committed(topic) == (first_offset + 2, [], [(txn.producer_id, first_offset)])
        producer = txns.producers(topic)[txn.producer_id]
        assert (producer.current_txn_start_offset, producer.coordinator_epoch) == (-1, epoch)
        fenced = broker.call(ApiKey.WRITE_TXN_MARKERS, version, **marker(epoch - 1))
        expect(only(only(only(fenced.markers).topics).partitions).error_code,
               ErrorCode.TRANSACTION_COORDINATOR_FENCED, fenced)
        txns.abort(txn)
    return Recipe(marker(epoch), check)


@recipe(ApiKey.DESCRIBE_PRODUCERS)
def describe_producers(broker: WindowBroker, version: int) -> Recipe:
    """The producer of an open transaction on the partition: its epoch, last sequence and the transaction's
    first offset; the coordinator epoch unknown until a marker is written."""
    txns, topic = steps(broker), broker.topic("txn-describe-producers")
    txn, first_offset = txns.begin("window-describe-producers", topic, [b"p0", b"p1", b"p2"])

    def check(response) -> None:
        answer = only(response.topics)
        assert answer.name == topic
        partition = only(answer.partitions)
        expect(partition.error_code, ErrorCode.NONE, partition)
        producer = only(p for p in partition.active_producers if p.producer_id == txn.producer_id)
        assert (producer.producer_epoch, producer.last_sequence, producer.current_txn_start_offset,
                producer.coordinator_epoch) == (txn.producer_epoch, 2, first_offset, -1)
        assert producer.last_timestamp == BASE_TS
        txns.abort(txn)
        assert txns.producers(topic)[txn.producer_id].current_txn_start_offset == -1
    return Recipe(dict(topics=[dict(name=topic, partition_indexes=[0])]), check)


# --- the operator's view (KIP-664) -----------------------------------------------------------------------------

@recipe(ApiKey.LIST_TRANSACTIONS)
def list_transactions(broker: WindowBroker, version: int) -> Recipe:
    """An Ongoing transaction found by state and producer id; an unknown state name is echoed back."""
    txns = steps(broker)
    txn, _ = txns.begin("window-list", broker.topic("txn-list"), [b"listed"])

    def check(response) -> None:
        expect(response.error_code, ErrorCode.NONE, response)
        assert list(response.unknown_state_filters) == ["NoSuchState"]
        assert [(s.transactional_id, s.producer_id, s.transaction_state) for s in response.transaction_states] == [
            (txn.transactional_id, txn.producer_id, "Ongoing")]
        txns.abort(txn)
        after = broker.call(ApiKey.LIST_TRANSACTIONS, version, state_filters=["Ongoing"],
                            producer_id_filters=[txn.producer_id])
        assert after.transaction_states == ()
    return Recipe(dict(state_filters=["Ongoing", "NoSuchState"], producer_id_filters=[txn.producer_id]), check)


@recipe(ApiKey.DESCRIBE_TRANSACTIONS)
def describe_transactions(broker: WindowBroker, version: int) -> Recipe:
    """An Ongoing transaction's producer, timeout, start time and partitions; an id never used is
    TRANSACTIONAL_ID_NOT_FOUND."""
    txns, topic = steps(broker), broker.topic("txn-describe")
    txn, _ = txns.begin("window-describe", topic, [b"described"])

    def check(response) -> None:
        described, unknown = response.transaction_states
        expect(described.error_code, ErrorCode.NONE, described)
        assert (described.transactional_id, described.transaction_state, described.producer_id,
                described.producer_epoch) == (txn.transactional_id, "Ongoing", txn.producer_id, txn.producer_epoch)
        assert described.transaction_timeout.total_seconds() * 1000 == TXN_TIMEOUT_MS
        assert described.transaction_start_time.timestamp() * 1000 > BASE_TS
        assert [(t.topic, list(t.partitions)) for t in described.topics] == [(topic, [0])]
        assert unknown.transactional_id == "window-never-used"
        expect(unknown.error_code, ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, unknown)
        txns.abort(txn)
    return Recipe(dict(transactional_ids=[txn.transactional_id, "window-never-used"]), check)

