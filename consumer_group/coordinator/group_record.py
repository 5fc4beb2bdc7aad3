"""The group metadata record, pure: a group's membership as of its last completed rebalance (Kafka 2.8's
``GroupMetadataValue`` v3 and ``GroupMetadataManager.groupMetadataValue`` / ``readGroupMessageValue``).

The coordinator stores it after each completed SyncGroup (the leader's assignment, state Stable) and when the
group becomes Empty; the coordinator elected next loads it, so a coordinator move costs no rebalance.

JSON (``to_json`` / ``from_json``), Kafka's field names::

    {"protocolType": <str, "" when none>, "generation": <int>, "protocol": <str|null>, "leader": <str|null>,
     "currentStateTimestamp": <ms>, "members": [{"memberId", "groupInstanceId": <str|null>, "clientId",
     "clientHost", "rebalanceTimeout": <ms>, "sessionTimeout": <ms>, "subscription": <base64>,
     "assignment": <base64>}]}

Invariants of a decoded record: with members it names a protocol and its leader is one of them (loaded as
Stable); without members it is Empty. A member's subscription is its metadata for the group's protocol (the
only protocol it is known to support after a load, as in Kafka).
"""
from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

from brokers.protocol.errors import ErrorCode
from consumer_group.coordinator.group import GroupMetadata, MemberMetadata
from consumer_group.coordinator.state import GroupState


class GroupMetadataFenced(Exception):
    """The group's stored record changed since this coordinator last read or wrote it: another coordinator
    owns the group now (Kafka's NOT_LEADER_OR_FOLLOWER on the append)."""


@dataclass(frozen=True)
class MemberRecord:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupRecord:
    protocol_type: str | None
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp_ms: int
    members: tuple[MemberRecord, ...] = ()


def record_of(group: GroupMetadata, now_ms: int, assignments: dict[str, bytes] | None = None) -> GroupRecord:
    """The record of ``group`` with ``assignments`` (member id -> assignment; None: the members' current ones)."""
    members = tuple(
        MemberRecord(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                     m.session_timeout_ms, m.metadata(group.protocol_name) if group.protocol_name else b"",
                     m.assignment if assignments is None else assignments.get(m.member_id, b""))
        for m in group.members.values())
    return GroupRecord(group.protocol_type, group.generation_id, group.protocol_name, group.leader_id, now_ms,
                       members)


def to_json(record: GroupRecord) -> dict[str, Any]:
    return {
        "protocolType": record.protocol_type or "",
        "generation": record.generation,
        "protocol": record.protocol,
        "leader": record.leader,
        "currentStateTimestamp": record.current_state_timestamp_ms,
        "members": [{
            "memberId": m.member_id, "groupInstanceId": m.group_instance_id, "clientId": m.client_id,
            "clientHost": m.client_host, "rebalanceTimeout": m.rebalance_timeout_ms,
            "sessionTimeout": m.session_timeout_ms, "subscription": _b64(m.subscription),
            "assignment": _b64(m.assignment),
        } for m in record.members],
    }


def from_json(value: dict[str, Any]) -> GroupRecord:
    """The record of a decoded znode; ValueError when a field is missing, mistyped, or the invariants fail."""
    try:
        members = tuple(_member(m) for m in value["members"])
        record = GroupRecord(_str(value["protocolType"]) or None, _int(value["generation"]),
                             _opt_str(value["protocol"]), _opt_str(value["leader"]),
                             _int(value.get("currentStateTimestamp", -1)), members)
    except (KeyError, TypeError, AttributeError, binascii.Error) as exc:
        raise ValueError(f"not a group metadata record: {exc!r}") from None
    if members and (record.protocol is None or record.protocol_type is None):
        raise ValueError("a group metadata record with members names no protocol")
    if members and record.leader not in {m.member_id for m in members}:
        raise ValueError(f"the leader {record.leader!r} of a group metadata record is not a member")
    return record


def group_from_record(group_id: str, record: GroupRecord, now_ms: int) -> GroupMetadata:
    """The group as loaded (Kafka's ``GroupMetadata.loadGroup``): Stable with its members and assignments,
    or Empty; the state timestamp is the stored one (now when the record has none)."""
    stamp = record.current_state_timestamp_ms if record.current_state_timestamp_ms >= 0 else now_ms
    group = GroupMetadata(group_id, GroupState.STABLE if record.members else GroupState.EMPTY, stamp,
                          record.generation, record.protocol_type, record.protocol)
    for m in record.members:
        group.add(MemberMetadata(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                 m.rebalance_timeout_ms, m.session_timeout_ms, record.protocol_type or "",
                                 [(record.protocol or "", m.subscription)], assignment=m.assignment))
    group.leader_id = record.leader if record.members else None
    group.subscribed_topics = group.compute_subscribed_topics()
    return group


def store_error(exc: BaseException) -> ErrorCode:
    """What a SyncGroup answers when storing its group failed (Kafka 2.8's ``storeGroup`` mapping): a fenced
    write NOT_COORDINATOR, a timed-out one REBALANCE_IN_PROGRESS, any other COORDINATOR_NOT_AVAILABLE."""
    if isinstance(exc, GroupMetadataFenced):
        return ErrorCode.NOT_COORDINATOR
    if isinstance(exc, TimeoutError):
        return ErrorCode.REBALANCE_IN_PROGRESS
    return ErrorCode.COORDINATOR_NOT_AVAILABLE


def _member(value: dict[str, Any]) -> MemberRecord:
    return MemberRecord(_str(value["memberId"]), _opt_str(value.get("groupInstanceId")), _str(value["clientId"]),
                        _str(value["clientHost"]), _int(value["rebalanceTimeout"]), _int(value["sessionTimeout"]),
                        base64.b64decode(_str(value["subscription"]), validate=True),
                        base64.b64decode(_str(value["assignment"]), validate=True))


def _b64(data: bytes) -> str:
    return base64.b64encode(bytes(data)).decode()


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {value!r}")
    return value


def _opt_str(value: Any) -> str | None:
    return None if value is None else _str(value)


def _int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"expected an integer, got {value!r}")
    return value
