"""``ssl.principal.mapping.rules`` (KIP-371, Kafka's ``SslPrincipalMapper``): the name a client
certificate's subject DN stands for.

The value is a comma-separated list of rules, tried in order; the first one that applies gives the name
(the principal is then ``User:<name>``):

- ``DEFAULT`` applies to every DN and keeps it whole (``CN=alice,OU=eng,O=zkafka``), the default value;
- ``RULE:<pattern>/<replacement>/[L|U]`` applies when ``pattern`` matches the whole DN; the name is the DN
  with every match of ``pattern`` replaced by ``replacement`` (Java's ``String.replaceAll``), then lower
  (``L``) or upper (``U``) cased. Inside ``pattern`` and ``replacement`` a ``/`` is written ``\\/``.

Parsing follows Kafka's ``RULE_SPLITTER`` / ``RULE_PARSER``: rules are separated by commas and optional
spaces (a comma inside a pattern belongs to the pattern: a rule runs up to its third unescaped ``/``);
empty rules are ignored; anything else that is not a rule is an error naming it. A DN no rule applies to
is ``NoMatchingRule`` (Kafka refuses the connection: "No rules apply to ...").

Two languages meet here. Patterns are compiled by Python's ``re``, which reads the Java syntax operators
write in these rules (groups, classes, lazy quantifiers, anchors; Java's ``(?<name>`` becomes ``(?P<name>``). Replacements keep Java's syntax:
``$n`` / ``${name}`` refer to groups, ``\\x`` is a literal ``x``, and, as Kafka escapes them, a ``$n`` past
the pattern's last group is literal text (``$12`` with one group is group 1 then ``2``).

Pure: no I/O; the broker parses the rules once at start-up (a bad rule stops it, naming the key).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

RULE_PATTERN = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
RULE_SPLITTER = re.compile(r"\s*(" + RULE_PATTERN + r")\s*(,\s*|$)")
RULE_PARSER = re.compile(RULE_PATTERN)
JAVA_NAMED_GROUP = re.compile(r"(?<!\\)\(\?<(?![=!])")  # Java's (?<name>...) is Python's (?P<name>...)


class InvalidRule(ValueError):
    """A rule that cannot be parsed; the message quotes it."""


class NoMatchingRule(Exception):
    """No rule applies to a DN (the client is refused, as Kafka's ``NoMatchingRule``)."""


@dataclass(frozen=True)
class Rule:
    """One rule: ``DEFAULT`` (pattern None) or ``RULE:pattern/replacement/case``."""
    pattern: re.Pattern | None = None
    replacement: Callable[[re.Match], str] | None = None
    case: str = ""
    text: str = "DEFAULT"

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        if self.pattern.fullmatch(dn) is None:
            return None
        name = self.pattern.sub(self.replacement, dn)
        return name.lower() if self.case == "L" else name.upper() if self.case == "U" else name


class SslPrincipalMapper:
    def __init__(self, rules: list[Rule]):
        self.rules = rules

    @classmethod
    def from_rules(cls, text: str | None) -> "SslPrincipalMapper":
        """Parse the config value; InvalidRule names the first bad rule. None is ``DEFAULT``."""
        if text is None:
            return cls([Rule()])
        return cls([rule for rule in map(parse_rule, split_rules(text)) if rule is not None])

    def name(self, dn: str) -> str:
        for rule in self.rules:
            name = rule.apply(dn)
            if name is not None:
                return name
        raise NoMatchingRule(f"No rules apply to {dn}, rules [{', '.join(r.text for r in self.rules)}]")

    @property
    def is_default(self) -> bool:
        return len(self.rules) == 1 and self.rules[0].pattern is None


def split_rules(text: str) -> list[str]:
    return [m.group(1) for m in RULE_SPLITTER.finditer(text.strip())]


def parse_rule(text: str) -> Rule | None:
    """One rule, None for an empty one."""
    m = RULE_PARSER.match(text)
    if m is None or m.end() != len(text):
        rest = text[m.end():] if m else text
        raise InvalidRule(f"Invalid rule: `{text}`, unmatched substring: `{rest}`")
    if m.group(1) is not None:
        return Rule()
    if m.group(2) is None:
        return None
    try:
        pattern = re.compile(JAVA_NAMED_GROUP.sub("(?P<", m.group(2)))
    except re.error as exc:
        raise InvalidRule(f"Invalid rule: `{text}`: bad pattern: {exc}") from None
    replacement = java_replacement(m.group(4), pattern.groups, text)
    return Rule(pattern, replacement, m.group(6), text)


def java_replacement(template: str, groups: int, rule: str) -> Callable[[re.Match], str]:
    """Java's ``Matcher.appendReplacement`` template as a function of the match (after Kafka's
    ``escapeLiteralBackReferences``). An unmatched group adds nothing, as in Java."""
    parts: list[str | int] = []  # literal text or a group (number or name)
    i = 0
    while i < len(template):
        c = template[i]
        if c == "\\":
            if i + 1 == len(template):
                raise InvalidRule(f"Invalid rule: `{rule}`: the replacement ends with an escape character")
            parts.append(template[i + 1])
            i += 2
        elif c == "$":
            ref, i = _group_reference(template, i + 1, groups, rule)
            parts.append(ref)
        else:
            parts.append(c)
            i += 1

    def replace(match: re.Match) -> str:
        return "".join(p if isinstance(p, str) and not isinstance(p, _Name) else (match.group(p) or "")
                       for p in parts)

    return replace


class _Name(str):
    """A ``${name}`` reference (a str subclass, told apart from literal text)."""


def _group_reference(template: str, i: int, groups: int, rule: str) -> tuple[str | int, int]:
    """The reference after a ``$`` at ``i``, and the index after it."""
    if template.startswith("{", i):
        end = template.find("}", i)
        if end < 0:
            raise InvalidRule(f"Invalid rule: `{rule}`: a ${{name}} reference is not closed")
        return _Name(template[i + 1:end]), end + 1
    if i == len(template) or not template[i].isdigit():
        raise InvalidRule(f"Invalid rule: `{rule}`: a $ in the replacement is not followed by a group number "
                          "(write \\$ for a literal $)")
    number = int(template[i])
    if number > groups:  # Kafka escapes it: the $ and the digits are text
        return "$", i
    i += 1
    while i < len(template) and template[i].isdigit() and number * 10 + int(template[i]) <= groups:
        number = number * 10 + int(template[i])
        i += 1
    return number, i
