"""brokers.security.control_auth: what a broker signs, another verifies; anything else is refused with a reason."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brokers.security.control_auth import HEADER, MAX_SKEW_MS, sign, signed_headers, verify

SECRET = b"0123456789abcdef0123456789abcdef"
NOW = 1_800_000_000_000
PATH = "/control/v1/leader-and-isr"


def test_a_signed_request_verifies():
    header = sign(SECRET, "POST", PATH, b"body", now_ms=NOW)
    assert verify(SECRET, header, "POST", PATH, b"body", now_ms=NOW + 1000) is None
    assert verify(SECRET, header, "post", PATH, b"body", now_ms=NOW) is None  # methods compare upper case


@pytest.mark.parametrize("change, reason", [
    (dict(secret=b"another cluster's secret, 32 bytes"), "does not match"),
    (dict(method="GET"), "does not match"),
    (dict(path="/control/v1/stop-replica"), "does not match"),
    (dict(path=PATH + "?x=1"), "does not match"),
    (dict(body=b"bodY"), "does not match"),
    (dict(now=NOW + MAX_SKEW_MS + 1), "clock"),
    (dict(now=NOW - MAX_SKEW_MS - 1), "clock"),
])
def test_any_difference_is_refused(change, reason):
    header = sign(SECRET, "POST", PATH, b"body", now_ms=NOW)
    problem = verify(change.get("secret", SECRET), header, change.get("method", "POST"), change.get("path", PATH),
                     change.get("body", b"body"), now_ms=change.get("now", NOW))
    assert problem is not None and reason in problem


@pytest.mark.parametrize("header", ["", "t=1", "sig=00", "t=x,sig=00", f"t={NOW},sig=zz", "garbage"])
def test_malformed_headers_are_refused(header):
    assert verify(SECRET, header, "POST", PATH, b"", now_ms=NOW) is not None


@given(st.binary(max_size=64), st.text(max_size=40))
def test_no_forged_header_verifies(body, header):
    assert verify(SECRET, header, "POST", PATH, body, now_ms=NOW) is not None


def test_signed_headers_without_a_secret_are_empty():
    assert signed_headers(None, "POST", PATH, b"") == {}
    assert verify(SECRET, signed_headers(SECRET, "GET", "/api/v1/local/groups")[HEADER], "GET",
                  "/api/v1/local/groups") is None
