"""DescribeProducers (61 v0) over the real handler: the World of test_handlers (a real ReplicaManager, logs on
tmp_path, a MetadataCache in which broker 1 leads t-0 and u-0 and follows t-1), producer state written by
appending idempotent and transactional batches and markers to the leader's log."""
from __future__ import annotations

import asyncio

import pytest

from brokers.protocol.errors import ErrorCode
from brokers.protocol.record import Record, build_batch
from brokers.security import acls as acl
from brokers.security.acls import ALLOW, AclEntry, ResourcePattern
from brokers.security.authorizer import AclAuthorizer
from brokers.server.handlers.describe_producers import handle_describe_producers
from tests.unit.server.test_handlers import World
from tests.unit.zk.test_acl_znodes import MemoryZk

DESCRIBE_PRODUCERS = 61


@pytest.fixture
def world(tmp_path):
    w = World(tmp_path)
    yield w
    w.log_manager.shutdown()


def describe(world, *topics):
    request = [dict(name=name, partition_indexes=list(indexes)) for name, indexes in topics]
    return asyncio.run(world.call(handle_describe_producers, DESCRIBE_PRODUCERS, 0, topics=request))


def answers(response):
    return {(t.name, p.partition_index): (p.error_code, [
        (s.producer_id, s.producer_epoch, s.last_sequence, s.last_timestamp, s.coordinator_epoch,
         s.current_txn_start_offset) for s in p.active_producers]) for t in response.topics for p in t.partitions}


def idempotent(producer_id, epoch, sequence, count, ts, transactional=False):
    records = [Record(i, i, b"k%d" % i, b"v") for i in range(count)]
    return build_batch(records, base_timestamp=ts, producer_id=producer_id, producer_epoch=epoch,
                       base_sequence=sequence, transactional=transactional)


def test_a_leader_lists_its_idempotent_producers_by_id(world):
    log = world.log("t", 0)
    log.append_as_leader(build_batch([Record(0, 0, b"k", b"plain")], base_timestamp=500), 0)  # no producer id
    log.append_as_leader(idempotent(9, 0, 0, 2, 1000), 0)
    log.append_as_leader(idempotent(4, 3, 0, 3, 2000), 0)
    log.append_as_leader(idempotent(4, 3, 3, 2, 3000), 0)
    response = describe(world, ("t", [0]))
    assert response.throttle_time.total_seconds() == 0
    # producer 4: last sequence 4 (3 + 2 - 1), the last batch's max timestamp (3000 + delta 1)
    assert answers(response) == {("t", 0): (ErrorCode.NONE, [(4, 3, 4, 3001, -1, -1), (9, 0, 1, 1001, -1, -1)])}


def test_an_empty_partition_has_no_producers(world):
    assert answers(describe(world, ("u", [0]))) == {("u", 0): (ErrorCode.NONE, [])}


def test_partition_errors_in_kafkas_order(world):
    response = describe(world, ("t", [1, 2, 9]), ("nope", [0, 1]))
    assert answers(response) == {
        ("t", 1): (ErrorCode.NOT_LEADER_OR_FOLLOWER, []),  # hosted here as a follower
        ("t", 2): (ErrorCode.NOT_LEADER_OR_FOLLOWER, []),  # known to the cache, led by broker 3
        ("t", 9): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, []),
        ("nope", 0): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, []),
        ("nope", 1): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, []),
    }


def test_read_on_the_topic_is_required(world):
    authorizer = world.context.authorizer = AclAuthorizer(MemoryZk(), frozenset(), allow_if_no_acl=False)
    world.log("t", 0).append_as_leader(idempotent(4, 0, 0, 1, 1000), 0)
    grant = lambda name, op: authorizer.acls.__setitem__(  # noqa: E731
        ResourcePattern(acl.TOPIC, name, acl.LITERAL), frozenset({AclEntry("User:ANONYMOUS", "*", op, ALLOW)}))
    grant("t", acl.DESCRIBE)
    grant("nope", acl.DESCRIBE)
    assert answers(describe(world, ("t", [0]), ("nope", [0]))) == {
        ("t", 0): (ErrorCode.TOPIC_AUTHORIZATION_FAILED, []),
        ("nope", 0): (ErrorCode.TOPIC_AUTHORIZATION_FAILED, [])}  # no Read: its existence is not revealed
    grant("t", acl.READ)
    assert answers(describe(world, ("t", [0]))) == {("t", 0): (ErrorCode.NONE, [(4, 0, 0, 1000, -1, -1)])}


def test_transactional_producers_show_their_open_transaction_and_coordinator_epoch(world):
    log = world.log("t", 0)
    log.append_as_leader(idempotent(5, 1, 0, 2, 1000, transactional=True), 0)  # offsets 0-1
    log.append_marker(5, 1, True, 3, 0)  # offset 2: COMMIT from coordinator epoch 3
    log.append_as_leader(idempotent(6, 0, 0, 1, 2000, transactional=True), 0)  # offset 3: left open
    log.append_as_leader(idempotent(5, 1, 2, 1, 3000, transactional=True), 0)  # offset 4: a new transaction
    assert answers(describe(world, ("t", [0]))) == {("t", 0): (ErrorCode.NONE, [
        (5, 1, 2, 3000, 3, 4), (6, 0, 0, 2000, -1, 3)])}
    log.append_marker(6, 0, False, 4, 0)
    assert answers(describe(world, ("t", [0])))[("t", 0)][1][1] == (6, 0, 0, 2000, 4, -1)
