"""KafkaListener: the Kafka-protocol TCP server, an ``asyncio.Protocol`` per connection.

Bytes go through the sans-I/O ``FrameDecoder``; each complete request becomes a task, so requests
pipelined on one connection are worked on concurrently, while responses leave strictly in request
order (Kafka clients pop their oldest in-flight request for every response). One writer per
connection drains the ordered queue: everything ready at once is joined into one ``writelines``.
A request that needs no answer (Produce with acks=0) yields ``None`` and is skipped. A malformed
frame, an oversized size prefix or an unknown API key closes that connection only, logged once
with the peer.
"""
from __future__ import annotations

import asyncio
import collections
import logging
import os
from typing import Any, Awaitable, Callable

from brokers.protocol.framing import FrameDecoder, ProtocolError

log = logging.getLogger(__name__)

Handler = Callable[[bytes, "Connection"], Awaitable[list[Any] | None]]
MAX_IN_FLIGHT = 200  # pause reading beyond this many unanswered requests on one connection
# File ranges this large are sent with sendfile; 0 turns sendfile off (ZKAFKA_SENDFILE_MIN_BYTES).
SENDFILE_MIN_BYTES = int(os.environ.get("ZKAFKA_SENDFILE_MIN_BYTES", str(1 << 20)))


class Connection(asyncio.Protocol):
    def __init__(self, handle: Handler, max_request_bytes: int, connections: set["Connection"]):
        self._handle = handle
        self._decoder = FrameDecoder(max_request_bytes)
        self._connections = connections
        self._pending: collections.deque[asyncio.Task] = collections.deque()
        self._wakeup = asyncio.Event()
        self._writer: asyncio.Task | None = None
        self._paused = False
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.closed = False

    # -- asyncio.Protocol ----------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self._connections.add(self)
        self._writer = asyncio.get_running_loop().create_task(self._write_responses())

    def data_received(self, data: bytes) -> None:
        try:
            frames = self._decoder.feed(data)
        except ProtocolError as exc:
            self.close(f"bad frame: {exc}")
            return
        loop = asyncio.get_running_loop()
        for frame in frames:
            self._pending.append(loop.create_task(self._handle(frame, self)))
        if frames:
            self._wakeup.set()
        if len(self._pending) > MAX_IN_FLIGHT and not self._paused:
            self._paused = True
            self.transport.pause_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._connections.discard(self)
        for task in self._pending:
            task.cancel()
        if self._writer is not None:
            self._writer.cancel()

    # -- responses in request order ------------------------------------------------------------
    async def _write_responses(self) -> None:
        while not self.closed:
            if not self._pending:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            segments: list = []
            while self._pending and (not segments or self._pending[0].done()):
                task = self._pending.popleft()
                try:
                    response = await task
                except asyncio.CancelledError:
                    return
                except Exception as exc:  # noqa: BLE001 - a bad request or a handler bug closes this connection only
                    if segments and not self.closed:
                        self.transport.writelines(segments)  # answers to the requests before it still go out
                    if not isinstance(exc, ProtocolError):
                        log.error("request from %s failed: %r", self.peer, exc, exc_info=exc)
                    self.close(str(exc) if isinstance(exc, ProtocolError) else "internal error")
                    return
                if response:
                    segments.extend(response)
            if segments and not self.closed:
                try:
                    await self._send(segments)
                except (ConnectionError, OSError, RuntimeError) as exc:
                    self.close(f"write failed: {exc}")
                    return
            if self._paused and len(self._pending) <= MAX_IN_FLIGHT // 2:
                self._paused = False
                self.transport.resume_reading()

    async def _send(self, segments: list) -> None:
        """Bytes are joined into one ``writelines``; a file range of at least SENDFILE_MIN_BYTES goes
        out with ``loop.sendfile`` (zero copy), smaller ones are read with pread (faster on loopback,
        wire-protocol.md §5)."""
        pending: list = []
        for segment in segments:
            if isinstance(segment, (bytes, bytearray, memoryview)):
                pending.append(segment)
            elif SENDFILE_MIN_BYTES and segment.size >= SENDFILE_MIN_BYTES:
                if pending:
                    self.transport.writelines(pending)
                    pending = []
                with os.fdopen(os.dup(segment.fileno()), "rb", buffering=0) as file:
                    await asyncio.get_running_loop().sendfile(self.transport, file, segment.position, segment.size)
            else:
                pending.append(segment.read())
        if pending:
            self.transport.writelines(pending)

    def close(self, reason: str) -> None:
        if not self.closed:
            log.warning("closing connection from %s: %s", self.peer, reason)
            self.closed = True
            if self.transport is not None:
                self.transport.close()


class KafkaListener:
    def __init__(self, handle: Handler, host: str, port: int, max_request_bytes: int = 104857600):
        self._handle = handle
        self.host = host or "0.0.0.0"
        self.requested_port = port
        self.max_request_bytes = max_request_bytes
        self.connections: set[Connection] = set()
        self._server: asyncio.base_events.Server | None = None

    @property
    def port(self) -> int:
        if self._server is None or not self._server.sockets:
            return self.requested_port
        return self._server.sockets[0].getsockname()[1]

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: Connection(self._handle, self.max_request_bytes, self.connections),
            self.host, self.requested_port, reuse_address=True)
        log.info("Kafka listener on %s:%d", self.host, self.port)

    async def stop(self) -> None:
        if self._server is None:
            return
        self._server.close()
        for connection in list(self.connections):
            connection.close("broker shutting down")
        await self._server.wait_closed()
        self._server = None
