"""KafkaConnection: one asyncio TCP connection to a broker's Kafka listener, speaking the wire protocol.

The broker's own client side (replica fetchers today; tools later): requests are kio entities encoded
with ``brokers.protocol.codec``, responses are decoded the same way. Requests are pipelined: each one
is written at once and its future is resolved by the reader task in correlation-id order, so a slow
long-poll (a follower's Fetch) never blocks the socket for writing.

Failure model: any socket error, a malformed or unexpected response, or a timeout closes the
connection and fails every request in flight with ``ConnectionError``; the caller reconnects. Nothing
is retried here: what to retry (and after which backoff) is the caller's decision.
"""
from __future__ import annotations

import asyncio
import logging
import struct
from collections import deque
from typing import Any

from brokers.protocol import codec
from brokers.protocol.framing import ProtocolError

log = logging.getLogger(__name__)

_INT32 = struct.Struct(">i")
MAX_RESPONSE_BYTES = 256 * 1024 * 1024


class KafkaConnection:
    def __init__(self, host: str, port: int, client_id: str):
        self.host, self.port, self.client_id = host, port, client_id
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._read_task: asyncio.Task | None = None
        self._pending: deque[tuple[int, int, int, asyncio.Future]] = deque()
        self._correlation_id = 0
        self._closed_error: Exception | None = None

    @property
    def connected(self) -> bool:
        return self._writer is not None and self._closed_error is None

    async def connect(self, timeout: float) -> None:
        self._reader, self._writer = await asyncio.wait_for(asyncio.open_connection(self.host, self.port), timeout)
        self._closed_error = None
        self._read_task = asyncio.get_running_loop().create_task(self._read_loop())

    async def request(self, api_key: int, api_version: int, body: Any, timeout: float) -> Any:
        """Send ``body`` and wait for its response body; ConnectionError (and the connection closed)
        on any failure, including ``timeout`` seconds without an answer."""
        if not self.connected:
            raise ConnectionError(f"not connected to {self.host}:{self.port}")
        self._correlation_id = (self._correlation_id + 1) & 0x7FFFFFFF
        correlation_id = self._correlation_id
        frame = codec.encode_request(api_key, api_version, correlation_id, self.client_id, body)
        future = asyncio.get_running_loop().create_future()
        self._pending.append((correlation_id, api_key, api_version, future))
        self._writer.write(frame)
        try:
            return await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            self.close(ConnectionError(f"no response from {self.host}:{self.port} within {timeout:.1f} s"))
            raise self._closed_error from None

    async def _read_loop(self) -> None:
        try:
            while True:
                size = _INT32.unpack(await self._reader.readexactly(4))[0]
                if not 4 <= size <= MAX_RESPONSE_BYTES:
                    raise ProtocolError(f"response size {size} out of range")
                payload = await self._reader.readexactly(size)
                if not self._pending:
                    raise ProtocolError("a response nobody asked for")
                correlation_id, api_key, api_version, future = self._pending.popleft()
                got, body = codec.decode_response(api_key, api_version, payload)
                if got != correlation_id:
                    raise ProtocolError(f"correlation id {got}, expected {correlation_id}")
                if not future.done():
                    future.set_result(body)
        except asyncio.CancelledError:
            raise
        except (OSError, EOFError, asyncio.IncompleteReadError, ProtocolError) as exc:
            self.close(ConnectionError(f"connection to {self.host}:{self.port} failed: {exc}"))

    def close(self, error: Exception | None = None) -> None:
        if self._closed_error is None:
            self._closed_error = error or ConnectionError("connection closed")
        while self._pending:
            future = self._pending.popleft()[3]
            if not future.done():
                future.set_exception(self._closed_error)
        if self._writer is not None:
            self._writer.close()
        if self._read_task is not None and self._read_task is not asyncio.current_task():
            self._read_task.cancel()
