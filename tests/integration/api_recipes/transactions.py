"""Recipes of the transaction APIs (KIP-98, KIP-664): InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
EndTxn, TxnOffsetCommit, WriteTxnMarkers, DescribeProducers, ListTransactions, DescribeTransactions.

Each recipe runs a transaction of its own (a transactional id per API and version) up to the point its
request belongs to, through the steps of ``txn_steps.Transactions`` at the versions clients have long sent:
FindCoordinator key type 1 until the transaction coordinator answers, InitProducerId with the
transactional id, AddPartitionsToTxn, a transactional Produce, EndTxn. It leaves no transaction open: what
its request began its check ends, so the coordinator never aborts one on timeout behind another recipe.

The versions' differences: PRODUCER_FENCED is answered from InitProducerId v4 and from AddPartitionsToTxn,
AddOffsetsToTxn and EndTxn v2 (older versions get INVALID_PRODUCER_EPOCH for an epoch a newer InitProducerId
bumped); InitProducerId v3 names the caller's producer id and epoch (KIP-360); TxnOffsetCommit v2 carries the
committed leader epoch and v3 the member's generation (KIP-447, ILLEGAL_GENERATION when stale)."""
from __future__ import annotations

from brokers.protocol.api_versions import ApiKey
from brokers.protocol.errors import ErrorCode
from tests.integration.api_recipes.base import Recipe, RecipeMaker, expect, only, registry
from tests.integration.api_recipes.txn_steps import (OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, TXN_TIMEOUT_MS, Txn,
                                                     fenced_error, steps)
from tests.integration.conditions import wait_for
from tests.integration.window_broker import BASE_TS, TIMEOUT, WindowBroker

RECIPES: dict[ApiKey, RecipeMaker] = {}
recipe = registry(RECIPES)


# --- the producer's requests to the transaction coordinator ---------------------------------------------------

@recipe(ApiKey.INIT_PRODUCER_ID)
def init_producer_id(broker: WindowBroker, version: int) -> Recipe:
    """An idempotent producer (no transactional id) gets a fresh producer id at epoch 0, each time; then a
    transactional id keeps its producer id and bumps its epoch."""
    fields = dict(transactional_id=None, transaction_timeout=TXN_TIMEOUT_MS, producer_id=-1, producer_epoch=-1)
    previous = None
    if version >= 3:  # v3: the caller's current producer id and epoch (KIP-360), both or neither
        previous = broker.call(ApiKey.INIT_PRODUCER_ID, version, **fields)
        fields.update(producer_id=previous.producer_id, producer_epoch=previous.producer_epoch)

    def check(response) -> None:
        expect(response.error_code, ErrorCode.NONE, response)
        assert response.producer_id >= 0 and response.producer_epoch == 0
        if previous is not None:  # an idempotent producer gets a fresh id
            assert response.producer_id != previous.producer_id
            half = broker.call(ApiKey.INIT_PRODUCER_ID, version, **{**fields, "producer_epoch": -1})
            expect(half.error_code, ErrorCode.INVALID_REQUEST, half)
        assert_transactional_init(broker, version)
    return Recipe(fields, check)


def assert_transactional_init(broker: WindowBroker, version: int) -> None:
    """A transactional id: its producer id again at the next epoch; v3+ resumes from the current epoch
    (KIP-360) and a producer id not the id's is fenced (PRODUCER_FENCED from v4)."""
    txns = steps(broker)
    first = txns.init(f"window-init-v{version}", version)
    second = txns.init(first.transactional_id, version)
    assert first.producer_epoch == 0 and (second.producer_id, second.producer_epoch) == (first.producer_id, 1)
    if version >= 3:
        resumed = broker.call(ApiKey.INIT_PRODUCER_ID, version, **second.ids(), transaction_timeout=TXN_TIMEOUT_MS)
        expect(resumed.error_code, ErrorCode.NONE, resumed)
        assert (resumed.producer_id, resumed.producer_epoch) == (first.producer_id, 2)
        stranger = second._replace(producer_id=second.producer_id + 1000)
        fenced = broker.call(ApiKey.INIT_PRODUCER_ID, version, **stranger.ids(), transaction_timeout=TXN_TIMEOUT_MS)
        expect(fenced.error_code, fenced_error(version, fenced_from=4), fenced)


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

