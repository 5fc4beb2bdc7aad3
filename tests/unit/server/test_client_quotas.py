"""DescribeClientQuotas (48) / AlterClientQuotas (49), both versions, over a dict standing in for the quota entity
znodes: Kafka 2.8's answers, authorization, validate_only, and SCRAM credentials beside quotas left alone."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from brokers.protocol import codec
from brokers.protocol.errors import ErrorCode
from brokers.protocol.framing import RequestHeader
from brokers.quotas.entities import DEFAULT, QuotaEntity
from brokers.security.acls import ALTER_CONFIGS, CLUSTER, DESCRIBE_CONFIGS
from brokers.server.context import ServerContext
from brokers.server.handlers.client_quotas import handle_alter_client_quotas, handle_describe_client_quotas

DESCRIBE, ALTER = 48, 49
SCRAM = "salt=c2FsdA==,stored_key=a2V5,server_key=a2V5,iterations=4096"
VERSIONS = pytest.mark.parametrize("version", [0, 1])


class QuotaStore:
    """The ClientQuotaConfigs port: whole entity configs, and the writes made."""

    def __init__(self, configs: dict[QuotaEntity, dict[str, str]] | None = None):
        self.configs = {entity: dict(config) for entity, config in (configs or {}).items()}
        self.writes: list[tuple[QuotaEntity, dict[str, str]]] = []

    async def quota_entity_configs(self):
        return {entity: dict(config) for entity, config in self.configs.items()}

    async def set_quota_entity_config(self, entity, config):
        self.writes.append((entity, dict(config)))
        self.configs[entity] = dict(config)


def run(handler, api_key, version, store, allowed=None, **fields):
    """``allowed``: None = no authorizer; else the operations the principal holds on the cluster."""
    request = codec.build(codec.request_class(api_key, version), **fields)
    header = RequestHeader(api_key, version, 7, "test", 0)
    authorizer = None if allowed is None else SimpleNamespace(
        authorize=lambda principal, host, op, resource_type, name: resource_type == CLUSTER and op in allowed)
    context = ServerContext(1, None, None, None, lambda: None, None, quota_configs=store, authorizer=authorizer)
    response = asyncio.run(handler(context, header, request))
    frame = codec.encode_response(api_key, version, 7, response)  # every field the version's schema needs is there
    return codec.decode_response(api_key, version, frame[4:])[1]


def component(entity_type, match_type, match=None):
    return dict(entity_type=entity_type, match_type=match_type, match=match)


def entry(entity, *ops):
    return dict(entity=[dict(entity_type=t, entity_name=n) for t, n in entity],
                ops=[dict(key=k, value=v if v is not None else 0.0, remove=v is None) for k, v in ops])


def described(response):
    return {tuple((e.entity_type, e.entity_name) for e in entry.entity): {v.key: v.value for v in entry.values}
            for entry in response.entries}


def results(response):
    return [(tuple((e.entity_type, e.entity_name) for e in r.entity), r.error_code, r.error_message)
            for r in response.entries]


@VERSIONS
def test_alter_then_describe_every_kind_of_entity(version):
    store = QuotaStore({QuotaEntity("alice", None): {"SCRAM-SHA-256": SCRAM}})
    altered = run(handle_alter_client_quotas, ALTER, version, store, validate_only=False, entries=[
        entry([("user", "alice")], ("producer_byte_rate", 1024.0)),
        entry([("client-id", "app")], ("request_percentage", 50.0)),
        entry([("user", "alice"), ("client-id", "app")], ("consumer_byte_rate", 2048.0)),
        entry([("user", None)], ("controller_mutation_rate", 0.5)),
        entry([("user", None), ("client-id", None)], ("producer_byte_rate", 10.0))])
    assert [code for _, code, _ in results(altered)] == [ErrorCode.NONE] * 5
    assert store.configs == {
        QuotaEntity("alice", None): {"SCRAM-SHA-256": SCRAM, "producer_byte_rate": "1024"},
        QuotaEntity(None, "app"): {"request_percentage": "50.0"},
        QuotaEntity("alice", "app"): {"consumer_byte_rate": "2048"},
        QuotaEntity(DEFAULT, None): {"controller_mutation_rate": "0.5"},
        QuotaEntity(DEFAULT, DEFAULT): {"producer_byte_rate": "10"}}
    everything = run(handle_describe_client_quotas, DESCRIBE, version, store, components=[], strict=False)
    assert everything.error_code == ErrorCode.NONE and everything.error_message is None
    assert described(everything) == {
        (("user", "alice"),): {"producer_byte_rate": 1024.0},
        (("user", "alice"), ("client-id", "app")): {"consumer_byte_rate": 2048.0},
        (("user", None),): {"controller_mutation_rate": 0.5},
        (("user", None), ("client-id", None)): {"producer_byte_rate": 10.0},
        (("client-id", "app"),): {"request_percentage": 50.0}}
    users = run(handle_describe_client_quotas, DESCRIBE, version, store, strict=True,
                components=[component("user", 2)])
    assert list(described(users)) == [(("user", None),), (("user", "alice"),)]
    exact = run(handle_describe_client_quotas, DESCRIBE, version, store, strict=True,
                components=[component("client-id", 0, "app"), component("user", 0, "alice")])
    assert described(exact) == {(("user", "alice"), ("client-id", "app")): {"consumer_byte_rate": 2048.0}}


@VERSIONS
def test_remove_keeps_the_credentials_and_validate_only_writes_nothing(version):
    store = QuotaStore({QuotaEntity("alice", None): {"SCRAM-SHA-256": SCRAM, "producer_byte_rate": "1"}})
    checked = run(handle_alter_client_quotas, ALTER, version, store, validate_only=True,
                  entries=[entry([("user", "alice")], ("producer_byte_rate", None), ("consumer_byte_rate", 5.0))])
    assert results(checked) == [((("user", "alice"),), ErrorCode.NONE, None)] and store.writes == []
    run(handle_alter_client_quotas, ALTER, version, store, validate_only=False,
        entries=[entry([("user", "alice")], ("producer_byte_rate", None))])
    assert store.writes == [(QuotaEntity("alice", None), {"SCRAM-SHA-256": SCRAM})]
    nothing = run(handle_describe_client_quotas, DESCRIBE, version, store, components=[], strict=False)
    assert list(nothing.entries) == []


@VERSIONS
def test_bad_entries_answer_invalid_request_and_write_nothing(version):
    store = QuotaStore()
    altered = run(handle_alter_client_quotas, ALTER, version, store, validate_only=False, entries=[
        entry([("user", "bob")], ("producer_byte_rate", 1.5)),
        entry([("user", "carol")], ("bogus", 1.0)),
        entry([("client-id", "")], ("producer_byte_rate", 1.0)),
        entry([("ip", "10.0.0.1")], ("connection_creation_rate", 1.0)),
        entry([], ("producer_byte_rate", 1.0)),
        entry([("client-id", "ok")], ("producer_byte_rate", 100.0), ("request_percentage", -1.0))])
    assert results(altered) == [
        ((("user", "bob"),), ErrorCode.INVALID_REQUEST, "Configuration producer_byte_rate must be a LONG value"),
        ((("user", "carol"),), ErrorCode.INVALID_REQUEST, "Invalid configuration key bogus"),
        ((("client-id", ""),), ErrorCode.INVALID_REQUEST, "Empty client-id not supported"),
        ((("ip", "10.0.0.1"),), ErrorCode.INVALID_REQUEST, "Unhandled client quota entity type: ip"),
        ((), ErrorCode.INVALID_REQUEST, "Invalid empty client quota entity"),
        ((("client-id", "ok"),), ErrorCode.INVALID_REQUEST,
         "Invalid value '-1.0' for configuration request_percentage: must be greater than 0")]
    assert store.writes == []


@VERSIONS
@pytest.mark.parametrize("components, code, message", [
    ([component("user", 2), component("user", 1)], ErrorCode.INVALID_REQUEST,
     "Duplicate user filter component entity type"),
    ([component("topic", 2)], ErrorCode.UNSUPPORTED_VERSION, "Custom entity type 'topic' not supported"),
    ([component("user", 9)], ErrorCode.INVALID_REQUEST, "Unexpected match type: 9"),
])
def test_a_filter_kafka_refuses_is_a_top_level_error(version, components, code, message):
    store = QuotaStore({QuotaEntity("alice", None): {"producer_byte_rate": "1"}})
    response = run(handle_describe_client_quotas, DESCRIBE, version, store, components=components, strict=False)
    assert (response.error_code, response.error_message, response.entries) == (code, message, None)


@VERSIONS
def test_without_the_cluster_permission_nothing_is_described_or_changed(version):
    store = QuotaStore({QuotaEntity("alice", None): {"producer_byte_rate": "1"}})
    refused = run(handle_describe_client_quotas, DESCRIBE, version, store, allowed={ALTER_CONFIGS},
                  components=[], strict=False)
    assert (refused.error_code, refused.error_message, refused.entries) == (
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None, None)
    denied = run(handle_alter_client_quotas, ALTER, version, store, allowed={DESCRIBE_CONFIGS}, validate_only=False,
                 entries=[entry([("user", "alice")], ("producer_byte_rate", 5.0)),
                          entry([("client-id", None)], ("producer_byte_rate", 5.0))])
    assert results(denied) == [
        ((("user", "alice"),), ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."),
        ((("client-id", None),), ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")]
    assert store.writes == []
    allowed = run(handle_describe_client_quotas, DESCRIBE, version, store, allowed={DESCRIBE_CONFIGS},
                  components=[], strict=False)
    assert described(allowed) == {(("user", "alice"),): {"producer_byte_rate": 1.0}}
    done = run(handle_alter_client_quotas, ALTER, version, store, allowed={ALTER_CONFIGS}, validate_only=False,
               entries=[entry([("user", "alice")], ("producer_byte_rate", 5.0))])
    assert results(done) == [((("user", "alice"),), ErrorCode.NONE, None)]
    assert store.configs[QuotaEntity("alice", None)] == {"producer_byte_rate": "5"}
