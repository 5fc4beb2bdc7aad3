"""The HTTP port's TLS settings (``http.ssl.enabled``): ``http.ssl.*`` over ``ssl.*`` resolution, the
server and client contexts (certificates made with the openssl CLI), errors naming both keys, and how
the scheme travels: the broker registration in ZooKeeper (old registrations decode as http) and the
control-plane base URL."""
from __future__ import annotations

import json
import ssl

import msgpack
import pytest

from brokers.config import BrokerConfig, ConfigError, is_sensitive
from brokers.control import BrokerInfo, EndPoint, UpdateMetadataRequest, control_base_url, decode, encode
from brokers.server.tls import TlsSettings, http_contexts
from brokers.zk import paths
from tests.certs import ENCRYPTED_PASSWORD, make_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


def config(**props: str) -> BrokerConfig:
    return BrokerConfig.from_properties({"zookeeper.connect": "127.0.0.1:2181", **props})


def https_config(pki, **props: str) -> BrokerConfig:
    return config(**{"http.ssl.enabled": "true", "ssl.keystore.type": "PEM",
                     "ssl.keystore.location": str(pki.server_keystore), "ssl.truststore.type": "PEM",
                     "ssl.truststore.location": str(pki.ca), **props})


# -- config resolution -------------------------------------------------------------------------
def test_plain_http_is_the_default_and_builds_no_context():
    c = config()
    assert c["http.ssl.enabled"] is False
    assert http_contexts(c) is None
    assert http_contexts(config(**{"ssl.keystore.location": "/no/such/file"})) is None  # not read for plain HTTP


def test_http_settings_default_to_the_brokers_ssl_keys():
    c = config(**{"ssl.keystore.type": "PEM", "ssl.keystore.location": "/k.pem", "ssl.key.password": "pw",
                  "ssl.truststore.type": "pem", "ssl.truststore.location": "/ca.pem", "ssl.protocol": "TLSv1.2",
                  "ssl.enabled.protocols": "TLSv1.2", "ssl.endpoint.identification.algorithm": ""})
    assert TlsSettings.for_http(c) == TlsSettings("HTTP", "PEM", "/k.pem", "pw", "PEM", "/ca.pem", "none",
                                                  ("TLSv1.2",), "TLSv1.2", "", http=True)


def test_http_ssl_keys_override_the_brokers_ssl_keys_for_the_http_port_only():
    c = config(**{"ssl.keystore.location": "/listener.pem", "http.ssl.keystore.location": "/http.pem",
                  "ssl.truststore.location": "/ca.pem", "http.ssl.truststore.location": "/http-ca.pem",
                  "http.ssl.keystore.type": "PEM", "http.ssl.enabled.protocols": "TLSv1.3",
                  "http.ssl.endpoint.identification.algorithm": ""})
    http = TlsSettings.for_http(c)
    assert (http.keystore_location, http.truststore_location, http.keystore_type) == ("/http.pem", "/http-ca.pem", "PEM")
    assert http.enabled_protocols == ("TLSv1.3",) and http.endpoint_identification == ""
    assert c["ssl.keystore.location"] == "/listener.pem" and c["ssl.keystore.type"] == "JKS"  # listeners unchanged
    assert c.http_value("ssl.protocol") == "TLSv1.3"  # not overridden: the broker-wide value


def test_the_http_port_never_asks_for_a_client_certificate():
    c = config(**{"ssl.client.auth": "required"})
    assert TlsSettings.for_http(c).client_auth == "none"


@pytest.mark.parametrize("key", ["http.ssl.client.auth", "http.ssl.no.such", "http.ssl.enable"])
def test_unknown_http_ssl_keys_are_errors_naming_them(key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        config(**{key: "x"})


def test_bad_values_name_the_key():
    with pytest.raises(ConfigError, match="'http.ssl.enabled' has a bad value 'yes'"):
        config(**{"http.ssl.enabled": "yes"})


def test_the_http_key_password_is_sensitive():
    assert is_sensitive("http.ssl.key.password")


# -- contexts ------------------------------------------------------------------------------------
def test_contexts_of_an_https_port(pki):
    server, client = http_contexts(https_config(pki))
    assert isinstance(server, ssl.SSLContext) and server.verify_mode == ssl.CERT_NONE
    assert client.verify_mode == ssl.CERT_REQUIRED and client.check_hostname
    assert [c["subject"] for c in client.get_ca_certs()] == [((("commonName", "ca"),),)]  # only the truststore


def test_an_encrypted_key_opens_with_the_http_key_password(pki):
    c = https_config(pki, **{"http.ssl.keystore.location": str(pki.encrypted_keystore),
                             "http.ssl.key.password": ENCRYPTED_PASSWORD})
    assert http_contexts(c) is not None
    with pytest.raises(ConfigError, match=r"http\.ssl\.keystore\.location or ssl\.keystore\.location"):
        http_contexts(https_config(pki, **{"http.ssl.keystore.location": str(pki.encrypted_keystore),
                                           "http.ssl.key.password": "wrong"}))


def test_a_missing_keystore_stops_start_up_naming_both_keys():
    with pytest.raises(ConfigError, match=r"^http\.ssl\.keystore\.location or ssl\.keystore\.location "
                                          r"\(http\.ssl\.enabled=true\) is required"):
        http_contexts(config(**{"http.ssl.enabled": "true"}))


def test_an_unreadable_keystore_names_the_key_and_the_file(pki, tmp_path):
    with pytest.raises(ConfigError, match=r"ssl\.keystore\.location .*cannot read /no/such\.pem"):
        http_contexts(https_config(pki, **{"ssl.keystore.location": "/no/such.pem"}))
    not_pem = tmp_path / "junk.pem"
    not_pem.write_text("junk\n")
    with pytest.raises(ConfigError, match=r"http\.ssl\.keystore\.location or .* is not a PEM keystore"):
        http_contexts(https_config(pki, **{"http.ssl.keystore.location": str(not_pem)}))


def test_a_jks_keystore_is_refused_naming_the_type_key(pki):
    with pytest.raises(ConfigError, match=r"http\.ssl\.keystore\.type or ssl\.keystore\.type .*JKS is not supported"):
        http_contexts(https_config(pki, **{"ssl.keystore.type": "JKS"}))


def test_a_bad_truststore_stops_start_up(pki, tmp_path):
    empty = tmp_path / "empty.pem"
    empty.write_text("")
    with pytest.raises(ConfigError, match=r"http\.ssl\.truststore\.location or ssl\.truststore\.location"):
        http_contexts(https_config(pki, **{"http.ssl.truststore.location": str(empty)}))


# -- the scheme: registration, UpdateMetadata, URLs ----------------------------------------------------
def broker(scheme: str = "http", host: str = "h1") -> BrokerInfo:
    return BrokerInfo(2, (EndPoint("PLAINTEXT", host, 9092),), None, 7, 8082, scheme)


def test_an_https_registration_says_so_and_round_trips():
    data = paths.BrokerIdZNode.encode(broker("https"))
    assert json.loads(data)["zkafka_http_scheme"] == "https"
    assert paths.BrokerIdZNode.decode(2, data, czxid=7) == broker("https")


def test_a_plain_registration_is_written_as_before_and_old_ones_decode_as_http():
    data = json.loads(paths.BrokerIdZNode.encode(broker()))
    assert "zkafka_http_scheme" not in data
    old = (b'{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://h1:9092"],'
           b'"jmx_port":-1,"features":{},"host":"h1","timestamp":"1700000000000","port":9092,"version":5,'
           b'"zkafka_http_port":8082}')
    assert paths.BrokerIdZNode.decode(2, old, czxid=7) == broker()


def test_a_registration_with_an_unknown_scheme_is_an_error():
    data = json.loads(paths.BrokerIdZNode.encode(broker()))
    with pytest.raises(ValueError, match="zkafka_http_scheme 'ftp'"):
        paths.BrokerIdZNode.decode(2, json.dumps({**data, "zkafka_http_scheme": "ftp"}).encode())


def test_update_metadata_carries_the_scheme_and_an_old_senders_brokers_are_http():
    request = UpdateMetadataRequest(1, 5, 3, (), (broker("https"),))
    assert decode(UpdateMetadataRequest, encode(request)).live_brokers == (broker("https"),)
    wire = msgpack.unpackb(encode(request))
    del wire["live_brokers"][0]["http_scheme"]  # what a broker from before HTTPS sends
    assert decode(UpdateMetadataRequest, msgpack.packb(wire)).live_brokers == (broker(),)


def test_control_base_url_follows_the_registered_scheme():
    assert control_base_url(broker()) == "http://h1:8082"
    assert control_base_url(broker("https")) == "https://h1:8082"
    assert control_base_url(broker("https", "0.0.0.0")) == "https://127.0.0.1:8082"
