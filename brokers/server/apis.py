"""KafkaApis: one entry point per request frame, dispatch by API key (Kafka's KafkaApis).

The table in ``brokers.protocol.api_versions`` decides what exists: an unknown API key closes the
connection (as Kafka does), a known key at an unadvertised version gets UNSUPPORTED_VERSION where
the response has a top-level error code, and closes the connection otherwise. ApiVersions is
answered from pre-encoded bytes. Handlers return a kio response entity (encoded here), a list of
wire segments (Fetch), or None (Produce with acks=0: no response at all).
"""
from __future__ import annotations

import dataclasses
import logging
import struct
import time
from typing import Any, Awaitable, Callable

from brokers.security.acls import ANONYMOUS
from brokers.protocol import codec
from brokers.protocol.api_versions import API_VERSIONS_KEY, SUPPORTED, api_name, api_versions_response, is_flexible, is_supported
from brokers.protocol.errors import ErrorCode
from brokers.protocol.framing import ProtocolError, RequestHeader, parse_request_header
from brokers.server import sasl
from brokers.server.context import CLIENT_HOST, PRINCIPAL, ServerContext
from brokers.server.handlers import (
    acls,
    admin,
    alter_configs,
    create_partitions,
    elect_leaders,
    fetch,
    find_coordinator,
    list_offsets,
    metadata,
    offsets_for_leader_epoch,
    produce,
    reassignments,
    scram_credentials,
)

log = logging.getLogger(__name__)

Handler = Callable[[ServerContext, RequestHeader, Any], Awaitable[Any]]
_KEY_AND_VERSION = struct.Struct(">hh")

HANDLERS: dict[int, Handler] = {
    0: produce.handle_produce,
    1: fetch.handle_fetch,
    2: list_offsets.handle_list_offsets,
    3: metadata.handle_metadata,
    10: find_coordinator.handle_find_coordinator,
    19: admin.handle_create_topics,
    20: admin.handle_delete_topics,
    22: admin.handle_init_producer_id,
    23: offsets_for_leader_epoch.handle_offsets_for_leader_epoch,
    32: admin.handle_describe_configs,
    37: create_partitions.handle_create_partitions,
    45: reassignments.handle_alter_partition_reassignments,
    46: reassignments.handle_list_partition_reassignments,
    33: alter_configs.handle_alter_configs,
    44: alter_configs.handle_incremental_alter_configs,
    43: elect_leaders.handle_elect_leaders,
    29: acls.handle_describe_acls,
    30: acls.handle_create_acls,
    31: acls.handle_delete_acls,
    17: sasl.handle_illegal_state,  # SASL connections still authenticating are served by brokers.server.sasl
    36: sasl.handle_illegal_state,
    50: scram_credentials.handle_describe_user_scram_credentials,
    51: scram_credentials.handle_alter_user_scram_credentials,
}
assert set(HANDLERS) | {API_VERSIONS_KEY} <= set(SUPPORTED)


class KafkaApis:
    """``extra_handlers``: APIs served by other packages, wired by the composition root (the group APIs
    of ``consumer_group``). An advertised API nobody handles answers UNSUPPORTED_VERSION."""

    def __init__(self, context: ServerContext, extra_handlers: dict[int, Handler] | None = None):
        self.context = context
        self.handlers = {**HANDLERS, **(extra_handlers or {})}

    async def handle(self, frame: bytes, connection: Any) -> list[Any] | None:
        api_key, api_version = _KEY_AND_VERSION.unpack_from(frame)
        if api_key not in SUPPORTED:
            raise ProtocolError(f"unknown API key {api_key}")
        session = sasl.admit(connection, api_key)  # SASL listeners: only the handshake before authentication
        if api_key == API_VERSIONS_KEY:  # any version: the header's fixed prefix is all we need
            header = parse_request_header(frame, flexible=api_version >= 3)
            return [api_versions_response(header.correlation_id, api_version)]
        header = parse_request_header(frame, is_flexible(api_key, api_version))
        handler = self.handlers.get(api_key)
        if handler is None or not is_supported(api_key, api_version):
            return [self._unsupported_version(header)]
        request = codec.decode_request(header, frame)
        if session is not None and session.state is not sasl.SaslState.COMPLETE:
            return [codec.encode_response(api_key, api_version, header.correlation_id,
                                          await sasl.handle(self.context.sasl, session, connection, header, request))]
        CLIENT_HOST.set("/" + getattr(connection, "peer", "?").rsplit(":", 1)[0])
        PRINCIPAL.set(getattr(connection, "principal", ANONYMOUS))
        started = time.perf_counter()
        try:
            response = await handler(self.context, header, request)
        except (TypeError, AttributeError) as exc:  # decoded, but null where the schema needs a value
            self.context.stats.request_errors[(api_name(api_key), api_version)] += 1
            raise ProtocolError(f"malformed {api_name(api_key)} v{api_version} request: {exc}") from exc
        finally:
            self.context.stats.observe_request(api_name(api_key), api_version, time.perf_counter() - started)
        if response is None or isinstance(response, list):
            return response
        return [codec.encode_response(api_key, api_version, header.correlation_id, response)]

    def _unsupported_version(self, header: RequestHeader) -> bytes:
        name = api_name(header.api_key)
        try:
            cls = codec.response_class(header.api_key, header.api_version)
        except (KeyError, ProtocolError):
            cls = None
        if cls is None or "error_code" not in {f.name for f in dataclasses.fields(cls)}:
            raise ProtocolError(f"{name} v{header.api_version} is not supported and has no error response")
        body = codec.build(cls, error_code=ErrorCode.UNSUPPORTED_VERSION)
        return codec.encode_response(header.api_key, header.api_version, header.correlation_id, body)
