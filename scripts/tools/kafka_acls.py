"""``kafka-acls``: Kafka 2.8's ``AclCommand`` over confluent-kafka's AdminClient (CreateAcls,
DescribeAcls, DeleteAcls).

    kafka-acls --bootstrap-server HOST:PORT (--add | --remove | --list)
        [--topic T]... [--group G]... [--cluster] [--transactional-id ID]...
        [--resource-pattern-type literal|prefixed|any|match]
        [--allow-principal User:alice]... [--deny-principal User:bob]...
        [--allow-host H]... [--deny-host H]... [--operation Read]... [--principal P]... [--force]
        [--producer [--idempotent]] [--consumer]
        [--command-config FILE]

Kafka's rules: exactly one action; --add and --remove need a resource; --add needs a principal and a
pattern type of literal (default) or prefixed; --list defaults to pattern type any; hosts default to
``*``, operations to All; --producer grants Write, Describe and Create on the topics (Write and
Describe on transactional ids, IdempotentWrite on the cluster with --idempotent), --consumer Read and
Describe on the topics and Read on the groups; an operation the resource type does not have (Read on the cluster) is an
error. --remove without principals removes every ACL of the resource, after a confirmation unless
--force. Output is Kafka's::

    Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)`:
     	(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)

    Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)`:
     	(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)

Exit codes: 0, 1 when the broker refuses (SECURITY_DISABLED, CLUSTER_AUTHORIZATION_FAILED...), 2 for
bad flags (the message names the flag).
"""
from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from typing import Any, Callable

from confluent_kafka import KafkaException
from confluent_kafka.admin import AclBinding, AclBindingFilter, AdminClient

from brokers.security import acls as acl
from brokers.security.acls import AclEntry, ResourcePattern
from scripts.tools.common.client_properties import admin_client, parse_flag
from scripts.tools.common.errors import java_exception

RESULT_TIMEOUT_S = 65.0
NEWLINE = "\n"
PATTERN_TYPES = {"literal": acl.LITERAL, "prefixed": acl.PREFIXED, "any": acl.ANY, "match": acl.MATCH}
ALL_OPERATION = "All"
# Kafka's AclEntry.supportedOperations (All is valid everywhere).
SUPPORTED_OPERATIONS = {
    acl.TOPIC: {acl.READ, acl.WRITE, acl.CREATE, acl.DESCRIBE, acl.DELETE, acl.ALTER, acl.DESCRIBE_CONFIGS,
                acl.ALTER_CONFIGS},
    acl.GROUP: {acl.READ, acl.DESCRIBE, acl.DELETE},
    acl.CLUSTER: {acl.CREATE, acl.CLUSTER_ACTION, acl.DESCRIBE_CONFIGS, acl.ALTER_CONFIGS, acl.IDEMPOTENT_WRITE,
                  acl.ALTER, acl.DESCRIBE},
    acl.TRANSACTIONAL_ID: {acl.DESCRIBE, acl.WRITE},
}


class FlagError(ValueError):
    pass


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kafka-acls", description="This tool helps to manage acls on kafka.")
    p.add_argument("--bootstrap-server", required=True, metavar="server to connect to",
                   help="A list of host/port pairs to use for establishing the connection to the Kafka cluster.")
    p.add_argument("--command-config", metavar="command-config",
                   help="A property file containing configs to be passed to Admin Client.")
    for flag, text in (("--add", "Indicates you are trying to add ACLs."),
                       ("--remove", "Indicates you are trying to remove ACLs."),
                       ("--list", "List ACLs for the specified resource, use --topic <topic> or --group <group> "
                                  "or --cluster to specify a resource.")):
        p.add_argument(flag, action="store_true", help=text)
    p.add_argument("--topic", action="append", default=[], metavar="topic", help="topic to which ACLs should be added or removed.")
    p.add_argument("--group", action="append", default=[], metavar="group", help="Consumer Group to which the ACLs should be added or removed.")
    p.add_argument("--cluster", action="store_true", help="Add/Remove cluster ACLs.")
    p.add_argument("--transactional-id", action="append", default=[], metavar="transactional-id",
                   help="The transactionalId to which ACLs should be added or removed.")
    p.add_argument("--resource-pattern-type", metavar="ANY|MATCH|LITERAL|PREFIXED",
                   help="The type of the resource pattern or pattern filter (literal by default for --add and "
                        "--remove, any for --list).")
    for flag in ("--allow-principal", "--deny-principal", "--allow-host", "--deny-host", "--principal"):
        p.add_argument(flag, action="append", default=[], metavar=flag.lstrip("-").replace("-", " "))
    p.add_argument("--operation", action="append", default=[], metavar="operation",
                   help="Operation that is being allowed or denied: " + ", ".join(acl.OPERATION_NAMES.values())
                        + f" (default: {ALL_OPERATION})")
    p.add_argument("--producer", action="store_true",
                   help="Convenience option to add/remove ACLs for producer role: Write, Describe and Create on "
                        "the topics (and IdempotentWrite on the cluster with --idempotent).")
    p.add_argument("--idempotent", action="store_true", help="Enable idempotence for the producer (with --producer).")
    p.add_argument("--consumer", action="store_true",
                   help="Convenience option to add/remove ACLs for consumer role: Read and Describe on the topics, "
                        "Read on the groups.")
    p.add_argument("--force", action="store_true", help="Assume Yes to all queries and do not prompt.")
    return p


def _principal(flag: str, text: str) -> str:
    kind, sep, name = text.partition(":")
    if not sep or not kind or not name:
        raise FlagError(f"argument {flag}: {text!r} is not a principal (expected <type>:<name>, such as User:alice)")
    return text


def _operations(args: argparse.Namespace) -> list[int]:
    ops = []
    for text in args.operation or [ALL_OPERATION]:
        code = acl.OPERATIONS_BY_NAME.get(text.replace("-", "").replace("_", "").lower())
        if code is None:
            raise FlagError(f"argument --operation: {text!r} is not one of {', '.join(acl.OPERATION_NAMES.values())}")
        ops.append(code)
    return ops


def resource_patterns(args: argparse.Namespace, action: str) -> list[ResourcePattern]:
    """The resources (or, for --list/--remove, the resource filters) the flags name."""
    default = "any" if action == "list" else "literal"
    text = (args.resource_pattern_type or default).lower()
    if text not in PATTERN_TYPES:
        raise FlagError(f"argument --resource-pattern-type: {args.resource_pattern_type!r} is not one of "
                        "ANY, MATCH, LITERAL, PREFIXED")
    pattern_type = PATTERN_TYPES[text]
    if action == "add" and pattern_type in (acl.ANY, acl.MATCH):
        raise FlagError("argument --resource-pattern-type: a value of 'any' or 'match' is not valid when adding acls")
    patterns = [ResourcePattern(acl.TOPIC, t, pattern_type) for t in args.topic]
    patterns += [ResourcePattern(acl.GROUP, g, pattern_type) for g in args.group]
    patterns += [ResourcePattern(acl.TRANSACTIONAL_ID, t, pattern_type) for t in args.transactional_id]
    if args.cluster:
        patterns.append(ResourcePattern(acl.CLUSTER, acl.CLUSTER_NAME, pattern_type))
    if not patterns and action != "list":
        raise FlagError("You must specify one of: --topic, --cluster, --group, --transactional-id when trying to "
                        f"{action} ACLs.")
    return patterns


def entries(args: argparse.Namespace, ops: list[int] | None = None) -> list[AclEntry]:
    """The ACEs of --allow-/--deny-principal x hosts x operations (``ops``, else --operation)."""
    for host_flag, principal_flag in (("--allow-host", "--allow-principal"), ("--deny-host", "--deny-principal")):
        if getattr(args, host_flag[2:].replace("-", "_")) and not getattr(args, principal_flag[2:].replace("-", "_")):
            raise FlagError(f"argument {host_flag}: can only be used together with {principal_flag}")
    ops = _operations(args) if ops is None else ops
    out = []
    for permission, principals, hosts, flag in ((acl.ALLOW, args.allow_principal, args.allow_host, "--allow-principal"),
                                                (acl.DENY, args.deny_principal, args.deny_host, "--deny-principal")):
        for principal in principals:
            for host in hosts or [acl.WILDCARD]:
                out.extend(AclEntry(_principal(flag, principal), host, op, permission) for op in ops)
    return sorted(set(out))


def role_acls(args: argparse.Namespace, patterns: list[ResourcePattern]) -> dict[ResourcePattern, list[AclEntry]]:
    """--producer / --consumer: Kafka's AclCommand role ACLs per resource."""
    if args.producer and not args.topic:
        raise FlagError("argument --producer: With --producer you must specify a --topic")
    if args.idempotent and not args.producer:
        raise FlagError("argument --idempotent: The --idempotent option is only available if --producer is set")
    if args.consumer and (not args.topic or not args.group
                          or (not args.producer and (args.cluster or args.transactional_id))):
        raise FlagError("argument --consumer: With --consumer you must specify a --topic and a --group and no "
                        "--cluster or --transactional-id option should be specified.")
    out: dict[ResourcePattern, set[AclEntry]] = {}

    def add(pattern: ResourcePattern, ops: list[int]) -> None:
        out.setdefault(pattern, set()).update(entries(args, ops))
    for pattern in patterns:
        if args.producer and pattern.resource_type == acl.TOPIC:
            add(pattern, [acl.WRITE, acl.DESCRIBE, acl.CREATE])
        if args.producer and pattern.resource_type == acl.TRANSACTIONAL_ID:
            add(pattern, [acl.WRITE, acl.DESCRIBE])
        if args.consumer and pattern.resource_type == acl.TOPIC:
            add(pattern, [acl.READ, acl.DESCRIBE])
        if args.consumer and pattern.resource_type == acl.GROUP:
            add(pattern, [acl.READ])
    if args.idempotent:
        add(ResourcePattern(acl.CLUSTER, acl.CLUSTER_NAME, acl.LITERAL), [acl.IDEMPOTENT_WRITE])
    return {pattern: sorted(aces) for pattern, aces in out.items()}


def check_operations(patterns: list[ResourcePattern], aces: list[AclEntry]) -> None:
    for pattern in patterns:
        supported = SUPPORTED_OPERATIONS[pattern.resource_type]
        bad = sorted({a.operation for a in aces if a.operation != acl.ALL and a.operation not in supported})
        if bad:
            names = ", ".join(acl.OPERATION_NAMES[o] for o in sorted(supported | {acl.ALL}))
            raise FlagError(f"argument --operation: ResourceType {acl.ENUM_RESOURCE_TYPE[pattern.resource_type]} "
                            f"only supports operations {names}")


def format_acls(heading: str, pattern: ResourcePattern, aces: list[AclEntry]) -> str:
    return f"{heading} `{pattern}`: {NEWLINE} {NEWLINE.join(chr(9) + str(a) for a in aces)} {NEWLINE}"


def _binding_pattern(binding: Any) -> tuple[ResourcePattern, AclEntry]:
    pattern = ResourcePattern(int(binding.restype.value), binding.name, int(binding.resource_pattern_type.value))
    return pattern, AclEntry(binding.principal, binding.host, int(binding.operation.value),
                             int(binding.permission_type.value))


def _filter(pattern_type: int, resource_type: int = acl.ANY, name: str | None = None,
            entry: AclEntry | None = None) -> AclBindingFilter:
    return AclBindingFilter(resource_type, name, pattern_type, entry.principal if entry else None,
                            entry.host if entry else None, entry.operation if entry else acl.ANY,
                            entry.permission if entry else acl.ANY)


def list_acls(admin: AdminClient, patterns: list[ResourcePattern], principals: list[str], out: Callable) -> None:
    filters = [_filter(p.pattern_type, p.resource_type, p.name) for p in patterns] or [_filter(acl.ANY)]
    found: dict[ResourcePattern, set[AclEntry]] = defaultdict(set)
    for flt in filters:
        for binding in admin.describe_acls(flt).result(timeout=RESULT_TIMEOUT_S):
            pattern, entry = _binding_pattern(binding)
            if not principals or entry.principal in principals:
                found[pattern].add(entry)
    for pattern in sorted(found):
        out(format_acls("Current ACLs for resource", pattern, sorted(found[pattern])))


def add_acls(admin: AdminClient, by_resource: dict[ResourcePattern, list[AclEntry]], out: Callable) -> None:
    for pattern, aces in by_resource.items():
        out(format_acls("Adding ACLs for resource", pattern, aces))
        bindings = [AclBinding(pattern.resource_type, pattern.name, pattern.pattern_type, a.principal, a.host,
                               a.operation, a.permission) for a in aces]
        for future in admin.create_acls(bindings).values():
            future.result(timeout=RESULT_TIMEOUT_S)


def remove_acls(admin: AdminClient, by_resource: dict[ResourcePattern, list[AclEntry]], force: bool,
                confirm: Callable[[str], bool]) -> None:
    for pattern, aces in by_resource.items():
        described = str(pattern).replace("ResourcePattern(", "ResourcePatternFilter(", 1)
        question = (f"Are you sure you want to delete all ACLs for resource filter `{described}`? (y/n)" if not aces
                    else f"Are you sure you want to remove ACLs: {NEWLINE} "
                         f"{NEWLINE.join(chr(9) + str(a) for a in aces)} {NEWLINE} from resource filter `{described}`? (y/n)")
        if not force and not confirm(question):
            continue
        filters = ([_filter(pattern.pattern_type, pattern.resource_type, pattern.name, a) for a in aces]
                   or [_filter(pattern.pattern_type, pattern.resource_type, pattern.name)])
        for future in admin.delete_acls(filters).values():
            future.result(timeout=RESULT_TIMEOUT_S)


def _confirm(question: str) -> bool:
    print(question)
    return sys.stdin.readline().strip().lower() == "y"


def main(argv: list[str] | None = None, out: Callable = print, confirm: Callable[[str], bool] = _confirm) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    actions = [a for a in ("add", "remove", "list") if getattr(args, a)]
    if len(actions) != 1:
        parser.error("Command must include exactly one action: --list, --add, --remove.")
    action = actions[0]
    try:
        patterns = resource_patterns(args, action)
        aces = entries(args)
        if action == "add" and not aces:
            raise FlagError("You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.")
        if args.producer or args.consumer or args.idempotent:
            if action == "list":
                raise FlagError("argument --producer/--consumer: only with --add or --remove")
            by_resource = role_acls(args, patterns)
        else:
            check_operations(patterns, aces)
            by_resource = {pattern: aces for pattern in patterns}
        principals = [_principal("--principal", p) for p in args.principal]
        properties = parse_flag(parser, "--command-config", args.command_config)
    except FlagError as exc:
        parser.error(str(exc))
    admin = admin_client(AdminClient, args.bootstrap_server, properties, error="Error while executing ACL command: ")
    if admin is None:
        return 1
    try:
        if action == "add":
            add_acls(admin, by_resource, out)
        elif action == "remove":
            remove_acls(admin, by_resource, args.force, confirm)
        list_acls(admin, list(by_resource) if action != "list" else patterns, principals, out)
    except KafkaException as exc:
        print(f"Error while executing ACL command: {java_exception(exc)}", file=sys.stderr)
        return 1
    except TimeoutError:
        print("Error while executing ACL command: timed out waiting for the broker", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
