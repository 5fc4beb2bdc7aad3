"""OffsetWriter (per-group batching of store writes, order preserved, failures reach every waiter) and
``expired_offsets`` (KIP-211 retention), driven on a real event loop with a store that can hold a write."""
from __future__ import annotations

import asyncio

import pytest

from brokers.model import TopicPartition
from consumer_group.coordinator.group import GroupMetadata, MemberMetadata, OffsetAndMetadata
from consumer_group.coordinator.offset_store import MemoryOffsetStore
from consumer_group.coordinator.offsets import OffsetWriter, expired_offsets
from consumer_group.coordinator.state import GroupState

TP0, TP1, TP2 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)
OTHER = TopicPartition("u", 0)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 5))


class GatedStore(MemoryOffsetStore):
    """A MemoryOffsetStore that logs every operation and holds each one until ``gate`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.started = asyncio.Event()
        self.ops: list[tuple] = []

    async def _hold(self, op: tuple) -> None:
        self.ops.append(op)
        self.started.set()
        await self.gate.wait()

    async def commit(self, group_id, offsets):
        await self._hold(("commit", group_id, dict(offsets)))
        await super().commit(group_id, offsets)

    async def delete_offsets(self, group_id, partitions):
        await self._hold(("delete_offsets", group_id, list(partitions)))
        await super().delete_offsets(group_id, partitions)

    async def delete_group(self, group_id):
        await self._hold(("delete_group", group_id))
        await super().delete_group(group_id)


async def wait_until(predicate, timeout: float = 2.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.001)


# -- batching ----------------------------------------------------------------------------------
def test_commits_while_a_write_is_in_flight_merge_into_one_write():
    async def scenario():
        store = GatedStore()
        writer = OffsetWriter(store)
        first = asyncio.create_task(writer.commit("g", {TP0: 1}))
        await store.started.wait()  # the first write is in flight and held
        rest = [asyncio.create_task(writer.commit("g", offsets))
                for offsets in ({TP0: 2, TP1: 10}, {TP1: 11}, {TP0: 3, TP2: 20})]
        await asyncio.sleep(0)  # let every commit reach the queue
        assert not first.done() and not any(t.done() for t in rest)
        store.gate.set()
        await asyncio.gather(first, *rest)
        assert store.commits == [("g", {TP0: 1}), ("g", {TP0: 3, TP1: 11, TP2: 20})]  # later offsets win
        assert store.offsets == {"g": {TP0: 3, TP1: 11, TP2: 20}}
        assert writer.writes == 2
    run(scenario())


def test_commits_issued_in_the_same_tick_share_the_first_write():
    async def scenario():
        store = MemoryOffsetStore()
        writer = OffsetWriter(store)
        await asyncio.gather(writer.commit("g", {TP0: 1}), writer.commit("g", {TP0: 2, TP1: 5}))
        assert store.commits == [("g", {TP0: 2, TP1: 5})]
    run(scenario())


def test_groups_are_written_independently():
    async def scenario():
        store = GatedStore()
        writer = OffsetWriter(store)
        a = asyncio.create_task(writer.commit("a", {TP0: 1}))
        await store.started.wait()
        b = asyncio.create_task(writer.commit("b", {TP0: 7}))
        await wait_until(lambda: len(store.ops) == 2)  # b's write started although a's is still held
        assert store.ops == [("commit", "a", {TP0: 1}), ("commit", "b", {TP0: 7})]
        store.gate.set()
        await asyncio.gather(a, b)
    run(scenario())


def test_order_of_commits_and_deletions_is_preserved():
    async def scenario():
        store = GatedStore()
        writer = OffsetWriter(store)
        tasks = [asyncio.create_task(writer.commit("g", {TP0: 1}))]
        await store.started.wait()
        tasks.append(asyncio.create_task(writer.delete_offsets("g", [TP0])))
        await asyncio.sleep(0)
        tasks.append(asyncio.create_task(writer.commit("g", {TP0: 2})))
        await asyncio.sleep(0)
        tasks.append(asyncio.create_task(writer.commit("g", {TP1: 4})))  # merges with the previous commit
        await asyncio.sleep(0)
        tasks.append(asyncio.create_task(writer.delete_group("g")))
        await asyncio.sleep(0)
        tasks.append(asyncio.create_task(writer.commit("g", {TP2: 9})))
        await asyncio.sleep(0)
        store.gate.set()
        await asyncio.gather(*tasks)
        assert store.ops == [
            ("commit", "g", {TP0: 1}),
            ("delete_offsets", "g", [TP0]),
            ("commit", "g", {TP0: 2, TP1: 4}),
            ("delete_group", "g"),
            ("commit", "g", {TP2: 9}),
        ]
        assert store.offsets == {"g": {TP2: 9}}
    run(scenario())


def test_a_failing_store_fails_every_waiter_of_the_write():
    async def scenario():
        store = GatedStore()
        writer = OffsetWriter(store)
        first = asyncio.create_task(writer.commit("g", {TP0: 1}))
        await store.started.wait()
        merged = [asyncio.create_task(writer.commit("g", {TP0: n})) for n in (2, 3, 4)]
        await asyncio.sleep(0)
        store.fail = RuntimeError("zookeeper down")
        store.gate.set()
        results = await asyncio.gather(first, *merged, return_exceptions=True)
        assert len(results) == 4
        assert all(isinstance(r, RuntimeError) and str(r) == "zookeeper down" for r in results)
        assert store.commits == [] and store.offsets == {}
        # the writer recovers once the store does
        store.fail = None
        await writer.commit("g", {TP1: 5})
        assert store.commits == [("g", {TP1: 5})]
    run(scenario())


def test_a_failed_write_does_not_fail_the_next_one():
    async def scenario():
        store = GatedStore()
        writer = OffsetWriter(store)
        store.fail = RuntimeError("once")
        first = asyncio.create_task(writer.commit("g", {TP0: 1}))
        await store.started.wait()
        second = asyncio.create_task(writer.delete_offsets("g", [TP1]))
        await asyncio.sleep(0)
        store.gate.set()
        with pytest.raises(RuntimeError, match="once"):
            await first
        await second  # the queued deletion still runs (MemoryOffsetStore.fail only affects commits)
        assert [op[0] for op in store.ops] == ["commit", "delete_offsets"]
    run(scenario())


def test_writer_forgets_idle_groups():
    async def scenario():
        writer = OffsetWriter(MemoryOffsetStore())
        await writer.commit("g", {TP0: 1})
        await wait_until(lambda: not writer._drains)
        assert writer._queues == {}
        await writer.shutdown()
    run(scenario())


# -- expired_offsets (KIP-211) -----------------------------------------------------------------
RETENTION = 1000


def managed_group(state: GroupState, state_timestamp_ms: int, offsets: dict) -> GroupMetadata:
    group = GroupMetadata("g", state=state, state_timestamp_ms=state_timestamp_ms, protocol_type="consumer",
                          offsets=dict(offsets))
    if state is not GroupState.EMPTY:
        group.add(MemberMetadata("m", None, "c", "h", 100, 100, "consumer", [("range", b"")]))
    return group


@pytest.mark.parametrize("state", [GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE,
                                   GroupState.STABLE])
def test_no_offsets_expire_while_the_group_has_members(state):
    group = managed_group(state, 0, {TP0: OffsetAndMetadata(1, "", 0)})
    assert expired_offsets(group, 10**12, RETENTION) == []


@pytest.mark.parametrize("state", [GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE,
                                   GroupState.STABLE])
def test_offsets_of_topics_no_member_subscribes_to_expire_retention_after_their_commit(state):
    """KIP-496: in a consumer group with members, an unsubscribed topic's offsets expire one by one."""
    group = managed_group(state, 0, {TP0: OffsetAndMetadata(1, "", 0), OTHER: OffsetAndMetadata(2, "", 100)})
    group.generation_id, group.subscribed_topics = 1, {"t"}
    assert expired_offsets(group, 99 + RETENTION, RETENTION) == []
    assert expired_offsets(group, 100 + RETENTION, RETENTION) == [OTHER]
    assert expired_offsets(group, 10**12, RETENTION) == [OTHER]  # "t" is subscribed: kept
    group.subscribed_topics = None  # a member's subscription did not parse: nothing is known, nothing expires
    assert expired_offsets(group, 10**12, RETENTION) == []
    group.subscribed_topics, group.protocol_type = set(), "connect"  # not a consumer group: no subscriptions
    assert expired_offsets(group, 10**12, RETENTION) == []


def test_group_managed_offsets_expire_together_retention_after_the_group_went_empty():
    offsets = {TP0: OffsetAndMetadata(1, "", 0), TP1: OffsetAndMetadata(2, "", 5000)}  # commit times do not matter
    group = managed_group(GroupState.EMPTY, 10_000, offsets)
    assert expired_offsets(group, 10_000 + RETENTION - 1, RETENTION) == []
    assert sorted(expired_offsets(group, 10_000 + RETENTION, RETENTION), key=str) == [TP0, TP1]


def test_group_managed_offsets_do_not_expire_early_even_if_committed_long_ago():
    group = managed_group(GroupState.EMPTY, 50_000, {TP0: OffsetAndMetadata(1, "", 0)})
    assert expired_offsets(group, 50_500, RETENTION) == []


def test_simple_consumer_offsets_expire_one_by_one_after_their_commit():
    group = GroupMetadata("g", state_timestamp_ms=0, offsets={
        TP0: OffsetAndMetadata(1, "", 1000),
        TP1: OffsetAndMetadata(2, "", 1500),
    })
    assert group.protocol_type is None and group.is_(GroupState.EMPTY)
    assert expired_offsets(group, 1999, RETENTION) == []
    assert expired_offsets(group, 2000, RETENTION) == [TP0]
    assert sorted(expired_offsets(group, 2500, RETENTION), key=str) == [TP0, TP1]


def test_dead_group_expires_nothing():
    group = GroupMetadata("g", state=GroupState.DEAD, offsets={TP0: OffsetAndMetadata(1, "", 0)})
    assert expired_offsets(group, 10**12, RETENTION) == []


def test_an_offset_committed_with_a_retention_time_expires_at_its_own_timestamp():
    """OffsetCommit v2-v4: the commit's expire timestamp replaces the broker's retention for that offset."""
    group = GroupMetadata("g", state_timestamp_ms=0, offsets={
        TP0: OffsetAndMetadata(1, "", 1000, expire_timestamp_ms=1200),
        TP1: OffsetAndMetadata(2, "", 1000, expire_timestamp_ms=9000),
    })
    assert expired_offsets(group, 1199, RETENTION) == []
    assert expired_offsets(group, 1200, RETENTION) == [TP0]
    assert expired_offsets(group, 2000, RETENTION) == [TP0]  # TP1's own expiry is later than the retention
    managed = GroupMetadata("m", state_timestamp_ms=0, protocol_type="consumer",
                            offsets={TP0: OffsetAndMetadata(1, "", 0, expire_timestamp_ms=10)})
    assert expired_offsets(managed, 10, RETENTION) == [TP0]
    managed.add(MemberMetadata("x", None, "c", "h", 100, 100, "consumer", [("range", b"")]))
    managed.state = GroupState.STABLE
    assert expired_offsets(managed, 10**9, RETENTION) == []  # not while the group has members
