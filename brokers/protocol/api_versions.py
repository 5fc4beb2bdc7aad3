"""The one table of supported API versions: it drives the ApiVersions response and dispatch.

The window is the recommended one from ``reference/wire-protocol.md`` section 0, limited to the APIs
this broker implements. Each
lower bound is deliberate: old librdkafka (kcat with librdkafka < 2.11.1) switches features on only if
one exact "probe" version lies inside the range (Produce 0 for gzip/snappy/lz4, Produce 3 and Fetch 4
for magic-2 batches, Produce 7 and Fetch 10 for zstd, ListOffsets 1 for offsets-by-time,
InitProducerId 0 for idempotence). Every client picks the highest common version, so in practice:
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

from brokers.protocol.errors import ErrorCode

API_VERSIONS_KEY = 18

# api_key -> (min_version, max_version), both inclusive.
SUPPORTED: dict[int, tuple[int, int]] = {
    0: (0, 7),  # Produce: 0 for old librdkafka's compression probe, 3 for magic 2, 7 for zstd
    1: (4, 11),  # Fetch: 4 for magic 2, 10 for zstd, 11 = preferred read replica (what all clients send)
    2: (1, 2),  # ListOffsets: 1 for offsets-by-time, librdkafka 2.0.2 caps it at 2
    3: (4, 4),  # Metadata: librdkafka 2.0.2 caps it at 4
    8: (2, 7),  # OffsetCommit: kio starts at 2 (KIP-896); 7 carries group.instance.id
    9: (1, 5),  # OffsetFetch: kio starts at 1; 2+ fetches all with a null topic list
    11: (0, 5),  # JoinGroup: 4 = KIP-394 member id required, 5 = static membership (KIP-345)
    12: (0, 3),  # Heartbeat: 3 carries group.instance.id
    13: (0, 3),  # LeaveGroup: 3 is the batch form (KIP-345)
    14: (0, 3),  # SyncGroup: 3 carries group.instance.id
    10: (0, 1),  # FindCoordinator: librdkafka's lz4 feature probe needs v0 advertised
    18: (0, 3),  # ApiVersions: v3 is flexible (request header v2), response header always v0
    19: (2, 4),  # CreateTopics: aiokafka's admin needs <= 3, the others send 4
    20: (3, 3),  # DeleteTopics
    22: (0, 0),  # InitProducerId: kafka-python's default (idempotent) producer requires it
    23: (2, 3),  # OffsetForLeaderEpoch: followers' truncation (v3 has replica_id); kio starts at v2
    15: (0, 4),  # DescribeGroups: aiokafka's admin needs <= 3, the others send 4
    16: (0, 2),  # ListGroups: aiokafka's admin needs <= 1
    32: (1, 3),  # DescribeConfigs: the non-flexible versions kio has (see the module docstring)
    33: (0, 2),  # AlterConfigs: kafka-python's alter_configs, Kafka's ConfigCommand for brokers (v2 flexible)
    44: (0, 1),  # IncrementalAlterConfigs: librdkafka's incremental_alter_configs (v1 flexible)
    37: (0, 3),  # CreatePartitions: librdkafka 2.16 sends 2, kafka-python 3.0 sends 3 (both flexible)
    42: (0, 1),  # DeleteGroups
    43: (0, 2),  # ElectLeaders: v0 is always PREFERRED; librdkafka and kafka-python send v2 (flexible)
    47: (0, 0),  # OffsetDelete
    45: (0, 0),  # AlterPartitionReassignments (KIP-455; v1 is Kafka 4's allow_replication_factor_change)
    46: (0, 0),  # ListPartitionReassignments
    29: (1, 3),  # DescribeAcls: kio starts at v1 (v0 has no pattern type); v2+ flexible
    30: (1, 3),  # CreateAcls
    31: (1, 3),  # DeleteAcls
    17: (1, 1),  # SaslHandshake: v1 only (tokens in SaslAuthenticate); v0's raw tokens are not spoken
    36: (0, 2),  # SaslAuthenticate: librdkafka 2.16 sends 1, kafka-python 3.0 sends 2 (flexible)
    50: (0, 0),  # DescribeUserScramCredentials (KIP-554, flexible)
    51: (0, 0),  # AlterUserScramCredentials (KIP-554, flexible)
}

API_NAMES: dict[int, str] = {
    0: "Produce",
    1: "Fetch",
    2: "ListOffsets",
    3: "Metadata",
    8: "OffsetCommit",
    9: "OffsetFetch",
    10: "FindCoordinator",
    11: "JoinGroup",
    12: "Heartbeat",
    13: "LeaveGroup",
    14: "SyncGroup",
    15: "DescribeGroups",
    16: "ListGroups",
    18: "ApiVersions",
    19: "CreateTopics",
    20: "DeleteTopics",
    22: "InitProducerId",
    23: "OffsetForLeaderEpoch",
    32: "DescribeConfigs",
    33: "AlterConfigs",
    44: "IncrementalAlterConfigs",
    37: "CreatePartitions",
    42: "DeleteGroups",
    43: "ElectLeaders",
    47: "OffsetDelete",
    45: "AlterPartitionReassignments",
    46: "ListPartitionReassignments",
    29: "DescribeAcls",
    30: "CreateAcls",
    31: "DeleteAcls",
    17: "SaslHandshake",
    36: "SaslAuthenticate",
    50: "DescribeUserScramCredentials",
    51: "AlterUserScramCredentials",
}

NEVER_FLEXIBLE = 1 << 15  # OffsetDelete's "flexibleVersions": "none"

# The first flexible version of each supported API (Kafka's "flexibleVersions").
FLEXIBLE_FROM: dict[int, int] = {
    0: 9,
    1: 12,
    2: 6,
    3: 9,
    8: 8,
    9: 6,
    10: 3,
    11: 6,
    12: 4,
    13: 4,
    14: 4,
    15: 5,
    16: 3,
    18: 3,
    19: 5,
    20: 4,
    22: 2,
    23: 4,
    32: 4,
    33: 2,
    44: 1,
    37: 2,
    42: 2,
    43: 2,
    47: NEVER_FLEXIBLE,
    45: 0,
    46: 0,
    29: 2,
    30: 2,
    31: 2,
    17: NEVER_FLEXIBLE,
    36: 2,
    50: 0,
    51: 0,
}

assert SUPPORTED.keys() == API_NAMES.keys() == FLEXIBLE_FROM.keys()


def is_supported(api_key: int, api_version: int) -> bool:
    versions = SUPPORTED.get(api_key)
    return versions is not None and versions[0] <= api_version <= versions[1]


def api_name(api_key: int) -> str:
    """The API's name for logs; unknown keys come out as ``ApiKey(N)``."""
    return API_NAMES.get(api_key) or f"ApiKey({api_key})"


def flexible_from(api_key: int) -> int:
    """The first flexible version of a supported API; KeyError for any other key."""
    try:
        return FLEXIBLE_FROM[api_key]
    except KeyError:
        raise KeyError(f"API key {api_key} is not supported") from None


def is_flexible(api_key: int, api_version: int) -> bool:
    """Whether the request uses header v2 (compact encodings, tagged fields). False for unknown keys:
    their header's fixed prefix (key, version, correlation id, client id) reads the same either way."""
    first = FLEXIBLE_FROM.get(api_key)
    return first is not None and api_version >= first


def request_header_version(api_key: int, api_version: int) -> int:
    return 2 if is_flexible(api_key, api_version) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    """1 (correlation id + tagged fields) for flexible versions, 0 otherwise and for ApiVersions."""
    if api_key == API_VERSIONS_KEY:
        return 0
    return 1 if is_flexible(api_key, api_version) else 0


# --- the pre-encoded ApiVersions responses ----------------------------------------------------------

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_KEY_RANGE = struct.Struct(">hhh")
MAX_API_VERSIONS_VERSION = SUPPORTED[API_VERSIONS_KEY][1]


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _body(version: int, error_code: int) -> bytes:
    """ApiVersionsResponse v0-v3 for the whole table, sorted by key."""
    entries = [_KEY_RANGE.pack(key, low, high) for key, (low, high) in sorted(SUPPORTED.items())]
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
