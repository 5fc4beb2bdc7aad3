"""kafka-acls' pure half: flags to resource patterns and ACEs, Kafka's validation (exit 2 naming the
flag) and Kafka's output format."""
from __future__ import annotations

import pytest

from brokers.security import acls as acl
from brokers.security.acls import AclEntry, ResourcePattern
from scripts.tools import kafka_acls
from scripts.tools.kafka_acls import build_parser, check_operations, entries, format_acls, resource_patterns

B = ["--bootstrap-server", "127.0.0.1:1"]


def parse(*args):
    return build_parser().parse_args([*B, *args])


def test_add_builds_every_principal_host_operation_combination():
    args = parse("--add", "--allow-principal", "User:a", "--deny-principal", "User:b", "--deny-host", "10.0.0.1",
                 "--operation", "Read", "--operation", "describe", "--topic", "t", "--group", "g")
    assert resource_patterns(args, "add") == [ResourcePattern(acl.TOPIC, "t"), ResourcePattern(acl.GROUP, "g")]
    assert entries(args) == sorted([
        AclEntry("User:a", "*", acl.READ, acl.ALLOW), AclEntry("User:a", "*", acl.DESCRIBE, acl.ALLOW),
        AclEntry("User:b", "10.0.0.1", acl.READ, acl.DENY), AclEntry("User:b", "10.0.0.1", acl.DESCRIBE, acl.DENY)])


def test_defaults_all_operations_literal_for_add_any_for_list_and_the_cluster_name():
    args = parse("--add", "--allow-principal", "User:a", "--cluster")
    assert resource_patterns(args, "add") == [ResourcePattern(acl.CLUSTER, "kafka-cluster", acl.LITERAL)]
    assert [e.operation for e in entries(args)] == [acl.ALL]
    assert resource_patterns(parse("--list", "--topic", "t"), "list") == [ResourcePattern(acl.TOPIC, "t", acl.ANY)]
    assert resource_patterns(parse("--list", "--topic", "t", "--resource-pattern-type", "PREFIXED"), "list") == [
        ResourcePattern(acl.TOPIC, "t", acl.PREFIXED)]


@pytest.mark.parametrize("argv, flag", [
    (["--add", "--allow-principal", "User:a"], "--topic"),
    (["--add", "--topic", "t"], "--allow-principal"),
    (["--add", "--allow-principal", "alice", "--topic", "t"], "--allow-principal"),
    (["--add", "--allow-principal", "User:a", "--topic", "t", "--operation", "Fly"], "--operation"),
    (["--add", "--allow-principal", "User:a", "--cluster", "--operation", "Read"], "--operation"),
    (["--add", "--allow-principal", "User:a", "--topic", "t", "--resource-pattern-type", "match"],
     "--resource-pattern-type"),
    (["--list", "--resource-pattern-type", "weird"], "--resource-pattern-type"),
    (["--add", "--allow-host", "h", "--deny-principal", "User:a", "--topic", "t"], "--allow-host"),
    (["--remove"], "--topic"),
    (["--add", "--list", "--topic", "t"], "exactly one action"),
    ([], "exactly one action"),
])
def test_bad_flags_exit_2_naming_the_flag(argv, flag, capsys):
    with pytest.raises(SystemExit) as exit_:
        kafka_acls.main([*B, *argv])
    assert exit_.value.code == 2
    assert flag in capsys.readouterr().err


def test_operations_per_resource_type_are_kafkas():
    check_operations([ResourcePattern(acl.GROUP, "g")], [AclEntry("User:a", "*", acl.DELETE, acl.ALLOW)])
    check_operations([ResourcePattern(acl.CLUSTER, "kafka-cluster")], [AclEntry("User:a", "*", acl.ALL, acl.ALLOW)])
    with pytest.raises(kafka_acls.FlagError, match="GROUP only supports"):
        check_operations([ResourcePattern(acl.GROUP, "g")], [AclEntry("User:a", "*", acl.WRITE, acl.ALLOW)])


def test_kafkas_output_format():
    text = format_acls("Current ACLs for resource", ResourcePattern(acl.TOPIC, "t"),
                       [AclEntry("User:a", "*", acl.READ, acl.ALLOW), AclEntry("User:a", "*", acl.WRITE, acl.ALLOW)])
    assert text == ("Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)`: \n"
                    " \t(principal=User:a, host=*, operation=READ, permissionType=ALLOW)\n"
                    "\t(principal=User:a, host=*, operation=WRITE, permissionType=ALLOW) \n")


def test_producer_and_consumer_roles_are_kafkas():
    args = parse("--add", "--allow-principal", "User:a", "--producer", "--idempotent", "--consumer",
                 "--topic", "t", "--group", "g", "--transactional-id", "tx")
    roles = kafka_acls.role_acls(args, resource_patterns(args, "add"))
    ops = {(p.resource_type, p.name): sorted(a.operation for a in aces) for p, aces in roles.items()}
    assert ops == {(acl.TOPIC, "t"): sorted([acl.WRITE, acl.DESCRIBE, acl.CREATE, acl.READ]),
                   (acl.GROUP, "g"): [acl.READ], (acl.TRANSACTIONAL_ID, "tx"): sorted([acl.WRITE, acl.DESCRIBE]),
                   (acl.CLUSTER, "kafka-cluster"): [acl.IDEMPOTENT_WRITE]}


@pytest.mark.parametrize("argv, flag", [
    (["--add", "--allow-principal", "User:a", "--producer", "--group", "g"], "--producer"),
    (["--add", "--allow-principal", "User:a", "--idempotent", "--topic", "t"], "--idempotent"),
    (["--add", "--allow-principal", "User:a", "--consumer", "--topic", "t"], "--consumer"),
])
def test_bad_role_flags(argv, flag, capsys):
    with pytest.raises(SystemExit) as exit_:
        kafka_acls.main([*B, *argv])
    assert exit_.value.code == 2 and flag in capsys.readouterr().err


class Done:
    def __init__(self, value=None):
        self.value = value

    def result(self, timeout=None):
        return self.value


class FakeAdmin:
    """confluent-kafka's AdminClient ACL calls, recorded."""

    def __init__(self):
        self.created, self.deleted = [], []

    def create_acls(self, bindings):
        self.created.extend(bindings)
        return {b: Done() for b in bindings}

    def delete_acls(self, filters):
        self.deleted.extend(filters)
        return {f: Done([]) for f in filters}


def test_remove_asks_first_unless_forced():
    admin, asked = FakeAdmin(), []
    by_resource = {ResourcePattern(acl.TOPIC, "t"): []}
    kafka_acls.remove_acls(admin, by_resource, False, lambda q: asked.append(q) or False)
    assert admin.deleted == [] and asked == [
        "Are you sure you want to delete all ACLs for resource filter "
        "`ResourcePatternFilter(resourceType=TOPIC, name=t, patternType=LITERAL)`? (y/n)"]
    kafka_acls.remove_acls(admin, by_resource, True, lambda q: pytest.fail("--force must not ask"))
    (flt,) = admin.deleted
    assert (flt.name, int(flt.operation.value), int(flt.permission_type.value), flt.principal) == ("t", acl.ANY,
                                                                                                 acl.ANY, None)


def test_add_prints_kafkas_heading_and_sends_every_binding():
    admin, lines = FakeAdmin(), []
    aces = [AclEntry("User:a", "*", acl.READ, acl.ALLOW), AclEntry("User:a", "*", acl.WRITE, acl.DENY)]
    kafka_acls.add_acls(admin, {ResourcePattern(acl.TOPIC, "t", acl.PREFIXED): aces}, lines.append)
    assert lines[0].startswith("Adding ACLs for resource "
                               "`ResourcePattern(resourceType=TOPIC, name=t, patternType=PREFIXED)`: \n")
    assert [(b.name, int(b.resource_pattern_type.value), int(b.operation.value), int(b.permission_type.value))
            for b in admin.created] == [("t", acl.PREFIXED, acl.READ, acl.ALLOW), ("t", acl.PREFIXED, acl.WRITE, acl.DENY)]


def test_an_unusable_command_config_exits_2_naming_it(tmp_path, capsys):
    path = tmp_path / "client.properties"
    path.write_text("security.protocol=SASL_PLAINTEXT\nsasl.jaas.config=not a jaas line\n")
    with pytest.raises(SystemExit) as exit_:
        kafka_acls.main(["--bootstrap-server", "127.0.0.1:1", "--command-config", str(path), "--list"])
    assert exit_.value.code == 2
    assert "argument --command-config: sasl.jaas.config" in capsys.readouterr().err


def test_transactional_ids_take_write_and_describe_only():
    args = parse("--add", "--allow-principal", "User:a", "--transactional-id", "tx", "--transactional-id", "*",
                 "--operation", "Write", "--operation", "Describe")
    patterns = resource_patterns(args, "add")
    assert patterns == [ResourcePattern(acl.TRANSACTIONAL_ID, "tx"), ResourcePattern(acl.TRANSACTIONAL_ID, "*")]
    check_operations(patterns, entries(args))
    assert resource_patterns(parse("--add", "--allow-principal", "User:a", "--transactional-id", "app-",
                                   "--resource-pattern-type", "prefixed"), "add") == [
        ResourcePattern(acl.TRANSACTIONAL_ID, "app-", acl.PREFIXED)]
    with pytest.raises(kafka_acls.FlagError, match="TRANSACTIONAL_ID only supports operations"):
        check_operations(patterns, [AclEntry("User:a", "*", acl.READ, acl.ALLOW)])


def test_idempotent_write_on_the_cluster_by_name_or_with_idempotent():
    args = parse("--add", "--allow-principal", "User:a", "--cluster", "--operation", "IdempotentWrite")
    assert [e.operation for e in entries(args)] == [acl.IDEMPOTENT_WRITE]
    check_operations(resource_patterns(args, "add"), entries(args))
    args = parse("--remove", "--allow-principal", "User:a", "--producer", "--idempotent", "--topic", "t")
    roles = kafka_acls.role_acls(args, resource_patterns(args, "remove"))
    assert roles[ResourcePattern(acl.CLUSTER, "kafka-cluster", acl.LITERAL)] == [
        AclEntry("User:a", "*", acl.IDEMPOTENT_WRITE, acl.ALLOW)]


def test_a_transactional_producer_gets_its_id_and_no_cluster_acl_without_idempotent():
    args = parse("--add", "--allow-principal", "User:a", "--producer", "--topic", "t", "--transactional-id", "tx")
    roles = kafka_acls.role_acls(args, resource_patterns(args, "add"))
    assert sorted((p.resource_type, p.name) for p in roles) == [(acl.TOPIC, "t"), (acl.TRANSACTIONAL_ID, "tx")]
