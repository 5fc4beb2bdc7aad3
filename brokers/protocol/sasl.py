"""SASL on a Kafka connection (Kafka's SaslServerAuthenticator / SaslClientAuthenticator), sans-I/O.

The per-connection state machine is two tables: ``TRANSITIONS``, (state, event) -> next state, and
``ADMITTED``, the frames each state reads; anything outside them is illegal and closes the connection.
Kafka's states, plus the one its ``enableKafkaSaslAuthenticateHeaders`` flag hides::

    HANDSHAKE_OR_VERSIONS_REQUEST  ApiVersions -> HANDSHAKE_REQUEST, SaslHandshake v1 -> AUTHENTICATE,
                                   SaslHandshake v0 -> AUTHENTICATE_RAW
    HANDSHAKE_REQUEST              ApiVersions (again), or SaslHandshake as above
    AUTHENTICATE                   SaslAuthenticate -> AUTHENTICATE (more rounds) | COMPLETE | FAILED
    AUTHENTICATE_RAW               raw tokens -> AUTHENTICATE_RAW (more rounds) | COMPLETE | FAILED
    COMPLETE                       every request (the principal is "User:<name>")
    FAILED                         nothing: the connection closes

SaslHandshake v1 (Kafka 1.0+, KIP-152) carries the tokens in SaslAuthenticate requests, failures answered
with SASL_AUTHENTICATION_FAILED before the connection closes. SaslHandshake v0 (KIP-43, Java clients
before 1.0, Sarama below ``V1_0_0_0``) is followed by the tokens as raw frames: the same 4-byte size
prefix, no request header; the server answers each with its token framed the same way (PLAIN's empty
answer is four zero bytes) and answers a failure by closing the connection. In AUTHENTICATE_RAW every
frame is a token, as in Kafka: a Kafka request sent there is read as a token and fails as one. Before
the handshake every frame is a Kafka request, so a raw token there is not one and closes the connection.
An unsupported mechanism in SaslHandshake answers UNSUPPORTED_SASL_MECHANISM (with the enabled list)
and fails the connection too.

PLAIN (RFC 4616): one token ``authzid NUL user NUL password``, authzid empty or the user itself; users
are the ``user_<name>="<password>"`` options of the listener's PlainLoginModule JAAS config.
SCRAM: ``brokers.protocol.scram``. Failures never say why (no "unknown user"): the caller answers
SASL_AUTHENTICATION_FAILED with ``failure_message(mechanism)``.
"""
from __future__ import annotations

import enum
import hmac
import re
from dataclasses import dataclass

from brokers.protocol.api_versions import ApiKey
from brokers.protocol.scram import HASHES, ScramClient

SASL_HANDSHAKE, SASL_AUTHENTICATE = ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
PLAIN = "PLAIN"
SUPPORTED_MECHANISMS = (PLAIN, *HASHES)  # PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"


class SaslState(enum.Enum):
    HANDSHAKE_OR_VERSIONS_REQUEST = "HANDSHAKE_OR_VERSIONS_REQUEST"
    HANDSHAKE_REQUEST = "HANDSHAKE_REQUEST"
    AUTHENTICATE = "AUTHENTICATE"
    AUTHENTICATE_RAW = "AUTHENTICATE_RAW"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


class SaslEvent(enum.Enum):
    API_VERSIONS = "ApiVersions"
    HANDSHAKE = "SaslHandshake v1 with an enabled mechanism"
    HANDSHAKE_V0 = "SaslHandshake v0 with an enabled mechanism"
    BAD_MECHANISM = "SaslHandshake with a mechanism not enabled"
    CHALLENGE = "a token answered with a challenge"
    AUTHENTICATED = "a token completed authentication"
    AUTH_FAILED = "a token failed authentication"


# The frame AUTHENTICATE_RAW reads: a token with no request header (SaslHandshake v0's flow).
RAW_TOKEN = "raw SASL token"

S, E = SaslState, SaslEvent
TRANSITIONS: dict[tuple[SaslState, SaslEvent], SaslState] = {
    (S.HANDSHAKE_OR_VERSIONS_REQUEST, E.API_VERSIONS): S.HANDSHAKE_REQUEST,
    (S.HANDSHAKE_OR_VERSIONS_REQUEST, E.HANDSHAKE): S.AUTHENTICATE,
    (S.HANDSHAKE_OR_VERSIONS_REQUEST, E.HANDSHAKE_V0): S.AUTHENTICATE_RAW,
    (S.HANDSHAKE_OR_VERSIONS_REQUEST, E.BAD_MECHANISM): S.FAILED,
    (S.HANDSHAKE_REQUEST, E.API_VERSIONS): S.HANDSHAKE_REQUEST,
    (S.HANDSHAKE_REQUEST, E.HANDSHAKE): S.AUTHENTICATE,
    (S.HANDSHAKE_REQUEST, E.HANDSHAKE_V0): S.AUTHENTICATE_RAW,
    (S.HANDSHAKE_REQUEST, E.BAD_MECHANISM): S.FAILED,
    (S.AUTHENTICATE, E.CHALLENGE): S.AUTHENTICATE,
    (S.AUTHENTICATE, E.AUTHENTICATED): S.COMPLETE,
    (S.AUTHENTICATE, E.AUTH_FAILED): S.FAILED,
    (S.AUTHENTICATE_RAW, E.CHALLENGE): S.AUTHENTICATE_RAW,
    (S.AUTHENTICATE_RAW, E.AUTHENTICATED): S.COMPLETE,
    (S.AUTHENTICATE_RAW, E.AUTH_FAILED): S.FAILED,
}
# The frames each state reads: Kafka requests by API key, or RAW_TOKEN (COMPLETE: every request).
ADMITTED: dict[SaslState, frozenset[ApiKey | str]] = {
    S.HANDSHAKE_OR_VERSIONS_REQUEST: frozenset({ApiKey.API_VERSIONS, SASL_HANDSHAKE}),
    S.HANDSHAKE_REQUEST: frozenset({ApiKey.API_VERSIONS, SASL_HANDSHAKE}),
    S.AUTHENTICATE: frozenset({SASL_AUTHENTICATE}),
    S.AUTHENTICATE_RAW: frozenset({RAW_TOKEN}),
    S.FAILED: frozenset(),
}
del S, E


class IllegalSaslState(Exception):
    """A request or move the state machine does not allow; the connection must be closed."""


class AuthenticationFailed(Exception):
    """Bad credentials or a malformed token; the message is for the broker's log only."""


def next_state(state: SaslState, event: SaslEvent) -> SaslState:
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise IllegalSaslState(f"{event.value} is not allowed in SASL state {state.value}") from None


def admits(state: SaslState, frame: ApiKey | str | None) -> bool:
    """Whether ``state`` reads ``frame``: a Kafka request's API key (None: not a request this broker
    knows) or RAW_TOKEN."""
    if state is SaslState.COMPLETE:
        return frame != RAW_TOKEN
    return frame in ADMITTED[state]


def reads_raw_tokens(state: SaslState) -> bool:
    """Whether the next frame is a raw token rather than a Kafka request (after SaslHandshake v0)."""
    return RAW_TOKEN in ADMITTED.get(state, ())


def handshake_event(version: int, mechanism_enabled: bool) -> SaslEvent:
    """SaslHandshake's move: v0 leads to raw tokens, v1 to SaslAuthenticate requests."""
    if not mechanism_enabled:
        return SaslEvent.BAD_MECHANISM
    return SaslEvent.HANDSHAKE_V0 if version == 0 else SaslEvent.HANDSHAKE


def failure_message(mechanism: str) -> str:
    """Kafka's generic answers: nothing about whether the user exists."""
    if mechanism == PLAIN:
        return "Authentication failed: Invalid username or password"
    return f"Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"


# -- PLAIN ---------------------------------------------------------------------------------------
def parse_plain(token: bytes) -> tuple[str, str]:
    """``authzid\\0user\\0password`` -> (user, password); AuthenticationFailed if malformed."""
    try:
        authzid, user, password = token.decode("utf-8", errors="strict").split("\0")
    except ValueError:
        raise AuthenticationFailed("PLAIN: expected authzid NUL username NUL password") from None
    if not user or not password:
        raise AuthenticationFailed("PLAIN: empty username or password")
    if authzid and authzid != user:
        raise AuthenticationFailed("PLAIN: authorization id differs from the username")
    return user, password


def check_plain(token: bytes, users: dict[str, str]) -> str:
    """The authenticated user name, or AuthenticationFailed."""
    user, password = parse_plain(token)
    expected = users.get(user)
    matches = hmac.compare_digest((expected or "").encode(), password.encode())  # unknown user: same cost
    if expected is None or not matches:
        raise AuthenticationFailed("PLAIN: invalid credentials")
    return user


def plain_token(username: str, password: str) -> bytes:
    return f"\0{username}\0{password}".encode()


# -- JAAS ----------------------------------------------------------------------------------------
_JAAS = re.compile(r'\s*([\w.$]+)\s+(required|requisite|sufficient|optional)((?:\s+[\w.\-]+\s*=\s*(?:"(?:[^"\\]|\\.)*"|[^\s;"]+))*)\s*;\s*')
_OPTION = re.compile(r'([\w.\-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))')


def parse_jaas(text: str) -> tuple[str, dict[str, str]]:
    """Kafka's ``sasl.jaas.config`` value: ``<LoginModule class> required k="v" ...;`` -> (class,
    options); ValueError naming the problem."""
    match = _JAAS.fullmatch(text)
    if not match:
        raise ValueError(f'expected \'<LoginModule> required key="value" ...;\', got {text[:60]!r}')
    options = {m.group(1): m.group(2).replace('\\"', '"') if m.group(2) is not None else m.group(3)
               for m in _OPTION.finditer(match.group(3))}
    return match.group(1), options


@dataclass(frozen=True)
class SaslClientConfig:
    """The broker's own credentials on a SASL inter-broker listener (``username``/``password`` of the
    listener's JAAS config for ``sasl.mechanism.inter.broker.protocol``)."""

    mechanism: str
    username: str
    password: str


class SaslClient:
    """The client side of one exchange: ``first()`` -> token, then ``respond(challenge)`` -> token or
    None once the server's last message is verified."""

    def __init__(self, config: SaslClientConfig, nonce: str | None = None):
        self.config = config
        self.scram = ScramClient(config.mechanism, config.username, config.password, nonce) \
            if config.mechanism in HASHES else None
        self._round = 0

    def first(self) -> bytes:
        if self.scram is None:
            return plain_token(self.config.username, self.config.password)
        return self.scram.client_first()

    def respond(self, challenge: bytes) -> bytes | None:
        """The next token after the server's ``challenge``; None when the exchange is over."""
        self._round += 1
        if self.scram is None:
            return None
        if self._round == 1:
            return self.scram.client_final(challenge)
        self.scram.verify(challenge)
        return None
