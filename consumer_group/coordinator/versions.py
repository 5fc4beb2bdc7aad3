"""What each version of the group APIs means in Kafka 2.8 (its ``KafkaApis`` and request/response classes),
as pure functions of the version and the coordinator's answer; ``handlers`` applies them.

====================== ======================================================================================
API (versions)         what a version changes
====================== ======================================================================================
JoinGroup 0-7          v0 has no rebalance timeout (the session timeout stands in); v4+ answers a new
                       dynamic member MEMBER_ID_REQUIRED (KIP-394); v5 carries ``group.instance.id``
                       (KIP-345); v7 answers the group's ``protocol_type`` and a nullable ``protocol_name``
                       (null where v0-6 say "")
SyncGroup 0-5          v5 must name ``protocol_type`` and ``protocol_name`` (else INCONSISTENT_GROUP_PROTOCOL),
                       checked against the group's, and gets the group's back
OffsetCommit 0-8       v0 is the ZooKeeper commit (no generation, any broker); v1 adds generation and member
                       (and a commit timestamp); v2-v4 a retention time (the old per-offset expiry); v5+
                       none (the broker's ``offsets.retention.minutes``); v6 the committed leader epoch
                       (KIP-320); v7 ``group.instance.id``
OffsetFetch 0-7        v0 reads ZooKeeper (a partition without an offset is UNKNOWN_TOPIC_OR_PARTITION);
                       v0-1 carry errors per partition only; v2+ a top-level error (then no partitions)
                       and null topics meaning all; v5+ the committed leader epoch; v7 ``require_stable``
                       (KIP-447: UNSTABLE_OFFSET_COMMIT where transactional offsets are pending)
TxnOffsetCommit 0-3    v0-1 are answered COORDINATOR_NOT_AVAILABLE where v2+ get
                       COORDINATOR_LOAD_IN_PROGRESS (KAFKA-7296); v2 adds the committed leader epoch;
                       v3 generation, member id and ``group.instance.id`` (KIP-447 fencing)
DescribeGroups 0-5     v3+ ``authorized_operations`` on request; v4 ``group_instance_id`` per member
ListGroups 0-4         v4 ``states_filter`` (KIP-518) and each group's state
====================== ======================================================================================

Flexible versions (JoinGroup 6+, SyncGroup 4+, Heartbeat 4+, LeaveGroup 4+, DescribeGroups 5+,
ListGroups 3+, OffsetCommit 8+, OffsetFetch 6+, DeleteGroups 2+, TxnOffsetCommit 3+) change only the
encoding (compact fields, tagged fields), which the codec handles.
"""
from __future__ import annotations

from typing import Any, Iterable

from brokers.protocol.errors import ErrorCode
from brokers.security.acls import GROUP, NO_AUTHORIZED_OPERATIONS, SUPPORTED_OPERATIONS, operations_bit_field
from consumer_group.coordinator.group import JoinResult

# DescribeGroups' authorized_operations when the client did not ask (Kafka's AUTHORIZED_OPERATIONS_OMITTED)
AUTHORIZED_OPERATIONS_OMITTED = NO_AUTHORIZED_OPERATIONS
# The operations an ACL may name on a group (Kafka's AclEntry.supportedOperations(GROUP))
GROUP_OPERATIONS = SUPPORTED_OPERATIONS[GROUP]
# OffsetCommit v2-v4: a retention time of -1 means "the broker's retention" (DEFAULT_RETENTION_TIME)
DEFAULT_RETENTION_TIME = -1


def join_response(version: int, result: JoinResult) -> dict[str, Any]:
    """JoinGroup's answer: v7 adds ``protocol_type`` and a nullable ``protocol_name`` (null while no protocol
    is chosen, on errors); older versions answer "" (Kafka's NoProtocol) there."""
    return {"error_code": result.error, "generation_id": result.generation_id,
            "protocol_type": result.protocol_type if version >= 7 else None,
            "protocol_name": result.protocol_name if version >= 7 else result.protocol_name or "",
            "leader": result.leader_id, "member_id": result.member_id,
            "members": [{"member_id": m, "group_instance_id": i, "metadata": md} for m, i, md in result.members]}


def requires_known_member_id(version: int) -> bool:
    """JoinGroup v4+ (KIP-394): a new dynamic member is first answered MEMBER_ID_REQUIRED with its id (static
    members, v5+ with ``group.instance.id``, are exempt: the coordinator decides that)."""
    return version >= 4


def sync_protocol_missing(version: int, protocol_type: str | None, protocol_name: str | None) -> bool:
    """SyncGroup v5+ must carry both the protocol type and name (Kafka answers INCONSISTENT_GROUP_PROTOCOL
    before authorizing); older versions have neither."""
    return version >= 5 and (protocol_type is None or protocol_name is None)


def retention_ms(version: int, retention: int | None) -> int | None:
    """OffsetCommit's per-request retention: only v2-v4 have one; -1 means the broker's retention."""
    if not 2 <= version <= 4 or retention is None or retention == DEFAULT_RETENTION_TIME:
        return None
    return retention


authorized_operations = operations_bit_field  # the bit field of DescribeGroups (and Metadata) v3+


def described_operations(version: int, requested: bool, error: ErrorCode, allowed: Iterable[int]) -> int:
    """DescribeGroups' ``authorized_operations``: computed on v3+ when requested and the group was described
    without error; otherwise Kafka's "omitted" value."""
    if version >= 3 and requested and error == ErrorCode.NONE:
        return authorized_operations(allowed)
    return AUTHORIZED_OPERATIONS_OMITTED


def offset_fetch_partition_error(version: int, error: ErrorCode) -> ErrorCode:
    """The error each partition of an OffsetFetch answer carries for a group-level ``error``: v0-1 have no
    top-level error, so it goes on every partition; v2+ answer it at the top level only."""
    return error if version < 2 else ErrorCode.NONE


def offset_fetch_error_lists_partitions(version: int) -> bool:
    """Whether an OffsetFetch that failed for the group still lists the requested partitions (v0-1: they
    carry the error) or none (v2+: Kafka's ``getErrorResponse``)."""
    return version < 2


def states_filter(version: int, states: Iterable[str] | None) -> frozenset[str]:
    """ListGroups v4's filter (KIP-518); null and empty both mean every state."""
    return frozenset(states or ()) if version >= 4 else frozenset()



def txn_offset_commit_error(version: int, error: ErrorCode) -> ErrorCode:
    """TxnOffsetCommit v0-1 clients (0.11 to 2.0) may not know COORDINATOR_LOAD_IN_PROGRESS (KAFKA-7296):
    Kafka answers them COORDINATOR_NOT_AVAILABLE instead."""
    if version < 2 and error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    return error
