"""KafkaApis: one entry point per request frame, dispatch by API key (Kafka's KafkaApis).

``ApiKey`` (``brokers.protocol.api_versions``) decides what exists: an unknown API key, or a known key at
a version outside its window, closes the connection with one log line naming the client id, the API and
the version (Kafka 2.8 cannot parse such a request and closes too). On SASL listeners ``brokers.server.sasl``
sees every frame first: until authentication completes it admits only the handshake, and after SaslHandshake
v0 it takes the frames as raw tokens, with no request header. ApiVersions answers every version,
from pre-encoded bytes (KIP-511: UNSUPPORTED_VERSION and the table for a version above its own). Handlers return a kio response entity (encoded here), a list of
wire segments (Fetch), or None (Produce with acks=0: no response at all).
"""
from __future__ import annotations

import dataclasses
import datetime
import logging
import struct
import time
from typing import Any, Awaitable, Callable

from brokers.security.acls import ANONYMOUS
from brokers.protocol import codec
from brokers.protocol.api_versions import ApiKey, api_versions_response, known_api
from brokers.protocol.framing import ProtocolError, RequestHeader, parse_request_header
from brokers.server import sasl
from brokers.quotas.request_throttle import LoopTime, RequestThrottle
from brokers.server.context import CLIENT_HOST, PRINCIPAL, REQUEST_THROTTLE, ServerContext
from brokers.server.handlers import (
    acls,
    alter_configs,
    client_quotas,
    create_partitions,
    delete_records,
    describe_configs,
    describe_producers,
    elect_leaders,
    fetch,
    find_coordinator,
    log_dirs,
    list_offsets,
    metadata,
    offsets_for_leader_epoch,
    produce,
    reassignments,
    scram_credentials,
    topics,
    write_txn_markers,
)

log = logging.getLogger(__name__)

Handler = Callable[[ServerContext, RequestHeader, Any], Awaitable[Any]]
_KEY_AND_VERSION = struct.Struct(">hh")

# Kafka's clusterAction APIs this listener serves: never client-throttled (a follower's Fetch says so itself)
INTER_BROKER_APIS = frozenset({ApiKey.WRITE_TXN_MARKERS})

HANDLERS: dict[ApiKey, Handler] = {
    ApiKey.PRODUCE: produce.handle_produce,
    ApiKey.FETCH: fetch.handle_fetch,
    ApiKey.LIST_OFFSETS: list_offsets.handle_list_offsets,
    ApiKey.METADATA: metadata.handle_metadata,
    ApiKey.FIND_COORDINATOR: find_coordinator.handle_find_coordinator,
    ApiKey.SASL_HANDSHAKE: sasl.handle_illegal_state,  # SASL connections still authenticating: brokers.server.sasl
    ApiKey.CREATE_TOPICS: topics.handle_create_topics,
    ApiKey.DELETE_TOPICS: topics.handle_delete_topics,
    ApiKey.DELETE_RECORDS: delete_records.handle_delete_records,
    ApiKey.DESCRIBE_CLUSTER: metadata.handle_describe_cluster,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: offsets_for_leader_epoch.handle_offsets_for_leader_epoch,
    ApiKey.WRITE_TXN_MARKERS: write_txn_markers.handle_write_txn_markers,
    ApiKey.DESCRIBE_ACLS: acls.handle_describe_acls,
    ApiKey.CREATE_ACLS: acls.handle_create_acls,
    ApiKey.DELETE_ACLS: acls.handle_delete_acls,
    ApiKey.DESCRIBE_CONFIGS: describe_configs.handle_describe_configs,
    ApiKey.ALTER_CONFIGS: alter_configs.handle_alter_configs,
    ApiKey.DESCRIBE_LOG_DIRS: log_dirs.handle_describe_log_dirs,
    ApiKey.ALTER_REPLICA_LOG_DIRS: log_dirs.handle_alter_replica_log_dirs,
    ApiKey.SASL_AUTHENTICATE: sasl.handle_illegal_state,
    ApiKey.CREATE_PARTITIONS: create_partitions.handle_create_partitions,
    ApiKey.ELECT_LEADERS: elect_leaders.handle_elect_leaders,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: alter_configs.handle_incremental_alter_configs,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: reassignments.handle_alter_partition_reassignments,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: reassignments.handle_list_partition_reassignments,
    ApiKey.DESCRIBE_CLIENT_QUOTAS: client_quotas.handle_describe_client_quotas,
    ApiKey.ALTER_CLIENT_QUOTAS: client_quotas.handle_alter_client_quotas,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: scram_credentials.handle_describe_user_scram_credentials,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: scram_credentials.handle_alter_user_scram_credentials,
    ApiKey.DESCRIBE_PRODUCERS: describe_producers.handle_describe_producers,
}


def _mute(connection: Any, throttle_ms: int) -> None:
    mute = getattr(connection, "throttle", None)
    if mute is not None:
        mute(throttle_ms)


def _throttled(response: Any, throttle_ms: int, connection: Any) -> Any:
    """KIP-219: the connection is muted for ``throttle_ms`` (its next request is read after that) and a response
    entity carries the time (Produce and Fetch, encoded by hand, carry it already)."""
    if throttle_ms <= 0:
        return response
    _mute(connection, throttle_ms)
    if response is None or isinstance(response, list) or not hasattr(response, "throttle_time"):
        return response
    return dataclasses.replace(response, throttle_time=datetime.timedelta(milliseconds=throttle_ms))


class KafkaApis:
    """``extra_handlers``: APIs served by other packages, wired by the composition root (the group APIs
    of ``consumer_group``). An advertised API nobody handles closes the connection (a wiring defect)."""

    def __init__(self, context: ServerContext, extra_handlers: dict[ApiKey, Handler] | None = None):
        self.context = context
        self.handlers = {**HANDLERS, **(extra_handlers or {})}

    async def handle(self, frame: bytes, connection: Any) -> list[Any] | None:
        session = sasl.session_of(connection)  # SASL listeners only: None on the others
        if session is not None and session.reads_raw_tokens:  # after SaslHandshake v0: no request header
            return await sasl.handle_raw_token(self.context.sasl, session, connection, frame)
        try:
            key, api_version = _KEY_AND_VERSION.unpack_from(frame)
        except struct.error:  # SASL listeners frame raw tokens of any size: a shorter frame is no request
            raise ProtocolError(f"a {len(frame)}-byte frame is too short for a request header") from None
        api_key = known_api(key)
        if session is not None:
            sasl.admit(session, api_key, key)  # only the handshake before authentication
        if api_key is None:
            raise ProtocolError(f"unknown API key {key}")
        header = parse_request_header(frame, flexible=api_version >= api_key.flexible_from)
        if api_key is ApiKey.API_VERSIONS:  # any version: the header's fixed prefix is all we need
            return [api_versions_response(header.correlation_id, api_version)]
        if not api_key.supports(api_version):
            raise ProtocolError(f"client {header.client_id!r} sent {api_key.api_name} v{api_version}, outside this "
                                f"broker's window {api_key.min_version}-{api_key.max_version}")
        handler = self.handlers.get(api_key)
        if handler is None:
            raise ProtocolError(f"{api_key.api_name} is advertised but has no handler")
        if codec.is_legacy(key, api_version):
            request, legacy_fields = codec.decode_legacy_request(header, frame)
            header = header._replace(legacy_fields=legacy_fields)
        else:
            request = codec.decode_request(header, frame)
        if session is not None and session.state is not sasl.SaslState.COMPLETE:
            return [codec.encode_response(api_key, api_version, header.correlation_id,
                                          await sasl.handle(self.context.sasl, session, connection, header, request))]
        CLIENT_HOST.set("/" + getattr(connection, "peer", "?").rsplit(":", 1)[0])
        principal = getattr(connection, "principal", ANONYMOUS)
        PRINCIPAL.set(principal)
        throttle = (self._throttle(api_key, principal, header, len(frame), connection) if self.context.quotas.enabled
                    else None)
        started = time.perf_counter()
        try:
            handling = handler(self.context, header, request)
            if throttle is not None and self.context.quotas.request.enabled:
                handling = throttle.timer = LoopTime(handling)
            response = await handling
        except (TypeError, AttributeError) as exc:  # decoded, but null where the schema needs a value
            self.context.stats.request_errors[(api_key.api_name, api_version)] += 1
            raise ProtocolError(f"malformed {api_key.api_name} v{api_version} request: {exc}") from exc
        finally:
            self.context.stats.observe_request(api_key.api_name, api_version, time.perf_counter() - started)
        if throttle is not None:
            response = _throttled(response, throttle.throttle_time_ms(), connection)
        if response is None or isinstance(response, list):
            return response
        return [codec.encode_response(api_key, api_version, header.correlation_id, response)]

    def _throttle(self, api_key: ApiKey, principal: str, header: RequestHeader, request_bytes: int,
                  connection: Any) -> RequestThrottle:
        """The request's throttle (while any client quota is configured), visible to its handler through
        ``REQUEST_THROTTLE``. A Produce's bytes count against its producer quota as it arrives, and a producer
        over its quota is muted at once: Kafka reads one request per connection at a time, this listener reads
        pipelined ones, and a throttle decided only at the response would let the requests buffered meanwhile
        (megabytes of them) in as one burst after each mute."""
        throttle = RequestThrottle(self.context.quotas, principal.partition(":")[2], header.client_id or "")
        throttle.exempt = api_key in INTER_BROKER_APIS
        if api_key is ApiKey.PRODUCE and (throttle_ms := throttle.bandwidth(self.context.quotas.produce, request_bytes)):
            _mute(connection, throttle_ms)
        REQUEST_THROTTLE.set(throttle)
        return throttle
