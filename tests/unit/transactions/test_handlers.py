"""The transaction API handlers through codec-built requests of every version (aiokafka sends v0 of each; v3
is flexible): authorization, per-partition errors, the version-dependent PRODUCER_FENCED, and the coordinator
behind them (a real TransactionCoordinator over in-memory ports)."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest

from brokers.model import TopicPartition
from brokers.protocol import codec
from brokers.protocol.api_versions import ApiKey
from brokers.protocol.errors import ErrorCode
from brokers.protocol.framing import RequestHeader, parse_request_header
from brokers.security import acls as acl
from tests.unit.transactions.fakes import World
from transactions.coordinator import handlers
from transactions.coordinator.handlers import HANDLERS, producer_id_and_epoch_valid, versioned_error

TX = "tx-1"


@dataclass
class FakeMetadata:
    topics: dict[str, int] = field(default_factory=lambda: {"t": 2, "u": 1, "__consumer_offsets": 4})

    def partitions_of(self, topic: str) -> dict[int, object]:
        return {p: object() for p in range(self.topics.get(topic, 0))}


@dataclass
class FakeContext:
    transaction_coordinator: object
    metadata_cache: FakeMetadata = field(default_factory=FakeMetadata)
    denied: set = field(default_factory=set)  # (operation, resource type, name); name "*" for any of the type
    coordinator_partition: object = staticmethod(lambda group_id: 3)

    def authorized(self, operation, resource_type, name):
        return (operation, resource_type, name) not in self.denied and (operation, resource_type, "*") not in self.denied

    def authorized_on_cluster(self, operation):
        return self.authorized(operation, acl.CLUSTER, acl.CLUSTER_NAME)

    def authorized_by_resource_type(self, operation, resource_type):
        return (operation, resource_type, "*") not in self.denied

    def filter_authorized(self, operation, resource_type, names):
        return {n for n in names if self.authorized(operation, resource_type, n)}


def call(context, key: ApiKey, version: int, **fields):
    """Encode a request of ``version``, decode it as the broker does, run the handler, encode and decode its
    answer: what the client would read."""
    request = codec.build(codec.request_class(key, version), **fields)
    frame = codec.encode_request(key, version, 7, "tests", request)[4:]
    header = parse_request_header(frame, flexible=version >= key.flexible_from)
    decoded = codec.decode_request(header, frame)
    response = asyncio.get_event_loop().run_until_complete(HANDLERS[key](context, header, decoded))
    encoded = codec.encode_response(key, version, 7, response)
    correlation_id, answer = codec.decode_response(key, version, encoded[4:])
    assert correlation_id == 7
    return answer


@pytest.fixture
def world():
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    w = World()
    loop.run_until_complete(w.elect_all())
    yield w, FakeContext(w.coordinator)
    loop.run_until_complete(w.coordinator.shutdown())
    loop.close()
    asyncio.set_event_loop(None)


def init(ctx, version, transactional_id=TX, timeout=60000, **kw):
    r = call(ctx, ApiKey.INIT_PRODUCER_ID, version, transactional_id=transactional_id, transaction_timeout=timeout,
             **kw)
    return r.error_code, r.producer_id, r.producer_epoch


def add(ctx, version, pid, epoch, topics, transactional_id=TX):
    topics = [{"name": t, "partitions": ps} for t, ps in topics.items()]
    r = call(ctx, ApiKey.ADD_PARTITIONS_TO_TXN, version, v3_and_below_transactional_id=transactional_id,
             v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch, v3_and_below_topics=topics)
    return {(t.name, p.partition_index): p.partition_error_code for t in r.results_by_topic_v3_and_below
            for p in t.results_by_partition}


def end(ctx, version, pid, epoch, committed, transactional_id=TX):
    return call(ctx, ApiKey.END_TXN, version, transactional_id=transactional_id, producer_id=pid,
                producer_epoch=epoch, committed=committed).error_code


def settle(w, txn_id=TX):
    from tests.unit.transactions.fakes import wait_for
    asyncio.get_event_loop().run_until_complete(wait_for(lambda: w.meta(txn_id).pending_state is None))


# -- InitProducerId --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("version", range(5))
def test_init_producer_id_every_version(world, version):
    w, ctx = world
    assert init(ctx, version, None) == (0, 1000, 0)
    assert init(ctx, version, None) == (0, 1001, 0)
    assert init(ctx, version) == (0, 1002, 0)
    assert init(ctx, version) == (0, 1002, 1)
    assert init(ctx, version, "") == (ErrorCode.INVALID_REQUEST, -1, -1)
    assert init(ctx, version, timeout=900001) == (ErrorCode.INVALID_TRANSACTION_TIMEOUT, -1, -1)


def test_init_producer_id_kip_360_and_fenced_by_version(world):
    w, ctx = world
    init(ctx, 4)  # (1000, 0)
    assert init(ctx, 3, producer_id=1000, producer_epoch=0) == (0, 1000, 1)
    assert init(ctx, 4, producer_id=1000, producer_epoch=9) == (ErrorCode.PRODUCER_FENCED, -1, -1)
    assert init(ctx, 3, producer_id=1000, producer_epoch=9) == (ErrorCode.INVALID_PRODUCER_EPOCH, -1, -1)
    assert init(ctx, 4, producer_id=1000, producer_epoch=-1) == (ErrorCode.INVALID_REQUEST, -1, -1)
    assert init(ctx, 4, producer_id=-1, producer_epoch=1) == (ErrorCode.INVALID_REQUEST, -1, -1)
    assert init(ctx, 4, None, producer_id=77, producer_epoch=3) == (0, 1001, 0)  # idempotent: a fresh id


def test_init_producer_id_authorization(world):
    w, ctx = world
    ctx.denied = {(acl.WRITE, acl.TRANSACTIONAL_ID, TX), (acl.IDEMPOTENT_WRITE, acl.CLUSTER, acl.CLUSTER_NAME),
                  (acl.WRITE, acl.TOPIC, "*")}
    assert init(ctx, 0) == (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, -1)
    assert init(ctx, 0, None) == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, -1, -1)
    ctx.denied.discard((acl.WRITE, acl.TOPIC, "*"))  # Write on some topic is enough
    assert init(ctx, 0, None) == (0, 1000, 0)
    ctx.denied = {(acl.WRITE, acl.TOPIC, "*")}  # IdempotentWrite on the cluster is enough
    assert init(ctx, 0, None) == (0, 1001, 0)
    assert w.log.appends == []


def test_init_producer_id_not_coordinator(world):
    w, ctx = world
    w.coordinator.on_resigned(w.coordinator.partition_for(TX))
    assert init(ctx, 0) == (ErrorCode.NOT_COORDINATOR, -1, -1)


# -- AddPartitionsToTxn -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("version", range(4))
def test_add_partitions_every_version(world, version):
    w, ctx = world
    _, pid, epoch = init(ctx, 0)
    assert add(ctx, version, pid, epoch, {"t": [0, 1], "u": [0]}) == {("t", 0): 0, ("t", 1): 0, ("u", 0): 0}
    assert w.meta(TX).topic_partitions == {TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)}
    fenced = ErrorCode.PRODUCER_FENCED if version >= 2 else ErrorCode.INVALID_PRODUCER_EPOCH
    assert add(ctx, version, pid, epoch + 1, {"t": [0]}) == {("t", 0): fenced}
    assert add(ctx, version, pid + 1, epoch, {"t": [0]}) == {("t", 0): ErrorCode.INVALID_PRODUCER_ID_MAPPING}


def test_add_partitions_refusals_fail_the_whole_request(world):
    w, ctx = world
    _, pid, epoch = init(ctx, 0)
    ctx.denied = {(acl.WRITE, acl.TOPIC, "u")}
    assert add(ctx, 0, pid, epoch, {"t": [0, 5], "u": [0], "gone": [0]}) == {
        ("t", 0): ErrorCode.OPERATION_NOT_ATTEMPTED, ("t", 5): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ("u", 0): ErrorCode.TOPIC_AUTHORIZATION_FAILED, ("gone", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert add(ctx, 0, pid, epoch, {"__consumer_offsets": [0], "t": [0]}) == {
        ("__consumer_offsets", 0): ErrorCode.TOPIC_AUTHORIZATION_FAILED, ("t", 0): ErrorCode.OPERATION_NOT_ATTEMPTED}
    ctx.denied = {(acl.WRITE, acl.TRANSACTIONAL_ID, TX)}
    assert add(ctx, 0, pid, epoch, {"t": [0, 1]}) == {("t", 0): ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                                      ("t", 1): ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    assert w.meta(TX).topic_partitions == set() and len(w.log.appends) == 1


# -- AddOffsetsToTxn -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("version", range(4))
def test_add_offsets_every_version(world, version):
    w, ctx = world
    _, pid, epoch = init(ctx, 0)

    def add_offsets(epoch_=epoch, group="g"):
        return call(ctx, ApiKey.ADD_OFFSETS_TO_TXN, version, transactional_id=TX, producer_id=pid,
                    producer_epoch=epoch_, group_id=group).error_code
    assert add_offsets() == 0
    assert w.meta(TX).topic_partitions == {TopicPartition("__consumer_offsets", 3)}
    assert add_offsets(epoch + 1) == (ErrorCode.PRODUCER_FENCED if version >= 2 else ErrorCode.INVALID_PRODUCER_EPOCH)
    ctx.denied = {(acl.READ, acl.GROUP, "g")}
    assert add_offsets() == ErrorCode.GROUP_AUTHORIZATION_FAILED
    ctx.denied = {(acl.WRITE, acl.TRANSACTIONAL_ID, TX)}
    assert add_offsets() == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


# -- EndTxn ------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("version", range(4))
def test_end_txn_every_version(world, version):
    w, ctx = world
    _, pid, epoch = init(ctx, 0)
    assert end(ctx, version, pid, epoch, True) == ErrorCode.INVALID_TXN_STATE  # no transaction
    add(ctx, 0, pid, epoch, {"t": [0]})
    fenced = ErrorCode.PRODUCER_FENCED if version >= 2 else ErrorCode.INVALID_PRODUCER_EPOCH
    assert end(ctx, version, pid, epoch - 1, True) == fenced
    assert end(ctx, version, pid, epoch, True) == 0
    settle(w)
    assert w.log.states(TX)[-1] == "CompleteCommit" and w.markers.sent[-1].partitions == {TopicPartition("t", 0)}
    assert end(ctx, version, pid, epoch, True) == 0  # the retry
    ctx.denied = {(acl.WRITE, acl.TRANSACTIONAL_ID, TX)}
    assert end(ctx, version, pid, epoch, True) == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def test_aiokafka_v0_transaction_cycle(world):
    w, ctx = world
    _, pid, epoch = init(ctx, 0)
    assert add(ctx, 0, pid, epoch, {"t": [1]}) == {("t", 1): 0}
    assert call(ctx, ApiKey.ADD_OFFSETS_TO_TXN, 0, transactional_id=TX, producer_id=pid, producer_epoch=epoch,
                group_id="g").error_code == 0
    assert end(ctx, 0, pid, epoch, False) == 0
    settle(w)
    assert w.log.states(TX) == ["Empty", "Ongoing", "Ongoing", "PrepareAbort", "CompleteAbort"]
    assert w.markers.sent[0].partitions == {TopicPartition("t", 1), TopicPartition("__consumer_offsets", 3)}


# -- ListTransactions / DescribeTransactions -------------------------------------------------------------------------
def test_list_and_describe_transactions(world):
    w, ctx = world
    _, pid, epoch = init(ctx, 0)
    add(ctx, 0, pid, epoch, {"t": [0, 1]})
    init(ctx, 0, "tx-2")
    ctx.denied = {(acl.DESCRIBE, acl.TRANSACTIONAL_ID, "tx-2")}
    r = call(ctx, ApiKey.LIST_TRANSACTIONS, 0, state_filters=[], producer_id_filters=[])
    assert (r.error_code, [(s.transactional_id, s.producer_id, s.transaction_state) for s in r.transaction_states]) == (
        0, [(TX, pid, "Ongoing")])
    r = call(ctx, ApiKey.LIST_TRANSACTIONS, 0, state_filters=["Empty", "Nope"], producer_id_filters=[])
    assert (list(r.unknown_state_filters), list(r.transaction_states)) == (["Nope"], [])
    r = call(ctx, ApiKey.DESCRIBE_TRANSACTIONS, 0, transactional_ids=[TX, "tx-2", "unknown"])
    a, b, c = r.transaction_states
    assert (a.error_code, a.transaction_state, a.producer_id, a.producer_epoch, int(a.transaction_timeout.total_seconds()
            * 1000)) == (0, "Ongoing", pid, epoch, 60000)
    assert [(t.topic, list(t.partitions)) for t in a.topics] == [("t", [0, 1])]
    assert a.transaction_start_time.timestamp() * 1000 == w.meta(TX).txn_start_timestamp
    assert (b.error_code, c.error_code) == (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                            ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)


def test_describe_a_transaction_that_never_started(world):
    w, ctx = world
    init(ctx, 0)
    request = codec.build(codec.request_class(ApiKey.DESCRIBE_TRANSACTIONS, 0), transactional_ids=[TX])
    header = RequestHeader(ApiKey.DESCRIBE_TRANSACTIONS, 0, 7, "tests", 0)
    response = asyncio.get_event_loop().run_until_complete(handlers.handle_describe_transactions(ctx, header, request))
    (a,) = response.transaction_states
    assert (a.error_code, a.transaction_state, list(a.topics)) == (0, "Empty", [])
    assert round(a.transaction_start_time.timestamp() * 1000) == -1  # Kafka's -1: not started
    # on the wire: ... int32 timeout 60000, int64 start -1, int64 producer id 1000, int16 epoch 0 ...
    assert bytes.fromhex("0000ea60" "ffffffffffffffff" "00000000000003e8" "0000") in codec.encode_response(
        ApiKey.DESCRIBE_TRANSACTIONS, 0, 7, response)


# -- pure decisions ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("producer_id, epoch, valid", [(-1, -1, True), (7, 0, True), (-1, 0, False), (7, -1, False)])
def test_producer_id_and_epoch_come_together(producer_id, epoch, valid):
    assert producer_id_and_epoch_valid(producer_id, epoch) is valid


@pytest.mark.parametrize("key, first", [(ApiKey.INIT_PRODUCER_ID, 4), (ApiKey.ADD_PARTITIONS_TO_TXN, 2),
                                        (ApiKey.ADD_OFFSETS_TO_TXN, 2), (ApiKey.END_TXN, 2)])
def test_producer_fenced_only_from_the_version_that_knows_it(key, first):
    for version in range(key.max_version + 1):
        expected = ErrorCode.PRODUCER_FENCED if version >= first else ErrorCode.INVALID_PRODUCER_EPOCH
        assert versioned_error(key, version, ErrorCode.PRODUCER_FENCED) == expected
        assert versioned_error(key, version, ErrorCode.CONCURRENT_TRANSACTIONS) == ErrorCode.CONCURRENT_TRANSACTIONS


def test_handlers_cover_the_transaction_apis():
    assert set(HANDLERS) == {ApiKey.INIT_PRODUCER_ID, ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.ADD_OFFSETS_TO_TXN,
                             ApiKey.END_TXN, ApiKey.LIST_TRANSACTIONS, ApiKey.DESCRIBE_TRANSACTIONS}
    assert handlers.OFFSETS_TOPIC == "__consumer_offsets"


def test_server_context_provides_the_transaction_api_context():
    import dataclasses
    import typing

    from brokers.server.context import ServerContext
    from transactions.coordinator.handlers import TransactionApiContext
    provided = {f.name for f in dataclasses.fields(ServerContext)} | set(dir(ServerContext))
    wanted = set(typing.get_type_hints(TransactionApiContext)) | {
        name for name in vars(TransactionApiContext) if not name.startswith("_")}
    assert wanted <= provided
