"""ControllerChannelManager: the controller's per-broker request queues (Kafka's ControllerChannelManager).

One queue and one asyncio task per live broker. A broker's task sends its queue in order, one request
at a time, as an HTTP POST of the msgpack-encoded request to the broker's control endpoint
(``brokers.control.CONTROL_APIS`` picks the path by request type). Like Kafka, a request that fails on
the network (connection refused, reset, timeout) or with a server error (5xx) is retried with backoff
(50 ms doubling up to 1 s) for as long as the broker is in the channel; ``remove_broker`` (the broker
died) abandons everything queued for it. A 4xx means the broker will never accept that body, so it is
logged and dropped and the queue moves on. On success the response is decoded and handed to the
request's callback, a plain function run on the event loop. A broker registered with an https port is
reached over TLS, its certificate checked with ``ssl_context`` (``http.ssl.enabled``; the system's CAs
without one).

Only this module of ``coordinator`` imports aiohttp (ARCHITECTURE §2).
"""
from __future__ import annotations

import asyncio
import logging
import ssl
from dataclasses import dataclass, field
from typing import Any, Callable

import aiohttp

from brokers.control import ControlRequest, api_for, control_base_url, decode, encode
from brokers.model import BrokerInfo
from brokers.security.control_auth import signed_headers

log = logging.getLogger(__name__)

Callback = Callable[[Any], None]
MSGPACK = "application/msgpack"


@dataclass
class _Pending:
    request: ControlRequest
    callback: Callback | None


@dataclass
class _BrokerChannel:
    info: BrokerInfo
    queue: asyncio.Queue[_Pending] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None
    sent: int = 0  # requests answered (callback called, if any)
    failures: int = 0  # attempts that failed and were retried
    dropped: int = 0  # requests given up on (4xx, undecodable response)
    in_flight: bool = False
    last_error: str | None = None


class ControllerChannelManager:
    """Per-broker ordered delivery of control requests, with retry while the broker is alive."""

    def __init__(self, controller_id: int = -1, *, request_timeout: float = 30.0,
                 backoff_initial: float = 0.05, backoff_max: float = 1.0, secret: bytes | None = None,
                 ssl_context: ssl.SSLContext | None = None):
        self.controller_id = controller_id
        self.ssl_context = ssl_context  # verifies the brokers' https ports (brokers.server.tls.http_contexts)
        self.secret = secret  # the control-plane secret every request is signed with (brokers.security.control_auth)
        self.request_timeout = request_timeout
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self._brokers: dict[int, _BrokerChannel] = {}
        self._session: aiohttp.ClientSession | None = None
        self._closed = False

    # -- membership --------------------------------------------------------------------------
    def add_broker(self, broker: BrokerInfo) -> None:
        """Start a queue for ``broker``; for a broker already present, only its address is refreshed."""
        if self._closed:
            raise RuntimeError("channel manager is closed")
        existing = self._brokers.get(broker.id)
        if existing is not None:
            existing.info = broker
            return
        channel = _BrokerChannel(broker)
        self._brokers[broker.id] = channel
        channel.task = asyncio.get_running_loop().create_task(
            self._run(broker.id, channel), name=f"controller-{self.controller_id}-to-broker-{broker.id}")
        log.debug("controller %d: channel to broker %d added", self.controller_id, broker.id)

    def remove_broker(self, broker_id: int) -> None:
        """Forget ``broker_id``: its worker stops and queued requests are abandoned (no callbacks)."""
        channel = self._brokers.pop(broker_id, None)
        if channel is None:
            return
        abandoned = channel.queue.qsize() + (1 if channel.in_flight else 0)
        if channel.task is not None:
            channel.task.cancel()
        log.info("controller %d: channel to broker %d removed (%d requests abandoned)",
                 self.controller_id, broker_id, abandoned)

    def brokers(self) -> list[int]:
        return sorted(self._brokers)

    # -- sending -----------------------------------------------------------------------------
    def send(self, broker_id: int, request: ControlRequest, callback: Callback | None = None) -> None:
        """Queue ``request`` for ``broker_id``; ``callback(response)`` runs when it is answered."""
        api_for(request)  # TypeError now, not in the worker, for something that is not a control request
        channel = self._brokers.get(broker_id)
        if channel is None:
            log.warning("controller %d: not sending %s to broker %d, which is not in the channel",
                        self.controller_id, type(request).__name__, broker_id)
            return
        channel.queue.put_nowait(_Pending(request, callback))

    def describe(self) -> dict[int, dict[str, Any]]:
        """Per-broker counters (JSON-serialisable), for /healthz and tests."""
        return {b: {"queued": c.queue.qsize(), "in_flight": c.in_flight, "sent": c.sent, "failures": c.failures,
                    "dropped": c.dropped, "last_error": c.last_error} for b, c in sorted(self._brokers.items())}

    async def close(self) -> None:
        """Stop every worker (pending requests are abandoned) and close the HTTP session."""
        self._closed = True
        channels, self._brokers = list(self._brokers.values()), {}
        tasks = [c.task for c in channels if c.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    # -- workers -----------------------------------------------------------------------------
    def _http(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(ssl=self.ssl_context) if self.ssl_context is not None else None
            self._session = aiohttp.ClientSession(headers={"Content-Type": MSGPACK, "Accept": MSGPACK},
                                                  connector=connector)
        return self._session

    async def _run(self, broker_id: int, channel: _BrokerChannel) -> None:
        while True:
            pending = await channel.queue.get()
            channel.in_flight = True
            try:
                response = await self._deliver(broker_id, channel, pending.request)
            finally:
                channel.in_flight = False
            if response is None:
                continue
            channel.sent += 1
            if pending.callback is not None:
                try:
                    pending.callback(response)
                except Exception:
                    log.exception("controller %d: callback for %s to broker %d failed", self.controller_id,
                                  type(pending.request).__name__, broker_id)

    async def _deliver(self, broker_id: int, channel: _BrokerChannel, request: ControlRequest) -> Any | None:
        """POST until answered; None if the request is dropped. Cancellation ends it (broker removed)."""
        api = api_for(request)
        body = encode(request)
        timeout = aiohttp.ClientTimeout(total=self.request_timeout)
        backoff = self.backoff_initial
        attempts = 0
        while True:
            attempts += 1
            try:
                url = control_base_url(channel.info) + api.path
                headers = signed_headers(self.secret, "POST", api.path, body)  # signed now: its clock counts
                async with self._http().post(url, data=body, timeout=timeout, headers=headers) as http_response:
                    status, payload = http_response.status, await http_response.read()
            except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as exc:
                error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            else:
                if 200 <= status < 300:
                    try:
                        response = decode(api.response, payload)
                    except ValueError as exc:
                        channel.dropped += 1
                        log.error("controller %d: broker %d answered %s with an undecodable body (%s); dropped",
                                  self.controller_id, broker_id, api.method, exc)
                        return None
                    if attempts > 1:
                        log.info("controller %d: %s to broker %d delivered after %d attempts",
                                 self.controller_id, api.method, broker_id, attempts)
                    channel.last_error = None
                    return response
                text = payload[:500].decode("utf-8", "replace").strip()
                if 400 <= status < 500:
                    channel.dropped += 1
                    log.error("controller %d: broker %d rejected %s with HTTP %d (%s); dropped, not retried",
                              self.controller_id, broker_id, api.method, status, text)
                    return None
                error = f"HTTP {status}: {text}"
            channel.failures += 1
            channel.last_error = error
            level = logging.WARNING if attempts == 1 or attempts % 20 == 0 else logging.DEBUG
            log.log(level, "controller %d: %s to broker %d failed (attempt %d: %s); retrying in %.0f ms",
                    self.controller_id, api.method, broker_id, attempts, error, backoff * 1000)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, self.backoff_max)
