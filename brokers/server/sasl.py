"""SASL on SASL_PLAINTEXT / SASL_SSL connections: the thin I/O shell around ``brokers.protocol.sasl``.

``session_of(connection)`` runs first for every frame, synchronously, when its task starts (tasks start in
arrival order): on a SASL connection it creates the connection's ``SaslSession`` on first use. After
SaslHandshake v0 every frame is a raw token (``handle_raw_token``); otherwise ``admit`` raises
ProtocolError (the listener closes the connection, Kafka's "Unexpected Kafka request of type ... during
SASL handshake") for any request the session's state does not admit, a frame that is no Kafka request
at all (a raw token before SaslHandshake v0) included. PLAINTEXT connections carry no session and pay
one attribute lookup and a tuple test.

SaslHandshake and SaslAuthenticate of a session run one at a time, in order (the session's lock: a
SCRAM client-first awaits its credential from ZooKeeper). A failed handshake or SaslAuthenticate is
answered, then the connection closes (a done-callback of the request's task, registered after the
listener's own, so the answer is written first) with one log line naming the peer and the mechanism;
a failed raw token (v0) closes the connection unanswered, with the same line. On success the
connection's principal becomes ``User:<name>``.

On connections without SASL (PLAINTEXT, or already authenticated) both APIs answer ILLEGAL_SASL_STATE,
as Kafka's KafkaApis does.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from brokers.protocol import codec
from brokers.protocol.api_versions import ApiKey, api_name
from brokers.protocol.errors import ErrorCode
from brokers.protocol.framing import ProtocolError, RequestHeader, frame_size_prefix
from brokers.protocol.sasl import (
    PLAIN,
    PLAIN_MODULE,
    SASL_PROTOCOLS,
    SUPPORTED_MECHANISMS,
    AuthenticationFailed,
    SaslClientConfig,
    SaslEvent,
    SaslState,
    admits,
    check_plain,
    failure_message,
    handshake_event,
    next_state,
    parse_jaas,
    reads_raw_tokens,
)
from brokers.protocol.scram import ScramCredential, ScramError, ScramServer

log = logging.getLogger(__name__)

NOT_A_REQUEST = "no Kafka request: a raw SASL token needs SaslHandshake v0 first"
# (user, mechanism) -> the user's stored credential string for it (``/config/users/<user>``), or None
ScramLookup = Callable[[str, str], Awaitable[str | None]]


@dataclass
class SaslServerConfig:
    """One SASL listener's settings: ``sasl.enabled.mechanisms``, the PLAIN users (``user_<name>``
    options of ``listener.name.<l>.plain.sasl.jaas.config``) and where SCRAM credentials come from."""

    enabled_mechanisms: tuple[str, ...]
    plain_users: dict[str, str] = field(default_factory=dict)
    scram_credential: ScramLookup | None = None


def server_config(enabled: list[str], plain_jaas: str | None, scram_credential: ScramLookup | None) -> SaslServerConfig:
    """ValueError naming the problem (an unsupported mechanism, a malformed JAAS config)."""
    unsupported = [m for m in enabled if m not in SUPPORTED_MECHANISMS]
    if unsupported:
        raise ValueError(f"sasl.enabled.mechanisms: {', '.join(unsupported)} not supported "
                         f"(supported: {', '.join(SUPPORTED_MECHANISMS)})")
    users: dict[str, str] = {}
    if plain_jaas:
        module, options = parse_jaas(plain_jaas)
        if module != PLAIN_MODULE:
            raise ValueError(f"the PLAIN JAAS config must use {PLAIN_MODULE}, not {module}")
        users = {key[len("user_"):]: value for key, value in options.items() if key.startswith("user_")}
    return SaslServerConfig(tuple(enabled), users, scram_credential)


class SaslSession:
    """The SASL state of one connection."""

    def __init__(self) -> None:
        self.state = SaslState.HANDSHAKE_OR_VERSIONS_REQUEST
        self.mechanism: str | None = None
        self.scram: ScramServer | None = None
        self.lock = asyncio.Lock()

    def move(self, event: SaslEvent) -> None:
        self.state = next_state(self.state, event)


    @property
    def reads_raw_tokens(self) -> bool:
        return reads_raw_tokens(self.state)


def session_of(connection: Any) -> SaslSession | None:
    """The connection's session if it is a SASL connection (None otherwise)."""
    if getattr(connection, "security_protocol", "PLAINTEXT") not in SASL_PROTOCOLS:
        return None
    found = getattr(connection, "sasl", None)
    if found is None:
        found = connection.sasl = SaslSession()
    return found


def admit(session: SaslSession, api_key: ApiKey | None, key: int) -> None:
    """ProtocolError if a request of ``key`` (``api_key``: None if unknown) may not run in the
    session's state."""
    if not admits(session.state, api_key):
        what = api_name(api_key) if api_key is not None else f"{key} ({NOT_A_REQUEST})"
        raise ProtocolError(f"Unexpected Kafka request of type {what} during SASL handshake "
                            f"(state {session.state.value})")
    if api_key == ApiKey.API_VERSIONS and session.state is not SaslState.COMPLETE:
        session.move(SaslEvent.API_VERSIONS)


async def handle(config: SaslServerConfig | None, session: SaslSession, connection: Any, header: RequestHeader,
                 request: Any) -> Any:
    """SaslHandshake or SaslAuthenticate on a SASL connection that has not completed authentication."""
    async with session.lock:
        if session.state is SaslState.FAILED:
            raise ProtocolError("request after a failed SASL authentication")
        if header.api_key == ApiKey.SASL_AUTHENTICATE:
            return await _authenticate(config, session, connection, header, request.auth_bytes)
        return _handshake(config, session, connection, header, request.mechanism)


def _handshake(config: SaslServerConfig | None, session: SaslSession, connection: Any, header: RequestHeader,
               mechanism: str) -> Any:
    enabled = config.enabled_mechanisms if config else ()
    cls = codec.response_class(header.api_key, header.api_version)
    event = handshake_event(header.api_version, mechanism in enabled)
    session.move(event)
    if event is SaslEvent.BAD_MECHANISM:
        _close_after_answer(connection, f"unsupported SASL mechanism {mechanism!r}")
        return codec.build(cls, error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=enabled)
    session.mechanism = mechanism
    return codec.build(cls, error_code=ErrorCode.NONE, mechanisms=enabled)


async def _authenticate(config: SaslServerConfig | None, session: SaslSession, connection: Any,
                        header: RequestHeader, token: bytes) -> Any:
    cls = codec.response_class(header.api_key, header.api_version)
    mechanism = session.mechanism or "?"
    challenge = await _evaluate(config, session, connection, token)
    if challenge is None:
        _close_after_answer(connection, _failure(mechanism))
        return codec.build(cls, error_code=ErrorCode.SASL_AUTHENTICATION_FAILED,
                           error_message=failure_message(mechanism))
    return codec.build(cls, error_code=ErrorCode.NONE, auth_bytes=challenge)


async def handle_raw_token(config: SaslServerConfig | None, session: SaslSession, connection: Any,
                           token: bytes) -> list[bytes]:
    """A token framed raw (after SaslHandshake v0): the server's token framed the same way. A failure
    is not answered: ProtocolError closes the connection, as Kafka closes it for v0 clients."""
    async with session.lock:
        if not session.reads_raw_tokens:
            raise ProtocolError(f"raw SASL token in state {session.state.value}")
        challenge = await _evaluate(config, session, connection, token)
        if challenge is None:
            raise ProtocolError(_failure(session.mechanism or "?"))
        return [frame_size_prefix(len(challenge)) + challenge]


async def _evaluate(config: SaslServerConfig | None, session: SaslSession, connection: Any,
                    token: bytes) -> bytes | None:
    """One client token through the mechanism and the state machine: the server's answer, or None if
    authentication failed (the session is FAILED then)."""
    try:
        challenge, user = await _step(config, session, token)
    except (AuthenticationFailed, ScramError, UnicodeDecodeError, ValueError) as exc:
        session.move(SaslEvent.AUTH_FAILED)
        log.debug("SASL %s from %s failed: %s", session.mechanism, getattr(connection, "peer", "?"), exc)
        return None
    if user is None:
        session.move(SaslEvent.CHALLENGE)
    else:
        session.move(SaslEvent.AUTHENTICATED)
        connection.principal = f"User:{user}"
        log.debug("authenticated %s as User:%s (SASL %s)", getattr(connection, "peer", "?"), user,
                  session.mechanism)
    return challenge


def _failure(mechanism: str) -> str:
    """The one log line's reason (the listener names the peer)."""
    return f"failed authentication with SASL mechanism {mechanism}"


async def _step(config: SaslServerConfig | None, session: SaslSession, token: bytes) -> tuple[bytes, str | None]:
    """One token in, (the answer, the user once authenticated) out; raises on any failure."""
    if config is None or session.mechanism is None:
        raise AuthenticationFailed("no SASL mechanism")
    if session.mechanism == PLAIN:
        return b"", check_plain(token, config.plain_users)
    if session.scram is None:
        session.scram = ScramServer(session.mechanism)
        user = session.scram.client_first(token)
        stored = await config.scram_credential(user, session.mechanism) if config.scram_credential else None
        credential = None
        if stored:
            try:
                credential = ScramCredential.parse(stored)
            except ScramError as exc:
                log.error("the stored %s credential of user %r is unusable: %s", session.mechanism, user, exc)
        return session.scram.server_first(credential), None
    return session.scram.client_final(token), session.scram.username


def _close_after_answer(connection: Any, reason: str) -> None:
    """Close the connection once this request's answer is written: the listener writes answers in a
    done-callback of the request's task registered when the task was made; this one comes after it."""
    task = asyncio.current_task()
    close = getattr(connection, "close", None)
    if task is not None and close is not None:
        task.add_done_callback(lambda _task: close(reason))


async def handle_illegal_state(_context: Any, header: RequestHeader, _request: Any) -> Any:
    """SaslHandshake / SaslAuthenticate where no SASL exchange is going on (PLAINTEXT, or done)."""
    cls = codec.response_class(header.api_key, header.api_version)
    return codec.build(cls, error_code=ErrorCode.ILLEGAL_SASL_STATE,
                       error_message="Unexpected SASL request: no SASL exchange on this connection")


def listener_config(broker: Any, listener: str, security_protocol: str,
                    scram_credential: ScramLookup | None) -> SaslServerConfig | None:
    """A SASL listener's SaslServerConfig from the broker config (None for other protocols); ValueError
    naming the key for a bad one."""
    if security_protocol not in SASL_PROTOCOLS:
        return None
    try:
        return server_config(broker["sasl.enabled.mechanisms"], broker.sasl_jaas_config(listener, PLAIN),
                             scram_credential)
    except ValueError as exc:
        raise ValueError(f"listener {listener}: {exc}") from None


def inter_broker_client_config(broker: Any) -> SaslClientConfig | None:
    """The broker's own credentials when ``inter.broker.listener.name`` is a SASL listener (None
    otherwise): ``username``/``password`` of that listener's JAAS config for
    ``sasl.mechanism.inter.broker.protocol``. ValueError naming the key if unusable."""
    endpoint = broker.inter_broker_endpoint
    if endpoint is None or endpoint.security_protocol not in SASL_PROTOCOLS:
        return None
    name = endpoint.listener
    mechanism = broker["sasl.mechanism.inter.broker.protocol"]
    if mechanism not in SUPPORTED_MECHANISMS:
        raise ValueError(f"sasl.mechanism.inter.broker.protocol: {mechanism} is not supported "
                         f"(supported: {', '.join(SUPPORTED_MECHANISMS)})")
    if mechanism not in broker["sasl.enabled.mechanisms"]:
        raise ValueError(f"sasl.mechanism.inter.broker.protocol: {mechanism} is not in sasl.enabled.mechanisms")
    key = f"listener.name.{name.lower()}.{mechanism.lower()}.sasl.jaas.config"
    jaas = broker.sasl_jaas_config(name, mechanism)
    if not jaas:
        raise ValueError(f"{key} is required: the inter-broker listener {name} is {endpoint.security_protocol}")
    _module, options = parse_jaas(jaas)
    if not options.get("username") or not options.get("password"):
        raise ValueError(f"{key}: username and password are required for inter-broker SASL")
    return SaslClientConfig(mechanism, options["username"], options["password"])
