"""Kafka 2.8's AclAuthorizer rules (brokers.security.acls), exhaustively: matching (literal, wildcard,
prefixed), deny over allow, principals and hosts with wildcards, implied operations, super users,
allow.everyone.if.no.acl.found, the any-resource rule of InitProducerId, filters and validation."""
from __future__ import annotations

import itertools

import pytest

from brokers.security import acls as acl
from brokers.security.acls import (
    ALL, ALLOW, ALTER, ALTER_CONFIGS, CLUSTER, CLUSTER_ACTION, CREATE, DELETE, DENY, DESCRIBE, DESCRIBE_CONFIGS,
    GROUP, IDEMPOTENT_WRITE, LITERAL, MATCH, PREFIXED, READ, TOPIC, WRITE, AclEntry, AclFilter, ResourcePattern,
)

ALICE, BOB = "User:alice", "User:bob"
HOST = "10.0.0.1"


def allow(principal=ALICE, op=READ, host="*"):
    return AclEntry(principal, host, op, ALLOW)


def deny(principal=ALICE, op=READ, host="*"):
    return AclEntry(principal, host, op, DENY)


def topic(name, pattern=LITERAL):
    return ResourcePattern(TOPIC, name, pattern)


def authorized(acls, name="orders", op=READ, principal=ALICE, host=HOST, resource_type=TOPIC, **kw):
    return acl.decide(acl.matching_acls(acls, resource_type, name), principal, host, op, **kw)


# -- matching ---------------------------------------------------------------------------------------
def test_literal_wildcard_and_prefixed_patterns_apply_to_a_name():
    acls = {topic("orders"): frozenset({allow(op=READ)}), topic("*"): frozenset({allow(op=WRITE)}),
            topic("ord", PREFIXED): frozenset({allow(op=DELETE)}), topic("orders-x", PREFIXED): frozenset({allow(op=ALTER)}),
            topic("other"): frozenset({allow(op=CREATE)}), ResourcePattern(GROUP, "orders"): frozenset({allow(op=DESCRIBE)})}
    ops = {a.operation for a in acl.matching_acls(acls, TOPIC, "orders")}
    assert ops == {READ, WRITE, DELETE}  # not the longer prefix, not another topic, not a group


def test_a_literal_named_like_a_prefix_does_not_match_longer_names():
    acls = {topic("ord"): frozenset({allow()})}
    assert not authorized(acls, "orders")
    assert authorized(acls, "ord")


def test_a_prefixed_star_is_a_prefix_not_a_wildcard():
    acls = {topic("*", PREFIXED): frozenset({allow()})}
    assert not authorized(acls, "orders")
    assert authorized(acls, "*orders")


@pytest.mark.parametrize("pattern", [topic("orders"), topic("*"), topic("or", PREFIXED), topic("orders", PREFIXED)])
def test_allow_via_each_kind_of_pattern(pattern):
    assert authorized({pattern: frozenset({allow()})})


@pytest.mark.parametrize("deny_pattern, allow_pattern", list(itertools.product(
    [topic("orders"), topic("*"), topic("ord", PREFIXED)], [topic("orders"), topic("*"), topic("ord", PREFIXED)])))
def test_deny_wins_over_allow_whatever_the_patterns(deny_pattern, allow_pattern):
    acls = {allow_pattern: frozenset({allow()})}
    acls[deny_pattern] = acls.get(deny_pattern, frozenset()) | {deny()}
    assert not authorized(acls)


# -- principal, host, operation ---------------------------------------------------------------------
@pytest.mark.parametrize("principal, host, expected", [
    (ALICE, "*", True), (ALICE, HOST, True), (ALICE, "10.0.0.2", False),
    ("User:*", "*", True), ("User:*", HOST, True), (BOB, "*", False), ("alice", "*", False),
])
def test_principal_and_host_match_exactly_or_by_wildcard(principal, host, expected):
    assert authorized({topic("orders"): frozenset({allow(principal, READ, host)})}) is expected


def test_a_deny_for_another_host_or_principal_does_not_apply():
    acls = {topic("orders"): frozenset({allow(), deny(BOB), deny(ALICE, READ, "10.9.9.9")})}
    assert authorized(acls)


def test_a_deny_for_user_star_denies_everyone():
    assert not authorized({topic("orders"): frozenset({allow(), deny("User:*")})})


def test_all_allows_and_denies_every_operation():
    for op in acl.OPERATION_NAMES:
        if op == ALL:
            continue
        assert authorized({topic("orders"): frozenset({allow(op=ALL)})}, op=op)
        assert not authorized({topic("orders"): frozenset({allow(op=ALL), deny(op=ALL)})}, op=op)
        assert not authorized({topic("orders"): frozenset({allow(op=op), deny(op=ALL)})}, op=op)


IMPLIED = {DESCRIBE: {READ, WRITE, DELETE, ALTER}, DESCRIBE_CONFIGS: {ALTER_CONFIGS}}


@pytest.mark.parametrize("asked, granted", [(a, g) for a in acl.OPERATION_NAMES for g in acl.OPERATION_NAMES
                                            if a != ALL])
def test_implied_operations_exactly_as_kafka(asked, granted):
    expected = granted in (asked, ALL) or granted in IMPLIED.get(asked, set())
    assert authorized({topic("orders"): frozenset({allow(op=granted)})}, op=asked) is expected


def test_implication_does_not_apply_to_deny():
    # Deny Read does not deny Describe (Kafka denies only the operation asked, or All).
    acls = {topic("orders"): frozenset({allow(op=DESCRIBE), deny(op=READ)})}
    assert authorized(acls, op=DESCRIBE)
    assert not authorized(acls, op=READ)


# -- super users and no ACLs ------------------------------------------------------------------------
def test_super_users_are_always_allowed_even_when_denied():
    acls = {topic("orders"): frozenset({deny(op=ALL)})}
    assert authorized(acls, super_users=frozenset({ALICE}))
    assert not authorized(acls, principal=BOB, super_users=frozenset({ALICE}))


@pytest.mark.parametrize("allow_if_no_acl", [True, False])
def test_no_matching_acl_is_decided_by_allow_everyone_if_no_acl_found(allow_if_no_acl):
    assert authorized({}, allow_if_no_acl=allow_if_no_acl) is allow_if_no_acl
    other = {topic("other"): frozenset({allow()})}
    assert authorized(other, allow_if_no_acl=allow_if_no_acl) is allow_if_no_acl


def test_acls_that_apply_but_do_not_match_deny_even_with_allow_everyone():
    assert not authorized({topic("orders"): frozenset({allow(BOB)})}, allow_if_no_acl=True)


def test_cluster_and_group_resources():
    acls = {ResourcePattern(CLUSTER, "kafka-cluster"): frozenset({allow(op=CLUSTER_ACTION)}),
            ResourcePattern(GROUP, "g", PREFIXED): frozenset({allow(op=READ)})}
    assert authorized(acls, "kafka-cluster", CLUSTER_ACTION, resource_type=CLUSTER)
    assert not authorized(acls, "kafka-cluster", ALTER, resource_type=CLUSTER)
    assert authorized(acls, "group-1", READ, resource_type=GROUP)
    assert not authorized(acls, "other", READ, resource_type=GROUP)


def test_parse_super_users():
    assert acl.parse_super_users("User:admin; User:broker;;") == frozenset({"User:admin", "User:broker"})
    assert acl.parse_super_users(None) == frozenset()


# -- any resource of a type (InitProducerId: Write on some topic) -----------------------------------
@pytest.mark.parametrize("acls, expected", [
    ({}, False),
    ({topic("a"): frozenset({allow(op=WRITE)})}, True),
    ({topic("a", PREFIXED): frozenset({allow(op=WRITE)})}, True),
    ({topic("a"): frozenset({allow(op=READ)})}, False),
    ({topic("a"): frozenset({allow(op=WRITE), deny(op=WRITE)})}, False),
    ({topic("a"): frozenset({allow(op=WRITE)}), topic("*"): frozenset({deny(op=WRITE)})}, False),
    ({topic("ab"): frozenset({allow(op=WRITE)}), topic("a", PREFIXED): frozenset({deny(op=WRITE)})}, False),
    ({topic("ab"): frozenset({allow(op=WRITE)}), topic("b"): frozenset({deny(op=WRITE)})}, True),
    ({topic("a"): frozenset({allow(BOB, WRITE)})}, False),
])
def test_decide_any(acls, expected):
    assert acl.decide_any(acls, TOPIC, ALICE, HOST, WRITE) is expected


def test_decide_any_super_user_and_no_acls():
    assert acl.decide_any({}, TOPIC, ALICE, HOST, WRITE, super_users=frozenset({ALICE}))
    assert acl.decide_any({}, TOPIC, ALICE, HOST, WRITE, allow_if_no_acl=True)
    assert acl.decide_any({topic("a"): frozenset()}, TOPIC, ALICE, HOST, WRITE, allow_if_no_acl=True)  # no ACL
    assert not acl.decide_any({ResourcePattern(GROUP, "g"): frozenset({allow(op=WRITE)})}, TOPIC, ALICE, HOST, WRITE)


# -- filters (DescribeAcls / DeleteAcls) ------------------------------------------------------------
ACLS = {topic("orders"): frozenset({allow(), deny(BOB, WRITE)}), topic("*"): frozenset({allow(op=DESCRIBE)}),
        topic("ord", PREFIXED): frozenset({allow(op=WRITE)}), ResourcePattern(GROUP, "g"): frozenset({allow()})}


def test_the_any_filter_matches_every_binding_sorted():
    assert len(acl.filter_acls(ACLS, AclFilter())) == 5
    assert acl.filter_acls(ACLS, AclFilter()) == sorted(acl.filter_acls(ACLS, AclFilter()))


@pytest.mark.parametrize("flt, expected", [
    (AclFilter(TOPIC, "orders", LITERAL), {("orders", READ), ("orders", WRITE)}),
    (AclFilter(TOPIC, "orders", MATCH), {("orders", READ), ("orders", WRITE), ("*", DESCRIBE), ("ord", WRITE)}),
    (AclFilter(TOPIC, None, PREFIXED), {("ord", WRITE)}),
    (AclFilter(TOPIC, principal=BOB), {("orders", WRITE)}),
    (AclFilter(permission=DENY), {("orders", WRITE)}),
    (AclFilter(operation=READ), {("orders", READ), ("g", READ)}),
    (AclFilter(GROUP), {("g", READ)}),
    (AclFilter(host="10.0.0.1"), set()),
])
def test_filters(flt, expected):
    assert {(p.name, a.operation) for p, a in acl.filter_acls(ACLS, flt)} == expected


@pytest.mark.parametrize("pattern, entry, problem", [
    (topic("t"), allow(), None),
    (ResourcePattern(1, "t"), allow(), "Invalid resource type"),
    (topic("t", MATCH), allow(), "Invalid pattern type"),
    (topic(""), allow(), "must not be empty"),
    (ResourcePattern(CLUSTER, "c"), allow(op=ALTER), "kafka-cluster"),
    (topic("t"), AclEntry(ALICE, "*", 1, ALLOW), "Invalid operation"),
    (topic("t"), AclEntry(ALICE, "*", READ, 1), "Invalid permission"),
    (topic("t"), AclEntry("alice", "*", READ, ALLOW), "Invalid principal"),
    (topic("t"), AclEntry(ALICE, "", READ, ALLOW), "Host"),
])
def test_binding_validation(pattern, entry, problem):
    error = acl.binding_error(pattern, entry)
    assert (error is None) if problem is None else (problem in error)


def test_kafka_to_string_forms():
    assert str(topic("t", PREFIXED)) == "ResourcePattern(resourceType=TOPIC, name=t, patternType=PREFIXED)"
    assert str(allow(op=IDEMPOTENT_WRITE)) == "(principal=User:alice, host=*, operation=IDEMPOTENT_WRITE, permissionType=ALLOW)"


# -- configuration ----------------------------------------------------------------------------------
def test_authorizer_class_names_are_checked():
    from brokers.config import BrokerConfig, ConfigError
    base = {"zookeeper.connect": "127.0.0.1:2181"}
    for name in ("kafka.security.authorizer.AclAuthorizer", "kafka.security.auth.SimpleAclAuthorizer", ""):
        assert BrokerConfig.from_properties({**base, "authorizer.class.name": name})["authorizer.class.name"] == name
    with pytest.raises(ConfigError, match="authorizer.class.name 'com.example.Custom' is not supported"):
        BrokerConfig.from_properties({**base, "authorizer.class.name": "com.example.Custom"})
    defaults = BrokerConfig.from_properties(base)
    assert defaults["allow.everyone.if.no.acl.found"] is False and defaults["super.users"] is None


def _decide_any_reference(acls, resource_type, principal, host, operation, allow_if_no_acl=False):
    """decide_any as first written (every binding listed, then matched once for DENY, once for ALLOW):
    the oracle the one-pass version must agree with."""
    def matches(a, permission):
        return (a.permission == permission and a.principal in (principal, acl.WILDCARD_PRINCIPAL)
                and a.host in (host, "*") and (a.operation == ALL or a.operation == operation))
    entries = [(p, a) for p, es in acls.items() if p.resource_type == resource_type for a in es]
    if not entries:
        return allow_if_no_acl
    denies = [p for p, a in entries if matches(a, DENY)]
    if ResourcePattern(resource_type, "*") in denies:
        return False
    return any(matches(a, ALLOW) and not any(
        d == p or (d.pattern_type == PREFIXED and p.name.startswith(d.name)) for d in denies) for p, a in entries)


def test_decide_any_agrees_with_the_reference_rule_on_random_acl_sets():
    import random
    rng = random.Random(12)
    patterns = [ResourcePattern(t, n, pt) for t in (TOPIC, GROUP) for n in ("a", "ab", "b", "*") for pt in (LITERAL, PREFIXED)]
    entries = [AclEntry(p, h, o, perm) for p in (ALICE, BOB, "User:*") for h in (HOST, "*", "10.0.0.2")
               for o in (READ, WRITE, ALL, DESCRIBE) for perm in (ALLOW, DENY)]
    outcomes = set()
    for _ in range(3000):
        acls = {}
        for pattern in rng.sample(patterns, rng.randint(0, 5)):
            acls[pattern] = frozenset(rng.sample(entries, rng.randint(1, 3)))
        for principal, host, op, default in itertools.product((ALICE, BOB), (HOST, "10.0.0.9"), (READ, WRITE),
                                                               (False, True)):
            expected = _decide_any_reference(acls, TOPIC, principal, host, op, default)
            assert acl.decide_any(acls, TOPIC, principal, host, op, allow_if_no_acl=default) is expected, \
                (acls, principal, host, op, default)
            outcomes.add(expected)
    assert outcomes == {True, False}
