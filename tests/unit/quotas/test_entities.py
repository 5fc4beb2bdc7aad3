"""Which quota applies to a connection: Kafka's eight-level precedence and metric tags, as a table (pure)."""
from __future__ import annotations

import itertools

import pytest

from brokers.quotas.entities import (
    DEFAULT, QuotaConfigError, QuotaEntity, metric_tags, parse_quota_value, quota_limit, quotas_of,
)

U, C = "alice", "app"
# Kafka's order, most specific first, with the tags a connection of (alice, app) is measured by
LEVELS = [
    (QuotaEntity(U, C), (U, C)),
    (QuotaEntity(U, DEFAULT), (U, C)),
    (QuotaEntity(U, None), (U, "")),
    (QuotaEntity(DEFAULT, C), (U, C)),
    (QuotaEntity(DEFAULT, DEFAULT), (U, C)),
    (QuotaEntity(DEFAULT, None), (U, "")),
    (QuotaEntity(None, C), ("", C)),
    (QuotaEntity(None, DEFAULT), ("", C)),
]


@pytest.mark.parametrize("configured", [combo for n in range(1, 4) for combo in itertools.combinations(range(8), n)])
def test_the_most_specific_configured_level_wins(configured):
    quotas = {LEVELS[i][0]: float(100 + i) for i in configured}
    winner = min(configured)
    tags = metric_tags(quotas, U, C)
    assert tags == LEVELS[winner][1]
    assert quota_limit(quotas, tags) == 100 + winner


def test_every_level_alone_and_all_together():
    everything = {entity: float(i) for i, (entity, _) in enumerate(LEVELS)}
    assert metric_tags(everything, U, C) == (U, C) and quota_limit(everything, (U, C)) == 0.0
    for i, (entity, tags) in enumerate(LEVELS):
        assert (metric_tags({entity: 1.0}, U, C), quota_limit({entity: 1.0}, tags)) == (tags, 1.0), i


def test_no_quota_means_per_client_id_tags_and_no_limit():
    assert metric_tags({}, U, C) == ("", C) and quota_limit({}, ("", C)) is None
    other = {QuotaEntity("bob", None): 5.0}
    assert metric_tags(other, U, C) == ("", C) and quota_limit(other, ("", C)) is None


def test_users_sharing_a_client_id_quota_share_one_rate_and_user_quotas_cover_all_their_clients():
    by_client = {QuotaEntity(None, C): 1.0}
    assert metric_tags(by_client, "alice", C) == metric_tags(by_client, "bob", C) == ("", C)
    by_user = {QuotaEntity(U, None): 1.0}
    assert metric_tags(by_user, U, "one") == metric_tags(by_user, U, "two") == (U, "")
    assert metric_tags(by_user, "bob", "one") == ("", "one")


def test_a_user_default_falls_back_to_the_default_users_entries():
    quotas = {QuotaEntity(DEFAULT, DEFAULT): 7.0, QuotaEntity(None, C): 3.0}
    assert metric_tags(quotas, U, C) == (U, C) and quota_limit(quotas, (U, C)) == 7.0
    assert quota_limit({QuotaEntity(DEFAULT, None): 9.0}, (U, "")) == 9.0


def test_an_empty_client_id_matches_only_defaults():
    quotas = {QuotaEntity(None, DEFAULT): 2.0}
    assert metric_tags(quotas, U, "") == ("", "") and quota_limit(quotas, ("", "")) is None


@pytest.mark.parametrize("entity_type, name, entity", [
    ("users", "alice", QuotaEntity("alice", None)),
    ("users", "%3Cdefault%3E", QuotaEntity("<default>", None)),
    ("users", "<default>", QuotaEntity(DEFAULT, None)),
    ("users", "alice/clients/app", QuotaEntity("alice", "app")),
    ("users", "<default>/clients/<default>", QuotaEntity(DEFAULT, DEFAULT)),
    ("users", "CN%3Dalice%2COU%3Dx/clients/my%20app", QuotaEntity("CN=alice,OU=x", "my app")),
    ("clients", "app", QuotaEntity(None, "app")),
    ("clients", "<default>", QuotaEntity(None, DEFAULT)),
])
def test_znode_names_round_trip(entity_type, name, entity):
    assert QuotaEntity.from_znode(entity_type, name) == entity
    assert QuotaEntity.from_znode(*entity.znode()) == entity


@pytest.mark.parametrize("entity_type, name", [
    ("topics", "t"), ("clients", ""), ("clients", "a/b"), ("users", ""), ("users", "a/clients/"),
    ("users", "/clients/b"), ("users", "a/b"), ("users", "a/clients/b/c"),
])
def test_names_that_are_no_quota_entity_are_refused(entity_type, name):
    with pytest.raises(QuotaConfigError):
        QuotaEntity.from_znode(entity_type, name)


def test_checked_entities_follow_kafkas_rules():
    with pytest.raises(QuotaConfigError, match="Invalid empty client quota entity"):
        QuotaEntity.checked(None, None)
    with pytest.raises(QuotaConfigError, match="Empty client-id not supported"):
        QuotaEntity.checked("alice", "")
    assert QuotaEntity.checked(DEFAULT, "x").describe() == "user default, client-id 'x'"


@pytest.mark.parametrize("key, value, expected", [
    ("producer_byte_rate", "1048576", 1048576.0), ("consumer_byte_rate", 2097152.0, 2097152.0),
    ("request_percentage", "12.5", 12.5), ("controller_mutation_rate", "0.5", 0.5),
])
def test_quota_values_parse(key, value, expected):
    assert parse_quota_value(key, value) == expected


@pytest.mark.parametrize("key, value, words", [
    ("producer_byte_rate", "-1", "greater than 0"), ("producer_byte_rate", "0", "greater than 0"),
    ("consumer_byte_rate", "fast", "not a number"), ("producer_byte_rate", "1.5", "whole number"),
    ("request_percentage", "nan", "not a number"), ("request_percentage", "inf", "not a number"),
    ("bogus_rate", "1", "Invalid configuration key bogus_rate"),
])
def test_bad_quota_values_are_refused_with_a_reason(key, value, words):
    with pytest.raises(QuotaConfigError, match=words):
        parse_quota_value(key, value)


def test_a_stored_config_keeps_only_valid_quota_keys():
    assert {t.key: v for t, v in quotas_of({"producer_byte_rate": "10", "SCRAM-SHA-256": "salt=..",
                                            "consumer_byte_rate": "oops"}).items()} == {"producer_byte_rate": 10.0}
