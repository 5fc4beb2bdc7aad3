"""SASL on a connection, through KafkaApis.handle with request frames as clients send them: the state
machine's table and its illegal moves, PLAIN and JAAS parsing, SCRAM end to end with our client, the
close-after-failure, ILLEGAL_SASL_STATE on PLAINTEXT, and a hypothesis pass over malformed tokens."""
from __future__ import annotations

import asyncio
import functools
import itertools
from types import SimpleNamespace

import pytest
from hypothesis import given, settings, strategies as st

from brokers.client.connection import KafkaConnection
from brokers.config import BrokerConfig
from brokers.protocol import codec
from brokers.protocol.api_versions import ApiKey
from brokers.protocol.errors import ErrorCode
from brokers.protocol.framing import ProtocolError
from brokers.protocol.sasl import (
    TRANSITIONS,
    AuthenticationFailed,
    IllegalSaslState,
    SaslClient,
    SaslClientConfig,
    SaslEvent,
    SaslState,
    admits,
    check_plain,
    next_state,
    parse_jaas,
    parse_plain,
)
from brokers.protocol.scram import make_credential
from brokers.server import sasl as server_sasl
from brokers.server.apis import KafkaApis
from brokers.server.listener import KafkaListener
from brokers.quotas.manager import QuotaManagers
from brokers.stats import BrokerStats

HANDSHAKE, AUTHENTICATE, API_VERSIONS, METADATA = (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE, ApiKey.API_VERSIONS,
                                                  ApiKey.METADATA)
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
              'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
CREDENTIALS = {("alice", "SCRAM-SHA-512"): make_credential("SCRAM-SHA-512", "alice-secret").format(),
               ("alice", "SCRAM-SHA-256"): make_credential("SCRAM-SHA-256", "alice-secret", 8192).format()}


class FakeConnection:
    def __init__(self, security_protocol="SASL_PLAINTEXT"):
        self.security_protocol, self.principal, self.peer = security_protocol, "User:ANONYMOUS", "127.0.0.1:5555"
        self.closed_reason = None

    def close(self, reason):
        self.closed_reason = reason


async def lookup(user, mechanism):
    return CREDENTIALS.get((user, mechanism))


def apis(enabled=("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")):
    config = server_sasl.server_config(list(enabled), PLAIN_JAAS, lookup)
    context = SimpleNamespace(sasl=config, stats=BrokerStats(), quotas=QuotaManagers())

    async def metadata(_context, _header, _request):
        return codec.build(codec.response_class(METADATA, 4))
    return KafkaApis(context, {METADATA: metadata})


_ids = itertools.count(1)


def sync(test):
    """An async test run on its own event loop (no pytest-asyncio here)."""
    @functools.wraps(test)
    def run(*args, **kwargs):
        return asyncio.run(test(*args, **kwargs))
    return run


async def call(kafka_apis, connection, api_key, version, **fields):
    """One request through handle(); the decoded response body (after the task's done-callbacks ran)."""
    body = codec.build(codec.request_class(api_key, version), **fields)
    frame = codec.encode_request(api_key, version, next(_ids), "test", body)[4:]
    task = asyncio.get_running_loop().create_task(kafka_apis.handle(frame, connection))
    (response,) = await task
    await asyncio.sleep(0)  # let done-callbacks (the close after a failure) run
    return codec.decode_response(api_key, version, response[4:])[1]


async def authenticate(kafka_apis, connection, config, version=2):
    handshake = await call(kafka_apis, connection, HANDSHAKE, 1, mechanism=config.mechanism)
    assert handshake.error_code == ErrorCode.NONE
    client = SaslClient(config)
    token, response = client.first(), None
    while token is not None:
        response = await call(kafka_apis, connection, AUTHENTICATE, version, auth_bytes=token)
        if response.error_code != ErrorCode.NONE:
            return response
        token = client.respond(response.auth_bytes)
    return response


# -- the state machine ----------------------------------------------------------------------------
def test_every_move_outside_the_table_is_illegal():
    for state, event in itertools.product(SaslState, SaslEvent):
        if (state, event) in TRANSITIONS:
            assert next_state(state, event) == TRANSITIONS[(state, event)]
        else:
            with pytest.raises(IllegalSaslState):
                next_state(state, event)
    assert not any(state in (SaslState.COMPLETE, SaslState.FAILED) for state, _ in TRANSITIONS)


def test_admitted_requests_per_state():
    assert admits(SaslState.HANDSHAKE_OR_VERSIONS_REQUEST, API_VERSIONS)
    assert not admits(SaslState.HANDSHAKE_OR_VERSIONS_REQUEST, METADATA)
    assert not admits(SaslState.HANDSHAKE_REQUEST, AUTHENTICATE)
    assert admits(SaslState.AUTHENTICATE, AUTHENTICATE) and not admits(SaslState.AUTHENTICATE, HANDSHAKE)
    assert admits(SaslState.COMPLETE, METADATA)
    assert not any(admits(SaslState.FAILED, key) for key in (API_VERSIONS, HANDSHAKE, AUTHENTICATE, METADATA))


# -- PLAIN and JAAS --------------------------------------------------------------------------------
def test_plain_tokens():
    assert parse_plain(b"\0alice\0secret") == ("alice", "secret")
    assert parse_plain(b"alice\0alice\0secret") == ("alice", "secret")
    for bad in (b"alice\0secret", b"\0\0secret", b"\0alice\0", b"bob\0alice\0secret", b"\0a\0b\0c", b"\xff\0a\0b"):
        with pytest.raises(AuthenticationFailed):
            parse_plain(bad)
    assert check_plain(b"\0alice\0s", {"alice": "s"}) == "alice"
    for bad in (b"\0alice\0t", b"\0bob\0s"):
        with pytest.raises(AuthenticationFailed, match="invalid credentials"):
            check_plain(bad, {"alice": "s"})


def test_jaas_parsing():
    module, options = parse_jaas(PLAIN_JAAS)
    assert module.endswith("PlainLoginModule")
    assert options == {"username": "admin", "password": "admin-secret", "user_admin": "admin-secret",
                       "user_alice": "alice-secret"}
    assert parse_jaas('a.B required k=v q="x \\" y";') == ("a.B", {"k": "v", "q": 'x " y'})
    for bad in ("a.B required k=v", "a.B maybe k=v;", 'a.B required k="v;'):
        with pytest.raises(ValueError):
            parse_jaas(bad)


def test_server_config_checks_mechanisms_and_module():
    assert server_sasl.server_config(["PLAIN"], PLAIN_JAAS, None).plain_users == {"admin": "admin-secret",
                                                                                  "alice": "alice-secret"}
    with pytest.raises(ValueError, match="GSSAPI not supported"):
        server_sasl.server_config(["GSSAPI"], None, None)
    with pytest.raises(ValueError, match="PlainLoginModule"):
        server_sasl.server_config(["PLAIN"], "x.Other required;", None)


# -- through KafkaApis.handle ----------------------------------------------------------------------
@pytest.mark.parametrize("mechanism,version", [("SCRAM-SHA-512", 2), ("SCRAM-SHA-256", 1), ("PLAIN", 0)])
@sync
async def test_authentication_sets_the_principal_and_opens_the_apis(mechanism, version):
    kafka_apis, connection = apis(), FakeConnection()
    versions = await call(kafka_apis, connection, API_VERSIONS, 3)
    assert {(k.api_key, k.min_version, k.max_version) for k in versions.api_keys} >= {(17, 0, 1), (36, 0, 2)}
    response = await authenticate(kafka_apis, connection, SaslClientConfig(mechanism, "alice", "alice-secret"),
                                  version)
    assert response.error_code == ErrorCode.NONE
    assert connection.principal == "User:alice" and connection.closed_reason is None
    assert connection.sasl.state is SaslState.COMPLETE
    await call(kafka_apis, connection, METADATA, 4)  # now allowed
    again = await call(kafka_apis, connection, HANDSHAKE, 1, mechanism=mechanism)  # no re-authentication
    assert again.error_code == ErrorCode.ILLEGAL_SASL_STATE


@pytest.mark.parametrize("mechanism,user,password", [
    ("SCRAM-SHA-512", "alice", "wrong"), ("SCRAM-SHA-512", "mallory", "x"), ("SCRAM-SHA-256", "alice", "nope"),
    ("PLAIN", "alice", "wrong"), ("PLAIN", "mallory", "alice-secret")])
@sync
async def test_bad_credentials_fail_generically_and_close(mechanism, user, password):
    kafka_apis, connection = apis(), FakeConnection()
    response = await authenticate(kafka_apis, connection, SaslClientConfig(mechanism, user, password))
    assert response.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert user not in response.error_message and "Authentication failed" in response.error_message
    assert connection.principal == "User:ANONYMOUS"
    assert connection.closed_reason == f"failed authentication with SASL mechanism {mechanism}"
    with pytest.raises(ProtocolError):  # nothing more on this connection
        await call(kafka_apis, connection, API_VERSIONS, 3)


@sync
async def test_unsupported_mechanism_lists_the_enabled_ones():
    kafka_apis, connection = apis(enabled=("SCRAM-SHA-512",)), FakeConnection()
    response = await call(kafka_apis, connection, HANDSHAKE, 1, mechanism="PLAIN")
    assert response.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert list(response.mechanisms) == ["SCRAM-SHA-512"]
    assert connection.closed_reason and connection.sasl.state is SaslState.FAILED


@pytest.mark.parametrize("steps", [
    [(METADATA, 4, {})],
    [(API_VERSIONS, 3, {}), (METADATA, 4, {})],
    [(AUTHENTICATE, 2, {"auth_bytes": b"\0alice\0alice-secret"})],
    [(HANDSHAKE, 1, {"mechanism": "PLAIN"}), (METADATA, 4, {})],
    [(HANDSHAKE, 1, {"mechanism": "PLAIN"}), (API_VERSIONS, 3, {})],
    [(HANDSHAKE, 1, {"mechanism": "PLAIN"}), (HANDSHAKE, 1, {"mechanism": "PLAIN"})],
])
@sync
async def test_requests_out_of_turn_close_the_connection(steps):
    kafka_apis, connection = apis(), FakeConnection()
    *allowed, (api_key, version, fields) = steps
    for key, ver, values in allowed:
        await call(kafka_apis, connection, key, ver, **values)
    with pytest.raises(ProtocolError, match="during SASL handshake"):
        await call(kafka_apis, connection, api_key, version, **fields)
    assert connection.principal == "User:ANONYMOUS"


@sync
async def test_plaintext_connections_answer_illegal_sasl_state():
    kafka_apis, connection = apis(), FakeConnection("PLAINTEXT")
    assert (await call(kafka_apis, connection, HANDSHAKE, 1, mechanism="PLAIN")).error_code == ErrorCode.ILLEGAL_SASL_STATE
    response = await call(kafka_apis, connection, AUTHENTICATE, 2, auth_bytes=b"\0alice\0alice-secret")
    assert response.error_code == ErrorCode.ILLEGAL_SASL_STATE and connection.principal == "User:ANONYMOUS"
    await call(kafka_apis, connection, METADATA, 4)
    assert not hasattr(connection, "sasl")


# -- fuzz: malformed exchanges never authenticate ----------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(mechanism=st.sampled_from(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]),
       tokens=st.lists(st.binary(max_size=120) | st.sampled_from([
           b"n,,n=alice,r=abc", b"\0alice\0", b"alice\0\0alice-secret", b"c=biws,r=abc,p=AAAA", b"n,,n=alice,r=",
           b"\0alice\0alice-secre", b"c=biws,r=abc"]), min_size=1, max_size=4))
def test_fuzzed_tokens_never_authenticate(mechanism, tokens):
    async def run():
        kafka_apis, connection = apis(), FakeConnection()
        await call(kafka_apis, connection, HANDSHAKE, 1, mechanism=mechanism)
        for token in tokens:
            try:
                response = await call(kafka_apis, connection, AUTHENTICATE, 2, auth_bytes=token)
            except ProtocolError:
                break
            if response.error_code != ErrorCode.NONE:
                assert connection.closed_reason
                break
        assert connection.principal == "User:ANONYMOUS"
        assert connection.sasl.state is not SaslState.COMPLETE
    asyncio.run(run())


# -- the broker's own client side and its config ------------------------------------------------------
@sync
async def test_kafka_connection_authenticates_over_a_real_sasl_listener():
    listener = KafkaListener(apis().handle, "127.0.0.1", 0, listener_name="SASL_PLAINTEXT",
                             security_protocol="SASL_PLAINTEXT")
    await listener.start()
    try:
        for mechanism in ("SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"):
            good = KafkaConnection("127.0.0.1", listener.port, "t", sasl=SaslClientConfig(mechanism, "alice", "alice-secret"))
            await good.connect(5)
            await good.request(METADATA, 4, codec.build(codec.request_class(METADATA, 4), topics=None), 5)
            assert {c.principal for c in listener.connections} == {"User:alice"}
            good.close()
            await asyncio.sleep(0.05)
        bad = KafkaConnection("127.0.0.1", listener.port, "t", sasl=SaslClientConfig("SCRAM-SHA-512", "alice", "x"))
        with pytest.raises(ConnectionError, match="Authentication failed"):
            await bad.connect(5)
        anonymous = KafkaConnection("127.0.0.1", listener.port, "t")  # no SASL: Metadata closes the connection
        await anonymous.connect(5)
        with pytest.raises(ConnectionError):
            await anonymous.request(METADATA, 4, codec.build(codec.request_class(METADATA, 4), topics=None), 5)
    finally:
        await listener.stop()


def broker_config(**props):
    base = {"zookeeper.connect": "z:2181", "listeners": "INTERNAL://:9092,EXTERNAL://:9093",
            "listener.security.protocol.map": "INTERNAL:SASL_PLAINTEXT,EXTERNAL:PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL"}
    return BrokerConfig.from_properties({**base, **props})


def test_inter_broker_credentials_from_the_listener_jaas_config():
    jaas = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="s";'
    config = broker_config(**{"sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
                              "listener.name.internal.scram-sha-512.sasl.jaas.config": jaas})
    assert server_sasl.inter_broker_client_config(config) == SaslClientConfig("SCRAM-SHA-512", "admin", "s")
    assert "jaas" not in str(config.values)  # kept apart: DescribeConfigs lists values
    with pytest.raises(ValueError, match="sasl.mechanism.inter.broker.protocol: GSSAPI is not supported"):
        server_sasl.inter_broker_client_config(broker_config())
    with pytest.raises(ValueError, match="listener.name.internal.plain.sasl.jaas.config is required"):
        server_sasl.inter_broker_client_config(broker_config(**{"sasl.mechanism.inter.broker.protocol": "PLAIN"}))
    plaintext = broker_config(**{"inter.broker.listener.name": "EXTERNAL"})
    assert server_sasl.inter_broker_client_config(plaintext) is None
    assert server_sasl.listener_config(plaintext, "EXTERNAL", "PLAINTEXT", None) is None
    with pytest.raises(ValueError, match="listener INTERNAL: sasl.enabled.mechanisms: GSSAPI"):
        server_sasl.listener_config(broker_config(**{"sasl.enabled.mechanisms": "GSSAPI"}), "INTERNAL",
                                    "SASL_PLAINTEXT", None)
