"""FindCoordinator answers COORDINATOR_NOT_AVAILABLE (retriable) until the group coordinator exists."""
from __future__ import annotations

import asyncio

import pytest

from brokers.protocol import codec
from brokers.protocol.errors import ErrorCode
from brokers.protocol.framing import RequestHeader
from brokers.server.handlers.find_coordinator import handle_find_coordinator


@pytest.mark.parametrize("version", [0, 1])
def test_find_coordinator_is_retriable_for_now(version):
    request = codec.build(codec.request_class(10, version), key="g", key_type=0)
    header = RequestHeader(10, version, 5, "test", 0)
    response = asyncio.run(handle_find_coordinator(None, header, request))
    assert int(response.error_code) == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert response.node_id == -1
    encoded = codec.encode_response(10, version, 5, response)
    assert codec.decode_response(10, version, encoded[4:])[0] == 5
