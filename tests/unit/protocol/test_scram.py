"""SCRAM (brokers.protocol.scram): RFC 7677's SCRAM-SHA-256 example byte for byte, SHA-512 round trips
between our client and server, wrong passwords and unknown users, the stored credential format."""
from __future__ import annotations

import base64

import pytest

from brokers.protocol.scram import (
    ScramClient,
    ScramCredential,
    ScramError,
    ScramServer,
    check_password,
    make_credential,
    sanitize,
)

# RFC 7677 section 3
CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def test_rfc7677_client_side():
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=CLIENT_NONCE)
    assert client.client_first() == CLIENT_FIRST
    assert client.client_final(SERVER_FIRST) == CLIENT_FINAL
    client.verify(SERVER_FINAL)


def test_rfc7677_server_side():
    server = ScramServer("SCRAM-SHA-256", nonce=SERVER_NONCE)
    assert server.client_first(CLIENT_FIRST) == "user"
    assert server.server_first(make_credential("SCRAM-SHA-256", "pencil", 4096, SALT)) == SERVER_FIRST
    assert server.client_final(CLIENT_FINAL) == SERVER_FINAL


def exchange(mechanism, stored_password, client_password, user="alice", iterations=4096, known=True):
    server = ScramServer(mechanism)
    client = ScramClient(mechanism, user, client_password)
    name = server.client_first(client.client_first())
    credential = make_credential(mechanism, stored_password, iterations) if known else None
    final = server.client_final(client.client_final(server.server_first(credential)))
    client.verify(final)
    return name


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_round_trip(mechanism):
    assert exchange(mechanism, "alice-secret", "alice-secret", iterations=8192) == "alice"


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_wrong_password_and_unknown_user_fail_alike(mechanism):
    with pytest.raises(ScramError, match="invalid credentials"):
        exchange(mechanism, "alice-secret", "wrong")
    with pytest.raises(ScramError, match="invalid credentials"):  # a decoy server-first, the same failure
        exchange(mechanism, "whatever", "whatever", known=False)


def test_unknown_user_gets_a_plausible_server_first():
    server = ScramServer("SCRAM-SHA-512")
    server.client_first(b"n,,n=nobody,r=abc")
    first = server.server_first(None).decode()
    assert first.startswith("r=abc") and ",s=" in first and first.endswith(",i=4096")
    again = ScramServer("SCRAM-SHA-512")
    again.client_first(b"n,,n=nobody,r=xyz")
    assert again.server_first(None).decode().split(",")[1] == first.split(",")[1]  # the same salt each time


def test_saslname_escapes():
    server = ScramServer("SCRAM-SHA-256")
    assert server.client_first(b"n,,n=a=2Cb=3Dc,r=xyz") == "a,b=c"
    client = ScramClient("SCRAM-SHA-256", "a,b=c", "p", nonce="n1")
    assert client.client_first() == b"n,,n=a=2Cb=3Dc,r=n1"


@pytest.mark.parametrize("message", [
    b"", b"y,,n=user,r=abc", b"p=tls-unique,,n=user,r=abc", b"n,,r=abc,n=user", b"n,,n=,r=abc", b"n,,n=user,r=",
    b"n,,n=us=er,r=abc", b"n,a=other,n=user,r=abc", b"n,,n=user", b"\xff\xfe",
])
def test_malformed_client_first(message):
    with pytest.raises((ScramError, UnicodeDecodeError)):
        ScramServer("SCRAM-SHA-256").client_first(message)


def test_client_final_checks_nonce_and_order():
    server = ScramServer("SCRAM-SHA-256", nonce=SERVER_NONCE)
    server.client_first(CLIENT_FIRST)
    server.server_first(make_credential("SCRAM-SHA-256", "pencil", 4096, SALT))
    with pytest.raises(ScramError, match="nonce"):
        server.client_final(CLIENT_FINAL.replace(b"k0,", b"k1,"))
    with pytest.raises(ScramError, match="before"):
        ScramServer("SCRAM-SHA-256").client_final(CLIENT_FINAL)


def test_client_refuses_a_bad_server():
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=CLIENT_NONCE)
    with pytest.raises(ScramError, match="nonce"):
        client.client_final(b"r=someoneelse,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    with pytest.raises(ScramError, match="iterations"):
        client.client_final(SERVER_FIRST.replace(b"i=4096", b"i=10"))
    client.client_final(SERVER_FIRST)
    with pytest.raises(ScramError, match="signature"):
        client.verify(b"v=" + base64.b64encode(b"x" * 32))
    with pytest.raises(ScramError, match="refused"):
        client.verify(b"e=invalid-proof")


def test_credential_format_is_kafkas():
    credential = make_credential("SCRAM-SHA-256", "pencil", 4096, SALT)
    text = credential.format()
    assert text == (f"salt=W22ZaJ0SNY7soEsUEjb6gQ==,stored_key={base64.b64encode(credential.stored_key).decode()},"
                    f"server_key={base64.b64encode(credential.server_key).decode()},iterations=4096")
    assert ScramCredential.parse(text) == credential
    assert len(make_credential("SCRAM-SHA-512", "p").stored_key) == 64
    with pytest.raises(ScramError):
        ScramCredential.parse("salt=abc,iterations=4096")
    with pytest.raises(ValueError, match="outside"):
        make_credential("SCRAM-SHA-256", "p", 100)
    with pytest.raises(ValueError, match="unknown SCRAM mechanism"):
        make_credential("SCRAM-SHA-1", "p")


def test_sanitize_is_url_encoding():
    assert sanitize("alice") == "alice"
    assert sanitize("CN=a b/c") == "CN%3Da%20b%2Fc"


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_check_password_against_a_stored_credential(mechanism):
    credential = make_credential(mechanism, "alice-secret", iterations=4096)
    assert check_password(mechanism, "alice-secret", credential)
    assert not check_password(mechanism, "alice-secreT", credential)
    assert not check_password(mechanism, "", credential)
