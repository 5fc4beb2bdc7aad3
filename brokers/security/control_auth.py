"""Broker-to-broker HTTP requests, signed: only brokers may call the control plane.

Every request one broker sends another over HTTP (the controller's LeaderAndIsr / UpdateMetadata /
StopReplica, a broker's ControlledShutdown, the admin API's fan-out to ``/api/v1/local/*``) carries

    X-Zkafka-Broker-Auth: t=<unix ms>,sig=<hex HMAC-SHA256>

over ``METHOD "\\n" path?query "\\n" t "\\n"`` followed by the SHA-256 of the body, keyed with the
cluster's control-plane secret (``control.plane.secret``, or the one the first broker generated and
stored in ZooKeeper, ``brokers.zk.paths.ControlPlaneSecretZNode``). A receiver accepts the request when
the signature matches and ``t`` is within ``MAX_SKEW_MS`` of its own clock. The secret never travels;
a captured request replays at most within that window, and every control request is fenced by the
controller and broker epochs anyway (a replay of a stale one is answered STALE_CONTROLLER_EPOCH).

Pure functions: the HTTP shells (``brokers.http.auth``, ``coordinator.channel``) call them.
"""
from __future__ import annotations

import hashlib
import hmac
import time

HEADER = "X-Zkafka-Broker-Auth"
MAX_SKEW_MS = 5 * 60 * 1000


def _message(method: str, path_qs: str, timestamp_ms: int, body: bytes) -> bytes:
    return f"{method.upper()}\n{path_qs}\n{timestamp_ms}\n".encode() + hashlib.sha256(body).digest()


def sign(secret: bytes, method: str, path_qs: str, body: bytes = b"", now_ms: int | None = None) -> str:
    """The header value for one request (``path_qs``: the path with its query string, as sent)."""
    timestamp = int(time.time() * 1000) if now_ms is None else now_ms
    mac = hmac.new(secret, _message(method, path_qs, timestamp, body), hashlib.sha256).hexdigest()
    return f"t={timestamp},sig={mac}"


def verify(secret: bytes, header: str, method: str, path_qs: str, body: bytes = b"",
           now_ms: int | None = None) -> str | None:
    """None when ``header`` signs this request with ``secret``; else why not (for the receiver's log)."""
    fields = dict(part.partition("=")[::2] for part in header.split(","))
    try:
        timestamp = int(fields["t"])
        signature = bytes.fromhex(fields["sig"])
    except (KeyError, ValueError):
        return "malformed signature header"
    now = int(time.time() * 1000) if now_ms is None else now_ms
    if abs(now - timestamp) > MAX_SKEW_MS:
        return f"signature time {timestamp} is more than {MAX_SKEW_MS // 1000} s from this broker's clock"
    expected = hmac.new(secret, _message(method, path_qs, timestamp, body), hashlib.sha256).digest()
    if not hmac.compare_digest(expected, signature):
        return "signature does not match (another cluster's secret?)"
    return None


def signed_headers(secret: bytes | None, method: str, path_qs: str, body: bytes = b"") -> dict[str, str]:
    """``{HEADER: ...}`` for a request to another broker; empty without a secret (an open control plane)."""
    return {HEADER: sign(secret, method, path_qs, body)} if secret is not None else {}
