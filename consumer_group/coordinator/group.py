"""One consumer group's state, pure (Kafka's ``GroupMetadata`` / ``MemberMetadata``): no I/O, no clock.

Invariants:

* ``members`` keeps insertion order; the first member ever added leads until it leaves, then the next
  one (a leader that did not rejoin is replaced by one that did, ``maybe_elect_new_joined_leader``).
* ``pending_members`` are KIP-394 member ids handed out with MEMBER_ID_REQUIRED and not yet used;
  ``has_all_members_joined`` is false while any remain.
* ``static_members`` maps ``group.instance.id`` to the member id currently holding it (KIP-345); a
  request naming the instance with another member id is fenced.
* ``protocol_support`` counts, per protocol name, the members that offer it; a new member must share
  the group's protocol type and at least one name every member offers.
* A member's callbacks are its parked JoinGroup / SyncGroup: set while parked, cleared once answered,
  so each parked request is answered exactly once.
"""
from __future__ import annotations

import struct
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode
from consumer_group.coordinator.state import GroupState, can_rebalance, check_transition

if TYPE_CHECKING:
    from consumer_group.coordinator.txn_offsets import PendingTxnOffsets

CONSUMER_PROTOCOL_TYPE = "consumer"


@dataclass(frozen=True)
class OffsetAndMetadata:
    offset: int
    metadata: str = ""
    commit_timestamp_ms: int = 0
    expire_timestamp_ms: int | None = None  # OffsetCommit v2-v4's retention time: the old per-offset expiry
    leader_epoch: int = -1  # OffsetCommit v6+'s committed leader epoch (KIP-320), answered by OffsetFetch v5+


@dataclass(frozen=True)
class JoinResult:
    error: ErrorCode
    member_id: str
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    members: tuple[tuple[str, str | None, bytes], ...] = ()  # (member id, instance id, metadata): leader only


@dataclass(frozen=True)
class SyncResult:
    error: ErrorCode
    assignment: bytes = b""
    protocol_type: str | None = None  # the group's, on success (SyncGroup v5+ returns them)
    protocol_name: str | None = None


@dataclass
class MemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join_callback: Callable[[JoinResult], None] | None = None
    sync_callback: Callable[[SyncResult], None] | None = None
    is_new: bool = False

    @property
    def awaiting_join(self) -> bool:
        return self.join_callback is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_callback is not None

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise KeyError(f"member {self.member_id} does not support protocol {protocol}")

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return list(protocols) == list(self.protocols)

    def vote(self, candidates: set[str]) -> str:
        """The first of this member's protocols that every member supports."""
        return next(name for name in self.protocol_names() if name in candidates)


@dataclass
class GroupMetadata:
    group_id: str
    state: GroupState = GroupState.EMPTY
    state_timestamp_ms: int = 0
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, MemberMetadata] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    pending_members: set[str] = field(default_factory=set)
    pending_sync: set[str] = field(default_factory=set)
    protocol_support: Counter = field(default_factory=Counter)
    new_member_added: bool = False
    subscribed_topics: set[str] | None = field(default_factory=set)  # this generation's (None: unknown)
    offsets: dict[TopicPartition, OffsetAndMetadata] = field(default_factory=dict)
    pending_txn_offsets: dict[int, PendingTxnOffsets] = field(default_factory=dict)  # producer id -> offsets

    # -- state ---------------------------------------------------------------------------------
    def is_(self, state: GroupState) -> bool:
        return self.state is state

    def transition_to(self, target: GroupState, now_ms: int) -> None:
        check_transition(self.group_id, self.state, target)
        self.state = target
        self.state_timestamp_ms = now_ms

    def can_rebalance(self) -> bool:
        return can_rebalance(self.state)

    # -- membership ----------------------------------------------------------------------------
    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def get(self, member_id: str) -> MemberMetadata:
        return self.members[member_id]

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def size(self) -> int:
        return len(self.members)

    def add(self, member: MemberMetadata) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        self.protocol_support.update(member.protocol_names())
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> MemberMetadata | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        self.protocol_support.subtract(member.protocol_names())
        self.pending_sync.discard(member_id)
        if member.group_instance_id is not None and self.static_members.get(member.group_instance_id) == member_id:
            del self.static_members[member.group_instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def update_member(self, member: MemberMetadata, protocols: list[tuple[str, bytes]], rebalance_timeout_ms: int,
                      session_timeout_ms: int) -> None:
        self.protocol_support.subtract(member.protocol_names())
        member.protocols = list(protocols)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        self.protocol_support.update(member.protocol_names())

    def replace_static_member(self, instance_id: str, old_member_id: str, new_member_id: str) -> MemberMetadata:
        """KIP-345: a static member rejoining with an empty member id takes a new id; the old one is fenced."""
        member = self.members.pop(old_member_id)
        member.member_id = new_member_id
        self.members[new_member_id] = member
        self.static_members[instance_id] = new_member_id
        if self.leader_id == old_member_id:
            self.leader_id = new_member_id
        if old_member_id in self.pending_sync:
            self.pending_sync.discard(old_member_id)
            self.pending_sync.add(new_member_id)
        return member

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def is_static_member_fenced(self, member_id: str, instance_id: str | None) -> bool:
        holder = self.static_member_id(instance_id)
        return holder is not None and holder != member_id

    # -- joining -------------------------------------------------------------------------------
    def num_awaiting_join(self) -> int:
        return sum(1 for m in self.members.values() if m.awaiting_join)

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join() and not self.pending_members

    def not_yet_rejoined_members(self) -> list[MemberMetadata]:
        return [m for m in self.members.values() if not m.awaiting_join]

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def candidate_protocols(self) -> set[str]:
        return {name for name, count in self.protocol_support.items() if count == len(self.members) and count > 0}

    def supports_protocols(self, protocol_type: str, names: list[str]) -> bool:
        if not self.members:
            return bool(protocol_type) and bool(names)
        return protocol_type == self.protocol_type and any(
            self.protocol_support[name] == len(self.members) for name in names)

    def select_protocol(self) -> str:
        """The protocol every member supports that most members list first among those (Kafka's vote)."""
        candidates = self.candidate_protocols()
        votes = Counter(member.vote(candidates) for member in self.members.values())
        return max(votes, key=lambda name: votes[name])

    def maybe_elect_new_joined_leader(self) -> bool:
        """If the leader did not rejoin, make the first member that did the leader."""
        leader = self.members.get(self.leader_id) if self.leader_id else None
        if leader is not None and leader.awaiting_join:
            return True
        joined = next((m for m in self.members.values() if m.awaiting_join), None)
        if joined is None:
            return False
        self.leader_id = joined.member_id
        return True

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
            self.pending_sync = set(self.members)
        else:
            self.protocol_name = None
            self.transition_to(GroupState.EMPTY, now_ms)
            self.pending_sync = set()
        self.subscribed_topics = self.compute_subscribed_topics()

    def current_member_metadata(self) -> tuple[tuple[str, str | None, bytes], ...]:
        if self.protocol_name is None:
            raise RuntimeError(f"group {self.group_id} has no selected protocol")
        return tuple((m.member_id, m.group_instance_id, m.metadata(self.protocol_name)) for m in self.members.values())

    def join_result(self, member: MemberMetadata) -> JoinResult:
        leader = self.is_leader(member.member_id)
        return JoinResult(ErrorCode.NONE, member.member_id, self.generation_id, self.protocol_type, self.protocol_name,
                          self.leader_id or "", self.current_member_metadata() if leader else ())

    # -- answering parked requests -------------------------------------------------------------
    @staticmethod
    def answer_join(member: MemberMetadata, result: JoinResult) -> None:
        callback, member.join_callback = member.join_callback, None
        if callback is not None:
            member.is_new = False
            callback(result)

    @staticmethod
    def answer_sync(member: MemberMetadata, result: SyncResult) -> None:
        callback, member.sync_callback = member.sync_callback, None
        if callback is not None:
            callback(result)

    def reset_and_propagate_assignment_error(self, error: ErrorCode) -> None:
        for member in self.members.values():
            member.assignment = b""
            self.answer_sync(member, SyncResult(error))

    def set_and_propagate_assignment(self, assignments: dict[str, bytes]) -> None:
        for member in self.members.values():
            member.assignment = assignments.get(member.member_id, b"")
            self.answer_sync(member, self.sync_result(member))

    def sync_result(self, member: MemberMetadata) -> SyncResult:
        return SyncResult(ErrorCode.NONE, member.assignment, self.protocol_type, self.protocol_name)

    def sync_protocol_error(self, protocol_type: str | None, protocol_name: str | None) -> ErrorCode | None:
        """SyncGroup v5+ names the protocol type and name the member joined with: a mismatch with the
        group's is INCONSISTENT_GROUP_PROTOCOL (None: the version does not carry them)."""
        if protocol_type is not None and protocol_type != self.protocol_type:
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        if protocol_name is not None and protocol_name != self.protocol_name:
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        return None

    # -- subscriptions -------------------------------------------------------------------------
    def compute_subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to, from the consumer protocol's metadata; None when unknown
        (not a consumer group, or a member's metadata does not parse). Computed once per generation,
        as Kafka does, so a member rejoining with other protocols mid-rebalance changes nothing."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE or self.protocol_name is None:
            return set() if not self.members else None
        topics: set[str] = set()
        for member in self.members.values():
            parsed = parse_subscription_topics(member.metadata(self.protocol_name))
            if parsed is None:
                return None
            topics.update(parsed)
        return topics


def parse_subscription_topics(metadata: bytes) -> list[str] | None:
    """The topics of a ConsumerProtocolSubscription (int16 version, array of int16-length strings, ...)."""
    try:
        (count,) = struct.unpack_from(">i", metadata, 2)
        pos, topics = 6, []
        if count < 0:
            return None  # a non-nullable array
        for _ in range(count):
            (length,) = struct.unpack_from(">h", metadata, pos)
            if length < 0:
                return None  # a non-nullable string
            topics.append(bytes(metadata[pos + 2:pos + 2 + length]).decode())
            pos += 2 + length
            if pos > len(metadata):
                return None
        return topics
    except (struct.error, UnicodeDecodeError):
        return None
