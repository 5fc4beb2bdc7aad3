"""brokers.server.tls: Kafka's ssl.* configs -> SSLContext (with certificates made by the openssl CLI),
errors naming the key and the file, and the principal of a client certificate (RFC 2253 DN)."""
from __future__ import annotations

import ssl

import pytest

from brokers.config import BrokerConfig, ConfigError
from brokers.server.tls import (ANONYMOUS, TlsSettings, client_context, handshake_failure, inter_broker_context,
                                listener_contexts, principal, rfc2253, server_context)
from tests.certs import ENCRYPTED_PASSWORD, make_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


def config(**props: str) -> BrokerConfig:
    base = {"zookeeper.connect": "127.0.0.1:2181", "listeners": "SSL://127.0.0.1:9093"}
    return BrokerConfig.from_properties({**base, **{k.replace("_", "."): v for k, v in props.items()}})


def ssl_config(pki, **props: str) -> BrokerConfig:
    return config(**{"ssl_keystore_type": "PEM", "ssl_keystore_location": str(pki.server_keystore),
                     "ssl_truststore_type": "PEM", "ssl_truststore_location": str(pki.ca), **props})


# -- principal ---------------------------------------------------------------------------------
def test_principal_is_the_subject_dn_most_specific_rdn_first():
    subject = ((("organizationName", "zkafka"),), (("organizationalUnitName", "eng"),), (("commonName", "alice"),))
    assert principal({"subject": subject}) == "User:CN=alice,OU=eng,O=zkafka"


def test_no_certificate_is_anonymous():
    assert principal(None) == principal({}) == ANONYMOUS == "User:ANONYMOUS"


def test_rfc2253_keywords_multi_valued_rdns_and_escaping():
    subject = ((("countryName", "US"),), (("stateOrProvinceName", "CA"),), (("localityName", "SF"),),
               (("domainComponent", "com"),), (("commonName", "a,b+c"), ("userId", "u1")))
    assert rfc2253(subject) == r"CN=a\,b\+c+UID=u1,DC=com,L=SF,ST=CA,C=US"
    assert rfc2253(((("commonName", "#x "),),)) == r"CN=\#x\ "
    assert rfc2253(((("commonName", 'q"<>;\\'),),)) == r'CN=q\"\<\>\;\\'


def test_email_address_is_written_as_its_oid_and_der_value_as_java_does():
    assert rfc2253(((("emailAddress", "a@b"),),)) == "1.2.840.113549.1.9.1=#1603614062"


def test_principal_of_a_real_certificate(pki):
    decoded = ssl._ssl._test_decode_cert(str(pki.client_cert))  # what getpeercert() returns for it
    assert principal(decoded) == "User:CN=alice,OU=eng,O=zkafka"


# -- configs -----------------------------------------------------------------------------------
def test_kafka_names_and_defaults():
    c = config()
    assert (c["ssl.keystore.type"], c["ssl.truststore.type"], c["ssl.client.auth"]) == ("JKS", "JKS", "none")
    assert c["ssl.enabled.protocols"] == ["TLSv1.2", "TLSv1.3"] and c["ssl.protocol"] == "TLSv1.3"
    assert c["ssl.endpoint.identification.algorithm"] == "https"
    assert c["ssl.keystore.location"] is None and c["ssl.key.password"] is None


def test_listener_name_prefix_overrides_the_global_key_for_that_listener_only():
    c = config(**{"listeners": "SSL://:9093,INTERNAL://:9094", "listener.security.protocol.map": "SSL:SSL,INTERNAL:SSL",
                  "ssl.client.auth": "none", "listener.name.internal.ssl.client.auth": "required"})
    assert c.listener_value("INTERNAL", "ssl.client.auth") == "required"
    assert c.listener_value("SSL", "ssl.client.auth") == "none"
    assert TlsSettings.for_listener(c, "INTERNAL").client_auth == "required"


def test_an_unknown_per_listener_key_is_still_an_error():
    with pytest.raises(ConfigError, match="listener.name.ssl.no.such"):
        config(**{"listener.name.ssl.no.such": "1"})


def test_contexts_only_for_tls_listeners(pki):
    c = ssl_config(pki, **{"listeners": "PLAINTEXT://:9092,SSL://:9093"})
    contexts = listener_contexts(c)
    assert list(contexts) == ["SSL"] and contexts["SSL"].verify_mode == ssl.CERT_NONE
    assert inter_broker_context(c) is None  # the first listener (PLAINTEXT) carries replication
    assert listener_contexts(config(listeners="PLAINTEXT://:9092")) == {}


def test_inter_broker_context_trusts_the_truststore_and_checks_names(pki):
    c = ssl_config(pki, **{"inter.broker.listener.name": "SSL"})
    context = inter_broker_context(c)
    assert context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED
    assert [cert["subject"] for cert in context.get_ca_certs()] == [((("commonName", "ca"),),)]
    off = client_context(TlsSettings.for_listener(ssl_config(pki, **{"ssl.endpoint.identification.algorithm": ""}),
                                                  "SSL"))
    assert not off.check_hostname


@pytest.mark.parametrize("auth, mode", [("none", ssl.CERT_NONE), ("requested", ssl.CERT_OPTIONAL),
                                        ("required", ssl.CERT_REQUIRED)])
def test_client_auth_sets_the_verify_mode(pki, auth, mode):
    assert listener_contexts(ssl_config(pki, **{"ssl.client.auth": auth}))["SSL"].verify_mode == mode


def test_enabled_protocols_bound_the_versions(pki):
    context = listener_contexts(ssl_config(pki, **{"ssl.enabled.protocols": "TLSv1.3"}))["SSL"]
    assert context.minimum_version == context.maximum_version == ssl.TLSVersion.TLSv1_3
    context = listener_contexts(ssl_config(pki, **{"ssl.protocol": "TLSv1.2"}))["SSL"]
    assert context.minimum_version == context.maximum_version == ssl.TLSVersion.TLSv1_2


def test_an_encrypted_key_needs_ssl_key_password(pki):
    good = ssl_config(pki, **{"ssl.keystore.location": str(pki.encrypted_keystore),
                              "ssl.key.password": ENCRYPTED_PASSWORD})
    assert "SSL" in listener_contexts(good)
    bad = ssl_config(pki, **{"ssl.keystore.location": str(pki.encrypted_keystore), "ssl.key.password": "wrong"})
    with pytest.raises(ConfigError, match=f"ssl.keystore.location .*{pki.encrypted_keystore}"):
        listener_contexts(bad)


@pytest.mark.parametrize("props, message", [
    ({"ssl.keystore.location": "/no/such/keystore.pem"}, "ssl.keystore.location .*cannot read /no/such/keystore.pem"),
    ({"ssl.truststore.location": "/no/such/ca.pem", "ssl.client.auth": "required"},
     "ssl.truststore.location .*cannot read /no/such/ca.pem"),
    ({"ssl.keystore.type": "JKS"}, r"ssl.keystore.type \(listener SSL\): JKS is not supported .*keystore.pem"),
    ({"ssl.truststore.type": "PKCS12", "ssl.client.auth": "required"}, "ssl.truststore.type .*PKCS12"),
    ({"ssl.client.auth": "sometimes"}, "ssl.client.auth .*'sometimes'"),
    ({"ssl.enabled.protocols": "TLSv1.1"}, "ssl.enabled.protocols .*TLSv1.1"),
    ({"ssl.protocol": "SSLv3"}, "ssl.protocol .*SSLv3"),
    ({"ssl.enabled.protocols": "TLSv1.3", "ssl.protocol": "TLSv1.2"},
     r"ssl.protocol \(listener SSL\): TLSv1.2 excludes"),
])
def test_bad_settings_name_the_key_and_the_file(pki, props, message):
    with pytest.raises(ConfigError, match=message):
        listener_contexts(ssl_config(pki, **props))


def test_a_file_that_is_not_a_keystore_or_truststore(pki, tmp_path):
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    with pytest.raises(ConfigError, match=f"ssl.keystore.location .*{junk} is not a PEM keystore"):
        listener_contexts(ssl_config(pki, **{"ssl.keystore.location": str(junk)}))
    with pytest.raises(ConfigError, match=f"ssl.truststore.location .*{junk} holds no PEM certificate"):
        listener_contexts(ssl_config(pki, **{"ssl.truststore.location": str(junk), "ssl.client.auth": "required"}))
    cert_only = pki.dir / "ca.pem"  # a certificate without its private key
    with pytest.raises(ConfigError, match="is not a PEM keystore"):
        listener_contexts(ssl_config(pki, **{"ssl.keystore.location": str(cert_only)}))


def test_an_ssl_listener_needs_a_keystore():
    with pytest.raises(ConfigError, match=r"ssl.keystore.location \(listener SSL\) is required"):
        listener_contexts(config())


def test_a_per_listener_keystore_is_named_with_its_listener(pki):
    c = ssl_config(pki, **{"listener.name.ssl.ssl.keystore.location": "/no/such/internal.pem"})
    with pytest.raises(ConfigError, match=r"ssl.keystore.location \(listener SSL\): cannot read /no/such/internal.pem"):
        listener_contexts(c)


# -- the listener's write path on a TLS connection -------------------------------------------------
class FakeTransport:
    """What Connection needs of a transport; ``ssl_object`` set = a TLS transport (whose ``socket``
    extra is the raw socket under the TLS stream, as asyncio's and uvloop's are)."""

    def __init__(self, tls: bool, peercert: dict | None = None):
        self.written: list[bytes] = []
        self.extra = {"peername": ("127.0.0.1", 5555), "socket": object()}
        if tls:
            self.extra["ssl_object"] = type("SslObject", (), {"getpeercert": lambda self: peercert})()

    def get_extra_info(self, name, default=None):
        return self.extra.get(name, default)

    def get_write_buffer_size(self) -> int:
        return 0

    def writelines(self, parts) -> None:
        self.written.extend(bytes(p) for p in parts)


def test_a_tls_connection_never_uses_sendfile_and_takes_the_certificate_principal(tmp_path, monkeypatch):
    """A file range of at least SENDFILE_MIN_BYTES goes out with pread through the TLS transport;
    os.sendfile would write plaintext onto the socket under the TLS stream."""
    from brokers.server import listener

    def no_sendfile(*_args):
        raise AssertionError("os.sendfile on a TLS connection")

    monkeypatch.setattr(listener.os, "sendfile", no_sendfile)
    data = bytes(range(256)) * (3 * listener.SENDFILE_MIN_BYTES // 256 + 1)
    (tmp_path / "segment.log").write_bytes(data)
    subject = ((("commonName", "alice"),),)
    with open(tmp_path / "segment.log", "rb") as f:
        file_range = type("FileRange", (), {"fileno": lambda self: f.fileno(), "position": 10,
                                             "size": 2 * listener.SENDFILE_MIN_BYTES})()
        for protocol, seen in (("SSL", "User:CN=alice"), ("SASL_SSL", ANONYMOUS)):
            connection = listener.Connection(None, 1 << 20, set(), "L", protocol)
            transport = FakeTransport(tls=True, peercert={"subject": subject})
            connection.connection_made(transport)
            assert connection.tls and connection.principal == seen  # SASL_SSL: the SASL layer's to set
            connection._write([b"head", file_range, b"tail"])
            assert b"".join(transport.written) == b"head" + data[10:10 + file_range.size] + b"tail"


def test_a_plaintext_connection_is_anonymous_and_not_tls():
    from brokers.server import listener

    connection = listener.Connection(None, 1 << 20, set())
    connection.connection_made(FakeTransport(tls=False))
    assert not connection.tls and connection.principal == ANONYMOUS


# -- failed handshakes -------------------------------------------------------------------------
def _ssl_error(cls, reason: str, message: str, **attributes) -> ssl.SSLError:
    exc = cls(1, f"[SSL: {reason}] {message} (_ssl.c:1006)")
    exc.reason = reason
    for name, value in attributes.items():
        setattr(exc, name, value)
    return exc


@pytest.mark.parametrize("exc, reason", [
    (_ssl_error(ssl.SSLError, "PEER_DID_NOT_RETURN_A_CERTIFICATE", "peer did not return a certificate"),
     "PEER_DID_NOT_RETURN_A_CERTIFICATE"),
    (_ssl_error(ssl.SSLCertVerificationError, "CERTIFICATE_VERIFY_FAILED", "certificate verify failed",
                verify_message="certificate has expired"), "CERTIFICATE_VERIFY_FAILED: certificate has expired"),
    (_ssl_error(ssl.SSLCertVerificationError, "CERTIFICATE_VERIFY_FAILED", "certificate verify failed",
                verify_message=None), "CERTIFICATE_VERIFY_FAILED"),
    (_ssl_error(ssl.SSLError, "WRONG_VERSION_NUMBER", "wrong version number"), "WRONG_VERSION_NUMBER"),
    (_ssl_error(ssl.SSLError, "TLSV1_ALERT_UNKNOWN_CA", "tlsv1 alert unknown ca"), "TLSV1_ALERT_UNKNOWN_CA"),
    (ConnectionAbortedError("SSL handshake is taking longer than 60.0 seconds: aborting the connection"),
     "SSL handshake is taking longer than 60.0 seconds: aborting the connection"),
    (TimeoutError(), "handshake timed out"),
    (ValueError("odd"), "ValueError('odd')"),
])
def test_handshake_failure_names_the_ssl_reason(exc, reason):
    assert handshake_failure(exc) == reason


@pytest.mark.parametrize("exc", [ConnectionResetError(), BrokenPipeError(), ssl.SSLEOFError(8, "EOF"),
                                 ssl.SSLZeroReturnError(6, "closed")])
def test_a_peer_that_merely_went_away_is_no_failed_authentication(exc):
    assert handshake_failure(exc) is None


def test_real_handshake_failures_name_their_reason(pki):
    """The reasons OpenSSL really gives a server with ssl.client.auth=required, in memory (no socket)."""
    server = server_context(TlsSettings.for_listener(ssl_config(pki, ssl_client_auth="required"), "SSL"))

    def handshake(cert=None, key=None) -> BaseException:
        client = ssl.create_default_context(cafile=str(pki.ca))
        if cert is not None:
            client.load_cert_chain(str(cert), str(key))
        c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
        c = client.wrap_bio(c_in, c_out, server_hostname="localhost")
        s = server.wrap_bio(s_in, s_out, server_side=True)
        for _ in range(10):
            for side in (c, s):
                try:
                    side.do_handshake()
                except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                    pass
                except ssl.SSLError as exc:
                    if side is s:
                        return exc
                    break
            s_in.write(c_out.read())
            c_in.write(s_out.read())
        raise AssertionError("the server accepted the handshake")

    assert handshake_failure(handshake()) == "PEER_DID_NOT_RETURN_A_CERTIFICATE"
    assert handshake_failure(handshake(pki.untrusted_cert, pki.untrusted_key)).startswith(
        "CERTIFICATE_VERIFY_FAILED: unable to get local issuer certificate")
    assert handshake_failure(handshake(pki.expired_cert, pki.expired_key)) == (
        "CERTIFICATE_VERIFY_FAILED: certificate has expired")
