"""The request and response layouts of the Kafka 2.8 versions that kio 0.6.5 has no classes for.

kio is generated from Kafka 4's schemas, which dropped the oldest versions (KIP-896): Produce 0-2, Fetch 0-3,
ListOffsets 0, OffsetCommit 0-1, OffsetFetch 0, CreateTopics 0-1, DeleteTopics 0, OffsetForLeaderEpoch 0-1,
WriteTxnMarkers 0, the ACL APIs 0, DescribeConfigs 0 and DescribeLogDirs 0. Kafka 2.8.2 still accepts every one of them. Each layout below is the
field list of that version in Kafka 2.8.2's message schema (``clients/src/main/resources/common/message``),
in wire order, with kio's snake_case names for the fields the version shares with kio's lowest version
(``BASE_VERSION``): a request of a legacy version decodes into kio's entity of the base version, and a
response entity of the base version encodes into the legacy layout (``legacy_codec``).

Every legacy version is non-flexible: request header v1, response header v0, int16-length strings,
int32-length bytes and arrays.

Where the old version has a field kio's base version lacks, or lacks a field whose zero would be wrong:

* ``Field.get`` computes a response field from the base entity (ListOffsets v0's ``old_style_offsets``
  from ``offset``; DescribeConfigs v0's ``is_default`` from ``config_source``);
* ``Struct.defaults`` gives request fields the old version does not carry the value Kafka assumes for it
  (Fetch v0-2 ``max_bytes`` = Int.MaxValue, the ACL APIs' v0 pattern type LITERAL, OffsetCommit v0's
  generation -1, OffsetForLeaderEpoch v0-1's current leader epoch -1: no fencing).
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

INT8, INT16, INT32, INT64, BOOL = "int8", "int16", "int32", "int64", "bool"
STRING, NULLABLE_STRING, BYTES, RECORDS = "string", "nullable_string", "bytes", "records"

INT32_MAX = 2**31 - 1
PATTERN_LITERAL = 3  # Kafka's PatternType.LITERAL: the only pattern type before the ACL APIs' v1
CONFIG_SOURCE_DEFAULT = 5  # DescribeConfigsResponse ConfigSource.DEFAULT_CONFIG


class Array(NamedTuple):
    item: Any  # a primitive type name or a Struct
    nullable: bool = False


class Field(NamedTuple):
    name: str
    type: Any  # a primitive type name, an Array or a Struct
    get: Callable[[Any], Any] | None = None  # encoding: the value from the base entity (default: its attribute)
    put: Callable[[Any], dict[str, Any]] | None = None  # decoding: the base entity's fields for the value read


class Struct(NamedTuple):
    fields: tuple[Field, ...]
    defaults: dict[str, Any] = {}  # requests: values of base-version fields this version does not carry


def _s(*fields: Field, **defaults: Any) -> Struct:
    return Struct(tuple(fields), defaults)


def _f(name: str, type_: Any, get: Callable[[Any], Any] | None = None, put: Callable | None = None) -> Field:
    return Field(name, type_, get, put)


# --- Produce (0) -------------------------------------------------------------------------------------

def _produce_request() -> Struct:
    partition = _s(_f("index", INT32), _f("records", RECORDS))
    topic = _s(_f("name", STRING), _f("partition_data", Array(partition)))
    return _s(_f("acks", INT16), _f("timeout", INT32), _f("topic_data", Array(topic)), transactional_id=None)


def _produce_response(version: int) -> Struct:
    partition = [_f("index", INT32), _f("error_code", INT16), _f("base_offset", INT64)]
    if version >= 2:
        partition.append(_f("log_append_time", INT64))
    topic = _s(_f("name", STRING), _f("partition_responses", Array(_s(*partition))))
    fields = [_f("responses", Array(topic))]
    if version >= 1:
        fields.append(_f("throttle_time", INT32))
    return _s(*fields)


# --- Fetch (1) ---------------------------------------------------------------------------------------

def _fetch_request(version: int) -> Struct:
    partition = _s(_f("partition", INT32), _f("fetch_offset", INT64), _f("partition_max_bytes", INT32))
    topic = _s(_f("topic", STRING), _f("partitions", Array(partition)))
    fields = [_f("replica_id", INT32), _f("max_wait", INT32), _f("min_bytes", INT32)]
    if version >= 3:
        fields.append(_f("max_bytes", INT32))
    fields.append(_f("topics", Array(topic)))
    return _s(*fields, max_bytes=INT32_MAX, isolation_level=0)


def _fetch_response(version: int) -> Struct:
    """Fetch v0-3 responses are encoded by ``fetch_response``; this layout reads them (tests, tools)."""
    partition = _s(
        _f("partition_index", INT32), _f("error_code", INT16), _f("high_watermark", INT64), _f("records", RECORDS)
    )
    topic = _s(_f("topic", STRING), _f("partitions", Array(partition)))
    fields = [_f("throttle_time", INT32)] if version >= 1 else []
    return _s(*fields, _f("responses", Array(topic)))


# --- ListOffsets (2) ---------------------------------------------------------------------------------

def _old_style_offsets(partition: Any) -> list[int]:
    """v0 answers a list of offsets; Kafka's ZK-era broker gives the one offset found, none if none was."""
    return [partition.offset] if partition.offset >= 0 else []


def _list_offsets_request() -> Struct:
    partition = _s(_f("partition_index", INT32), _f("timestamp", INT64),
               _f("max_num_offsets", INT32, get=lambda partition: getattr(partition, "max_num_offsets", 1)))
    topic = _s(_f("name", STRING), _f("partitions", Array(partition)))
    return _s(_f("replica_id", INT32), _f("topics", Array(topic)))


def _list_offsets_response() -> Struct:
    partition = _s(
        _f("partition_index", INT32), _f("error_code", INT16),
        _f("old_style_offsets", Array(INT64), get=_old_style_offsets,
           put=lambda offsets: {"offset": offsets[0] if offsets else -1}),
        timestamp=-1, offset=-1,
    )
    topic = _s(_f("name", STRING), _f("partitions", Array(partition)))
    return _s(_f("topics", Array(topic)))


# --- OffsetCommit (8) and OffsetFetch (9) --------------------------------------------------------------

def _offset_commit_request(version: int) -> Struct:
    partition = [_f("partition_index", INT32), _f("committed_offset", INT64)]
    if version == 1:
        partition.append(_f("commit_timestamp", INT64, get=lambda partition: getattr(partition, "commit_timestamp", -1)))
    partition.append(_f("committed_metadata", NULLABLE_STRING))
    topic = _s(_f("name", STRING), _f("partitions", Array(_s(*partition))))
    fields = [_f("group_id", STRING)]
    if version == 1:
        fields += [_f("generation_id_or_member_epoch", INT32), _f("member_id", STRING)]
    return _s(*fields, _f("topics", Array(topic)), generation_id_or_member_epoch=-1, member_id="", retention_time=-1)


def _offset_commit_response() -> Struct:
    partition = _s(_f("partition_index", INT32), _f("error_code", INT16))
    return _s(_f("topics", Array(_s(_f("name", STRING), _f("partitions", Array(partition))))))


def _offset_fetch_request() -> Struct:
    topic = _s(_f("name", STRING), _f("partition_indexes", Array(INT32)))
    return _s(_f("group_id", STRING), _f("topics", Array(topic)))


def _offset_fetch_response() -> Struct:
    partition = _s(
        _f("partition_index", INT32), _f("committed_offset", INT64), _f("metadata", NULLABLE_STRING),
        _f("error_code", INT16),
    )
    return _s(_f("topics", Array(_s(_f("name", STRING), _f("partitions", Array(partition))))))


# --- CreateTopics (19) and DeleteTopics (20) -----------------------------------------------------------

def _create_topics_request(version: int) -> Struct:
    assignment = _s(_f("partition_index", INT32), _f("broker_ids", Array(INT32)))
    config = _s(_f("name", STRING), _f("value", NULLABLE_STRING))
    topic = _s(
        _f("name", STRING), _f("num_partitions", INT32), _f("replication_factor", INT16),
        _f("assignments", Array(assignment)), _f("configs", Array(config)),
    )
    fields = [_f("topics", Array(topic)), _f("timeout", INT32)]
    if version >= 1:
        fields.append(_f("validate_only", BOOL))
    return _s(*fields)


def _create_topics_response(version: int) -> Struct:
    topic = [_f("name", STRING), _f("error_code", INT16)]
    if version >= 1:
        topic.append(_f("error_message", NULLABLE_STRING))
    return _s(_f("topics", Array(_s(*topic))))


def _delete_topics_request() -> Struct:
    return _s(_f("topic_names", Array(STRING)), _f("timeout", INT32))


def _delete_topics_response() -> Struct:
    return _s(_f("responses", Array(_s(_f("name", STRING), _f("error_code", INT16)))))


# --- OffsetForLeaderEpoch (23) --------------------------------------------------------------------------

def _offset_for_leader_epoch_request() -> Struct:
    partition = _s(_f("partition", INT32), _f("leader_epoch", INT32), current_leader_epoch=-1)
    return _s(_f("topics", Array(_s(_f("topic", STRING), _f("partitions", Array(partition))))))


def _offset_for_leader_epoch_response(version: int) -> Struct:
    partition = [_f("error_code", INT16), _f("partition", INT32)]
    if version >= 1:
        partition.append(_f("leader_epoch", INT32))
    partition.append(_f("end_offset", INT64))
    return _s(_f("topics", Array(_s(_f("topic", STRING), _f("partitions", Array(_s(*partition)))))))


# --- the ACL APIs (29-31), v0: literal resource names only ---------------------------------------------

def _describe_acls_request() -> Struct:
    return _s(
        _f("resource_type_filter", INT8), _f("resource_name_filter", NULLABLE_STRING),
        _f("principal_filter", NULLABLE_STRING), _f("host_filter", NULLABLE_STRING),
        _f("operation", INT8), _f("permission_type", INT8), pattern_type_filter=PATTERN_LITERAL,
    )


def _describe_acls_response() -> Struct:
    acl = _s(_f("principal", STRING), _f("host", STRING), _f("operation", INT8), _f("permission_type", INT8))
    resource = _s(_f("resource_type", INT8), _f("resource_name", STRING), _f("acls", Array(acl)))
    return _s(
        _f("throttle_time", INT32), _f("error_code", INT16), _f("error_message", NULLABLE_STRING),
        _f("resources", Array(resource)),
    )


def _create_acls_request() -> Struct:
    creation = _s(
        _f("resource_type", INT8), _f("resource_name", STRING), _f("principal", STRING), _f("host", STRING),
        _f("operation", INT8), _f("permission_type", INT8), resource_pattern_type=PATTERN_LITERAL,
    )
    return _s(_f("creations", Array(creation)))


def _create_acls_response() -> Struct:
    result = _s(_f("error_code", INT16), _f("error_message", NULLABLE_STRING))
    return _s(_f("throttle_time", INT32), _f("results", Array(result)))


def _delete_acls_request() -> Struct:
    return _s(_f("filters", Array(_describe_acls_request())))


def _delete_acls_response() -> Struct:
    matching = _s(
        _f("error_code", INT16), _f("error_message", NULLABLE_STRING), _f("resource_type", INT8),
        _f("resource_name", STRING), _f("principal", STRING), _f("host", STRING), _f("operation", INT8),
        _f("permission_type", INT8),
    )
    result = _s(_f("error_code", INT16), _f("error_message", NULLABLE_STRING), _f("matching_acls", Array(matching)))
    return _s(_f("throttle_time", INT32), _f("filter_results", Array(result)))


# --- DescribeConfigs (32) ------------------------------------------------------------------------------

def _describe_configs_request() -> Struct:
    resource = _s(
        _f("resource_type", INT8), _f("resource_name", STRING), _f("configuration_keys", Array(STRING, nullable=True))
    )
    return _s(_f("resources", Array(resource)), include_synonyms=False)


def _describe_configs_response() -> Struct:
    config = _s(
        _f("name", STRING), _f("value", NULLABLE_STRING), _f("read_only", BOOL),
        _f("is_default", BOOL, get=lambda config: config.config_source == CONFIG_SOURCE_DEFAULT,
           put=lambda is_default: {"config_source": CONFIG_SOURCE_DEFAULT} if is_default else {}),
        _f("is_sensitive", BOOL),
    )
    result = _s(
        _f("error_code", INT16), _f("error_message", NULLABLE_STRING), _f("resource_type", INT8),
        _f("resource_name", STRING), _f("configs", Array(config)),
    )
    return _s(_f("throttle_time", INT32), _f("results", Array(result)))


# --- WriteTxnMarkers (27) v0: v1's fields, not flexible -------------------------------------------------

def _write_txn_markers_request() -> Struct:
    topic = _s(_f("name", STRING), _f("partition_indexes", Array(INT32)))
    marker = _s(_f("producer_id", INT64), _f("producer_epoch", INT16), _f("transaction_result", BOOL),
                _f("topics", Array(topic)), _f("coordinator_epoch", INT32))
    return _s(_f("markers", Array(marker)))


def _write_txn_markers_response() -> Struct:
    partition = _s(_f("partition_index", INT32), _f("error_code", INT16))
    topic = _s(_f("name", STRING), _f("partitions", Array(partition)))
    return _s(_f("markers", Array(_s(_f("producer_id", INT64), _f("topics", Array(topic))))))


# --- the table -----------------------------------------------------------------------------------------

# --- DescribeLogDirs (35) -------------------------------------------------------------------------------

def _describe_log_dirs_request() -> Struct:
    return _s(_f("topics", Array(_s(_f("topic", STRING), _f("partitions", Array(INT32))), nullable=True)))


def _describe_log_dirs_response() -> Struct:
    partition = _s(_f("partition_index", INT32), _f("partition_size", INT64), _f("offset_lag", INT64),
                   _f("is_future_key", BOOL))
    topic = _s(_f("name", STRING), _f("partitions", Array(partition)))
    result = _s(_f("error_code", INT16), _f("log_dir", STRING), _f("topics", Array(topic)))
    return _s(_f("throttle_time", INT32), _f("results", Array(result)))


def _alter_replica_log_dirs_request() -> Struct:
    topic = _s(_f("name", STRING), _f("partitions", Array(INT32)))
    return _s(_f("dirs", Array(_s(_f("path", STRING), _f("topics", Array(topic))))))


def _alter_replica_log_dirs_response() -> Struct:
    partition = _s(_f("partition_index", INT32), _f("error_code", INT16))
    topic = _s(_f("topic_name", STRING), _f("partitions", Array(partition)))
    return _s(_f("throttle_time", INT32), _f("results", Array(topic)))


BASE_VERSION: dict[int, int] = {0: 3, 1: 4, 2: 1, 8: 2, 9: 1, 19: 2, 20: 1, 23: 2, 27: 1, 29: 1, 30: 1, 31: 1,
                                32: 1, 34: 1, 35: 1}
"""Per API key, kio's lowest version: the entity class a legacy version decodes into and encodes from."""

REQUESTS: dict[tuple[int, int], Struct] = {
    **{(0, v): _produce_request() for v in range(3)},
    **{(1, v): _fetch_request(v) for v in range(4)},
    (2, 0): _list_offsets_request(),
    **{(8, v): _offset_commit_request(v) for v in range(2)},
    (9, 0): _offset_fetch_request(),
    **{(19, v): _create_topics_request(v) for v in range(2)},
    (20, 0): _delete_topics_request(),
    **{(23, v): _offset_for_leader_epoch_request() for v in range(2)},
    (27, 0): _write_txn_markers_request(),
    (29, 0): _describe_acls_request(),
    (30, 0): _create_acls_request(),
    (31, 0): _delete_acls_request(),
    (32, 0): _describe_configs_request(),
    (34, 0): _alter_replica_log_dirs_request(),
    (35, 0): _describe_log_dirs_request(),
}

RESPONSES: dict[tuple[int, int], Struct] = {
    **{(0, v): _produce_response(v) for v in range(3)},
    **{(1, v): _fetch_response(v) for v in range(4)},
    (2, 0): _list_offsets_response(),
    **{(8, v): _offset_commit_response() for v in range(2)},
    (9, 0): _offset_fetch_response(),
    **{(19, v): _create_topics_response(v) for v in range(2)},
    (20, 0): _delete_topics_response(),
    **{(23, v): _offset_for_leader_epoch_response(v) for v in range(2)},
    (27, 0): _write_txn_markers_response(),
    (29, 0): _describe_acls_response(),
    (30, 0): _create_acls_response(),
    (31, 0): _delete_acls_response(),
    (32, 0): _describe_configs_response(),
    (34, 0): _alter_replica_log_dirs_response(),
    (35, 0): _describe_log_dirs_response(),
}
