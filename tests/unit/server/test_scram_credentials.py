"""Describe/AlterUserScramCredentials (50/51): the pure plan (Kafka's per-user errors) and both
handlers over a dict standing in for /config/users; an altered credential authenticates a SCRAM client."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

from brokers.protocol import codec
from brokers.protocol.errors import ErrorCode
from brokers.protocol.framing import RequestHeader
from brokers.protocol.scram import ScramClient, ScramCredential, ScramServer, make_credential, salted_password
from brokers.server.context import ServerContext
from brokers.server.handlers.scram_credentials import (
    handle_alter_user_scram_credentials,
    handle_describe_user_scram_credentials,
    plan_alterations,
)

SHA256, SHA512 = 1, 2


def upsert(name, mechanism=SHA256, iterations=4096, password="pw", salt=b"0123456789abcdef"):
    algorithm = "SCRAM-SHA-256" if mechanism == SHA256 else "SCRAM-SHA-512"
    salted = salted_password(algorithm, password, salt, iterations) if mechanism in (1, 2) else b"x"
    return SimpleNamespace(name=name, mechanism=mechanism, iterations=iterations, salt=salt, salted_password=salted)


def delete(name, mechanism=SHA256):
    return SimpleNamespace(name=name, mechanism=mechanism)


def test_plan_upserts_and_deletes():
    current = {"alice": {"SCRAM-SHA-512": make_credential("SCRAM-SHA-512", "a").format(), "producer_byte_rate": "1"}}
    results, configs = plan_alterations([delete("alice", SHA512)], [upsert("alice", SHA256, 8192), upsert("bob")],
                                        current)
    assert results == {"alice": (ErrorCode.NONE, None), "bob": (ErrorCode.NONE, None)}
    assert set(configs["alice"]) == {"SCRAM-SHA-256", "producer_byte_rate"}
    assert ScramCredential.parse(configs["alice"]["SCRAM-SHA-256"]).iterations == 8192
    assert set(configs["bob"]) == {"SCRAM-SHA-256"}


def test_plan_errors_are_per_user_and_apply_nothing_for_that_user():
    results, configs = plan_alterations(
        [delete("ghost"), delete("dup", SHA512), delete("odd", 9)],
        [upsert("dup", SHA512), upsert("few", iterations=100), upsert("many", iterations=20000),
         upsert("nosalt", salt=b""), upsert("weird", 3), upsert("fine")], {})
    codes = {user: code for user, (code, _) in results.items()}
    assert codes == {"ghost": ErrorCode.RESOURCE_NOT_FOUND, "dup": ErrorCode.DUPLICATE_RESOURCE,
                     "odd": ErrorCode.UNSUPPORTED_SASL_MECHANISM, "few": ErrorCode.UNACCEPTABLE_CREDENTIAL,
                     "many": ErrorCode.UNACCEPTABLE_CREDENTIAL, "nosalt": ErrorCode.UNACCEPTABLE_CREDENTIAL,
                     "weird": ErrorCode.UNSUPPORTED_SASL_MECHANISM, "fine": ErrorCode.NONE}
    assert results["few"][1] == "Too few iterations" and results["many"][1] == "Too many iterations"
    assert list(configs) == ["fine"]


class Users:
    def __init__(self):
        self.configs: dict[str, dict[str, str]] = {}

    async def user_config(self, user):
        return dict(self.configs.get(user, {}))

    async def set_user_config(self, user, config):
        self.configs[user] = config

    async def user_names(self):
        return list(self.configs)


def run(handler, api_key, store, allowed=None, **fields):
    """``allowed``: None = no authorizer; else whether the principal holds the cluster permission."""
    request = codec.build(codec.request_class(api_key, 0), **fields)
    header = RequestHeader(api_key, 0, 1, "test", 0)
    authorizer = None if allowed is None else SimpleNamespace(authorize=lambda *_: allowed)
    context = ServerContext(1, None, None, None, lambda: None, None, user_configs=store, authorizer=authorizer)
    response = asyncio.run(handler(context, header, request))
    frame = codec.encode_response(api_key, 0, 1, response)  # encodes: every field the schema needs is there
    return codec.decode_response(api_key, 0, frame[4:])[1]


def test_alter_then_describe_then_authenticate():
    users = Users()
    salt = b"some-salt-bytes!"
    salted = salted_password("SCRAM-SHA-512", "alice-secret", salt, 8192)
    altered = run(handle_alter_user_scram_credentials, 51, users, deletions=[], upsertions=[dict(
        name="alice", mechanism=SHA512, iterations=8192, salt=salt, salted_password=salted)])
    assert [(r.user, r.error_code) for r in altered.results] == [("alice", ErrorCode.NONE)]
    described = run(handle_describe_user_scram_credentials, 50, users, users=None)
    assert [(r.user, [(int(i.mechanism), i.iterations) for i in r.credential_infos]) for r in described.results] == [
        ("alice", [(SHA512, 8192)])]
    missing = run(handle_describe_user_scram_credentials, 50, users, users=[dict(name="bob"), dict(name="alice")])
    assert [(r.user, r.error_code) for r in missing.results] == [("bob", ErrorCode.RESOURCE_NOT_FOUND),
                                                                 ("alice", ErrorCode.NONE)]
    server, client = ScramServer("SCRAM-SHA-512"), ScramClient("SCRAM-SHA-512", "alice", "alice-secret")
    server.client_first(client.client_first())
    stored = ScramCredential.parse(users.configs["alice"]["SCRAM-SHA-512"])
    assert stored == make_credential("SCRAM-SHA-512", "alice-secret", 8192, salt)  # as if made from the password
    client.verify(server.client_final(client.client_final(server.server_first(stored))))


def test_describe_twice_is_duplicate():
    users = Users()
    response = run(handle_describe_user_scram_credentials, 50, users, users=[dict(name="a"), dict(name="a")])
    assert [(r.user, r.error_code) for r in response.results] == [("a", ErrorCode.DUPLICATE_RESOURCE)]


def test_without_cluster_permission_nothing_is_described_or_changed():
    users = Users()
    users.configs["alice"] = {"SCRAM-SHA-256": make_credential("SCRAM-SHA-256", "pw", 4096, b"0123456789abcdef").format()}
    described = run(handle_describe_user_scram_credentials, 50, users, allowed=False, users=None)
    assert described.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED and list(described.results) == []
    altered = run(handle_alter_user_scram_credentials, 51, users, allowed=False,
                  deletions=[vars(delete("alice"))], upsertions=[vars(upsert("bob"))])
    assert [(r.user, r.error_code) for r in altered.results] == [("alice", ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
                                                                 ("bob", ErrorCode.CLUSTER_AUTHORIZATION_FAILED)]
    assert set(users.configs) == {"alice"} and "SCRAM-SHA-256" in users.configs["alice"]
    assert run(handle_describe_user_scram_credentials, 50, users, allowed=True, users=None).error_code == 0
