"""KafkaListener: the Kafka-protocol TCP server, an ``asyncio.Protocol`` per connection.

Bytes go through the sans-I/O ``FrameDecoder``; each complete request becomes a task, so requests
pipelined on one connection are worked on concurrently, while responses leave strictly in request
order (Kafka clients pop their oldest in-flight request for every response). Each request task's
done-callback writes every answer now complete at the head of the queue, joined into one
``writelines`` (no writer task to wake per response); only a file range big enough for sendfile
makes the writing asynchronous, and answers behind it wait for it.
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
        self._sendfile: asyncio.Task | None = None  # a sendfile in progress: later answers wait for it
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

    def data_received(self, data: bytes) -> None:
        try:
            frames = self._decoder.feed(data)
        except ProtocolError as exc:
            self.close(f"bad frame: {exc}")
            return
        loop = asyncio.get_running_loop()
        for frame in frames:
            task = loop.create_task(self._handle(frame, self))
            task.add_done_callback(self._answered)
            self._pending.append(task)
        if len(self._pending) > MAX_IN_FLIGHT and not self._paused:
            self._paused = True
            self.transport.pause_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._connections.discard(self)
        for task in self._pending:
            task.cancel()
        if self._sendfile is not None:
            self._sendfile.cancel()

    # -- responses in request order ------------------------------------------------------------
    def _answered(self, _task: asyncio.Task) -> None:
        """A request's task finished: write what is now answered at the head of the queue (no writer
        task to wake: this done-callback writes)."""
        if self._sendfile is None and not self.closed:
            self._write_answered()

    def _write_answered(self) -> None:
        segments: list = []
        pending = self._pending
        while pending and pending[0].done():
            task = pending.popleft()
            error = task.exception() if not task.cancelled() else asyncio.CancelledError()
            if error is not None:  # a bad request or a handler bug closes this connection only
                self._write_now(segments)  # answers to the requests before it still go out
                if not isinstance(error, ProtocolError):
                    log.error("request from %s failed: %r", self.peer, error, exc_info=error)
                self.close(str(error) if isinstance(error, ProtocolError) else "internal error")
                return
            if response := task.result():
                segments.extend(response)
        if any(_sent_with_sendfile(segment) for segment in segments):
            self._sendfile = asyncio.get_running_loop().create_task(self._send_then_continue(segments))
            return
        self._write_now(segments)
        if self._paused and len(pending) <= MAX_IN_FLIGHT // 2 and not self.closed:
            self._paused = False
            self.transport.resume_reading()

    def _write_now(self, segments: list) -> None:
        """Bytes and small file ranges (read with pread: faster than sendfile on loopback,
        wire-protocol.md §5) joined into one ``writelines``."""
        if segments and not self.closed:
            self.transport.writelines([s if isinstance(s, (bytes, bytearray, memoryview)) else s.read()
                                       for s in segments])

    async def _send_then_continue(self, segments: list) -> None:
        """A file range of at least SENDFILE_MIN_BYTES goes out with ``loop.sendfile`` (zero copy); the
        answers that finished meanwhile follow it."""
        try:
            pending: list = []
            for segment in segments:
                if _sent_with_sendfile(segment):
                    self._write_now(pending)
                    pending = []
                    with os.fdopen(os.dup(segment.fileno()), "rb", buffering=0) as file:
                        await asyncio.get_running_loop().sendfile(self.transport, file, segment.position,
                                                                  segment.size)
                else:
                    pending.append(segment)
            self._write_now(pending)
        except (ConnectionError, OSError, RuntimeError) as exc:
            self.close(f"write failed: {exc}")
            return
        finally:
            self._sendfile = None
        if not self.closed:
            self._write_answered()

    def close(self, reason: str) -> None:
        if not self.closed:
            log.warning("closing connection from %s: %s", self.peer, reason)
            self.closed = True
            if self.transport is not None:
                self.transport.close()


def _sent_with_sendfile(segment) -> bool:
    return (not isinstance(segment, (bytes, bytearray, memoryview)) and SENDFILE_MIN_BYTES > 0
            and segment.size >= SENDFILE_MIN_BYTES)


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
