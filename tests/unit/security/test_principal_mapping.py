"""ssl.principal.mapping.rules (KIP-371): parsing and applying, against the cases Kafka documents."""
from __future__ import annotations

import pytest

from brokers.security.principal_mapping import InvalidRule, NoMatchingRule, SslPrincipalMapper, split_rules

DN = "CN=alice,OU=ServiceUsers,O=zkafka,L=Oslo,C=NO"


def name(rules: str | None, dn: str = DN) -> str:
    return SslPrincipalMapper.from_rules(rules).name(dn)


@pytest.mark.parametrize("rules, dn, expected", [
    (None, DN, DN),
    ("DEFAULT", DN, DN),
    ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/", DN, "alice"),
    ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L", "CN=Alice,OU=ServiceUsers,O=z", "alice"),
    ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/U", DN, "ALICE"),
    ("RULE:^CN=(.*?),OU=(.*?),O=(.*?)$/$1@$3/", "CN=bob,OU=eng,O=zkafka", "bob@zkafka"),
    # the first rule that applies wins; DEFAULT after a specific one catches the rest
    ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", "CN=carol,OU=Humans,O=z", "CN=carol,OU=Humans,O=z"),
    ("RULE:^CN=(.*?),OU=Humans.*$/human-$1/, RULE:^CN=(.*?),OU=ServiceUsers.*$/svc-$1/", DN, "svc-alice"),
    # spaces around rules and commas are ignored; an empty rule too
    ("  RULE:^CN=(.*?),.*$/$1/ ,  DEFAULT  ", DN, "alice"),
    # an escaped slash inside pattern and replacement
    (r"RULE:^CN=(.*?)\/x,.*$/$1\/y/", "CN=a/x,O=z", "a/y"),
    # a $n past the last group is text, as Kafka escapes it; $12 with one group is group 1 then "2"
    ("RULE:^CN=(.*?),.*$/$1$2/", DN, "alice$2"),
    ("RULE:^CN=(.*?),.*$/$12/", DN, "alice2"),
    (r"RULE:^CN=(.*?),.*$/\$$1/", DN, "$alice"),
    ("RULE:^CN=(.*?),.*$/$0!/", "CN=a,O=z", "CN=a,O=z!"),
    # named groups, written the Java way
    ("RULE:^CN=(?<user>[^,]*),.*$/${user}/", DN, "alice"),
    # an optional group that did not take part adds nothing
    ("RULE:^CN=(x)?(.*?),.*$/$1$2/", DN, "alice"),
    # replaceAll: every match is replaced, not only the first
    ("RULE:^(CN=[^,]*)(,.*)?$/$1/", DN, "CN=alice"),
])
def test_rules_give_the_name(rules, dn, expected):
    assert name(rules, dn) == expected


@pytest.mark.parametrize("rules", [
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
    "RULE:^CN=(.*?),OU=Other.*$/$1/, RULE:^CN=x.*$/$0/",
])
def test_a_dn_no_rule_applies_to_is_refused_naming_the_dn_and_the_rules(rules):
    with pytest.raises(NoMatchingRule, match=r"No rules apply to CN=carol,OU=Humans,O=z, rules \[RULE:"):
        name(rules, "CN=carol,OU=Humans,O=z")


@pytest.mark.parametrize("rules, message", [
    ("RULE:^CN=(.*?)$/$1/X", "unmatched substring: `X`"),
    ("RULE:^CN=(.*?)$/$1", "Invalid rule"),
    ("DEFAULTX", "Invalid rule"),
    ("rule:^CN=(.*)$/$1/", "Invalid rule"),
    ("RULE:^CN=((.*?)$/$1/", "bad pattern"),
    ("RULE:^CN=(.*?)$/$/", "not followed by a group number"),
    ("RULE:^CN=(.*?)$/${user/", "not closed"),
    ("RULE:^CN=(.*?)$/$1\\/", "Invalid rule"),
])
def test_a_bad_rule_is_an_error_quoting_it(rules, message):
    with pytest.raises(InvalidRule, match=message):
        SslPrincipalMapper.from_rules(rules)


def test_split_keeps_commas_inside_a_pattern():
    assert split_rules("RULE:^CN=(.*?),OU=(.*?)$/$1/L, DEFAULT") == ["RULE:^CN=(.*?),OU=(.*?)$/$1/L", "DEFAULT", ""]


def test_default_is_recognised():
    assert SslPrincipalMapper.from_rules("DEFAULT").is_default
    assert SslPrincipalMapper.from_rules(None).is_default
    assert not SslPrincipalMapper.from_rules("RULE:a/b/, DEFAULT").is_default
