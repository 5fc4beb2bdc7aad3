"""Plain-data views of the groups this coordinator owns, for the HTTP admin API and /metrics.

``parse_assignment`` reads a ConsumerProtocolAssignment (what the group leader sends in SyncGroup for
the "consumer" protocol type): int16 version, then an array (int32 count) of (int16-length topic name,
int32 count of int32 partitions), then user data, which is ignored. Anything else (another protocol
type, a malformed blob) yields None: the admin API then shows the member without an assignment.
"""
from __future__ import annotations

import struct
from typing import Any

from consumer_group.coordinator.group import CONSUMER_PROTOCOL_TYPE, GroupMetadata

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


def parse_assignment(blob: bytes) -> dict[str, list[int]] | None:
    """``{topic: [partitions]}`` of a consumer-protocol assignment, or None when it does not parse."""
    if not blob:
        return {}
    try:
        pos = _INT16.size
        (topics,) = _INT32.unpack_from(blob, pos)
        pos += _INT32.size
        if topics < 0:
            return None
        out: dict[str, list[int]] = {}
        for _ in range(topics):
            (length,) = _INT16.unpack_from(blob, pos)
            if length < 0:
                return None
            name = bytes(blob[pos + 2:pos + 2 + length]).decode()
            pos += 2 + length
            (count,) = _INT32.unpack_from(blob, pos)
            if count < 0:
                return None
            out[name] = list(struct.unpack_from(f">{count}i", blob, pos + 4))
            pos += 4 + 4 * count
        return out
    except (struct.error, UnicodeDecodeError):
        return None


def member_view(member: Any, protocol_type: str | None) -> dict:
    assignment = parse_assignment(member.assignment) if protocol_type == CONSUMER_PROTOCOL_TYPE else None
    return {"member_id": member.member_id, "client_id": member.client_id, "client_host": member.client_host,
            "group_instance_id": member.group_instance_id,
            "assignment": [{"topic": t, "partitions": sorted(ps)} for t, ps in sorted((assignment or {}).items())]}


def group_view(group: GroupMetadata, coordinator_id: int) -> dict:
    """One group as the admin API shows it, before lag is added (that needs the partitions' leaders)."""
    return {
        "group_id": group.group_id, "state": group.state.value, "protocol_type": group.protocol_type or "",
        "protocol": group.protocol_name or "", "generation": group.generation_id, "coordinator": coordinator_id,
        "leader": group.leader_id,
        "members": [member_view(m, group.protocol_type) for _, m in sorted(group.members.items())],
        "offsets": [{"topic": tp.topic, "partition": tp.partition, "committed_offset": o.offset,
                     "metadata": o.metadata} for tp, o in sorted(group.offsets.items())],
    }
