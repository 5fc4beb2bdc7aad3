"""brokers.quotas.admin: DescribeClientQuotas' filter (Kafka 2.8's match types, strict or not) and AlterClientQuotas'
plan (Kafka's INVALID_REQUEST messages, stored texts, other keys kept), table-driven."""
from __future__ import annotations

import pytest

from brokers.quotas.admin import (
    MATCH_DEFAULT,
    MATCH_EXACT,
    MATCH_SPECIFIED,
    FilterComponent,
    QuotaOp,
    UnsupportedQuotaEntityType,
    altered_config,
    describe_client_quotas,
    entity_parts,
    java_double,
    plan_alterations,
    quota_entity,
    quota_values,
    stored_value,
)
from brokers.quotas.entities import DEFAULT, QuotaConfigError, QuotaEntity

SCRAM = "salt=c2FsdA==,stored_key=a2V5,server_key=a2V5,iterations=4096"
E = QuotaEntity

# Every kind of entity, each with a quota, plus entities whose znodes hold no quota key.
CONFIGS = {
    E("alice", None): {"producer_byte_rate": "1024", "SCRAM-SHA-256": SCRAM},
    E("bob", None): {"SCRAM-SHA-512": SCRAM},  # credentials only: never described
    E("carol", None): {},  # a user znode holding only client children
    E(DEFAULT, None): {"consumer_byte_rate": "2048"},
    E(None, "app"): {"request_percentage": "50.0"},
    E(None, DEFAULT): {"producer_byte_rate": "10"},
    E("alice", "app"): {"producer_byte_rate": "1", "consumer_byte_rate": "2"},
    E("alice", DEFAULT): {"controller_mutation_rate": "0.5"},
    E(DEFAULT, "app"): {"producer_byte_rate": "3"},
    E(DEFAULT, DEFAULT): {"producer_byte_rate": "4"},
    E("carol", "job"): {"consumer_byte_rate": "5"},
}
ALL = [e for e, c in CONFIGS.items() if quota_values(c)]


def user(match_type, match=None):
    return FilterComponent("user", match_type, match)


def client(match_type, match=None):
    return FilterComponent("client-id", match_type, match)


@pytest.mark.parametrize("components, strict, expected", [
    # no component: everything (strict: nothing, since every entity has a part no component names)
    ([], False, ALL),
    ([], True, []),
    # user components alone
    ([user(MATCH_EXACT, "alice")], True, [E("alice", None)]),
    ([user(MATCH_EXACT, "alice")], False, [E("alice", None), E("alice", "app"), E("alice", DEFAULT)]),
    ([user(MATCH_DEFAULT)], True, [E(DEFAULT, None)]),
    ([user(MATCH_DEFAULT)], False, [E(DEFAULT, None), E(DEFAULT, "app"), E(DEFAULT, DEFAULT)]),
    ([user(MATCH_SPECIFIED)], True, [E("alice", None), E(DEFAULT, None)]),
    ([user(MATCH_SPECIFIED)], False, [e for e in ALL if e.user is not None]),
    ([user(MATCH_EXACT, "nobody")], False, []),
    ([user(MATCH_EXACT, "bob")], True, []),  # SCRAM keys only: not a quota entity
    # client-id components alone
    ([client(MATCH_EXACT, "app")], True, [E(None, "app")]),
    ([client(MATCH_EXACT, "app")], False, [E(None, "app"), E("alice", "app"), E(DEFAULT, "app")]),
    ([client(MATCH_DEFAULT)], True, [E(None, DEFAULT)]),
    ([client(MATCH_SPECIFIED)], True, [E(None, "app"), E(None, DEFAULT)]),
    ([client(MATCH_SPECIFIED)], False, [e for e in ALL if e.client_id is not None]),
    # both
    ([user(MATCH_EXACT, "alice"), client(MATCH_EXACT, "app")], True, [E("alice", "app")]),
    ([client(MATCH_EXACT, "app"), user(MATCH_EXACT, "alice")], False, [E("alice", "app")]),
    ([user(MATCH_EXACT, "alice"), client(MATCH_SPECIFIED)], True, [E("alice", "app"), E("alice", DEFAULT)]),
    ([user(MATCH_EXACT, "alice"), client(MATCH_DEFAULT)], True, [E("alice", DEFAULT)]),
    ([user(MATCH_DEFAULT), client(MATCH_DEFAULT)], True, [E(DEFAULT, DEFAULT)]),
    ([user(MATCH_DEFAULT), client(MATCH_SPECIFIED)], True, [E(DEFAULT, "app"), E(DEFAULT, DEFAULT)]),
    ([user(MATCH_SPECIFIED), client(MATCH_SPECIFIED)], True, [e for e in ALL if e.user and e.client_id]),
    ([user(MATCH_SPECIFIED), client(MATCH_EXACT, "job")], True, [E("carol", "job")]),
    # the default is no name: an exact "<default>" matches nothing
    ([user(MATCH_EXACT, DEFAULT)], True, []),
    # zkafka keeps no IP quotas: an ip component alone selects nothing
    ([FilterComponent("ip", MATCH_SPECIFIED)], False, []),
])
def test_describe_filter(components, strict, expected):
    described = describe_client_quotas(components, strict, CONFIGS)
    assert set(described) == set(expected) and len(expected) == len(set(expected))


def test_describe_answers_quota_keys_only_as_floats_in_entity_and_key_order():
    configs = {E(None, "z"): {"request_percentage": "12.5"}, E("alice", None): dict(CONFIGS[E("alice", None)]),
               E("alice", "app"): {"consumer_byte_rate": "2", "producer_byte_rate": "1", "junk": "x"},
               E(None, "bad"): {"producer_byte_rate": "fast"}}
    described = describe_client_quotas([], False, configs)
    assert list(described.items()) == [
        (E("alice", None), {"producer_byte_rate": 1024.0}),
        (E("alice", "app"), {"consumer_byte_rate": 2.0, "producer_byte_rate": 1.0}),
        (E(None, "z"), {"request_percentage": 12.5})]
    assert all(isinstance(v, float) for values in described.values() for v in values.values())


@pytest.mark.parametrize("components, error, message", [
    ([user(MATCH_SPECIFIED), user(MATCH_DEFAULT)], QuotaConfigError, "Duplicate user filter component entity type"),
    ([client(MATCH_SPECIFIED), client(MATCH_SPECIFIED)], QuotaConfigError,
     "Duplicate client filter component entity type"),
    ([FilterComponent("ip", 2), FilterComponent("ip", 2)], QuotaConfigError, "Duplicate ip filter component"),
    ([FilterComponent("", 2)], QuotaConfigError, "Unexpected empty filter component entity type"),
    ([FilterComponent("group", 2)], UnsupportedQuotaEntityType, "Custom entity type 'group' not supported"),
    ([user(MATCH_SPECIFIED), FilterComponent("ip", 2)], QuotaConfigError,
     "Invalid entity filter component combination, IP filter component should not be used with user or clientId"),
    ([user(7)], QuotaConfigError, "Unexpected match type: 7"),
    ([client(MATCH_EXACT, None)], QuotaConfigError, "Unexpected null match"),
])
def test_describe_filters_kafka_refuses(components, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(")) as raised:
        describe_client_quotas(components, True, CONFIGS)
    if error is QuotaConfigError:
        assert not isinstance(raised.value, UnsupportedQuotaEntityType)


def test_entity_parts_name_the_default_with_none_user_first():
    assert entity_parts(E(DEFAULT, "app")) == [("user", None), ("client-id", "app")]
    assert entity_parts(E(None, DEFAULT)) == [("client-id", None)]
    assert entity_parts(E("alice", None)) == [("user", "alice")]


# -- AlterClientQuotas -----------------------------------------------------------------------------------
@pytest.mark.parametrize("parts, expected", [
    ([("user", "alice")], E("alice", None)),
    ([("user", None)], E(DEFAULT, None)),
    ([("client-id", "app")], E(None, "app")),
    ([("client-id", None)], E(None, DEFAULT)),
    ([("client-id", "app"), ("user", "alice")], E("alice", "app")),
    ([("user", None), ("client-id", None)], E(DEFAULT, DEFAULT)),
    ([("user", "CN=a,O=b")], E("CN=a,O=b", None)),
])
def test_quota_entity(parts, expected):
    assert quota_entity(parts) == expected


@pytest.mark.parametrize("parts, message", [
    ([], "Invalid empty client quota entity"),
    ([("ip", "1.2.3.4")], "Unhandled client quota entity type: ip"),
    ([("group", "g")], "Unhandled client quota entity type: group"),
    ([("user", "")], "Empty user not supported"),
    ([("client-id", "")], "Empty client-id not supported"),
    ([("user", "a"), ("user", "b")], "Duplicate user entity type in client quota entity"),
    ([("client-id", None), ("client-id", "x")], "Duplicate client-id entity type"),
])
def test_quota_entity_errors(parts, message):
    with pytest.raises(QuotaConfigError, match=message):
        quota_entity(parts)


@pytest.mark.parametrize("key, value, stored", [
    ("producer_byte_rate", 1024.0, "1024"),
    ("consumer_byte_rate", 1048576.0000001, "1048576"),  # within Kafka's epsilon
    ("consumer_byte_rate", 2.0 ** 40, "1099511627776"),
    ("request_percentage", 200.0, "200.0"),
    ("request_percentage", 12.5, "12.5"),
    ("controller_mutation_rate", 0.5, "0.5"),
    ("controller_mutation_rate", 1e-4, "1.0E-4"),
    ("request_percentage", 1e7, "1.0E7"),
    ("request_percentage", 123456789.0, "1.23456789E8"),
])
def test_stored_value(key, value, stored):
    assert stored_value(key, value) == stored


@pytest.mark.parametrize("key, value, message", [
    ("bogus", 1.0, "Invalid configuration key bogus"),
    ("SCRAM-SHA-256", 1.0, "Invalid configuration key SCRAM-SHA-256"),
    ("producer_byte_rate", 1.5, "Configuration producer_byte_rate must be a LONG value"),
    ("consumer_byte_rate", 1e30, "Configuration consumer_byte_rate must be a LONG value"),
    ("producer_byte_rate", -5.0, "must be greater than 0"),
    ("producer_byte_rate", -5.5, "must be a whole number"),
    ("producer_byte_rate", 0.0, "must be greater than 0"),
    ("request_percentage", -0.5, "must be greater than 0"),
    ("request_percentage", float("nan"), "not a number"),
    ("controller_mutation_rate", float("inf"), "not a number"),
    ("producer_byte_rate", float("inf"), "not a number"),
])
def test_stored_value_errors(key, value, message):
    with pytest.raises(QuotaConfigError, match=message):
        stored_value(key, value)


@pytest.mark.parametrize("current, ops, expected", [
    ({}, [QuotaOp("producer_byte_rate", 1024)], {"producer_byte_rate": "1024"}),
    ({"SCRAM-SHA-256": SCRAM}, [QuotaOp("request_percentage", 50)],
     {"SCRAM-SHA-256": SCRAM, "request_percentage": "50.0"}),
    ({"SCRAM-SHA-256": SCRAM, "producer_byte_rate": "1"}, [QuotaOp("producer_byte_rate", remove=True)],
     {"SCRAM-SHA-256": SCRAM}),
    ({}, [QuotaOp("producer_byte_rate", remove=True)], {}),  # removing an absent key is no error (Kafka)
    ({}, [QuotaOp("producer_byte_rate", 1), QuotaOp("producer_byte_rate", 2)], {"producer_byte_rate": "2"}),
    ({}, [QuotaOp("producer_byte_rate", 1), QuotaOp("producer_byte_rate", remove=True)], {}),
    ({"consumer_byte_rate": "7"}, [], {"consumer_byte_rate": "7"}),
])
def test_altered_config(current, ops, expected):
    assert altered_config(current, ops) == expected


def test_removing_a_non_quota_key_is_refused_so_credentials_stay():
    with pytest.raises(QuotaConfigError, match="Invalid configuration key SCRAM-SHA-256"):
        altered_config({"SCRAM-SHA-256": SCRAM}, [QuotaOp("SCRAM-SHA-256", remove=True)])


def test_plan_answers_each_entry_and_writes_only_good_ones():
    configs = {E("alice", None): {"SCRAM-SHA-256": SCRAM, "producer_byte_rate": "1"}}
    plan = plan_alterations([
        ([("user", "alice")], [QuotaOp("consumer_byte_rate", 10), QuotaOp("producer_byte_rate", remove=True)]),
        ([("client-id", "app")], [QuotaOp("producer_byte_rate", 5), QuotaOp("bogus", 1)]),  # one bad op: nothing
        ([], [QuotaOp("producer_byte_rate", 5)]),
        ([("user", None), ("client-id", None)], [QuotaOp("request_percentage", 25)]),
        ([("ip", "10.0.0.1")], [QuotaOp("connection_creation_rate", 5)]),
    ], configs)
    assert [None if r is None else str(r) for r in plan.results] == [
        None, "Invalid configuration key bogus", "Invalid empty client quota entity", None,
        "Unhandled client quota entity type: ip"]
    assert plan.writes == {E("alice", None): {"SCRAM-SHA-256": SCRAM, "consumer_byte_rate": "10"},
                           E(DEFAULT, DEFAULT): {"request_percentage": "25.0"}}
    assert configs[E("alice", None)] == {"SCRAM-SHA-256": SCRAM, "producer_byte_rate": "1"}  # input untouched


def test_an_entity_altered_twice_gets_both_entries_ops_in_order():
    plan = plan_alterations([
        ([("user", "alice")], [QuotaOp("producer_byte_rate", 1)]),
        ([("user", "alice")], [QuotaOp("consumer_byte_rate", 2)]),
        ([("user", "alice")], [QuotaOp("consumer_byte_rate", -2)]),  # refused: the first two stand
    ], {})
    assert [r is None for r in plan.results] == [True, True, False]
    assert plan.writes == {E("alice", None): {"producer_byte_rate": "1", "consumer_byte_rate": "2"}}


@pytest.mark.parametrize("value, text", [
    (0.0, "0.0"), (1.0, "1.0"), (-2.5, "-2.5"), (0.001, "0.001"), (9999999.0, "9999999.0"), (1e7, "1.0E7"),
    (0.0001, "1.0E-4"), (-1.5e-5, "-1.5E-5"), (1.7976931348623157e308, "1.7976931348623157E308"),
    (float("inf"), "Infinity"), (float("-inf"), "-Infinity"), (float("nan"), "NaN"),
])
def test_java_double(value, text):
    assert java_double(value) == text
