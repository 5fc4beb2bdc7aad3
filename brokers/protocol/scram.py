"""SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802, RFC 7677, Kafka's KIP-84): credentials and both sides of
the exchange, sans-I/O (bytes in, bytes out).

Stored credential (``/config/users/<user>``, one config entry per mechanism, Kafka's
ScramCredentialUtils format)::

    SCRAM-SHA-256 = "salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=4096"

    SaltedPassword = Hi(password, salt, i)            (PBKDF2-HMAC)
    StoredKey      = H(HMAC(SaltedPassword, "Client Key"))
    ServerKey      = HMAC(SaltedPassword, "Server Key")

Messages (no channel binding, GS2 header ``n,,``; Kafka allows ``a=`` authzid equal to the user)::

    client-first  n,,n=<saslname>,r=<client nonce>[,<extensions>]
    server-first  r=<client nonce + server nonce>,s=<b64 salt>,i=<iterations>
    client-final  c=biws,r=<nonce>,p=<b64 ClientProof>
    server-final  v=<b64 ServerSignature>          (or e=<error>)

The server never tells whether a user exists: an unknown user gets a server-first built from a decoy
credential (its salt stable per user name) and fails at the proof, like a wrong password.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import urllib.parse
from dataclasses import dataclass

HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MIN_ITERATIONS = 4096  # Kafka's ScramMechanism.minIterations
MAX_ITERATIONS = 16384  # Kafka's ScramMechanism.maxIterations (the broker refuses more)
DEFAULT_ITERATIONS = 4096
_DECOY_KEY = secrets.token_bytes(32)  # per process: decoy salts for unknown users


class ScramError(ValueError):
    """A malformed or failed exchange; the message is for logs, never sent to the client."""


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def format(self) -> str:
        b64 = lambda raw: base64.b64encode(raw).decode()  # noqa: E731
        return (f"salt={b64(self.salt)},stored_key={b64(self.stored_key)},server_key={b64(self.server_key)},"
                f"iterations={self.iterations}")

    @classmethod
    def parse(cls, text: str) -> "ScramCredential":
        """Kafka's credential string; ScramError naming what is wrong."""
        fields = dict(item.partition("=")[::2] for item in text.split(","))
        try:
            return cls(base64.b64decode(fields["salt"], validate=True),
                       base64.b64decode(fields["stored_key"], validate=True),
                       base64.b64decode(fields["server_key"], validate=True), int(fields["iterations"]))
        except (KeyError, ValueError) as exc:
            raise ScramError(f"not a SCRAM credential (salt=,stored_key=,server_key=,iterations=): {exc}") from None


def _hmac(algorithm: str, key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, algorithm).digest()


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(HASHES[mechanism], password.encode(), salt, iterations)


def make_credential(mechanism: str, password: str, iterations: int = DEFAULT_ITERATIONS,
                    salt: bytes | None = None) -> ScramCredential:
    """What ``kafka-configs --add-config 'SCRAM-SHA-256=[password=...]'`` stores; ValueError for an
    unknown mechanism or iterations outside Kafka's 4096-16384."""
    if mechanism not in HASHES:
        raise ValueError(f"unknown SCRAM mechanism {mechanism!r} (expected one of {', '.join(HASHES)})")
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ValueError(f"iterations {iterations} for {mechanism} is outside {MIN_ITERATIONS}-{MAX_ITERATIONS}")
    salt = salt if salt is not None else secrets.token_bytes(32)
    return credential_from_salted_password(mechanism, salt, salted_password(mechanism, password, salt, iterations),
                                           iterations)


def _attributes(message: str, expected: str) -> dict[str, str]:
    """``a=1,b=2`` -> ordered dict; the keys must start with ``expected`` (in order)."""
    parts = message.split(",")
    out: dict[str, str] = {}
    for part in parts:
        key, sep, value = part.partition("=")
        if not sep or len(key) != 1 or key in out:
            raise ScramError(f"malformed SCRAM attribute {part[:20]!r}")
        out[key] = value
    if "".join(out)[:len(expected)] != expected:
        raise ScramError(f"expected SCRAM attributes {expected!r}, got {''.join(out)!r}")
    return out


def _saslname(name: str) -> str:
    """RFC 5802 5.1: ``=2C`` is ``,`` and ``=3D`` is ``=``; any other ``=`` is malformed."""
    if "=" in name.replace("=2C", "").replace("=3D", ""):
        raise ScramError("malformed saslname")
    return name.replace("=2C", ",").replace("=3D", "=")


def _escape(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _nonce() -> str:
    return base64.b64encode(secrets.token_bytes(18)).decode()


class ScramServer:
    """One server-side exchange: ``client_first`` -> the user name (the caller looks its credential
    up), ``server_first(credential or None)`` -> bytes, ``client_final`` -> the server-final bytes, or
    ScramError if the proof is wrong or anything is malformed."""

    def __init__(self, mechanism: str, nonce: str | None = None):
        self.mechanism, self.algorithm = mechanism, HASHES[mechanism]
        self._server_nonce = nonce or _nonce()
        self.username: str | None = None
        self._client_first_bare = self._server_first = self._nonce = self._gs2_header = ""
        self._credential: ScramCredential | None = None  # the user's, or None (unknown: a decoy is used)
        self._stored: ScramCredential | None = None  # what the exchange runs against (credential or decoy)

    def client_first(self, message: bytes) -> str:
        text = message.decode("utf-8", errors="strict") if message else ""
        gs2, sep, bare = text.partition(",")
        authzid, sep2, bare = bare.partition(",")
        if gs2 != "n" or not sep or not sep2 or (authzid and not authzid.startswith("a=")):
            raise ScramError("client-first: channel binding is not supported (GS2 header must be 'n,,' or 'n,a=')")
        attrs = _attributes(bare, "nr")
        if not attrs["n"] or not attrs["r"] or not attrs["r"].isprintable() or "," in attrs["r"]:
            raise ScramError("client-first: empty user name or nonce")
        self.username = _saslname(attrs["n"])
        if authzid and _saslname(authzid[2:]) != self.username:
            raise ScramError("client-first: authorization id differs from the user name")
        self._client_first_bare, self._nonce = bare, attrs["r"] + self._server_nonce
        self._gs2_header = f"{gs2},{authzid},"  # client-final's c= must be its base64
        return self.username

    def server_first(self, credential: ScramCredential | None) -> bytes:
        """The credential of ``username``, or None if it has none for this mechanism (a decoy is used)."""
        if self.username is None:
            raise ScramError("server-first before client-first")
        self._credential = credential  # None: the exchange goes on against a decoy and fails at the proof
        credential = credential or self._decoy()
        self._stored = credential
        self._server_first = (f"r={self._nonce},s={base64.b64encode(credential.salt).decode()},"
                              f"i={credential.iterations}")
        return self._server_first.encode()

    def _decoy(self) -> ScramCredential:
        """A stand-in for a user without a credential: its salt is stable per user name (for this
        process), as a real user's is, so asking twice tells nothing; its keys match no password."""
        salt = _hmac("sha256", _DECOY_KEY, f"{self.mechanism}/{self.username}".encode())
        return ScramCredential(salt, secrets.token_bytes(64), secrets.token_bytes(64), DEFAULT_ITERATIONS)

    def client_final(self, message: bytes) -> bytes:
        if not self._server_first:
            raise ScramError("client-final before server-first")
        text = message.decode("utf-8", errors="strict")
        attrs = _attributes(text, "cr")
        if "p" not in attrs or list(attrs)[-1] != "p":
            raise ScramError("client-final: the proof must come last")
        if attrs["c"] != base64.b64encode(self._gs2_header.encode()).decode():
            raise ScramError("client-final: channel binding mismatch")
        if attrs["r"] != self._nonce:
            raise ScramError("client-final: nonce mismatch")
        without_proof = text[:text.rindex(",p=")]
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        try:
            proof = base64.b64decode(attrs["p"], validate=True)
        except ValueError:
            raise ScramError("client-final: proof is not base64") from None
        stored = self._stored
        signature = _hmac(self.algorithm, stored.stored_key, auth_message)
        if len(proof) != len(signature):
            raise ScramError("client-final: proof has the wrong length")
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        if self._credential is None or not hmac.compare_digest(hashlib.new(self.algorithm, client_key).digest(),
                                                                stored.stored_key):
            raise ScramError("client-final: invalid credentials")
        server_signature = _hmac(self.algorithm, stored.server_key, auth_message)
        return b"v=" + base64.b64encode(server_signature)


class ScramClient:
    """The client side (the broker's replica fetchers on a SASL inter-broker listener)."""

    def __init__(self, mechanism: str, username: str, password: str, nonce: str | None = None):
        self.mechanism, self.algorithm = mechanism, HASHES[mechanism]
        self.username, self.password = username, password
        self._nonce = nonce or _nonce()
        self._client_first_bare = f"n={_escape(username)},r={self._nonce}"
        self._server_signature = b""

    def client_first(self) -> bytes:
        return f"n,,{self._client_first_bare}".encode()

    def client_final(self, server_first: bytes) -> bytes:
        text = server_first.decode("utf-8", errors="strict")
        if text.startswith("e="):
            raise ScramError(f"server refused: {text[2:]}")
        attrs = _attributes(text, "rsi")
        if not attrs["r"].startswith(self._nonce) or len(attrs["r"]) == len(self._nonce):
            raise ScramError("server-first: the server nonce does not extend the client nonce")
        try:
            salt, iterations = base64.b64decode(attrs["s"], validate=True), int(attrs["i"])
        except ValueError:
            raise ScramError("server-first: bad salt or iteration count") from None
        if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
            raise ScramError(f"server-first: iterations {iterations} outside {MIN_ITERATIONS}-{MAX_ITERATIONS}")
        without_proof = f"c=biws,r={attrs['r']}"
        auth_message = f"{self._client_first_bare},{text},{without_proof}".encode()
        salted = salted_password(self.mechanism, self.password, salt, iterations)
        client_key = _hmac(self.algorithm, salted, b"Client Key")
        signature = _hmac(self.algorithm, hashlib.new(self.algorithm, client_key).digest(), auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        self._server_signature = _hmac(self.algorithm, _hmac(self.algorithm, salted, b"Server Key"), auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        """ScramError unless ``server_final`` proves the server knew the credential."""
        text = server_final.decode("utf-8", errors="replace")
        if text.startswith("e="):
            raise ScramError(f"server refused: {text[2:]}")
        if not text.startswith("v=") or not self._server_signature:
            raise ScramError("server-final: malformed")
        try:
            signature = base64.b64decode(text[2:], validate=True)
        except ValueError:
            raise ScramError("server-final: signature is not base64") from None
        if not hmac.compare_digest(signature, self._server_signature):
            raise ScramError("server-final: invalid server signature")


def sanitize(user: str) -> str:
    """The znode name of a user's entity (``/config/users/<name>``): Kafka's Sanitizer, URL encoding."""
    return urllib.parse.quote(user, safe="").replace("~", "%7E")


def credential_from_salted_password(mechanism: str, salt: bytes, salted: bytes, iterations: int) -> ScramCredential:
    """AlterUserScramCredentials sends SaltedPassword (the client hashed it): derive the stored keys."""
    algorithm = HASHES[mechanism]
    client_key = _hmac(algorithm, salted, b"Client Key")
    return ScramCredential(salt, hashlib.new(algorithm, client_key).digest(), _hmac(algorithm, salted, b"Server Key"),
                           iterations)


def check_password(mechanism: str, password: str, credential: ScramCredential) -> bool:
    """Whether ``password`` is the one ``credential`` was made from (HTTP basic auth against SCRAM users):
    PBKDF2 with the stored salt and iterations, then StoredKey compared in constant time."""
    salted = salted_password(mechanism, password, credential.salt, credential.iterations)
    derived = credential_from_salted_password(mechanism, credential.salt, salted, credential.iterations)
    return hmac.compare_digest(derived.stored_key, credential.stored_key)
