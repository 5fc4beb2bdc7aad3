"""FindCoordinator (v0-v1), ahead of the group coordinator.

The consumer-group issue makes the leader of ``__consumer_offsets`` partition
``abs(java_hash(group)) % 50`` the coordinator. Until then every lookup answers
COORDINATOR_NOT_AVAILABLE (15), which clients treat as "retry later". The API is advertised now
because librdkafka enables lz4 compression only when a broker advertises FindCoordinator (its LZ4
feature probe, wire-protocol.md §1.3); without it lz4 producers silently send uncompressed batches.
"""
from __future__ import annotations

from typing import Any

from brokers.protocol import codec
from brokers.protocol.errors import ErrorCode
from brokers.protocol.framing import RequestHeader
from brokers.server.context import ServerContext


async def handle_find_coordinator(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    cls = codec.response_class(header.api_key, header.api_version)
    return codec.build(cls, error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE,
                       error_message="the group coordinator arrives with consumer groups", node_id=-1, host="", port=-1)
