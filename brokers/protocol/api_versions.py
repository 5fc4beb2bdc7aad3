"""``ApiKey``: the one table of the APIs this broker speaks; it drives the ApiVersions response and dispatch.

The window is the recommended one from ``reference/wire-protocol.md`` section 0, limited to the APIs
this broker implements. Each lower bound is deliberate: old librdkafka (kcat with librdkafka < 2.11.1)
switches features on only if one exact "probe" version lies inside the range (Produce 0 for
gzip/snappy/lz4, Produce 3 and Fetch 4 for magic-2 batches, Produce 7 and Fetch 10 for zstd, ListOffsets 1
for offsets-by-time, InitProducerId 0 for idempotence). Every client picks the highest common version, so in practice:
Produce 7, Fetch 11, ListOffsets 2, Metadata 4, ApiVersions 3 (0 for aiokafka), CreateTopics 3-4,
DeleteTopics 3, InitProducerId 0. kio cannot decode Produce v0-2; no client sends them
(``codec.decode_request`` raises ProtocolError if one arrives).

DescribeConfigs (32) is advertised as **1-3**, the non-flexible versions kio 0.6.5 has (kio starts
at v1 because Kafka 4 dropped v0, KIP-896; v4 is flexible):

* librdkafka 2.16 (confluent-kafka, kcat) asks for ``min(1, broker max)`` (its request builder caps
  DescribeConfigs at 0-1) and therefore sends v1;
* kafka-python picks ``min(its cap, 3)``: v2 in releases that cap DescribeConfigs at 2, v3 in the
  JSON-schema releases (it needs >= v1 only when include_synonyms is requested);
* aiokafka's admin (request classes v0-v2) sends v2.

So one handler built with ``codec.build`` serves v1-v3 (v1 adds synonyms/config_source, v3 adds
config_type and documentation).

Flexible versions use request header v2 and, except for ApiVersions, response header v1.
ApiVersions responses always use response header v0, at every version (KIP-511), so that a client
can read the error of a version it sent too high. ``api_versions_response`` answers such a request
with a v0 body carrying UNSUPPORTED_VERSION (35) and the full table. The responses are encoded by
hand once per version, at import; only the correlation id is patched per call. The tests check them
against kio's encoder byte for byte.
"""
from __future__ import annotations

import struct
from enum import IntEnum

from brokers.protocol.errors import ErrorCode

NEVER_FLEXIBLE = 1 << 15  # Kafka's "flexibleVersions": "none" (OffsetDelete, SaslHandshake)


class ApiKey(IntEnum):
    """The Kafka APIs this broker speaks, with Kafka 2.8's ``ApiKeys`` names and numbers, and each one's facts
    declared once: its message name for logs and metrics (``api_name``), the advertised window ``min_version``
    to ``max_version`` (both inclusive) and its first flexible version (``flexible_from``, Kafka's
    "flexibleVersions"). The window drives the ApiVersions response and what dispatch accepts."""

    api_name: str
    min_version: int
    max_version: int
    flexible_from: int

    def __new__(cls, key: int, api_name: str, min_version: int, max_version: int, flexible_from: int) -> ApiKey:
        member = int.__new__(cls, key)
        member._value_ = key
        member.api_name, member.min_version, member.max_version = api_name, min_version, max_version
        member.flexible_from = flexible_from
        return member

    # key, name, min, max, first flexible version
    PRODUCE = 0, "Produce", 0, 7, 9  # 0 for old librdkafka's compression probe, 3 for magic 2, 7 for zstd
    FETCH = 1, "Fetch", 4, 11, 12  # 4 for magic 2, 10 for zstd, 11 = preferred read replica (what all clients send)
    LIST_OFFSETS = 2, "ListOffsets", 1, 2, 6  # 1 for offsets-by-time, librdkafka 2.0.2 caps it at 2
    METADATA = 3, "Metadata", 4, 4, 9  # librdkafka 2.0.2 caps it at 4
    OFFSET_COMMIT = 8, "OffsetCommit", 2, 7, 8  # kio starts at 2 (KIP-896); 7 carries group.instance.id
    OFFSET_FETCH = 9, "OffsetFetch", 1, 5, 6  # kio starts at 1; 2+ fetches all with a null topic list
    FIND_COORDINATOR = 10, "FindCoordinator", 0, 1, 3  # librdkafka's lz4 feature probe needs v0 advertised
    JOIN_GROUP = 11, "JoinGroup", 0, 5, 6  # 4 = KIP-394 member id required, 5 = static membership (KIP-345)
    HEARTBEAT = 12, "Heartbeat", 0, 3, 4  # 3 carries group.instance.id
    LEAVE_GROUP = 13, "LeaveGroup", 0, 3, 4  # 3 is the batch form (KIP-345)
    SYNC_GROUP = 14, "SyncGroup", 0, 3, 4  # 3 carries group.instance.id
    DESCRIBE_GROUPS = 15, "DescribeGroups", 0, 4, 5  # aiokafka's admin needs <= 3, the others send 4
    LIST_GROUPS = 16, "ListGroups", 0, 2, 3  # aiokafka's admin needs <= 1
    SASL_HANDSHAKE = 17, "SaslHandshake", 1, 1, NEVER_FLEXIBLE  # v1 only: tokens in SaslAuthenticate, never raw (v0)
    API_VERSIONS = 18, "ApiVersions", 0, 3, 3  # v3 is flexible (request header v2), response header always v0
    CREATE_TOPICS = 19, "CreateTopics", 2, 4, 5  # aiokafka's admin needs <= 3, the others send 4
    DELETE_TOPICS = 20, "DeleteTopics", 3, 3, 4
    INIT_PRODUCER_ID = 22, "InitProducerId", 0, 0, 2  # kafka-python's default (idempotent) producer requires it
    OFFSET_FOR_LEADER_EPOCH = 23, "OffsetForLeaderEpoch", 2, 3, 4  # followers' truncation (v3: replica_id); kio from v2
    DESCRIBE_ACLS = 29, "DescribeAcls", 1, 3, 2  # kio starts at v1 (v0 has no pattern type); v2+ flexible
    CREATE_ACLS = 30, "CreateAcls", 1, 3, 2
    DELETE_ACLS = 31, "DeleteAcls", 1, 3, 2
    DESCRIBE_CONFIGS = 32, "DescribeConfigs", 1, 3, 4  # the non-flexible versions kio has (see the module docstring)
    ALTER_CONFIGS = 33, "AlterConfigs", 0, 2, 2  # kafka-python's alter_configs, Kafka's ConfigCommand for brokers
    SASL_AUTHENTICATE = 36, "SaslAuthenticate", 0, 2, 2  # librdkafka 2.16 sends 1, kafka-python 3.0 sends 2
    CREATE_PARTITIONS = 37, "CreatePartitions", 0, 3, 2  # librdkafka 2.16 sends 2, kafka-python 3.0 sends 3
    DELETE_GROUPS = 42, "DeleteGroups", 0, 1, 2
    ELECT_LEADERS = 43, "ElectLeaders", 0, 2, 2  # v0 is always PREFERRED; librdkafka and kafka-python send v2
    INCREMENTAL_ALTER_CONFIGS = 44, "IncrementalAlterConfigs", 0, 1, 1  # librdkafka's incremental_alter_configs
    # KIP-455; v1 is Kafka 4's allow_replication_factor_change
    ALTER_PARTITION_REASSIGNMENTS = 45, "AlterPartitionReassignments", 0, 0, 0
    LIST_PARTITION_REASSIGNMENTS = 46, "ListPartitionReassignments", 0, 0, 0
    OFFSET_DELETE = 47, "OffsetDelete", 0, 0, NEVER_FLEXIBLE
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50, "DescribeUserScramCredentials", 0, 0, 0  # KIP-554
    ALTER_USER_SCRAM_CREDENTIALS = 51, "AlterUserScramCredentials", 0, 0, 0  # KIP-554

    def supports(self, api_version: int) -> bool:
        return self.min_version <= api_version <= self.max_version


_BY_KEY: dict[int, ApiKey] = {int(key): key for key in ApiKey}


def known_api(key: int) -> ApiKey | None:
    """The ApiKey of a request's key, None for an API this broker does not speak."""
    return _BY_KEY.get(key)


def is_supported(key: int, api_version: int) -> bool:
    api = _BY_KEY.get(key)
    return api is not None and api.supports(api_version)


def api_name(key: int) -> str:
    """The API's name for logs; unknown keys come out as ``ApiKey(N)``."""
    api = _BY_KEY.get(key)
    return api.api_name if api is not None else f"ApiKey({key})"


def flexible_from(key: int) -> int:
    """The first flexible version of a supported API; KeyError for any other key."""
    try:
        return _BY_KEY[key].flexible_from
    except KeyError:
        raise KeyError(f"API key {key} is not supported") from None


def is_flexible(key: int, api_version: int) -> bool:
    """Whether the request uses header v2 (compact encodings, tagged fields). False for unknown keys:
    their header's fixed prefix (key, version, correlation id, client id) reads the same either way."""
    api = _BY_KEY.get(key)
    return api is not None and api_version >= api.flexible_from


def request_header_version(key: int, api_version: int) -> int:
    return 2 if is_flexible(key, api_version) else 1


def response_header_version(key: int, api_version: int) -> int:
    """1 (correlation id + tagged fields) for flexible versions, 0 otherwise and for ApiVersions."""
    if key == ApiKey.API_VERSIONS:
        return 0
    return 1 if is_flexible(key, api_version) else 0


# --- the pre-encoded ApiVersions responses ----------------------------------------------------------

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_KEY_RANGE = struct.Struct(">hhh")
MAX_API_VERSIONS_VERSION = ApiKey.API_VERSIONS.max_version


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _body(version: int, error_code: int) -> bytes:
    """ApiVersionsResponse v0-v3 for the whole table, sorted by key."""
    entries = [_KEY_RANGE.pack(key, key.min_version, key.max_version) for key in sorted(ApiKey)]
    parts = [_INT16.pack(error_code)]
    if version >= 3:  # flexible: compact array, a tagged-field byte per entry and after the body
        parts.append(_uvarint(len(entries) + 1))
        parts.extend(entry + b"\x00" for entry in entries)
    else:
        parts.append(_INT32.pack(len(entries)))
        parts.extend(entries)
    if version >= 1:
        parts.append(_INT32.pack(0))  # throttle_time_ms
    if version >= 3:
        parts.append(b"\x00")  # no tagged fields (supported/finalized features stay at their defaults)
    return b"".join(parts)


def _framed_parts(body: bytes) -> tuple[bytes, bytes]:
    return _INT32.pack(4 + len(body)), body  # size counts the response header v0 (correlation id)


_RESPONSES: dict[int, tuple[bytes, bytes]] = {
    version: _framed_parts(_body(version, ErrorCode.NONE)) for version in range(MAX_API_VERSIONS_VERSION + 1)
}
_UNSUPPORTED_VERSION_RESPONSE = _framed_parts(_body(0, ErrorCode.UNSUPPORTED_VERSION))


def api_versions_response(correlation_id: int, request_version: int) -> bytes:
    """The framed ApiVersions response (size prefix, response header v0, body) for a request of
    ``request_version``. Versions we do not support get the KIP-511 answer: a v0 body with
    UNSUPPORTED_VERSION and the full table, from which the client picks a version to retry with."""
    size, body = _RESPONSES.get(request_version, _UNSUPPORTED_VERSION_RESPONSE)
    return b"".join((size, _INT32.pack(correlation_id), body))
