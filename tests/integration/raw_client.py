"""A raw Kafka connection for tests that speak one request at a time at an exact version: requests built
with the project's codec (``codec.build`` from a superset of fields), sent over a real socket, responses
decoded with ``codec.decode_response`` and their correlation id checked."""
from __future__ import annotations

import socket
import struct
from typing import Any

from brokers.protocol import codec

_SIZE = struct.Struct(">i")
TIMEOUT = 30.0


class ConnectionClosed(AssertionError):
    """The broker closed the connection instead of answering."""


class RawConnection:
    def __init__(self, host: str, port: int, client_id: str = "api-window", timeout: float = TIMEOUT):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.client_id = client_id
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawConnection:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def send(self, api_key: int, version: int, /, **fields: Any) -> int:
        """Send one request (fields a superset of the version's: ``codec.build`` keeps what it has); its
        correlation id."""
        self.correlation_id += 1
        body = codec.build(codec.request_class(api_key, version), **fields)
        self.sock.sendall(codec.encode_request(api_key, version, self.correlation_id, self.client_id, body))
        return self.correlation_id

    def send_bytes(self, payload: bytes) -> None:
        """One size-prefixed frame of raw bytes (SaslHandshake v0's tokens)."""
        self.sock.sendall(_SIZE.pack(len(payload)) + payload)

    def read_frame(self) -> bytes | None:
        """The next response frame's payload; None once the broker has closed the connection."""
        prefix = self._read(4)
        if prefix is None:
            return None
        payload = self._read(_SIZE.unpack(prefix)[0])
        if payload is None:
            raise ConnectionClosed("the connection closed in the middle of a response")
        return payload

    def _read(self, size: int) -> bytes | None:
        chunks, missing = [], size
        while missing:
            chunk = self.sock.recv(missing)
            if not chunk:
                return None
            chunks.append(chunk)
            missing -= len(chunk)
        return b"".join(chunks)

    def request(self, api_key: int, version: int, /, **fields: Any) -> Any:
        """One round trip: the decoded response body (its correlation id checked); ConnectionClosed if the
        broker closed the connection instead."""
        correlation_id = self.send(api_key, version, **fields)
        frame = self.read_frame()
        if frame is None:
            raise ConnectionClosed(f"the broker closed the connection on API key {api_key} v{version}")
        answered, body = codec.decode_response(api_key, version, frame)
        assert answered == correlation_id, f"correlation id {answered}, sent {correlation_id}"
        return body
