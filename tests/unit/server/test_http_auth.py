"""brokers.http.auth.HttpSecurity.identify: who a request is, from its headers (credentials looked up in a
dict standing in for ``/config/users``)."""
from __future__ import annotations

import asyncio
import base64

import pytest
from aiohttp.test_utils import make_mocked_request

from brokers.http import auth
from brokers.http.auth import ANONYMOUS_IDENTITY, BROKER_IDENTITY, HttpIdentity, HttpSecurity, Unauthenticated
from brokers.protocol.scram import make_credential
from brokers.security.control_auth import HEADER, sign

SECRET = b"0123456789abcdef0123456789abcdef"
STORED = {("alice", "SCRAM-SHA-512"): make_credential("SCRAM-SHA-512", "alice-secret").format(),
          ("bob", "SCRAM-SHA-256"): make_credential("SCRAM-SHA-256", "bob-secret").format(),
          ("carol", "SCRAM-SHA-512"): "not a credential"}


def security(**settings) -> tuple[HttpSecurity, list]:
    lookups: list = []

    async def lookup(user: str, mechanism: str) -> str | None:
        lookups.append((user, mechanism))
        return STORED.get((user, mechanism))
    return HttpSecurity(scram_credential=lookup, **settings), lookups


def identify(sec: HttpSecurity, headers: dict, method: str = "GET", path: str = "/api/v1/topics") -> HttpIdentity:
    return asyncio.run(sec.identify(make_mocked_request(method, path, headers=headers)))


def basic(user: str, password: str) -> dict:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def test_basic_auth_checks_the_sha512_credential_then_the_sha256_one():
    sec, _ = security()
    assert identify(sec, basic("alice", "alice-secret")) == HttpIdentity("User:alice")
    assert identify(sec, basic("bob", "bob-secret")) == HttpIdentity("User:bob")


@pytest.mark.parametrize("headers", [basic("alice", "bob-secret"), basic("mallory", "x"), basic("", ""),
                                     basic("carol", "anything"), {"Authorization": "Basic !!!"},
                                     {"Authorization": "Bearer abc"}, {"Authorization": "Basic YWxpY2U="},
                                     {"Authorization": "Basic //79"}])
def test_wrong_unknown_unusable_or_unreadable_credentials_are_refused(headers):
    with pytest.raises(Unauthenticated):
        identify(security()[0], headers)


def test_a_verified_password_is_remembered_until_the_credential_changes(monkeypatch):
    sec, _ = security()
    checks = []
    real = auth.check_password
    monkeypatch.setattr(auth, "check_password", lambda *a: checks.append(a[0]) or real(*a))
    for _ in range(3):
        assert identify(sec, basic("alice", "alice-secret")).principal == "User:alice"
    assert checks == ["SCRAM-SHA-512"]
    with pytest.raises(Unauthenticated):  # a wrong password is never remembered as right
        identify(sec, basic("alice", "alice-secreT"))
    STORED[("alice", "SCRAM-SHA-512")], old = make_credential("SCRAM-SHA-512", "new-secret").format(), \
        STORED[("alice", "SCRAM-SHA-512")]
    try:
        with pytest.raises(Unauthenticated):
            identify(sec, basic("alice", "alice-secret"))
        assert identify(sec, basic("alice", "new-secret")).principal == "User:alice"
    finally:
        STORED[("alice", "SCRAM-SHA-512")] = old


def test_no_credentials_is_anonymous_unless_basic_is_required():
    assert identify(security()[0], {}) == ANONYMOUS_IDENTITY
    with pytest.raises(Unauthenticated, match="BASIC"):
        identify(security(basic_required=True)[0], {})


def test_a_broker_signature_must_verify():
    sec, lookups = security(control_secret=SECRET, basic_required=True)
    good = {HEADER: sign(SECRET, "GET", "/api/v1/local/groups")}
    assert identify(sec, good, path="/api/v1/local/groups") == BROKER_IDENTITY
    with pytest.raises(Unauthenticated, match="signature"):
        identify(sec, good, path="/api/v1/local/partitions")
    with pytest.raises(Unauthenticated, match="signature"):
        identify(sec, {HEADER: sign(b"x" * 32, "GET", "/api/v1/local/groups")}, path="/api/v1/local/groups")
    assert lookups == []  # a signature is never mistaken for a user


def test_authorization_defers_to_the_authorizer_except_for_brokers():
    class Authorizer:
        def authorize(self, principal, host, operation, resource_type, name):
            return principal == "User:alice" and host == "10.0.0.1"

    sec = HttpSecurity(authorizer=Authorizer())
    assert sec.allowed(HttpIdentity("User:alice"), "10.0.0.1", 3, 2, "t")
    assert not sec.allowed(HttpIdentity("User:alice"), "10.0.0.2", 3, 2, "t")
    assert not sec.allowed(ANONYMOUS_IDENTITY, "10.0.0.1", 3, 2, "t")
    assert sec.allowed(BROKER_IDENTITY, "10.0.0.2", 3, 2, "t")
    assert HttpSecurity().allowed(ANONYMOUS_IDENTITY, "", 3, 2, "t")  # no authorizer: everything


def test_parse_basic():
    assert auth.parse_basic("Basic " + base64.b64encode("zoë:pa:ss".encode()).decode()) == ("zoë", "pa:ss")
    assert auth.parse_basic("basic " + base64.b64encode(b":").decode()) == ("", "")
