"""SaslHandshake v0 (KIP-43): the state machine's raw-token moves, pure; then through KafkaApis.handle with
frames as a v0 client sends them (the tokens raw, size-prefixed, no request header), and over a real SASL
listener with a raw socket for a token shorter than any request header."""
from __future__ import annotations

import asyncio
import itertools
import socket
import struct

import pytest
from hypothesis import given, settings, strategies as st

from brokers.protocol import codec
from brokers.protocol.api_versions import ApiKey
from brokers.protocol.errors import ErrorCode
from brokers.protocol.framing import ProtocolError
from brokers.protocol.sasl import (
    ADMITTED,
    RAW_TOKEN,
    TRANSITIONS,
    IllegalSaslState,
    SaslClient,
    SaslClientConfig,
    SaslEvent,
    SaslState,
    admits,
    handshake_event,
    next_state,
    plain_token,
    reads_raw_tokens,
)
from brokers.server.listener import KafkaListener
from tests.unit.server.test_sasl import API_VERSIONS, HANDSHAKE, METADATA, FakeConnection, apis, call, sync

S, E = SaslState, SaslEvent


# -- the state machine, pure ------------------------------------------------------------------------
def test_the_handshake_version_picks_the_token_framing():
    assert handshake_event(0, True) is E.HANDSHAKE_V0 and handshake_event(1, True) is E.HANDSHAKE
    assert handshake_event(0, False) is handshake_event(1, False) is E.BAD_MECHANISM
    for before in (S.HANDSHAKE_OR_VERSIONS_REQUEST, S.HANDSHAKE_REQUEST):
        assert next_state(before, E.HANDSHAKE_V0) is S.AUTHENTICATE_RAW
        assert next_state(before, E.HANDSHAKE) is S.AUTHENTICATE


def test_raw_tokens_are_read_only_after_a_v0_handshake():
    assert [state for state in S if reads_raw_tokens(state)] == [S.AUTHENTICATE_RAW]
    assert [state for state in S if admits(state, RAW_TOKEN)] == [S.AUTHENTICATE_RAW]  # not before, not after
    assert ADMITTED[S.AUTHENTICATE_RAW] == {RAW_TOKEN}
    assert not any(admits(S.AUTHENTICATE_RAW, key) for key in ApiKey)  # no Kafka request during the exchange
    assert not any(admits(state, None) for state in S if state is not S.COMPLETE)  # nor an unknown frame


def test_the_raw_exchange_moves_as_the_framed_one_and_nothing_else_leaves_it():
    raw_moves = {event: after for (state, event), after in TRANSITIONS.items() if state is S.AUTHENTICATE_RAW}
    assert raw_moves == {E.CHALLENGE: S.AUTHENTICATE_RAW, E.AUTHENTICATED: S.COMPLETE, E.AUTH_FAILED: S.FAILED}
    for event in (E.API_VERSIONS, E.HANDSHAKE, E.HANDSHAKE_V0, E.BAD_MECHANISM):
        with pytest.raises(IllegalSaslState):
            next_state(S.AUTHENTICATE_RAW, event)
    assert {state for state, event in TRANSITIONS if event is E.HANDSHAKE_V0} == {
        S.HANDSHAKE_OR_VERSIONS_REQUEST, S.HANDSHAKE_REQUEST}  # one handshake per connection


def test_a_v0_login_walks_the_table_to_complete():
    state = S.HANDSHAKE_OR_VERSIONS_REQUEST
    for event in (E.API_VERSIONS, E.HANDSHAKE_V0, E.CHALLENGE, E.AUTHENTICATED):  # SCRAM: two tokens
        state = next_state(state, event)
    assert state is S.COMPLETE and not reads_raw_tokens(state)


# -- through KafkaApis.handle ------------------------------------------------------------------------
async def raw(kafka_apis, connection, token: bytes) -> bytes:
    """One raw token through handle(); the server's token (its size prefix checked)."""
    (answer,) = await kafka_apis.handle(token, connection)
    assert struct.unpack_from(">i", answer)[0] == len(answer) - 4
    return answer[4:]


async def login_v0(kafka_apis, connection, config: SaslClientConfig) -> list[bytes]:
    """SaslHandshake v0, then the tokens raw; the server's answers."""
    handshake = await call(kafka_apis, connection, HANDSHAKE, 0, mechanism=config.mechanism)
    assert handshake.error_code == ErrorCode.NONE and "PLAIN" in handshake.mechanisms
    client, answers = SaslClient(config), []
    token = client.first()
    while token is not None:
        answers.append(await raw(kafka_apis, connection, token))
        token = client.respond(answers[-1])
    return answers


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
@sync
async def test_v0_raw_tokens_authenticate_then_requests_run(mechanism):
    kafka_apis, connection = apis(), FakeConnection()
    await call(kafka_apis, connection, API_VERSIONS, 3)  # allowed before the handshake, as with v1
    answers = await login_v0(kafka_apis, connection, SaslClientConfig(mechanism, "alice", "alice-secret"))
    if mechanism == "PLAIN":
        assert answers == [b""]  # PLAIN's empty answer: the four zero bytes of its size prefix
    else:
        assert [a[:2] for a in answers] == [b"r=", b"v="]  # server-first, server-final (verified by the client)
    assert connection.principal == "User:alice" and connection.sasl.state is S.COMPLETE
    assert connection.closed_reason is None
    await call(kafka_apis, connection, METADATA, 4)


@pytest.mark.parametrize("mechanism,user,password", [
    ("PLAIN", "alice", "wrong"), ("PLAIN", "mallory", "alice-secret"), ("SCRAM-SHA-256", "alice", "wrong"),
    ("SCRAM-SHA-512", "mallory", "x")])
@sync
async def test_a_failed_raw_token_closes_the_connection_unanswered(mechanism, user, password):
    kafka_apis, connection = apis(), FakeConnection()
    with pytest.raises(ProtocolError, match=f"^failed authentication with SASL mechanism {mechanism}$"):
        await login_v0(kafka_apis, connection, SaslClientConfig(mechanism, user, password))
    assert connection.principal == "User:ANONYMOUS" and connection.sasl.state is S.FAILED
    with pytest.raises(ProtocolError):  # nothing more is read on it
        await kafka_apis.handle(plain_token("alice", "alice-secret"), connection)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
@sync
async def test_a_kafka_request_during_the_v0_exchange_is_read_as_a_token_and_fails(mechanism):
    kafka_apis, connection = apis(), FakeConnection()
    await call(kafka_apis, connection, HANDSHAKE, 0, mechanism=mechanism)
    with pytest.raises(ProtocolError, match="failed authentication"):
        await call(kafka_apis, connection, METADATA, 4)
    assert connection.sasl.state is S.FAILED and connection.principal == "User:ANONYMOUS"


@pytest.mark.parametrize("token", [plain_token("alice", "alice-secret"), b"n,,n=alice,r=abcdef", b"\0a\0b"])
@sync
async def test_a_raw_token_before_the_v0_handshake_closes_the_connection(token):
    for before in ([], [(API_VERSIONS, 3, {})], [(HANDSHAKE, 1, {"mechanism": "PLAIN"})]):
        kafka_apis, connection = apis(), FakeConnection()
        for key, version, fields in before:
            await call(kafka_apis, connection, key, version, **fields)
        with pytest.raises(ProtocolError, match="during SASL handshake|too short for a request header"):
            await kafka_apis.handle(token, connection)
        assert connection.principal == "User:ANONYMOUS"


@settings(max_examples=100, deadline=None)
@given(mechanism=st.sampled_from(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]),
       tokens=st.lists(st.binary(max_size=120) | st.sampled_from([
           b"", b"n,,n=alice,r=abc", b"\0alice\0", b"alice\0\0alice-secret", b"c=biws,r=abc,p=AAAA",
           b"\0alice\0alice-secre", plain_token("alice", "alice-secret")[:-1]]), min_size=1, max_size=4))
def test_fuzzed_raw_tokens_never_authenticate(mechanism, tokens):
    async def run():
        kafka_apis, connection = apis(), FakeConnection()
        await call(kafka_apis, connection, HANDSHAKE, 0, mechanism=mechanism)
        for token in tokens:
            try:
                await raw(kafka_apis, connection, token)
            except ProtocolError:
                assert connection.sasl.state is S.FAILED
                break
        assert connection.principal == "User:ANONYMOUS" and connection.sasl.state is not S.COMPLETE
    asyncio.run(run())


# -- over a real SASL listener -----------------------------------------------------------------------
def read_frame(sock: socket.socket) -> bytes | None:
    size = sock.recv(4, socket.MSG_WAITALL)
    return None if len(size) < 4 else sock.recv(struct.unpack(">i", size)[0], socket.MSG_WAITALL)


_ids = itertools.count(100)


def send_request(sock: socket.socket, api_key: ApiKey, version: int, **fields) -> None:
    body = codec.build(codec.request_class(api_key, version), **fields)
    sock.sendall(codec.encode_request(api_key, version, next(_ids), "raw", body))


def v0_plain_login(port: int, user: str, password: str) -> bytes | None:
    """Handshake v0 and one raw PLAIN token on a raw socket (off the loop); the server's answer, None if
    the broker closed the connection; then a Metadata request must be answered."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        send_request(sock, HANDSHAKE, 0, mechanism="PLAIN")
        assert codec.decode_response(HANDSHAKE, 0, read_frame(sock))[1].error_code == ErrorCode.NONE
        token = plain_token(user, password)
        sock.sendall(struct.pack(">i", len(token)) + token)
        answer = read_frame(sock)
        if answer is not None:
            send_request(sock, METADATA, 4, topics=None)
            assert read_frame(sock) is not None
        return answer


@sync
async def test_a_token_shorter_than_a_request_header_over_a_real_listener():
    """``\\0u\\0p`` is 4 bytes: the SASL listener's framing takes it (a request frame needs 8)."""
    kafka_apis = apis()
    kafka_apis.context.sasl.plain_users["u"] = "p"
    listener = KafkaListener(kafka_apis.handle, "127.0.0.1", 0, listener_name="SASL_PLAINTEXT",
                             security_protocol="SASL_PLAINTEXT")
    await listener.start()
    try:
        assert await asyncio.to_thread(v0_plain_login, listener.port, "u", "p") == b""
        assert await asyncio.to_thread(v0_plain_login, listener.port, "u", "q") is None
    finally:
        await listener.stop()
