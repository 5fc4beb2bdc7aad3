"""Offsets inside transactions, the pure decisions (``consumer_group.coordinator.txn_offsets``): merging a
transaction's TxnOffsetCommits, producer-epoch fencing, KIP-447's member checks, what a marker commits, the
version meanings of TxnOffsetCommit and the pending offsets' znode."""
from __future__ import annotations

import pytest

from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode
from brokers.zk.paths import ConsumerTxnOffsetsZNode
from consumer_group.coordinator.group import GroupMetadata, MemberMetadata
from consumer_group.coordinator.state import GroupState
from consumer_group.coordinator.txn_offsets import (
    PendingTxnOffsets,
    committed_on_marker,
    pending_merge,
    producer_epoch_error,
    txn_member_error,
    unstable_partitions,
)
from consumer_group.coordinator.versions import txn_offset_commit_error
from tests.unit.consumer_group.txn_fakes import TP0, TP1, TP2, om


def test_a_later_txn_offset_commit_merges_into_the_pending_offsets_and_wins_per_partition():
    first = pending_merge(None, 3, {TP0: om(1), TP1: om(2)})
    assert first == PendingTxnOffsets(3, {TP0: om(1), TP1: om(2)})
    second = pending_merge(first, 3, {TP0: om(9), TP2: om(5)})
    assert second == PendingTxnOffsets(3, {TP0: om(9), TP1: om(2), TP2: om(5)})
    assert first.offsets == {TP0: om(1), TP1: om(2)}  # merging never changes the earlier value
    assert second.without({TP0, TP1}) == PendingTxnOffsets(3, {TP2: om(5)})
    assert second.without(set()) == second


def test_offsets_left_pending_at_a_lower_epoch_never_merge_into_a_higher_epochs_transaction():
    leftover = PendingTxnOffsets(3, {TP0: om(1), TP1: om(2)})
    assert pending_merge(leftover, 4, {TP0: om(9)}) == PendingTxnOffsets(4, {TP0: om(9)})


def test_only_a_lower_epoch_than_the_highest_seen_is_fenced():
    assert producer_epoch_error(None, 0) is None
    assert producer_epoch_error(5, 5) is None
    assert producer_epoch_error(5, 6) is None
    assert producer_epoch_error(5, 4) == ErrorCode.INVALID_PRODUCER_EPOCH


def group_with_member(instance: str | None = None) -> GroupMetadata:
    group = GroupMetadata("g", state=GroupState.STABLE, generation_id=3, protocol_type="consumer")
    group.add(MemberMetadata("m1", instance, "c", "/h", 1000, 1000, "consumer", [("range", b"")]))
    return group


def test_kip_447_member_checks_and_their_order():
    group = group_with_member("i1")
    assert txn_member_error(group, "m1", "i1", 3) is None
    assert txn_member_error(group, "", None, -1) is None  # v0-2: no member, no generation
    assert txn_member_error(group, "m9", "i1", 3) == ErrorCode.FENCED_INSTANCE_ID  # before the member check
    assert txn_member_error(group, "m9", None, 3) == ErrorCode.UNKNOWN_MEMBER_ID
    assert txn_member_error(group, "m9", None, 99) == ErrorCode.UNKNOWN_MEMBER_ID  # before the generation
    assert txn_member_error(group, "m1", "i1", 2) == ErrorCode.ILLEGAL_GENERATION
    assert txn_member_error(group, "", None, 2) == ErrorCode.ILLEGAL_GENERATION  # a given generation is checked
    group.transition_to(GroupState.PREPARING_REBALANCE, 0)
    group.transition_to(GroupState.DEAD, 0)
    assert txn_member_error(group, "m1", "i1", 3) == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_unstable_partitions_are_those_of_any_producer_pending():
    assert unstable_partitions({}) == set()
    assert unstable_partitions({1: PendingTxnOffsets(0, {TP0: om(1)}), 2: PendingTxnOffsets(0, {TP1: om(1)})}) == {
        TP0, TP1}


def test_a_commit_marker_commits_everything_pending_an_abort_nothing():
    pending = PendingTxnOffsets(1, {TP0: om(1), TP1: om(2)})
    assert committed_on_marker(pending, True) == {TP0: om(1), TP1: om(2)}
    assert committed_on_marker(pending, False) == {}
    assert committed_on_marker(None, True) == {}


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_load_in_progress_is_coordinator_not_available_before_v2(version):
    expected = ErrorCode.COORDINATOR_NOT_AVAILABLE if version < 2 else ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert txn_offset_commit_error(version, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS) == expected
    for other in (ErrorCode.NONE, ErrorCode.NOT_COORDINATOR, ErrorCode.INVALID_PRODUCER_EPOCH):
        assert txn_offset_commit_error(version, other) == other


def test_pending_offsets_round_trip_through_their_znode():
    pending = PendingTxnOffsets(7, {TP0: om(10, "m", 2), TopicPartition("a.b", 11): om(3)})
    epoch, stored = ConsumerTxnOffsetsZNode.decode(ConsumerTxnOffsetsZNode.encode(7, pending.stored()))
    assert PendingTxnOffsets.loaded(epoch, stored, 0) == pending
    assert ConsumerTxnOffsetsZNode.path("g", 5) == "/consumers/g/txn_offsets/5"
    for bad in (b"", b"[]", b'{"version":1}', b'{"producer_epoch":1,"offsets":{"t":{"x":[1,"",0]}}}'):
        with pytest.raises(ValueError):
            ConsumerTxnOffsetsZNode.decode(bad)
