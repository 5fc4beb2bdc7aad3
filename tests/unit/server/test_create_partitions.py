"""The CreatePartitions handler driven directly (the World of test_handlers: a real ReplicaManager and
MetadataCache) with a fake AdminOps whose additions show up in the metadata cache, or never do."""
from __future__ import annotations

import asyncio

import pytest

from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.server.handlers.create_partitions import handle_create_partitions
from tests.unit.server.test_handlers import ME, FakeAdmin, World, state

CREATE_PARTITIONS = 37


class PartitionsAdmin(FakeAdmin):
    """Grows topics in the metadata cache (as the controller's UpdateMetadata would) when ``publish``."""

    async def create_partitions(self, name, count, assignments, validate_only):
        self.calls.append(("partitions", name, count, assignments, validate_only))
        current = self.cache.partitions_of(name)
        if not current:
            raise KafkaError(f"The topic '{name}' does not exist.", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if count <= len(current):
            raise KafkaError(f"Topic currently has {len(current)} partitions, which is higher than the requested "
                             f"{count}.", ErrorCode.INVALID_PARTITIONS)
        if not validate_only and self.publish:
            self._update(state(name, p, ME, [ME]) for p in range(len(current), count))


@pytest.fixture
def world(tmp_path):
    w = World(tmp_path)
    w.admin = w.context.admin = PartitionsAdmin(w.cache)
    yield w
    w.log_manager.shutdown()


def create_partitions(world, topics, version=3, timeout=5000, validate_only=False):
    response = asyncio.run(world.call(handle_create_partitions, CREATE_PARTITIONS, version, topics=topics,
                                      timeout=timeout, validate_only=validate_only))
    return [(r.name, r.error_code, r.error_message) for r in response.results]


def grow(name, count, assignments=None):
    return dict(name=name, count=count,
                assignments=None if assignments is None else [dict(broker_ids=b) for b in assignments])


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_create_partitions_every_version(world, version):
    assert create_partitions(world, [grow("u", 3)], version=version) == [("u", ErrorCode.NONE, None)]
    assert world.admin.calls == [("partitions", "u", 3, None, False)]
    assert sorted(world.cache.partitions_of("u")) == [0, 1, 2]


def test_explicit_assignments_reach_the_admin_as_replica_lists(world):
    assert create_partitions(world, [grow("u", 3, [[1, 2], [2, 1]])]) == [("u", ErrorCode.NONE, None)]
    assert world.admin.calls == [("partitions", "u", 3, [[1, 2], [2, 1]], False)]


def test_errors_per_topic(world):
    got = create_partitions(world, [grow("t", 2), grow("ghost", 2), grow("u", 2), grow("dup", 5), grow("dup", 6)])
    assert got == [
        ("t", ErrorCode.INVALID_PARTITIONS, "Topic currently has 4 partitions, which is higher than the requested 2."),
        ("ghost", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'ghost' does not exist."),
        ("u", ErrorCode.NONE, None),
        ("dup", ErrorCode.INVALID_REQUEST, "Duplicate topic in request."),
        ("dup", ErrorCode.INVALID_REQUEST, "Duplicate topic in request.")]
    assert [c[1] for c in world.admin.calls] == ["t", "ghost", "u"]  # duplicates never reach the admin


def test_validate_only_writes_nothing_and_does_not_wait(world):
    world.admin.publish = False
    assert create_partitions(world, [grow("u", 4)], validate_only=True, timeout=60000) == [("u", ErrorCode.NONE, None)]
    assert world.admin.calls == [("partitions", "u", 4, None, True)] and sorted(world.cache.partitions_of("u")) == [0]


def test_times_out_while_the_new_partitions_have_no_leader_in_the_metadata(world):
    world.admin.publish = False
    (got,) = create_partitions(world, [grow("u", 2)], timeout=30)
    assert got[:2] == ("u", ErrorCode.REQUEST_TIMED_OUT) and "do not all have a leader" in got[2]
    (got,) = create_partitions(world, [grow("lat", 2)], timeout=0)  # <= 0: no wait at all, as in Kafka
    assert got[:2] == ("lat", ErrorCode.REQUEST_TIMED_OUT)


def test_a_new_partition_without_leader_is_not_done(world):
    async def leaderless(name, count, assignments, validate_only):
        world.admin._update([state(name, 1, -1, [2])])

    world.admin.create_partitions = leaderless
    assert create_partitions(world, [grow("u", 2)], timeout=50)[0][1] == ErrorCode.REQUEST_TIMED_OUT
