"""kafka-configs for client quotas: the pure half (Kafka 2.8's entity flags, what an alteration may hold, the lines
printed), and the --bootstrap-server path end to end against the broker's handlers over an in-memory store."""
from __future__ import annotations

import asyncio

import pytest

from brokers.protocol.framing import RequestHeader
from brokers.quotas.admin import MATCH_DEFAULT, MATCH_EXACT, MATCH_SPECIFIED, FilterComponent
from brokers.quotas.entities import DEFAULT, QuotaEntity
from brokers.server.context import ServerContext
from brokers.server.handlers.client_quotas import handle_alter_client_quotas, handle_describe_client_quotas
from scripts.tools.kafka_configs import quotas, quotas_admin
from brokers.quotas.entities import entities_from_znodes
from scripts.tools.kafka_configs.command import main
from scripts.tools.kafka_configs.quotas import (
    EntityFlagsError,
    bootstrap_alteration,
    check_entity_flags,
    completed_line,
    describe_filter,
    entity_flags,
    quota_entity,
    quota_line,
    quota_ops,
    zookeeper_config,
    zookeeper_label,
    zookeeper_lines,
)
from scripts.tools.kafka_configs.syntax import ConfigCommandError
from scripts.tools.kafka_configs.users import UserConfigError
from tests.unit.server.test_client_quotas import QuotaStore

SCRAM = "salt=c2FsdA==,stored_key=a2V5,server_key=a2V5,iterations=8192"
E = QuotaEntity


@pytest.mark.parametrize("flags, expected", [
    ((["users"], ["alice"], None, None, False, False), (["users"], ["alice"])),
    ((["users", "clients"], ["alice", ""], None, None, False, False), (["users", "clients"], ["alice", ""])),
    (([], [], "alice", "app", False, False), (["clients", "users"], ["app", "alice"])),
    (([], [], "alice", None, False, True), (["users", "clients"], ["alice", ""])),
    (([], [], None, None, True, True), (["clients", "users"], ["", ""])),
    (([], [], None, "app", True, False), (["clients", "users"], ["app", ""])),
])
def test_entity_flags_in_kafkas_order(flags, expected):
    assert entity_flags(*flags) == expected


def test_entity_flags_and_shorthands_do_not_mix():
    with pytest.raises(EntityFlagsError, match="should not be used in conjunction with specific entity flags"):
        entity_flags(["users"], [], None, "app", False, False)


@pytest.mark.parametrize("types, names, alter, message", [
    (["users", "users"], ["a", "b"], True, "Duplicate entity type(s) specified: users"),
    (["users", "topics"], ["a", "t"], True, "Only 'users' and 'clients' entity types may be specified together"),
    (["users", "clients"], ["a"], True, "must be specified with each --entity-type for --alter"),
    (["clients"], [], True, "must be specified with each --entity-type for --alter"),
    (["users"], ["a", "b"], False, "More entity names specified than entity types"),
])
def test_entity_flags_kafka_refuses(types, names, alter, message):
    with pytest.raises(EntityFlagsError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_entity_flags(types, names, alter)


@pytest.mark.parametrize("types, names, entity, components", [
    (["users"], ["alice"], E("alice", None), [FilterComponent("user", MATCH_EXACT, "alice")]),
    (["users"], [""], E(DEFAULT, None), [FilterComponent("user", MATCH_DEFAULT)]),
    (["clients"], ["app"], E(None, "app"), [FilterComponent("client-id", MATCH_EXACT, "app")]),
    (["users", "clients"], ["alice", "app"], E("alice", "app"),
     [FilterComponent("user", MATCH_EXACT, "alice"), FilterComponent("client-id", MATCH_EXACT, "app")]),
    (["clients", "users"], ["app", ""], E(DEFAULT, "app"),
     [FilterComponent("client-id", MATCH_EXACT, "app"), FilterComponent("user", MATCH_DEFAULT)]),
    (["users", "clients"], ["", ""], E(DEFAULT, DEFAULT),
     [FilterComponent("user", MATCH_DEFAULT), FilterComponent("client-id", MATCH_DEFAULT)]),
])
def test_named_entities(types, names, entity, components):
    assert quota_entity(types, names) == entity
    assert describe_filter(types, names) == components


@pytest.mark.parametrize("types, names, components", [
    (["users"], [], [FilterComponent("user", MATCH_SPECIFIED)]),
    (["users", "clients"], ["alice"], [FilterComponent("user", MATCH_EXACT, "alice"),
                                       FilterComponent("client-id", MATCH_SPECIFIED)]),
    (["users", "clients"], [], [FilterComponent("user", MATCH_SPECIFIED), FilterComponent("client-id", MATCH_SPECIFIED)]),
])
def test_unnamed_types_match_any_name(types, names, components):
    assert describe_filter(types, names) == components


@pytest.mark.parametrize("types, names, added, deleted, kind", [
    (["users"], ["alice"], {"producer_byte_rate": "1"}, [], quotas.QUOTAS),
    (["users"], [""], {}, ["request_percentage"], quotas.QUOTAS),
    (["users"], ["alice"], {"SCRAM-SHA-256": "password=x"}, [], quotas.SCRAM),
    (["users"], ["alice"], {}, ["SCRAM-SHA-512"], quotas.SCRAM),
    (["clients"], ["app"], {"consumer_byte_rate": "1"}, [], quotas.QUOTAS),
    (["users", "clients"], ["alice", "app"], {"controller_mutation_rate": "1"}, [], quotas.QUOTAS),
])
def test_bootstrap_alteration_kind(types, names, added, deleted, kind):
    assert bootstrap_alteration(types, names, added, deleted) == kind


@pytest.mark.parametrize("types, names, added, deleted, message", [
    (["clients"], ["app"], {"bogus": "1"}, [], "Only quota configs can be added for 'clients' using "
                                                "--bootstrap-server. Unexpected config names: bogus"),
    (["clients"], ["app"], {}, ["SCRAM-SHA-256"], "Only quota configs can be deleted for 'clients'"),
    (["users", "clients"], ["a", "b"], {"SCRAM-SHA-256": "password=x"}, [], "Only quota configs can be added"),
    (["users"], ["alice"], {"bogus": "1"}, [], "Only quota and SCRAM credential configs can be added for 'users' "
                                               "using --bootstrap-server. Unexpected config names: bogus"),
    (["users"], ["alice"], {}, ["x", "y"], "can be deleted for 'users' using --bootstrap-server. Unexpected config "
                                           "names: x,y"),
    (["users"], [""], {"SCRAM-SHA-256": "password=x"}, [], "The use of --entity-default or --user-defaults is not "
                                                           "allowed with User SCRAM Credentials"),
    (["users"], ["alice"], {"SCRAM-SHA-256": "password=x", "producer_byte_rate": "1"}, [],
     "Cannot alter both quota and SCRAM credential configs simultaneously for 'users' using --bootstrap-server."),
])
def test_bootstrap_alterations_kafka_refuses(types, names, added, deleted, message):
    with pytest.raises(ConfigCommandError, match=message.replace("(", r"\(")):
        bootstrap_alteration(types, names, added, deleted)


def test_quota_ops():
    assert quota_ops({"producer_byte_rate": "1024", "request_percentage": "12.5"}, ["consumer_byte_rate"],
                     {"consumer_byte_rate": 1.0}) == [
        dict(key="producer_byte_rate", value=1024.0, remove=False),
        dict(key="request_percentage", value=12.5, remove=False),
        dict(key="consumer_byte_rate", value=0.0, remove=True)]
    with pytest.raises(ConfigCommandError, match="^Invalid config\\(s\\): consumer_byte_rate$"):
        quota_ops({}, ["consumer_byte_rate"], {})
    with pytest.raises(ConfigCommandError, match="^Cannot parse quota configuration value for producer_byte_rate: "
                                                 "fast$"):
        quota_ops({"producer_byte_rate": "fast"}, [], {})


@pytest.mark.parametrize("entity, values, line", [
    (E("alice", "app"), {"producer_byte_rate": 1024.0, "request_percentage": 200.0},
     "Quota configs for user-principal 'alice', client-id 'app' are producer_byte_rate=1024.0, request_percentage=200.0"),
    (E(DEFAULT, None), {"consumer_byte_rate": 1e7}, "Quota configs for the default user-principal are "
                                                    "consumer_byte_rate=1.0E7"),
    (E(DEFAULT, DEFAULT), {"controller_mutation_rate": 0.5},
     "Quota configs for the default user-principal, the default client-id are controller_mutation_rate=0.5"),
    (E(None, "CN=a,O=b"), {"producer_byte_rate": 1.0}, "Quota configs for client-id 'CN=a,O=b' are producer_byte_rate=1.0"),
])
def test_quota_line(entity, values, line):
    assert quota_line(entity, values) == line


@pytest.mark.parametrize("types, names, line", [
    (["users"], ["alice"], "Completed updating config for user alice."),
    (["clients", "users"], ["app", "alice"], "Completed updating config for client app."),
    (["users", "clients"], ["", "app"], "Completed updating default config for users in the cluster."),
    (["clients"], [""], "Completed updating default config for clients in the cluster."),
])
def test_completed_line(types, names, line):
    assert completed_line(types, names) == line


@pytest.mark.parametrize("entity, label", [
    (E("alice", None), "user-principal 'alice'"), (E(DEFAULT, None), "default user-principal"),
    (E("alice", DEFAULT), "user-principal 'alice', default client-id"), (E(None, "app"), "client-id 'app'"),
    (E(DEFAULT, "app"), "default user-principal, client-id 'app'"),
])
def test_zookeeper_label(entity, label):
    assert zookeeper_label(entity) == label


def test_zookeeper_config_keeps_credentials_and_stores_values_as_given():
    current = {"SCRAM-SHA-256": SCRAM, "consumer_byte_rate": "5"}
    config = zookeeper_config(E("alice", None), current, {"producer_byte_rate": "1024", "request_percentage": "12.5"},
                              ["consumer_byte_rate"])
    assert config == {"SCRAM-SHA-256": SCRAM, "producer_byte_rate": "1024", "request_percentage": "12.5"}
    scram = zookeeper_config(E("bob", None), {}, {"SCRAM-SHA-512": "iterations=8192,password=pw"}, [])
    assert scram["SCRAM-SHA-512"].endswith("iterations=8192") and "password" not in scram["SCRAM-SHA-512"]


@pytest.mark.parametrize("entity, added, deleted, error, message", [
    (E(None, "app"), {"bogus": "1"}, [], ConfigCommandError, "^Unknown Dynamic Configuration: bogus.$"),
    (E("alice", "app"), {"SCRAM-SHA-256": "password=x"}, [], ConfigCommandError, "Unknown Dynamic Configuration"),
    (E(DEFAULT, None), {"SCRAM-SHA-256": "password=x"}, [], ConfigCommandError, "Unknown Dynamic Configuration"),
    (E(None, "app"), {}, ["producer_byte_rate", "request_percentage"], ConfigCommandError,
     "^Invalid config\\(s\\): producer_byte_rate,request_percentage$"),
    (E(None, "app"), {"producer_byte_rate": "-1"}, [], ConfigCommandError, "must be greater than 0"),
    (E(None, "app"), {"producer_byte_rate": "fast"}, [], ConfigCommandError, "not a number"),
    (E(None, "app"), {"producer_byte_rate": "1.5"}, [], ConfigCommandError, "must be a whole number"),
    (E("alice", None), {"SCRAM-SHA-256": "iterations=10,password=x"}, [], UserConfigError, "SCRAM-SHA-256"),
])
def test_zookeeper_config_refuses(entity, added, deleted, error, message):
    with pytest.raises(error, match=message):
        zookeeper_config(entity, {}, added, deleted)


@pytest.mark.parametrize("entity, config, lines", [
    (E("alice", None), {"producer_byte_rate": "1024", "SCRAM-SHA-256": SCRAM},
     ["Configs for user-principal 'alice' are producer_byte_rate=1024",
      "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192"]),
    (E("alice", None), {"SCRAM-SHA-256": SCRAM},
     ["SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192"]),
    (E("nobody", None), {}, ["Configs for user-principal 'nobody' are "]),
    (E(None, "app"), {"request_percentage": "12.5", "consumer_byte_rate": "1"},
     ["Configs for client-id 'app' are consumer_byte_rate=1,request_percentage=12.5"]),
])
def test_zookeeper_lines(entity, config, lines):
    assert zookeeper_lines(entity, config) == lines


def test_entities_of_znode_names():
    assert entities_from_znodes({("users", "CN%3Da"): {"x": "1"}, ("users", "%3Cdefault%3E/clients/<default>"): {},
                        ("clients", "<default>"): {}, ("users", "a/b/c"): {}}) == {
        E("CN=a", None): {"x": "1"}, E("<default>", DEFAULT): {}, E(None, DEFAULT): {}}


@pytest.mark.parametrize("argv, words", [
    (["--entity-type", "users", "--entity-type", "users", "--entity-name", "a", "--entity-name", "b", "--describe"],
     "Duplicate entity type(s) specified: users"),
    (["--entity-type", "users", "--entity-type", "topics", "--describe"], "Only 'users' and 'clients'"),
    (["--entity-type", "users", "--entity-name", "a", "--entity-type", "clients", "--alter", "--add-config",
      "producer_byte_rate=1"], "--entity-name or --entity-default must be specified with each --entity-type"),
    (["--entity-type", "users", "--user", "a", "--describe"], "should not be used in conjunction"),
    (["--describe"], "--entity-type"),
    (["--entity-type", "clients", "--entity-name", "c", "--describe", "--all"], "--all"),
    (["--entity-type", "topics", "--entity-name", "a", "--entity-name", "b", "--describe"], "--entity-type"),
])
def test_bad_quota_flags_exit_2(argv, words, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--bootstrap-server", "h:1", *argv])
    assert exit_info.value.code == 2
    assert words in capsys.readouterr().err


# -- --bootstrap-server, end to end against the broker's handlers -------------------------------------------
class BrokerAdmin:
    """Stands in for ClusterAdmin: each request goes to the broker's handler over ``STORE``."""

    store = QuotaStore()
    handlers = {48: handle_describe_client_quotas, 49: handle_alter_client_quotas}

    def __init__(self, *args, **kwargs):
        pass

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        return None

    async def request_any(self, api_key, version, body):
        context = ServerContext(1, None, None, None, lambda: None, None, quota_configs=self.store)
        return await self.handlers[api_key](context, RequestHeader(api_key, version, 1, "t", 0), body)


@pytest.fixture
def broker(monkeypatch):
    BrokerAdmin.store = QuotaStore({E("alice", None): {"SCRAM-SHA-256": SCRAM}})
    monkeypatch.setattr(quotas_admin, "ClusterAdmin", BrokerAdmin)
    return BrokerAdmin.store


def tool(capsys, *argv):
    code = main(["--bootstrap-server", "h:1", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_bootstrap_alter_and_describe(broker, capsys):
    assert tool(capsys, "--alter", "--user", "alice", "--client", "app", "--add-config",
                "producer_byte_rate=1024,request_percentage=200") == (0, "Completed updating config for client app.\n", "")
    assert tool(capsys, "--alter", "--entity-type", "clients", "--entity-default", "--add-config",
                "consumer_byte_rate=2048")[1] == "Completed updating default config for clients in the cluster.\n"
    assert broker.configs[E("alice", "app")] == {"producer_byte_rate": "1024", "request_percentage": "200.0"}
    assert broker.configs[E(None, DEFAULT)] == {"consumer_byte_rate": "2048"}
    assert tool(capsys, "--describe", "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients") == (
        0, "Quota configs for user-principal 'alice', client-id 'app' are producer_byte_rate=1024.0, "
           "request_percentage=200.0\n", "")
    assert tool(capsys, "--describe", "--entity-type", "clients")[1] == (
        "Quota configs for the default client-id are consumer_byte_rate=2048.0\n")
    assert tool(capsys, "--alter", "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients",
                "--entity-name", "app", "--delete-config", "request_percentage")[0] == 0
    assert broker.configs[E("alice", "app")] == {"producer_byte_rate": "1024"}


@pytest.mark.parametrize("argv, message", [
    (["--entity-type", "clients", "--entity-name", "app", "--add-config", "producer_byte_rate=-1"],
     "Error while executing config command: INVALID_REQUEST: Invalid value '-1.0' for configuration "
     "producer_byte_rate: must be greater than 0"),
    (["--entity-type", "clients", "--entity-name", "app", "--add-config", "producer_byte_rate=1.5"],
     "Error while executing config command: INVALID_REQUEST: Configuration producer_byte_rate must be a LONG value"),
    (["--entity-type", "clients", "--entity-name", "app", "--add-config", "producer_byte_rate=fast"],
     "Cannot parse quota configuration value for producer_byte_rate: fast"),
    (["--entity-type", "clients", "--entity-name", "app", "--add-config", "bogus=1"],
     "Only quota configs can be added for 'clients' using --bootstrap-server. Unexpected config names: bogus"),
    (["--entity-type", "users", "--entity-name", "alice", "--delete-config", "producer_byte_rate"],
     "Invalid config(s): producer_byte_rate"),
])
def test_bootstrap_bad_input_exits_1_and_writes_nothing(broker, capsys, argv, message):
    assert tool(capsys, "--alter", *argv) == (1, "", message + "\n")
    assert broker.writes == []


def test_describe_of_a_user_then_shows_its_credentials(broker, capsys, monkeypatch):
    from scripts.tools.kafka_configs import users_admin
    shown = []
    monkeypatch.setattr(users_admin, "run", lambda args: shown.append(args.entity_name) or 0)
    asyncio.run(broker.set_quota_entity_config(E("alice", None), {"SCRAM-SHA-256": SCRAM, "producer_byte_rate": "1"}))
    assert tool(capsys, "--describe", "--entity-type", "users", "--entity-name", "alice")[1] == (
        "Quota configs for user-principal 'alice' are producer_byte_rate=1.0\n")
    assert tool(capsys, "--describe", "--user-defaults")[1] == ""
    assert tool(capsys, "--alter", "--user", "alice", "--add-config", "SCRAM-SHA-512=[password=x]")[0] == 0
    assert shown == ["alice", "alice"]  # the describe's credentials, then the SCRAM alter: not for the default
