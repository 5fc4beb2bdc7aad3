"""Kafka 2.8's AclAuthorizer decisions, pure: ACL model, matching and the allow/deny rule.

Vocabulary and wire codes are Kafka's (``org.apache.kafka.common.acl`` / ``.resource``):

* ResourceType: ANY 1, TOPIC 2, GROUP 3, CLUSTER 4, TRANSACTIONAL_ID 5, DELEGATION_TOKEN 6; the
  ZooKeeper name is the camel-case one (``Topic``, ``TransactionalId``); the cluster is ``kafka-cluster``.
* PatternType: ANY 1, MATCH 2, LITERAL 3, PREFIXED 4 (only LITERAL and PREFIXED are stored).
* AclOperation: ANY 1, ALL 2, READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8,
  CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12.
* AclPermissionType: ANY 1, DENY 2, ALLOW 3.

``authorize`` is ``AclAuthorizer.authorizeAction``: a super user is always allowed; the ACLs that
apply to a resource are those of its literal name, of the literal wildcard ``*`` and of every prefixed
pattern the name starts with; when none apply, the answer is ``allow.everyone.if.no.acl.found``;
otherwise a matching DENY wins, and else a matching ALLOW is needed. An ACL matches when its principal
is the request's or ``User:*``, its host is the client's or ``*``, and its operation is the one asked
or ALL. Implied operations (ALLOW only): DESCRIBE is allowed by READ, WRITE, DELETE or ALTER;
DESCRIBE_CONFIGS by ALTER_CONFIGS.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

# ResourceType
ANY = 1
TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN = 2, 3, 4, 5, 6
RESOURCE_TYPE_NAMES = {TOPIC: "Topic", GROUP: "Group", CLUSTER: "Cluster", TRANSACTIONAL_ID: "TransactionalId",
                       DELEGATION_TOKEN: "DelegationToken"}
ENUM_RESOURCE_TYPE = {TOPIC: "TOPIC", GROUP: "GROUP", CLUSTER: "CLUSTER", TRANSACTIONAL_ID: "TRANSACTIONAL_ID",
                      DELEGATION_TOKEN: "DELEGATION_TOKEN"}
CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"

# PatternType
MATCH, LITERAL, PREFIXED = 2, 3, 4
PATTERN_TYPE_NAMES = {LITERAL: "LITERAL", PREFIXED: "PREFIXED"}

# AclOperation
ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 2, 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12
OPERATION_NAMES = {ALL: "All", READ: "Read", WRITE: "Write", CREATE: "Create", DELETE: "Delete", ALTER: "Alter",
                   DESCRIBE: "Describe", CLUSTER_ACTION: "ClusterAction", DESCRIBE_CONFIGS: "DescribeConfigs",
                   ALTER_CONFIGS: "AlterConfigs", IDEMPOTENT_WRITE: "IdempotentWrite"}
OPERATIONS_BY_NAME = {name.lower(): code for code, name in OPERATION_NAMES.items()}

# AclPermissionType
DENY, ALLOW = 2, 3
PERMISSION_NAMES = {DENY: "Deny", ALLOW: "Allow"}
PERMISSIONS_BY_NAME = {name.lower(): code for code, name in PERMISSION_NAMES.items()}

# What an ALLOW of the key operation also allows (Kafka's AclAuthorizer: describe and describe-configs).
IMPLIED_BY = {DESCRIBE: frozenset({DESCRIBE, READ, WRITE, DELETE, ALTER}),
              DESCRIBE_CONFIGS: frozenset({DESCRIBE_CONFIGS, ALTER_CONFIGS})}

# Kafka's AclEntry.supportedOperations: what a resource type's authorized-operations bit field ranges over
SUPPORTED_OPERATIONS = {
    TOPIC: (READ, WRITE, CREATE, DESCRIBE, DELETE, ALTER, DESCRIBE_CONFIGS, ALTER_CONFIGS),
    GROUP: (READ, DESCRIBE, DELETE),
    CLUSTER: (CREATE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ALTER, DESCRIBE),
    TRANSACTIONAL_ID: (DESCRIBE, WRITE),
    DELEGATION_TOKEN: (DESCRIBE,),
}
NO_AUTHORIZED_OPERATIONS = -2147483648  # the schemas' default: "not requested"


def operations_bit_field(operations: Iterable[int]) -> int:
    """Kafka's ``Utils.to32BitField``: bit ``code`` set for each operation, as a signed int32."""
    bits = 0
    for code in operations:
        bits |= 1 << code
    return bits - (1 << 32) if bits >= 1 << 31 else bits


# authorizer.class.name values that turn ACLs on: Kafka 2.x's class, and 1.x's still common in server.properties
AUTHORIZER_CLASSES = ("kafka.security.authorizer.AclAuthorizer", "kafka.security.auth.SimpleAclAuthorizer")
ANONYMOUS = "User:ANONYMOUS"  # Kafka's KafkaPrincipal.ANONYMOUS: PLAINTEXT clients, before authentication


@dataclass(frozen=True, order=True)
class ResourcePattern:
    resource_type: int
    name: str
    pattern_type: int = LITERAL

    def __str__(self) -> str:  # Kafka's ResourcePattern.toString, as kafka-acls prints it
        return (f"ResourcePattern(resourceType={ENUM_RESOURCE_TYPE.get(self.resource_type, 'UNKNOWN')}, "
                f"name={self.name}, patternType={PATTERN_TYPE_NAMES.get(self.pattern_type, 'UNKNOWN')})")


@dataclass(frozen=True, order=True)
class AclEntry:
    principal: str
    host: str
    operation: int
    permission: int

    def __str__(self) -> str:  # Kafka's AccessControlEntry, as kafka-acls prints it
        return (f"(principal={self.principal}, host={self.host}, "
                f"operation={_enum_name(OPERATION_NAMES.get(self.operation, 'Unknown'))}, "
                f"permissionType={PERMISSION_NAMES.get(self.permission, 'UNKNOWN').upper()})")


Acls = dict[ResourcePattern, frozenset[AclEntry]]


def _enum_name(camel: str) -> str:
    """``IdempotentWrite`` -> ``IDEMPOTENT_WRITE`` (Kafka's enum constant names)."""
    return "".join("_" + c if c.isupper() and i else c for i, c in enumerate(camel)).upper()


PrefixIndex = dict[int, dict[str, frozenset[AclEntry]]]  # resource type -> prefix -> ACLs


def prefix_index(acls: Acls) -> PrefixIndex:
    """The prefixed patterns by resource type and prefix, so that matching costs one lookup per prefix
    of the name rather than a scan of every prefixed pattern."""
    index: PrefixIndex = {}
    for pattern, entries in acls.items():
        if pattern.pattern_type == PREFIXED:
            index.setdefault(pattern.resource_type, {})[pattern.name] = entries
    return index


def matching_acls(acls: Acls, resource_type: int, name: str, prefixed: PrefixIndex | None = None) -> list[AclEntry]:
    """The ACLs that apply to the resource: its literal name, the literal ``*``, and each prefix of it
    (``prefixed``: ``prefix_index(acls)``, computed here when not given)."""
    found: list[AclEntry] = []
    for key in (ResourcePattern(resource_type, name), ResourcePattern(resource_type, WILDCARD)):
        found.extend(acls.get(key, ()))
    by_prefix = (prefix_index(acls) if prefixed is None else prefixed).get(resource_type)
    if by_prefix:
        for end in range(1, len(name) + 1):
            found.extend(by_prefix.get(name[:end], ()))
    return found


def decide(applicable: Iterable[AclEntry], principal: str, host: str, operation: int, *,
           super_users: frozenset[str] = frozenset(), allow_if_no_acl: bool = False) -> bool:
    """Kafka's authorizeAction over the ACLs that apply to one resource (one pass: any matching DENY of
    the operation or ALL denies; else a matching ALLOW of the operation, an operation implying it, or ALL)."""
    if principal in super_users:
        return True
    entries = applicable if isinstance(applicable, list) else list(applicable)
    if not entries:
        return allow_if_no_acl
    allowed_by = IMPLIED_BY.get(operation) or (operation,)
    allowed = False
    for entry in entries:
        if entry.principal != principal and entry.principal != WILDCARD_PRINCIPAL:
            continue
        if entry.host != host and entry.host != WILDCARD:
            continue
        if entry.permission == DENY:
            if entry.operation == operation or entry.operation == ALL:
                return False
        elif entry.permission == ALLOW and (entry.operation == ALL or entry.operation in allowed_by):
            allowed = True
    return allowed


def decide_any(acls: Acls, resource_type: int, principal: str, host: str, operation: int, *,
               super_users: frozenset[str] = frozenset(), allow_if_no_acl: bool = False) -> bool:
    """Kafka's authorizeByResourceType: may the principal do ``operation`` on *some* resource of the type
    (an ALLOW not covered by a DENY on the literal ``*``, the same literal name or a prefix of it)?
    With no ACL of that type at all, ``allow.everyone.if.no.acl.found`` decides.

    One pass over every ACL keeps only the principal's own (or ``User:*``'s) for this host and operation;
    the rest of the rule runs on those few. Still linear in the ACLs: 7 ms with 100,000 (BENCHMARKS.md,
    Security), per InitProducerId by a principal without IdempotentWrite on the cluster. Kafka 2.8 avoids
    the scan with a second cache, names by (principal, host, operation, permission, resource type,
    pattern type) (``AclAuthorizer.resourceCache``)."""
    if principal in super_users:
        return True
    allows: list[ResourcePattern] = []
    denies: list[ResourcePattern] = []
    any_of_type = False
    for pattern, entries in acls.items():
        if pattern.resource_type != resource_type or not entries:
            continue
        any_of_type = True
        for a in entries:
            if ((a.principal == principal or a.principal == WILDCARD_PRINCIPAL) and (a.host == host or a.host == WILDCARD)
                    and (a.operation == operation or a.operation == ALL)):
                if a.permission == DENY:
                    denies.append(pattern)
                elif a.permission == ALLOW:
                    allows.append(pattern)
    if not any_of_type:
        return allow_if_no_acl
    if ResourcePattern(resource_type, WILDCARD) in denies:
        return False

    def denied(pattern: ResourcePattern) -> bool:
        return any(d == pattern or (d.pattern_type == PREFIXED and pattern.name.startswith(d.name)) for d in denies)
    return any(not denied(p) for p in allows)


@dataclass(frozen=True)
class AclFilter:
    """DescribeAcls / DeleteAcls filter (AclBindingFilter): None / ANY (1) fields match anything; pattern
    type MATCH (2) matches the literal name, the literal ``*`` and the prefixes of the name."""

    resource_type: int = ANY
    name: str | None = None
    pattern_type: int = ANY
    principal: str | None = None
    host: str | None = None
    operation: int = ANY
    permission: int = ANY

    def matches_pattern(self, pattern: ResourcePattern) -> bool:
        if self.resource_type != ANY and pattern.resource_type != self.resource_type:
            return False
        if self.pattern_type == MATCH:
            if self.name is None:
                return True
            if pattern.pattern_type == LITERAL:
                return pattern.name in (self.name, WILDCARD)
            return self.name.startswith(pattern.name)
        if self.pattern_type != ANY and pattern.pattern_type != self.pattern_type:
            return False
        return self.name is None or pattern.name == self.name

    def matches_entry(self, acl: AclEntry) -> bool:
        return ((self.principal is None or acl.principal == self.principal)
                and (self.host is None or acl.host == self.host)
                and (self.operation == ANY or acl.operation == self.operation)
                and (self.permission == ANY or acl.permission == self.permission))


def filter_acls(acls: Acls, flt: AclFilter) -> list[tuple[ResourcePattern, AclEntry]]:
    """Every (pattern, acl) binding the filter matches, sorted."""
    return sorted((pattern, acl) for pattern, entries in acls.items() if flt.matches_pattern(pattern)
                  for acl in entries if flt.matches_entry(acl))


def binding_error(pattern: ResourcePattern, acl: AclEntry) -> str | None:
    """Why a CreateAcls binding is invalid (Kafka's validation), or None."""
    if pattern.resource_type not in RESOURCE_TYPE_NAMES:
        return f"Invalid resource type {pattern.resource_type}"
    if pattern.pattern_type not in PATTERN_TYPE_NAMES:
        return f"Invalid pattern type {pattern.pattern_type}: only LITERAL and PREFIXED ACLs can be created"
    if not pattern.name:
        return "Resource name must not be empty"
    if pattern.resource_type == CLUSTER and pattern.name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if acl.operation not in OPERATION_NAMES:
        return f"Invalid operation {acl.operation}"
    if acl.permission not in PERMISSION_NAMES:
        return f"Invalid permission type {acl.permission}"
    principal_type, sep, principal_name = acl.principal.partition(":")
    if not sep or not principal_type or not principal_name:
        return f"Invalid principal {acl.principal!r}: expected <type>:<name>, such as User:alice"
    if not acl.host:
        return "Host must not be empty (use * for any host)"
    return None


def parse_super_users(text: str | None) -> frozenset[str]:
    """``super.users``: principals separated by semicolons (``User:admin;User:broker``)."""
    return frozenset(p.strip() for p in (text or "").split(";") if p.strip())
