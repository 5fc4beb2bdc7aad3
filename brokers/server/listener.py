"""KafkaListener: the Kafka-protocol TCP server, an ``asyncio.Protocol`` per connection.

Bytes go through the sans-I/O ``FrameDecoder``; each complete request becomes a task, so requests
pipelined on one connection are worked on concurrently, while responses leave strictly in request
order (Kafka clients pop their oldest in-flight request for every response). Each request task's
done-callback writes every answer now complete at the head of the queue, synchronously, joined into
one ``writelines`` (no writer task to wake per response).
A request that needs no answer (Produce with acks=0) yields ``None`` and is skipped. A malformed
frame, an oversized size prefix or an unknown API key closes that connection only, logged once
with the peer.
An SSL / SASL_SSL listener gets its ``ssl.SSLContext`` (brokers/server/tls.py): the transport does the
handshake before ``connection_made``, where an SSL connection takes its principal from the client
certificate; file ranges then always go through the transport (no sendfile under TLS).
A TLS listener accepts its sockets itself (``sock_accept``) and hands each to
``loop.connect_accepted_socket(..., ssl=)``: ``create_server(ssl=)`` drops a failed handshake silently on
both asyncio and uvloop (the protocol never hears of it; only asyncio's debug mode logs it), whereas
here the handshake's exception comes back to the listener, which knows the peer and logs one WARNING
line (Kafka's "Failed authentication with /<ip> (SSL handshake failed)") with the listener and the reason.
"""
from __future__ import annotations

import asyncio
import collections
import logging
import os
import socket
import ssl
from typing import Any, Awaitable, Callable

from brokers.protocol.framing import MIN_FRAME_BYTES, FrameDecoder, ProtocolError
from brokers.protocol.sasl import SASL_PROTOCOLS
from brokers.security.acls import ANONYMOUS
from brokers.security.principal_mapping import NoMatchingRule, SslPrincipalMapper
from brokers.server.tls import handshake_failure, peer_principal

log = logging.getLogger(__name__)

Handler = Callable[[bytes, "Connection"], Awaitable[list[Any] | None]]
MAX_IN_FLIGHT = 200  # pause reading beyond this many unanswered requests on one connection
# File ranges this large are sent with sendfile; 0 turns sendfile off (ZKAFKA_SENDFILE_MIN_BYTES).
SENDFILE_MIN_BYTES = int(os.environ.get("ZKAFKA_SENDFILE_MIN_BYTES", str(1 << 20)))
BACKLOG = 100  # asyncio's create_server default
ACCEPT_RETRY_DELAY = 1.0  # seconds, after accept() fails (out of file descriptors), as asyncio waits
SSL_HANDSHAKE_TIMEOUT = 60.0  # seconds, asyncio's and uvloop's default


class Connection(asyncio.Protocol):
    """One client connection. ``listener_name`` / ``security_protocol`` are its listener's; ``principal``
    is who the client is (``User:ANONYMOUS`` until TLS client auth or SASL says otherwise), read by the
    handlers through ``brokers.server.context.PRINCIPAL``."""

    def __init__(self, handle: Handler, max_request_bytes: int, connections: set["Connection"],
                 listener_name: str = "PLAINTEXT", security_protocol: str = "PLAINTEXT",
                 principal_mapper: SslPrincipalMapper | None = None):
        self.listener_name, self.security_protocol = listener_name, security_protocol
        self.principal_mapper = principal_mapper  # SSL: ssl.principal.mapping.rules
        self.principal = ANONYMOUS
        self._handle = handle
        # SASL: the raw tokens after SaslHandshake v0 share the size prefix and may be shorter than a header
        self._decoder = FrameDecoder(max_request_bytes, 0 if security_protocol in SASL_PROTOCOLS else MIN_FRAME_BYTES)
        self._connections = connections
        self._pending: collections.deque[asyncio.Task] = collections.deque()
        self._paused = False  # too many requests in flight
        self._reading_paused = False  # the transport's state: paused while in flight or throttled
        self._throttle_ends: asyncio.TimerHandle | None = None  # KIP-219: muted until this fires
        self._throttled_until = 0.0
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.closed = False
        self.tls = False  # a TLS transport: bytes must go through it, never os.sendfile to its socket

    # -- asyncio.Protocol ----------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self.tls = transport.get_extra_info("ssl_object") is not None  # the handshake is done by now
        if self.tls and self.security_protocol == "SSL":  # SASL_SSL: the SASL layer says who it is
            try:
                self.principal = peer_principal(transport, self.principal_mapper)
            except NoMatchingRule as exc:  # Kafka refuses the client: no principal, no request handled
                log.warning("Failed authentication with /%s on listener %s (%s)", self.peer, self.listener_name, exc)
                self.closed = True
                transport.close()
                return
            log.debug("TLS connection from %s on %s: principal %s", self.peer, self.listener_name, self.principal)
        self._connections.add(self)

    def data_received(self, data: bytes) -> None:
        if self.closed:  # refused in connection_made: nothing it sends is read
            return
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
            self._set_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._connections.discard(self)
        for task in self._pending:
            task.cancel()
        if self._throttle_ends is not None:
            self._throttle_ends.cancel()

    # -- client quotas (KIP-219) ---------------------------------------------------------------
    def throttle(self, throttle_ms: int) -> None:
        """Read nothing more from this client for ``throttle_ms`` (a quota's throttle time, which its response
        carries): Kafka mutes the channel; requests already read are still answered."""
        if self.closed or throttle_ms <= 0 or self.transport is None:
            return
        loop = asyncio.get_running_loop()
        until = loop.time() + throttle_ms / 1000.0
        if until <= self._throttled_until:
            return
        self._throttled_until = until
        if self._throttle_ends is not None:
            self._throttle_ends.cancel()
        self._throttle_ends = loop.call_at(until, self._unmute)
        self._set_reading()

    def _unmute(self) -> None:
        self._throttle_ends = None
        self._set_reading()

    def _set_reading(self) -> None:
        """Pause or resume the transport so that it reads only while neither too many requests are in flight
        nor the client is throttled."""
        paused = self._paused or self._throttle_ends is not None
        if paused == self._reading_paused or self.closed:
            return
        self._reading_paused = paused
        if paused:
            self.transport.pause_reading()
        else:
            self.transport.resume_reading()

    # -- responses in request order ------------------------------------------------------------
    def _answered(self, _task: asyncio.Task) -> None:
        """A request's task finished: write every answer now complete at the head of the queue (this
        done-callback writes; there is no writer task to wake per response)."""
        if self.closed:
            return
        segments: list = []
        pending = self._pending
        while pending and pending[0].done():
            task = pending.popleft()
            error = task.exception() if not task.cancelled() else asyncio.CancelledError()
            if error is not None:  # a bad request or a handler bug closes this connection only
                self._write(segments)  # answers to the requests before it still go out
                if not isinstance(error, ProtocolError):
                    log.error("request from %s failed: %r", self.peer, error, exc_info=error)
                self.close(str(error) if isinstance(error, ProtocolError) else "internal error")
                return
            if response := task.result():
                segments.extend(response)
        self._write(segments)
        if self._paused and len(pending) <= MAX_IN_FLIGHT // 2:
            self._paused = False
            self._set_reading()

    def _write(self, segments: list) -> None:
        """Bytes and file ranges in order, synchronously. A range of at least SENDFILE_MIN_BYTES meeting
        an empty write buffer goes to the socket with ``os.sendfile`` (zero copy) for as much as the
        socket takes now; the rest of it, and smaller ranges, are read with pread (faster than sendfile
        on loopback, wire-protocol.md §5) and joined into one ``writelines``. Over TLS there is no zero
        copy: every range is read with pread and encrypted by the transport (``os.sendfile`` would put
        plaintext on the socket, under the TLS stream). Nothing awaits, so
        nothing else can write between two parts of one answer (this works on any event loop: uvloop
        has no ``loop.sendfile``)."""
        if not segments or self.closed:
            return
        out: list = []
        for segment in segments:
            if isinstance(segment, (bytes, bytearray, memoryview)):
                out.append(segment)
                continue
            sent = 0
            if SENDFILE_MIN_BYTES and segment.size >= SENDFILE_MIN_BYTES and not self.tls:
                if out:
                    self.transport.writelines(out)
                    out = []
                sent = self._sendfile_now(segment)
            if sent < segment.size:
                out.append(os.pread(segment.fileno(), segment.size - sent, segment.position + sent))
        if out:
            self.transport.writelines(out)

    def _sendfile_now(self, segment) -> int:
        """Bytes of ``segment`` sent straight from the page cache, 0 if the transport still buffers
        earlier bytes (they must go first) or the socket is full."""
        sock = self.transport.get_extra_info("socket")  # a TLS transport's is the raw socket: never for TLS
        if sock is None or self.tls or self.transport.get_write_buffer_size():
            return 0
        try:
            return os.sendfile(sock.fileno(), segment.fileno(), segment.position, segment.size)
        except (BlockingIOError, InterruptedError):
            return 0
        except OSError as exc:  # the peer went away: the transport notices on its next write
            log.debug("sendfile to %s failed: %s", self.peer, exc)
            return 0

    def close(self, reason: str) -> None:
        if not self.closed:
            log.warning("closing connection from %s: %s", self.peer, reason)
            self.closed = True
            if self.transport is not None:
                self.transport.close()


class KafkaListener:
    def __init__(self, handle: Handler, host: str, port: int, max_request_bytes: int = 104857600, *,
                 listener_name: str = "PLAINTEXT", security_protocol: str = "PLAINTEXT",
                 ssl_context: ssl.SSLContext | None = None, principal_mapper: SslPrincipalMapper | None = None):
        self.listener_name, self.security_protocol = listener_name, security_protocol
        self.principal_mapper = principal_mapper
        self.ssl_context = ssl_context  # SSL / SASL_SSL listeners: the handshake happens before connection_made
        self._handle = handle
        self.host = host or "0.0.0.0"
        self.requested_port = port
        self.max_request_bytes = max_request_bytes
        self.connections: set[Connection] = set()
        self._server: asyncio.base_events.Server | None = None
        self._socket: socket.socket | None = None  # a TLS listener's own listening socket
        self._accepting: asyncio.Task | None = None
        self._handshakes: set[asyncio.Task] = set()

    @property
    def port(self) -> int:
        if self._socket is not None:
            return self._socket.getsockname()[1]
        if self._server is None or not self._server.sockets:
            return self.requested_port
        return self._server.sockets[0].getsockname()[1]

    def _connection(self) -> Connection:
        return Connection(self._handle, self.max_request_bytes, self.connections, self.listener_name,
                          self.security_protocol, self.principal_mapper)

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        if self.ssl_context is None:
            self._server = await loop.create_server(self._connection, self.host, self.requested_port,
                                                    reuse_address=True)
        else:
            (family, *_), *_ = await loop.getaddrinfo(self.host, self.requested_port, type=socket.SOCK_STREAM,
                                                      flags=socket.AI_PASSIVE)
            self._socket = socket.create_server((self.host, self.requested_port), family=family, backlog=BACKLOG)
            self._socket.setblocking(False)
            self._accepting = loop.create_task(self._accept_tls())
        log.info("Kafka listener %s (%s) on %s:%d", self.listener_name, self.security_protocol, self.host, self.port)

    async def _accept_tls(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                sock, address = await loop.sock_accept(self._socket)
            except OSError as exc:  # EMFILE and the like: the socket stays, try again shortly
                log.error("listener %s cannot accept: %s", self.listener_name, exc)
                await asyncio.sleep(ACCEPT_RETRY_DELAY)
                continue
            task = loop.create_task(self._handshake(sock, address))
            self._handshakes.add(task)
            task.add_done_callback(self._handshakes.discard)

    async def _handshake(self, sock: socket.socket, address: Any) -> None:
        """The TLS handshake of one accepted socket (the transport owns the socket from here on and
        closes it on failure); success calls ``Connection.connection_made``, failure is logged."""
        try:
            await asyncio.get_running_loop().connect_accepted_socket(
                self._connection, sock, ssl=self.ssl_context, ssl_handshake_timeout=SSL_HANDSHAKE_TIMEOUT)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            peer = f"/{address[0]}:{address[1]}" if isinstance(address, tuple) else f"/{address}"
            if (reason := handshake_failure(exc)) is not None:
                log.warning("Failed authentication with %s on listener %s (SSL handshake failed: %s)",
                            peer, self.listener_name, reason)
            else:
                log.debug("%s closed the connection during the TLS handshake on %s: %r", peer,
                          self.listener_name, exc)

    async def stop(self) -> None:
        if self._server is None and self._socket is None:
            return
        if self._server is not None:
            self._server.close()
        for task in self._handshakes:
            task.cancel()
        if self._accepting is not None:  # its sock_accept must let go of the socket before it closes
            self._accepting.cancel()
            await asyncio.wait([self._accepting])
        if self._socket is not None:
            self._socket.close()
        for connection in list(self.connections):
            connection.close("broker shutting down")
        if self._server is not None:
            await self._server.wait_closed()
        self._server = self._socket = self._accepting = None
