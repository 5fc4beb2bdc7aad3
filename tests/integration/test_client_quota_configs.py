"""Client quota configs with ``kafka-configs`` (real ZooKeeper, 2 real brokers): --bootstrap-server
(DescribeClientQuotas / AlterClientQuotas) and --zookeeper alter and describe users, client ids, a user's client ids
and the defaults; the znodes and ``/config/changes`` notifications are Kafka's; bad input writes nothing and exits 1;
every broker's quota managers pick each change up live (``GET /api/v1/quotas``). Enforcement is
``test_client_quotas``'s."""
from __future__ import annotations

import asyncio
import json

import pytest
import requests

from brokers.protocol import codec
from brokers.protocol.api_versions import ApiKey
from scripts.local.cluster import running_cluster
from scripts.tools.common.cluster_admin import ClusterAdmin
from scripts.tools.kafka_configs import command as kafka_configs
from tests.integration.conditions import wait_for
from tests.integration.znodes import connected_zk

TIMEOUT = 15


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("quota-configs") / "cluster", 2, tick_time=500,
                         session_timeout_ms=6000) as c:
        yield c


def tool(capsys, *args: str) -> tuple[int, list[str], str]:
    code = kafka_configs.main(list(args))
    out, err = capsys.readouterr()
    return code, out.splitlines(), err.strip()


def znode(zk, path: str) -> dict | None:
    return json.loads(zk.get(path)[0]) if zk.exists(path) else None


def notified(zk, entity_path: str) -> bool:
    """A ``/config/changes`` notification names the entity as Kafka's version 2 does."""
    children = zk.get_children("/config/changes")
    return any(json.loads(zk.get(f"/config/changes/{child}")[0]) == {"version": 2, "entity_path": entity_path}
               for child in children)


def enforced(cluster, user, client_id) -> list[dict]:
    """Every broker's quota bounds of the entity, as its own quota managers hold them."""
    found = []
    for broker in cluster.broker_ids:
        rows = requests.get(cluster.http_url(broker, "/api/v1/quotas"), timeout=10).json()["entities"]
        found.append(next((r["quotas"] for r in rows if (r["user"], r["client_id"]) == (user, client_id)), {}))
    return found


def until_enforced(cluster, user, client_id, quotas: dict) -> None:
    wait_for(lambda: enforced(cluster, user, client_id) == [quotas] * len(cluster.broker_ids), TIMEOUT,
             f"every broker to hold {quotas} for ({user}, {client_id})")


# (flags naming the entity, its znode, the notification's entity path, the describe label, /api/v1/quotas' names)
ENTITIES = [
    (["--entity-type", "users", "--entity-name", "alice"], "/config/users/alice", "users/alice",
     "user-principal 'alice'", ("alice", None)),
    (["--entity-type", "clients", "--entity-name", "app"], "/config/clients/app", "clients/app",
     "client-id 'app'", (None, "app")),
    (["--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients", "--entity-name", "app"],
     "/config/users/alice/clients/app", "users/alice/clients/app", "user-principal 'alice', client-id 'app'",
     ("alice", "app")),
    (["--user-defaults"], "/config/users/<default>", "users/<default>", "the default user-principal",
     ("<default>", None)),
    (["--entity-type", "users", "--entity-default", "--entity-type", "clients", "--entity-default"],
     "/config/users/<default>/clients/<default>", "users/<default>/clients/<default>",
     "the default user-principal, the default client-id", ("<default>", "<default>")),
    (["--user", "CN=bob,O=x", "--client", "job 1"], "/config/users/CN%3Dbob%2CO%3Dx/clients/job%201",
     "users/CN%3Dbob%2CO%3Dx/clients/job%201", "user-principal 'CN=bob,O=x', client-id 'job 1'",
     ("CN=bob,O=x", "job 1")),
]


@pytest.mark.parametrize("flags, path, entity_path, label, names", ENTITIES)
def test_over_the_brokers(cluster, capsys, flags, path, entity_path, label, names):
    bootstrap = ["--bootstrap-server", cluster.bootstrap_servers]
    code, out, err = tool(capsys, *bootstrap, "--alter", *flags, "--add-config",
                          "producer_byte_rate=1024,request_percentage=200")
    assert (code, err) == (0, "") and out[0].startswith("Completed updating ")
    with connected_zk(cluster) as zk:
        assert znode(zk, path) == {"version": 1, "config": {"producer_byte_rate": "1024", "request_percentage": "200.0"}}
        assert notified(zk, entity_path)
    until_enforced(cluster, *names, {"producer_byte_rate": 1024.0, "request_percentage": 200.0})
    assert tool(capsys, *bootstrap, "--describe", *flags) == (
        0, [f"Quota configs for {label} are producer_byte_rate=1024.0, request_percentage=200.0"], "")
    assert tool(capsys, *bootstrap, "--alter", *flags, "--delete-config", "request_percentage")[0] == 0
    until_enforced(cluster, *names, {"producer_byte_rate": 1024.0})
    assert tool(capsys, *bootstrap, "--alter", *flags, "--delete-config", "producer_byte_rate")[0] == 0
    until_enforced(cluster, *names, {})
    with connected_zk(cluster) as zk:
        assert znode(zk, path) == {"version": 1, "config": {}}


def test_over_zookeeper(cluster, capsys):
    zookeeper = ["--zookeeper", cluster.zookeeper_connect]
    carol = ["--entity-type", "users", "--entity-name", "carol"]
    assert tool(capsys, *zookeeper, "--alter", *carol, "--add-config",
                "SCRAM-SHA-256=[password=carol-secret],consumer_byte_rate=4096") == (
        0, ["Completed updating config for entity: user-principal 'carol'."], "")
    carol_web = [*carol, "--entity-type", "clients", "--entity-name", "web"]
    assert tool(capsys, *zookeeper, "--alter", *carol_web, "--add-config", "controller_mutation_rate=0.5")[1] == [
        "Completed updating config for entity: user-principal 'carol', client-id 'web'."]
    assert tool(capsys, *zookeeper, "--alter", "--client-defaults", "--add-config", "producer_byte_rate=100")[1] == [
        "Completed updating config for entity: default client-id."]
    with connected_zk(cluster) as zk:
        stored = znode(zk, "/config/users/carol")["config"]
        assert stored["consumer_byte_rate"] == "4096" and "carol-secret" not in json.dumps(stored)
        assert znode(zk, "/config/users/carol/clients/web") == {"version": 1,
                                                                 "config": {"controller_mutation_rate": "0.5"}}
        assert notified(zk, "users/carol/clients/web") and notified(zk, "clients/<default>")
    until_enforced(cluster, "carol", "web", {"controller_mutation_rate": 0.5})
    until_enforced(cluster, None, "<default>", {"producer_byte_rate": 100.0})
    assert tool(capsys, *zookeeper, "--describe", *carol) == (0, [
        "Configs for user-principal 'carol' are consumer_byte_rate=4096",
        "SCRAM credential configs for user-principal 'carol' are SCRAM-SHA-256=iterations=4096"], "")
    assert tool(capsys, *zookeeper, "--describe", *carol, "--entity-type", "clients")[1] == [
        "Configs for user-principal 'carol', client-id 'web' are controller_mutation_rate=0.5"]
    assert "Configs for default client-id are producer_byte_rate=100" in tool(
        capsys, *zookeeper, "--describe", "--entity-type", "clients")[1]
    # the brokers describe the same znodes, credentials apart
    bootstrap = ["--bootstrap-server", cluster.bootstrap_servers]
    assert tool(capsys, *bootstrap, "--describe", *carol) == (0, [
        "Quota configs for user-principal 'carol' are consumer_byte_rate=4096.0",
        "SCRAM credential configs for user-principal 'carol' are SCRAM-SHA-256=iterations=4096"], "")
    # a quota changed over the brokers keeps the credential the znode holds
    assert tool(capsys, *bootstrap, "--alter", *carol, "--delete-config", "consumer_byte_rate")[0] == 0
    with connected_zk(cluster) as zk:
        assert list(znode(zk, "/config/users/carol")["config"]) == ["SCRAM-SHA-256"]
    until_enforced(cluster, "carol", None, {})


@pytest.mark.parametrize("mode", ["--bootstrap-server", "--zookeeper"])
@pytest.mark.parametrize("add, words", [
    ("producer_byte_rate=-1024", "must be greater than 0"),
    ("producer_byte_rate=fast", "fast"),
    ("request_percentage=12.5,bogus_rate=1", "bogus_rate"),
])
def test_bad_input_writes_nothing_and_exits_1(cluster, capsys, mode, add, words):
    connect = cluster.bootstrap_servers if mode == "--bootstrap-server" else cluster.zookeeper_connect
    dave = ["--entity-type", "users", "--entity-name", "dave", "--entity-type", "clients", "--entity-name", "x"]
    code, out, err = tool(capsys, mode, connect, "--alter", *dave, "--add-config", add)
    assert (code, out) == (1, []) and words in err and "Traceback" not in err
    code, out, err = tool(capsys, mode, connect, "--alter", *dave, "--delete-config", "consumer_byte_rate")
    assert (code, out, err) == (1, [], "Invalid config(s): consumer_byte_rate")
    with connected_zk(cluster) as zk:
        assert not zk.exists("/config/users/dave")


def test_both_versions_on_the_wire(cluster):
    """AlterClientQuotas and DescribeClientQuotas v0 (not flexible) and v1 (flexible) answer alike."""
    async def call(key, version, **fields):
        async with ClusterAdmin(cluster.bootstrap_servers, TIMEOUT) as admin:
            return await admin.request_any(key, version, codec.build(codec.request_class(key, version), **fields))

    for version in (0, 1):
        name = f"v{version}"
        altered = asyncio.run(call(ApiKey.ALTER_CLIENT_QUOTAS, version, validate_only=False, entries=[dict(
            entity=[dict(entity_type="client-id", entity_name=name)],
            ops=[dict(key="consumer_byte_rate", value=float(version + 1), remove=False)])]))
        assert [(e.error_code, e.error_message) for e in altered.entries] == [(0, None)]
        described = asyncio.run(call(ApiKey.DESCRIBE_CLIENT_QUOTAS, version, strict=True, components=[
            dict(entity_type="client-id", match_type=0, match=name)]))
        assert [([(e.entity_type, e.entity_name) for e in entry.entity], [(v.key, v.value) for v in entry.values])
                for entry in described.entries] == [([("client-id", name)], [("consumer_byte_rate", version + 1.0)])]
