"""The broker's HTTP server (aiohttp.web), ARCHITECTURE §5: the control plane (below), and what
people use: ``/healthz``, ``/readyz`` and ``/api/v1`` (``admin_api``), ``/metrics`` (``metrics``), the
REST proxy (``rest_proxy``) and the dashboard at ``/`` (``dashboard``).

Control endpoints take and return msgpack (``application/msgpack``), one per ``brokers.control``
API: ``POST /control/v1/leader-and-isr``, ``/update-metadata``, ``/stop-replica``,
``/controlled-shutdown``, ``/verify-txn`` (a partition leader asking the transaction coordinator,
KIP-890). The body is decoded into the request dataclass and handed to the matching
``ControlRequestHandler`` method; fencing (controller and broker epochs) is the handler's job, answered
inside the response's ``error_code`` as Kafka does. A body that does not decode is a 400 with a text
message; a handler that raises is a 500. Either way the server keeps serving. Only another broker's
signed request reaches a control handler (``brokers.http.auth.broker_only``): anyone else gets a 401.
"""
from __future__ import annotations

import logging
import ssl
from typing import Awaitable, Callable

from aiohttp import web

from brokers.control import CONTROL_APIS, ControlApi, ControlRequestHandler, decode, encode
from brokers.http.admin_api import READER_KEY, add_admin_routes
from brokers.http.auth import HttpSecurity, add_security, broker_only
from brokers.http.dashboard import add_dashboard_routes
from brokers.http.metrics import add_metrics_route
from brokers.http.ports import HttpBroker
from brokers.http.rest_proxy import add_proxy_routes

log = logging.getLogger(__name__)

MSGPACK = "application/msgpack"
HANDLER_KEY: web.AppKey[ControlRequestHandler] = web.AppKey("control_handler", ControlRequestHandler)
# UpdateMetadata to a broker of a large cluster carries every partition: allow more than aiohttp's 1 MiB.
MAX_BODY_BYTES = 64 * 1024 * 1024


def _control_route(api: ControlApi) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def handle(request: web.Request) -> web.StreamResponse:
        refused = broker_only(request)
        if refused is not None:
            return refused
        body = await request.read()
        try:
            message = decode(api.request, body)
        except ValueError as exc:
            log.warning("bad %s body from %s: %s", api.path, request.remote, exc)
            return web.Response(status=400, text=f"malformed {api.request.__name__}: {exc}\n")
        handler = request.app[HANDLER_KEY]
        try:
            response = await getattr(handler, api.method)(message)
        except Exception as exc:  # the handler's bug must not take the server down
            log.exception("%s handler failed", api.method)
            return web.Response(status=500, text=f"{api.method} failed: {type(exc).__name__}: {exc}\n")
        if not isinstance(response, api.response):
            log.error("%s handler returned %s, not %s", api.method, type(response).__name__, api.response.__name__)
            return web.Response(status=500, text=f"{api.method} returned {type(response).__name__}\n")
        return web.Response(body=encode(response), content_type=MSGPACK)

    handle.__name__ = f"handle_{api.method}"
    return handle


def add_control_routes(app: web.Application, handler: ControlRequestHandler) -> None:
    """Register the control endpoints for ``handler`` on ``app``."""
    app[HANDLER_KEY] = handler
    for api in CONTROL_APIS:
        app.router.add_post(api.path, _control_route(api))


def create_app(broker: HttpBroker, security: HttpSecurity | None = None) -> web.Application:
    """The broker's web application: control plane, health and readiness, admin API, /metrics, the REST
    proxy and the dashboard. ``broker`` handles the control requests and is read by the rest
    (``brokers.app.BrokerServer``); ``security`` who may call what (``brokers.http.auth``; default: anyone,
    anything)."""
    app = web.Application(client_max_size=MAX_BODY_BYTES)
    add_security(app, security or HttpSecurity())
    add_control_routes(app, broker)
    add_admin_routes(app, broker)
    add_metrics_route(app, broker, app[READER_KEY])
    add_proxy_routes(app)
    add_dashboard_routes(app)
    return app


class HttpServer:
    """Serves ``create_app(broker)`` on ``host:port``; port 0 binds a free port, then ``.port`` tells it.
    With ``ssl_context`` (``http.ssl.enabled``) the port speaks HTTPS only."""

    def __init__(self, broker: HttpBroker, host: str = "127.0.0.1", port: int = 0,
                 *, shutdown_timeout: float = 5.0, security: HttpSecurity | None = None,
                 ssl_context: ssl.SSLContext | None = None):
        self.broker = broker
        self.ssl_context = ssl_context
        self.security = security or HttpSecurity()
        self.host = host
        self._requested_port = port
        self._shutdown_timeout = shutdown_timeout
        self._runner: web.AppRunner | None = None
        self._port: int | None = None

    @property
    def port(self) -> int:
        """The bound port once started; the configured one before."""
        return self._port if self._port is not None else self._requested_port

    @property
    def scheme(self) -> str:
        return "https" if self.ssl_context is not None else "http"

    @property
    def running(self) -> bool:
        return self._runner is not None

    async def start(self) -> None:
        if self._runner is not None:
            raise RuntimeError("HTTP server already started")
        runner = web.AppRunner(create_app(self.broker, self.security), shutdown_timeout=self._shutdown_timeout)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.host, self._requested_port, ssl_context=self.ssl_context)
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self._port = runner.addresses[0][1]
        log.info("HTTP server listening on %s://%s:%d", self.scheme, self.host, self._port)

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
            log.info("HTTP server on port %s stopped", self._port)
