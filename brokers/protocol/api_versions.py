"""``ApiKey``: the one table of the APIs this broker speaks; it drives the ApiVersions response and dispatch.

The window is Kafka 2.8.2's: for every API this broker implements, the ``validVersions`` of that API's
message schema (``tests/golden/kafka-2.8.2-api-versions.json`` keeps them, and a test fails the build if a
range here is narrower or a first flexible version differs). A broker that calls itself 2.8 accepts what
2.8 accepts: clients that do not negotiate (Sarama, the 2.x Java clients, Kafka Connect and Streams of
that era) send whatever their configured version implies, old librdkafka probes exact versions (Produce 0
for compression, Fetch 4 for magic-2 batches, ListOffsets 1 for offsets-by-time, FindCoordinator 0).
Where this broker serves more than 2.8 it says so on the row (the ACL APIs' v3).

Versions kio 0.6.5 has no classes for (Kafka 4 dropped them, KIP-896) are declared in ``legacy_schemas``
and decoded into kio's lowest version (``codec``); the Fetch response is encoded by hand at every version
(``fetch_response``), ApiVersions here.

Flexible versions use request header v2 and, except for ApiVersions, response header v1.
ApiVersions responses always use response header v0, at every version (KIP-511), so that a client
can read the error of a version it sent too high. ``api_versions_response`` answers such a request
with a v0 body carrying UNSUPPORTED_VERSION (35) and the full table. The responses are encoded by
hand once per version, at import; only the correlation id is patched per call. The tests check them
against kio's encoder byte for byte. Any other API at a version outside its window closes the
connection, as Kafka 2.8 does (``brokers.server.apis``).
"""
from __future__ import annotations

import struct
from enum import IntEnum

from brokers.protocol.errors import ErrorCode
from brokers.protocol.framing import uvarint

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
    PRODUCE = 0, "Produce", 0, 9, 9  # 0-2: magic 0/1 message sets (up-converted), 3: magic 2, 7: zstd, 8: record_errors, 9: flexible
    FETCH = 1, "Fetch", 0, 12, 12  # 0-1: magic 0, 2-3: magic 1 (down-converted), 4+: magic 2 from file ranges, 11: preferred replica, 12: last_fetched_epoch / diverging_epoch (KIP-320)
    LIST_OFFSETS = 2, "ListOffsets", 0, 6, 6  # 0: old-style offset lists, 1: by time, 2: isolation level, 4: leader epoch fencing
    METADATA = 3, "Metadata", 0, 11, 9  # 1: null = all topics, 8: authorized operations, 10: topic ids, 11: no cluster operations
    OFFSET_COMMIT = 8, "OffsetCommit", 0, 8, 8  # 0: no generation check, 1: generation + member, 7: group.instance.id
    OFFSET_FETCH = 9, "OffsetFetch", 0, 7, 6  # 2+: every offset of the group for a null topic list, 7: require_stable
    FIND_COORDINATOR = 10, "FindCoordinator", 0, 3, 3  # 1: key_type (transactions), 3: flexible
    JOIN_GROUP = 11, "JoinGroup", 0, 7, 6  # 4: member id required (KIP-394), 5: static membership (KIP-345), 7: protocol type/name
    HEARTBEAT = 12, "Heartbeat", 0, 4, 4  # 3: group.instance.id
    LEAVE_GROUP = 13, "LeaveGroup", 0, 4, 4  # 3: the batch form (KIP-345)
    SYNC_GROUP = 14, "SyncGroup", 0, 5, 4  # 3: group.instance.id, 5: protocol type/name checked
    DESCRIBE_GROUPS = 15, "DescribeGroups", 0, 5, 5  # 3: authorized operations
    LIST_GROUPS = 16, "ListGroups", 0, 4, 3  # 4: the states filter (KIP-518)
    SASL_HANDSHAKE = 17, "SaslHandshake", 0, 1, NEVER_FLEXIBLE  # 0: raw tokens follow (KIP-43), 1: tokens in SaslAuthenticate
    API_VERSIONS = 18, "ApiVersions", 0, 3, 3  # v3 is flexible (request header v2), response header always v0
    CREATE_TOPICS = 19, "CreateTopics", 0, 7, 5  # 1: validate_only, 5: the created configs, 7: topic ids
    DELETE_TOPICS = 20, "DeleteTopics", 0, 6, 4  # 5: error messages, 6: topic ids
    DELETE_RECORDS = 21, "DeleteRecords", 0, 2, 2  # 1: throttling; the leaders' log start moves (kafka-delete-records)
    INIT_PRODUCER_ID = 22, "InitProducerId", 0, 4, 2  # 3: producer id/epoch of the caller (KIP-360)
    ADD_PARTITIONS_TO_TXN = 24, "AddPartitionsToTxn", 0, 3, 3  # producer -> transaction coordinator
    ADD_OFFSETS_TO_TXN = 25, "AddOffsetsToTxn", 0, 3, 3  # the group's __consumer_offsets partition joins the txn
    END_TXN = 26, "EndTxn", 0, 3, 3  # 2: PRODUCER_FENCED
    WRITE_TXN_MARKERS = 27, "WriteTxnMarkers", 0, 1, 1  # transaction coordinator -> partition leaders
    TXN_OFFSET_COMMIT = 28, "TxnOffsetCommit", 0, 3, 3  # producer -> group coordinator; 3: generation/member (KIP-447)
    OFFSET_FOR_LEADER_EPOCH = 23, "OffsetForLeaderEpoch", 0, 4, 4  # 1: leader epoch in the answer, 2: current epoch fencing, 3: replica_id
    DESCRIBE_ACLS = 29, "DescribeAcls", 0, 3, 2  # 0: literal names only, 1: pattern types; 3 is beyond 2.8 (Kafka 3.x clients)
    CREATE_ACLS = 30, "CreateAcls", 0, 3, 2
    DELETE_ACLS = 31, "DeleteAcls", 0, 3, 2
    DESCRIBE_CONFIGS = 32, "DescribeConfigs", 0, 4, 4  # 0: is_default, 1: synonyms and config_source, 3: documentation and type
    ALTER_CONFIGS = 33, "AlterConfigs", 0, 2, 2  # kafka-python's alter_configs, Kafka's ConfigCommand for brokers
    ALTER_REPLICA_LOG_DIRS = 34, "AlterReplicaLogDirs", 0, 2, 2  # KIP-113: move a replica between a broker's log dirs
    DESCRIBE_LOG_DIRS = 35, "DescribeLogDirs", 0, 2, 2  # KIP-112: an offline dir answers KAFKA_STORAGE_ERROR
    SASL_AUTHENTICATE = 36, "SaslAuthenticate", 0, 2, 2  # librdkafka 2.16 sends 1, kafka-python 3.0 sends 2
    CREATE_PARTITIONS = 37, "CreatePartitions", 0, 3, 2  # librdkafka 2.16 sends 2, kafka-python 3.0 sends 3
    DELETE_GROUPS = 42, "DeleteGroups", 0, 2, 2
    ELECT_LEADERS = 43, "ElectLeaders", 0, 2, 2  # v0 is always PREFERRED; librdkafka and kafka-python send v2
    INCREMENTAL_ALTER_CONFIGS = 44, "IncrementalAlterConfigs", 0, 1, 1  # librdkafka's incremental_alter_configs
    # KIP-455; v1 is Kafka 4's allow_replication_factor_change
    ALTER_PARTITION_REASSIGNMENTS = 45, "AlterPartitionReassignments", 0, 0, 0
    LIST_PARTITION_REASSIGNMENTS = 46, "ListPartitionReassignments", 0, 0, 0
    OFFSET_DELETE = 47, "OffsetDelete", 0, 0, NEVER_FLEXIBLE
    DESCRIBE_CLIENT_QUOTAS = 48, "DescribeClientQuotas", 0, 1, 1  # KIP-546: kafka-configs --entity-type users|clients
    ALTER_CLIENT_QUOTAS = 49, "AlterClientQuotas", 0, 1, 1  # KIP-546
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50, "DescribeUserScramCredentials", 0, 0, 0  # KIP-554
    ALTER_USER_SCRAM_CREDENTIALS = 51, "AlterUserScramCredentials", 0, 0, 0  # KIP-554
    DESCRIBE_CLUSTER = 60, "DescribeCluster", 0, 0, 0  # KIP-700: Metadata's cluster part (kafka-cluster cluster-id)
    DESCRIBE_PRODUCERS = 61, "DescribeProducers", 0, 0, 0  # KIP-664: a partition leader's producer state
    # beyond 2.8 (KIP-664, Kafka 3.0): what kafka-transactions asks the transaction coordinators
    DESCRIBE_TRANSACTIONS = 65, "DescribeTransactions", 0, 0, 0
    LIST_TRANSACTIONS = 66, "ListTransactions", 0, 0, 0

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


def _body(version: int, error_code: int) -> bytes:
    """ApiVersionsResponse v0-v3 for the whole table, sorted by key."""
    entries = [_KEY_RANGE.pack(key, key.min_version, key.max_version) for key in sorted(ApiKey)]
    parts = [_INT16.pack(error_code)]
    if version >= 3:  # flexible: compact array, a tagged-field byte per entry and after the body
        parts.append(uvarint(len(entries) + 1))
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
