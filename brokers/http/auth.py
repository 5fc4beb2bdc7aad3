"""Who calls the broker's HTTP server, and what they may do there.

A middleware gives every request an ``HttpIdentity`` before its handler runs (``/healthz`` and
``/readyz`` stay open to anyone: probes carry no credentials, and they show no data):

1. ``X-Zkafka-Broker-Auth`` (``brokers.security.control_auth``): another broker of this cluster. A signature that
   does not verify is 401. A broker may do anything, and is the only caller the control endpoints
   (``/control/v1/*``) accept.
2. ``Authorization: Basic`` (RFC 7617): a SCRAM user of the Kafka listeners (``/config/users/<user>``,
   the SCRAM-SHA-512 credential, else the SCRAM-SHA-256 one): the password is checked with PBKDF2 against
   the stored key, off the event loop. Success: ``User:<name>``. Failure (unknown user and wrong password
   alike, an unknown user costs the same PBKDF2) is 401 with ``WWW-Authenticate`` and Kafka's generic
   message, and one log line naming the peer. A password that verified is remembered (keyed by a
   process-local HMAC of it and the credential it matched), so a client that sends it on every request
   pays PBKDF2 once, until the credential changes.
3. Nothing: ``User:ANONYMOUS``, unless ``http.authentication.method=BASIC``, which makes it 401.

Authorization is the Kafka listeners' (``brokers.security.authorizer.AclAuthorizer``, host = the peer address):
handlers ask ``allowed``; without an authorizer everything is allowed.
"""
from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import hmac
import logging
import secrets
import ssl
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Awaitable, Callable

from aiohttp import web

from brokers.protocol.scram import ScramCredential, ScramError, check_password, make_credential
from brokers.security import control_auth
from brokers.security.acls import ANONYMOUS
from brokers.server.context import Authorizer
from brokers.server.sasl import ScramLookup

log = logging.getLogger(__name__)
# PBKDF2 has threads of its own: in asyncio's default executor a flood of wrong passwords (never remembered,
# each up to 16384 iterations) would queue every ZooKeeper call (kazoo runs there) behind the hashing
PASSWORD_CHECKS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="password-check")

OPEN_PATHS = frozenset({"/healthz", "/readyz"})
SCRAM_MECHANISMS = ("SCRAM-SHA-512", "SCRAM-SHA-256")  # the credential basic auth checks, in this order
FAILED = "Authentication failed: Invalid username or password"  # Kafka's message for a bad SASL login
REALM = 'Basic realm="zkafka", charset="UTF-8"'
MAX_REMEMBERED = 4096


@dataclass(frozen=True)
class HttpIdentity:
    principal: str
    broker: bool = False  # a signed request from another broker of the cluster


ANONYMOUS_IDENTITY = HttpIdentity(ANONYMOUS)
BROKER_IDENTITY = HttpIdentity("zkafka:broker", broker=True)


def parse_basic(header: str) -> tuple[str, str]:
    """RFC 7617's ``Basic base64(user ":" password)`` (UTF-8); ValueError naming what is wrong."""
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "basic":
        raise ValueError(f"scheme {scheme[:20]!r}, not Basic")
    try:
        decoded = base64.b64decode(token.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise ValueError("credentials are not base64 of UTF-8") from None
    user, colon, password = decoded.partition(":")
    if not colon:
        raise ValueError("no ':' between user and password")
    return user, password


class Unauthenticated(Exception):
    """The request's credentials are missing (where required) or wrong; the message is for the log."""


@dataclass
class HttpSecurity:
    """The HTTP server's security settings (``brokers.app`` fills them from the broker's config)."""

    control_secret: bytes | None = None  # None: an open control plane (tests of the HTTP layer alone)
    basic_required: bool = False  # http.authentication.method=BASIC
    scram_credential: ScramLookup | None = None
    authorizer: Authorizer | None = None  # the Kafka listeners' AclAuthorizer, or None: everything is allowed
    peer_tls: ssl.SSLContext | None = None  # verifies other brokers' https ports (http.ssl.enabled)
    _remembered: set[tuple[str, str, str, bytes]] = field(default_factory=set)
    _key: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    _decoy: ScramCredential | None = None

    async def identify(self, request: web.Request) -> HttpIdentity:
        signature = request.headers.get(control_auth.HEADER)
        if signature is not None:
            return await self._broker(request, signature)
        header = request.headers.get("Authorization")
        if header is not None:
            try:
                user, password = parse_basic(header)
            except ValueError as exc:
                raise Unauthenticated(f"unreadable Authorization header: {exc}") from None
            if await self.check_basic(user, password):
                return HttpIdentity(f"User:{user}")
            raise Unauthenticated("HTTP basic")
        if self.basic_required:
            raise Unauthenticated("no credentials (http.authentication.method=BASIC)")
        return ANONYMOUS_IDENTITY

    async def _broker(self, request: web.Request, signature: str) -> HttpIdentity:
        if self.control_secret is None:
            return BROKER_IDENTITY
        body = await request.read() if request.can_read_body else b""
        problem = control_auth.verify(self.control_secret, signature, request.method, request.path_qs, body)
        if problem is not None:
            raise Unauthenticated(f"broker signature: {problem}")
        return BROKER_IDENTITY

    async def check_basic(self, user: str, password: str) -> bool:
        """Whether ``password`` is ``user``'s SCRAM password."""
        credential, mechanism, text = None, SCRAM_MECHANISMS[0], ""
        for mechanism in SCRAM_MECHANISMS:
            text = await self.scram_credential(user, mechanism) if self.scram_credential and user else None
            if text:
                try:
                    credential = ScramCredential.parse(text)
                except ScramError as exc:
                    log.warning("the stored %s credential of a user is unusable: %s", mechanism, exc)
                break
        key = (user, mechanism, text or "", hmac.new(self._key, password.encode(), hashlib.sha256).digest())
        if credential is not None and key in self._remembered:
            return True
        ok = await asyncio.get_running_loop().run_in_executor(  # PBKDF2 (the decoy's first one too), off the loop
            PASSWORD_CHECKS, lambda: check_password(mechanism, password, credential or self._decoy_credential()))
        if ok and credential is not None:
            if len(self._remembered) >= MAX_REMEMBERED:
                self._remembered.clear()
            self._remembered.add(key)
        return ok and credential is not None

    def _decoy_credential(self) -> ScramCredential:
        """Checked for an unknown user, so that it costs what a wrong password does."""
        if self._decoy is None:
            self._decoy = make_credential(SCRAM_MECHANISMS[0], secrets.token_urlsafe(16))
        return self._decoy

    def restricts(self, identity: HttpIdentity) -> bool:
        """Whether ``allowed`` can refuse the caller anything: never a broker, nobody without an authorizer."""
        return not identity.broker and self.authorizer is not None

    def allowed(self, identity: HttpIdentity, host: str, operation: int, resource_type: int, name: str) -> bool:
        if identity.broker or self.authorizer is None:
            return True
        return bool(self.authorizer.authorize(identity.principal, host, operation, resource_type, name))


SECURITY_KEY: web.AppKey[HttpSecurity] = web.AppKey("http_security", HttpSecurity)
IDENTITY_KEY: web.RequestKey[HttpIdentity] = web.RequestKey("identity", HttpIdentity)


def identity(request: web.Request) -> HttpIdentity:
    return request.get(IDENTITY_KEY, ANONYMOUS_IDENTITY)


def allowed(request: web.Request, operation: int, resource_type: int, name: str) -> bool:
    """Whether the caller may do ``operation`` on the resource (``brokers.security.acls`` codes)."""
    return request.app[SECURITY_KEY].allowed(identity(request), request.remote or "", operation, resource_type, name)


def unauthorized(message: str = FAILED) -> web.Response:
    return web.json_response({"error_code": 401, "message": message}, status=401,
                             headers={"WWW-Authenticate": REALM})


@web.middleware
async def authenticate(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]):
    if request.path in OPEN_PATHS:
        return await handler(request)
    try:
        request[IDENTITY_KEY] = await request.app[SECURITY_KEY].identify(request)
    except Unauthenticated as exc:
        log.warning("Failed authentication with %s (%s) on %s %s", request.remote, exc, request.method, request.path)
        return unauthorized()
    return await handler(request)


def broker_only(request: web.Request) -> web.Response | None:
    """A 401 unless the caller is a broker of this cluster (or the control plane is open)."""
    security = request.app[SECURITY_KEY]
    if security.control_secret is None or identity(request).broker:
        return None
    log.warning("refused %s %s from %s (%s): only brokers may call the control plane", request.method,
                request.path, request.remote, identity(request).principal)
    return unauthorized("only brokers of this cluster may call the control plane")


def add_security(app: web.Application, security: HttpSecurity) -> None:
    app[SECURITY_KEY] = security
    app.middlewares.append(authenticate)
