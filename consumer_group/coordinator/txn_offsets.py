"""Offsets inside transactions (KIP-98, KIP-447), the pure part: what is pending, who is fenced, what a
marker does (Kafka 2.8's ``GroupMetadata`` pending transactional offset commits and the checks of
``GroupCoordinator.handleTxnCommitOffsets``). ``txn_offset_commits`` applies it.

Invariants:

* A group holds, per producer id, at most one ``PendingTxnOffsets``: every offset that producer committed
  for the group with TxnOffsetCommit since its transaction began (later commits of a partition win), and
  the highest producer epoch they came with. They are not the group's offsets until the COMMIT marker
  of that producer reaches the group's ``__consumer_offsets`` partition; an ABORT marker drops them.
* Per ``__consumer_offsets`` partition, the coordinator knows each producer's highest epoch seen (in a
  TxnOffsetCommit or a marker), as the partition's log knows its producers in Kafka: a TxnOffsetCommit or
  a marker with a lower epoch is INVALID_PRODUCER_EPOCH and changes nothing (Kafka 2.8's log answers
  InvalidProducerEpoch, not PRODUCER_FENCED, to every TxnOffsetCommit version).
* Per ``__consumer_offsets`` partition, the coordinator knows each producer's highest transaction
  coordinator epoch seen in a marker: a marker with a lower one is TRANSACTION_COORDINATOR_FENCED.
* Both epochs survive a failover of the group coordinator: each commit or abort records them per group in
  ``/consumers/<group>/txn_producers/<producer id>``, loaded on election with the pending offsets. These
  records live as long as their group and go with it (DeleteGroups); Kafka keeps a producer's state in
  the partition's log until ``transactional.id.expiration.ms`` / producer id expiration, which this design
  does not apply to them.
* While a partition has pending offsets of any producer, OffsetFetch with ``require_stable`` (v7) answers
  it UNSTABLE_OFFSET_COMMIT.
* As in Kafka 2.8 (``GroupMetadata.removeOffsets``), OffsetDelete removes its partitions from every
  producer's pending offsets as well; DeleteGroups drops the group's pending offsets with the group.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode
from consumer_group.coordinator.group import GroupMetadata, OffsetAndMetadata
from consumer_group.coordinator.state import GroupState

UNKNOWN_MEMBER_ID = ""  # TxnOffsetCommit v0-2 carry no member: Kafka's default, which skips the member check
NO_GENERATION = -1  # ... and no generation (skips the generation check)


@dataclass(frozen=True)
class PendingTxnOffsets:
    """One producer's transactional offsets of one group, waiting for its transaction's marker."""

    producer_epoch: int
    offsets: Mapping[TopicPartition, OffsetAndMetadata] = field(default_factory=dict)

    def merged(self, producer_epoch: int, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> PendingTxnOffsets:
        """These offsets plus a later TxnOffsetCommit's (its partitions win; the epoch is the higher one)."""
        return PendingTxnOffsets(max(self.producer_epoch, producer_epoch), {**self.offsets, **offsets})

    def without(self, partitions: set[TopicPartition]) -> PendingTxnOffsets:
        """These offsets less ``partitions`` (OffsetDelete removes them from pending commits too)."""
        return PendingTxnOffsets(self.producer_epoch, {tp: o for tp, o in self.offsets.items() if tp not in partitions})

    def stored(self) -> dict[TopicPartition, tuple[int, str, int]]:
        """The offsets as the store keeps them: (offset, metadata, leader epoch)."""
        return {tp: (o.offset, o.metadata, o.leader_epoch) for tp, o in self.offsets.items()}

    @staticmethod
    def loaded(producer_epoch: int, stored: Mapping[TopicPartition, tuple[int, str, int]],
               now_ms: int) -> PendingTxnOffsets:
        return PendingTxnOffsets(producer_epoch, {tp: OffsetAndMetadata(offset, metadata, now_ms, None, leader_epoch)
                                                  for tp, (offset, metadata, leader_epoch) in stored.items()})


def pending_merge(current: PendingTxnOffsets | None, producer_epoch: int,
                  offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> PendingTxnOffsets:
    """The producer's pending offsets after a TxnOffsetCommit (already checked against the epoch fence).
    Offsets pending at a lower producer epoch are left over from a transaction the epoch bump aborted (a
    bump waits for that abort), so a commit at a higher epoch starts afresh instead of merging them."""
    if current is None or current.producer_epoch < producer_epoch:
        return PendingTxnOffsets(producer_epoch, dict(offsets))
    return current.merged(producer_epoch, offsets)


def producer_epoch_error(known_epoch: int | None, producer_epoch: int) -> ErrorCode | None:
    """A producer epoch lower than the highest seen for that producer id is a zombie's: fenced."""
    if known_epoch is not None and producer_epoch < known_epoch:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return None


def verification_error(code: int) -> ErrorCode | None:
    """A TxnOffsetCommit's answer when the transaction coordinator did not verify the group's offsets partition
    in the producer's Ongoing transaction (KIP-890, as Kafka 3.6's group coordinator); None when it did.
    ``code`` is the broker's verification answer, mapped for a Produce (``BrokerTransactions.verify``): its
    retriable NOT_ENOUGH_REPLICAS becomes COORDINATOR_LOAD_IN_PROGRESS (the client retries), the rest
    (INVALID_PRODUCER_EPOCH: fenced, INVALID_TXN_STATE, INVALID_PRODUCER_ID_MAPPING) stay."""
    code = ErrorCode(code)
    if code == ErrorCode.NONE:
        return None
    return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if code == ErrorCode.NOT_ENOUGH_REPLICAS else code


def coordinator_epoch_error(known_epoch: int | None, coordinator_epoch: int) -> ErrorCode | None:
    """A marker from an older transaction coordinator epoch than the highest seen for that producer id comes
    from a deposed transaction coordinator: fenced (Kafka 2.8's ``ProducerAppendInfo`` on a control batch)."""
    if known_epoch is not None and coordinator_epoch < known_epoch:
        return ErrorCode.TRANSACTION_COORDINATOR_FENCED
    return None


def txn_member_error(group: GroupMetadata, member_id: str, group_instance_id: str | None,
                     generation_id: int) -> ErrorCode | None:
    """TxnOffsetCommit's group checks (``doTxnCommitOffsets``, KIP-447): a Dead group is
    COORDINATOR_NOT_AVAILABLE; a fenced static member FENCED_INSTANCE_ID; a member id, when given, must be
    a member (UNKNOWN_MEMBER_ID); a generation, when given (>= 0), the group's (ILLEGAL_GENERATION).
    v0-2 carry neither (an empty member id, generation -1), so they skip these two checks."""
    if group.is_(GroupState.DEAD):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if group.is_static_member_fenced(member_id, group_instance_id):
        return ErrorCode.FENCED_INSTANCE_ID
    if member_id != UNKNOWN_MEMBER_ID and not group.has(member_id):
        return ErrorCode.UNKNOWN_MEMBER_ID
    if generation_id >= 0 and generation_id != group.generation_id:
        return ErrorCode.ILLEGAL_GENERATION
    return None


def unstable_partitions(pending: Mapping[int, PendingTxnOffsets]) -> set[TopicPartition]:
    """The partitions with transactional offsets pending (``hasPendingOffsetCommitsForTopicPartition``)."""
    return {tp for offsets in pending.values() for tp in offsets.offsets}


def committed_on_marker(pending: PendingTxnOffsets | None, commit: bool) -> dict[TopicPartition, OffsetAndMetadata]:
    """What a marker makes the group's committed offsets: all of the producer's pending ones on COMMIT,
    nothing on ABORT (nor when nothing is pending: a retried marker)."""
    if pending is None or not commit:
        return {}
    return dict(pending.offsets)

