"""KafkaConnection: one asyncio TCP connection to a broker's Kafka listener, speaking the wire protocol.

The broker's own client side (the replica fetchers and the tools use it): requests are kio entities encoded
with ``brokers.protocol.codec``, responses are decoded the same way. Requests are pipelined: each one
is written at once and its future is resolved, in correlation-id order, as its response frame
completes, so a slow long-poll (a follower's Fetch) never blocks the socket for writing.

Reading is an ``asyncio.Protocol`` feeding the sans-I/O ``FrameDecoder`` (the listener's): no
``StreamReader`` copying every chunk into its buffer and out again, no reader task to wake per
response, which a follower under replication load would otherwise spend much of its event loop on.

Failure model: any socket error, a malformed or unexpected response, or a timeout closes the
connection and fails every request in flight with ``ConnectionError``; the caller reconnects. Nothing
is retried here: what to retry (and after which backoff) is the caller's decision.
"""
from __future__ import annotations

import asyncio
import logging
import ssl
from collections import deque
from typing import Any

from brokers.model import EndPoint
from brokers.protocol import codec
from brokers.protocol.framing import MIN_RESPONSE_FRAME_BYTES, FrameDecoder, ProtocolError
from brokers.protocol.sasl import SASL_AUTHENTICATE, SASL_HANDSHAKE, SASL_PROTOCOLS, SaslClient, SaslClientConfig
from brokers.protocol.scram import ScramError

log = logging.getLogger(__name__)

MAX_RESPONSE_BYTES = 256 * 1024 * 1024


class SaslAuthenticationError(ConnectionError):
    """The broker refused the SASL mechanism or the credentials (the connection is closed); any other
    ConnectionError is the network's or the broker's going away."""


class _ResponseReader(asyncio.Protocol):
    """Frames in, responses handed to the connection; the connection's end reported once."""

    def __init__(self, connection: "KafkaConnection"):
        self._connection = connection
        self._decoder = FrameDecoder(MAX_RESPONSE_BYTES, MIN_RESPONSE_FRAME_BYTES)

    def data_received(self, data: bytes) -> None:
        try:
            frames = self._decoder.feed(data)
        except ProtocolError as exc:
            self._connection.fail(exc)
            return
        for payload in frames:
            if not self._connection.complete(payload):
                return

    def connection_lost(self, exc: Exception | None) -> None:
        self._connection.fail(exc or EOFError("closed by the broker"))


class KafkaConnection:
    """``ssl_context``: TLS to an SSL / SASL_SSL listener (its server name checked if the context says so).
    ``sasl``: authenticate right after connecting (SaslHandshake v1, then SaslAuthenticate rounds), for a
    SASL_PLAINTEXT / SASL_SSL listener; a refusal is a ConnectionError like any other."""

    def __init__(self, host: str, port: int, client_id: str, ssl_context: ssl.SSLContext | None = None,
                 sasl: SaslClientConfig | None = None):
        self.host, self.port, self.client_id = host, port, client_id
        self.ssl_context = ssl_context
        self.sasl = sasl
        self._transport: asyncio.Transport | None = None
        self._pending: deque[tuple[int, int, int, asyncio.Future]] = deque()
        self._correlation_id = 0
        self._closed_error: Exception | None = None

    @property
    def connected(self) -> bool:
        return self._transport is not None and self._closed_error is None

    async def connect(self, timeout: float) -> None:
        loop = asyncio.get_running_loop()
        self._transport, _ = await asyncio.wait_for(
            loop.create_connection(lambda: _ResponseReader(self), self.host, self.port, ssl=self.ssl_context,
                                   server_hostname=self.host if self.ssl_context else None), timeout)
        self._closed_error = None
        if self.sasl is not None:
            await self._authenticate(self.sasl, timeout)

    async def _authenticate(self, config: SaslClientConfig, timeout: float) -> None:
        handshake = await self.request(SASL_HANDSHAKE, 1, codec.build(codec.request_class(SASL_HANDSHAKE, 1),
                                                                       mechanism=config.mechanism), timeout)
        if handshake.error_code != 0:
            self.close(SaslAuthenticationError(f"{self.host}:{self.port} refused SASL mechanism {config.mechanism} "
                                       f"(error {int(handshake.error_code)}; enabled: {list(handshake.mechanisms)})"))
            raise self._closed_error
        client = SaslClient(config)
        token: bytes | None = client.first()
        try:
            while token is not None:
                body = codec.build(codec.request_class(SASL_AUTHENTICATE, 1), auth_bytes=token)
                response = await self.request(SASL_AUTHENTICATE, 1, body, timeout)
                if response.error_code != 0:
                    raise ScramError(f"error {int(response.error_code)}: {response.error_message}")
                token = client.respond(response.auth_bytes)
        except ScramError as exc:
            self.close(SaslAuthenticationError(f"SASL {config.mechanism} authentication with {self.host}:{self.port} "
                                       f"failed: {exc}"))
            raise self._closed_error from None

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
        self._transport.write(frame)
        try:
            return await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            self.close(ConnectionError(f"no response from {self.host}:{self.port} within {timeout:.1f} s"))
            raise self._closed_error from None

    def complete(self, payload: bytes) -> bool:
        """One response frame arrived: resolve the oldest request with it. False (and the connection
        closed) if it is not a valid answer to that request."""
        try:
            if not self._pending:
                raise ProtocolError("a response nobody asked for")
            correlation_id, api_key, api_version, future = self._pending.popleft()
            got, body = codec.decode_response(api_key, api_version, payload)
            if got != correlation_id:
                raise ProtocolError(f"correlation id {got}, expected {correlation_id}")
        except ProtocolError as exc:
            self.fail(exc)
            return False
        if not future.done():
            future.set_result(body)
        return True

    def fail(self, exc: BaseException) -> None:
        self.close(ConnectionError(f"connection to {self.host}:{self.port} failed: {exc}"))

    def close(self, error: Exception | None = None) -> None:
        if self._closed_error is None:
            self._closed_error = error or ConnectionError("connection closed")
        while self._pending:
            future = self._pending.popleft()[3]
            if not future.done():
                future.set_exception(self._closed_error)
        if self._transport is not None:
            self._transport.close()


async def connect_inter_broker(endpoint: EndPoint, client_id: str, ssl_context: ssl.SSLContext | None,
                               sasl: SaslClientConfig | None, timeout_s: float) -> KafkaConnection:
    """A connection to another broker's ``endpoint`` with this broker's inter-broker security: TLS on an SSL or
    SASL_SSL listener (a ConnectionError when this broker has no TLS client config), SASL on a SASL one."""
    tls = endpoint.security_protocol in ("SSL", "SASL_SSL")
    if tls and ssl_context is None:
        raise ConnectionError(f"{endpoint} is a TLS listener, but this broker has no TLS client config")
    connection = KafkaConnection(endpoint.host, endpoint.port, client_id, ssl_context if tls else None,
                                 sasl=sasl if endpoint.security_protocol in SASL_PROTOCOLS else None)
    await connection.connect(timeout_s)
    return connection
