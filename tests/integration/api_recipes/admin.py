"""Recipes of the admin APIs: CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs, AlterConfigs,
IncrementalAlterConfigs, ElectLeaders, the reassignment APIs, the ACL APIs, the SCRAM credential APIs, the client
quota APIs, DeleteRecords, the log dir APIs and DescribeCluster.
A recipe that changes something reads the change back through another API."""
from __future__ import annotations

from brokers.protocol.api_versions import ApiKey
from brokers.protocol.errors import ErrorCode
from tests.integration.api_recipes.base import NO_UUID, Recipe, RecipeMaker, expect, only, registry
from tests.integration.window_broker import RETENTION_MS, TIMEOUT, WindowBroker

RECIPES: dict[ApiKey, RecipeMaker] = {}
recipe = registry(RECIPES)

TOPIC_RESOURCE = 2  # ConfigResource.Type.TOPIC and ResourceType.TOPIC alike
LITERAL, PREFIXED, ANY = 3, 4, 1  # PatternType
READ, ALLOW = 3, 3  # AclOperation.READ, AclPermissionType.ALLOW
DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG = 1, 5  # DescribeConfigs' ConfigSource
LONG, LIST = 5, 7  # DescribeConfigs' ConfigType
SCRAM_SHA_256, SCRAM_SHA_512 = 1, 2


@recipe(ApiKey.CREATE_TOPICS)
def create_topics(broker: WindowBroker, version: int) -> Recipe:
    name = f"window-create-v{version}"
    # v4: -1 for the broker's num.partitions / default.replication.factor (KIP-464)
    partitions, replication = (-1, -1) if version >= 4 else (2, 1)
    topic = dict(name=name, num_partitions=partitions, replication_factor=replication, assignments=[],
                 configs=[dict(name="retention.ms", value=RETENTION_MS)])

    def check(response) -> None:
        created = only(response.topics)
        assert created.name == name
        expect(created.error_code, ErrorCode.NONE, created)
        if version >= 1:  # v1: the error message
            assert created.error_message is None
        if version >= 5:  # v5: what was created: partitions, replication factor, configs (KIP-525)
            assert (created.num_partitions, created.replication_factor) == (1, 1)
            configs = {c.name: (c.value, c.config_source) for c in created.configs}
            assert configs["retention.ms"] == (RETENTION_MS, DYNAMIC_TOPIC_CONFIG)
            assert configs["cleanup.policy"] == ("delete", DEFAULT_CONFIG)
        if version >= 7:  # v7: the topic id
            assert created.topic_id not in (None, NO_UUID) and created.topic_id == broker.topic_id(name)
        assert broker.partition_count(name) == (1 if version >= 4 else 2)
    return Recipe(dict(topics=[topic], timeout=TIMEOUT * 1000, validate_only=False), check)  # v1: validate_only


@recipe(ApiKey.DELETE_TOPICS)
def delete_topics(broker: WindowBroker, version: int) -> Recipe:
    name = f"window-delete-v{version}"
    broker.create_topic(name)
    topic_id = broker.topic_id(name) if version >= 6 else None

    def check(response) -> None:
        deleted = only(response.responses)
        assert deleted.name == name
        expect(deleted.error_code, ErrorCode.NONE, deleted)
        if version >= 5:  # v5: the error message
            assert deleted.error_message is None
        if version >= 6:
            assert deleted.topic_id == topic_id
        assert broker.partition_count(name) == 0
    # v0-5: names; v6: by topic id (the name left null)
    return Recipe(dict(topic_names=[name], topics=[dict(name=None, topic_id=topic_id)], timeout=TIMEOUT * 1000), check)


@recipe(ApiKey.CREATE_PARTITIONS)
def create_partitions(broker: WindowBroker, version: int) -> Recipe:
    name = f"window-grow-v{version}"
    broker.create_topic(name)

    def check(response) -> None:
        result = only(response.results)
        assert result.name == name
        expect(result.error_code, ErrorCode.NONE, result)
        assert result.error_message is None
        assert broker.partition_count(name) == 2
    return Recipe(dict(topics=[dict(name=name, count=2, assignments=None)], timeout=TIMEOUT * 1000,
                       validate_only=False), check)


@recipe(ApiKey.DESCRIBE_CONFIGS)
def describe_configs(broker: WindowBroker, version: int) -> Recipe:
    topic = broker.filled_topic()
    resource = dict(resource_type=TOPIC_RESOURCE, resource_name=topic,
                    configuration_keys=["retention.ms", "cleanup.policy"])

    def check(response) -> None:
        result = only(response.results)
        expect(result.error_code, ErrorCode.NONE, result)
        configs = {c.name: c for c in result.configs}
        retention, cleanup = configs["retention.ms"], configs["cleanup.policy"]
        assert (retention.value, cleanup.value) == (RETENTION_MS, "delete")
        if version == 0:  # v0: is_default, nothing more
            assert retention.config_source != DEFAULT_CONFIG and cleanup.config_source == DEFAULT_CONFIG
            return
        assert (retention.config_source, cleanup.config_source) == (DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG)
        # v1: the synonyms, in precedence order, asked for
        assert (retention.synonyms[0].name, retention.synonyms[0].value) == ("retention.ms", RETENTION_MS)
        assert retention.synonyms[-1].source == DEFAULT_CONFIG
        if version >= 3:  # v3: the type and the documentation, asked for
            assert (retention.config_type, cleanup.config_type) == (LONG, LIST)
            assert retention.documentation
    return Recipe(dict(resources=[resource], include_synonyms=True, include_documentation=True), check)


@recipe(ApiKey.DESCRIBE_LOG_DIRS)
def describe_log_dirs(broker: WindowBroker, version: int) -> Recipe:
    topic = broker.filled_topic()

    def check(response) -> None:
        result = only(response.results)  # the window broker has one log dir
        expect(result.error_code, ErrorCode.NONE, result)
        assert result.log_dir == str(broker.cluster.log_dir(broker.broker_id))
        (entry,) = [t for t in result.topics if t.name == topic]
        partition = only(entry.partitions)
        assert partition.partition_index == 0 and partition.partition_size > 0 and not partition.is_future_key
    return Recipe(dict(topics=[dict(topic=topic, partitions=[0])]), check)


@recipe(ApiKey.ALTER_REPLICA_LOG_DIRS)
def alter_replica_log_dirs(broker: WindowBroker, version: int) -> Recipe:
    """The window broker has one log dir: its replica is already there (NONE, nothing to move); a dir that is
    not one of log.dirs is LOG_DIR_NOT_FOUND; read back with DescribeLogDirs (no future replica)."""
    topic = broker.filled_topic()
    here = str(broker.cluster.log_dir(broker.broker_id))

    def check(response) -> None:
        codes = {(t.topic_name, p.partition_index): p.error_code for t in response.results for p in t.partitions}
        assert codes == {(topic, 0): ErrorCode.NONE, ("window-nowhere", 0): ErrorCode.LOG_DIR_NOT_FOUND}, codes
        (result,) = broker.call(ApiKey.DESCRIBE_LOG_DIRS, 1, topics=[dict(topic=topic, partitions=[0])]).results
        assert [p.is_future_key for t in result.topics for p in t.partitions] == [False]
    return Recipe(dict(dirs=[dict(path=here, topics=[dict(name=topic, partitions=[0])]),
                             dict(path="/nowhere", topics=[dict(name="window-nowhere", partitions=[0])])]), check)


@recipe(ApiKey.DELETE_RECORDS)
def delete_records(broker: WindowBroker, version: int) -> Recipe:
    """A topic of its own with 5 records: the log start moves to 2, read back with ListOffsets EARLIEST."""
    topic = broker.topic(f"window-delete-records-v{version}")
    broker.produce(topic, 5)

    def check(response) -> None:
        partition = only(only(response.topics).partitions)
        expect(partition.error_code, ErrorCode.NONE, partition)
        assert partition.low_watermark == 2
        (earliest,) = broker.call(ApiKey.LIST_OFFSETS, 1, replica_id=-1, topics=[dict(name=topic, partitions=[
            dict(partition_index=0, timestamp=-2)])]).topics[0].partitions
        assert earliest.offset == 2, earliest
    return Recipe(dict(topics=[dict(name=topic, partitions=[dict(partition_index=0, offset=2)])], timeout=TIMEOUT * 1000),
                  check)


@recipe(ApiKey.DESCRIBE_CLUSTER)
def describe_cluster(broker: WindowBroker, version: int) -> Recipe:
    def check(response) -> None:
        expect(response.error_code, ErrorCode.NONE, response)
        assert response.controller_id == broker.broker_id and response.cluster_id
        assert [(b.broker_id, b.port) for b in response.brokers] == [
            (broker.broker_id, broker.cluster.kafka_port(broker.broker_id))]
        assert response.cluster_authorized_operations > 0  # asked for; no authorizer: every operation
    return Recipe(dict(include_cluster_authorized_operations=True), check)


def _altered(broker: WindowBroker, topic: str, key: str, value: str):
    def check(response) -> None:
        result = only(response.responses)
        assert (result.resource_type, result.resource_name) == (TOPIC_RESOURCE, topic)
        expect(result.error_code, ErrorCode.NONE, result)
        assert broker.topic_configs(topic)[key] == value
    return check


@recipe(ApiKey.ALTER_CONFIGS)
def alter_configs(broker: WindowBroker, version: int) -> Recipe:
    topic, value = broker.topic("window-alter"), str(1000 + version)
    resource = dict(resource_type=TOPIC_RESOURCE, resource_name=topic, configs=[dict(name="retention.ms", value=value)])
    return Recipe(dict(resources=[resource], validate_only=False), _altered(broker, topic, "retention.ms", value))


@recipe(ApiKey.INCREMENTAL_ALTER_CONFIGS)
def incremental_alter_configs(broker: WindowBroker, version: int) -> Recipe:
    topic, value = broker.topic("window-alter-incrementally"), str(2000 + version)
    config = dict(name="segment.ms", config_operation=0, value=value)  # SET
    resource = dict(resource_type=TOPIC_RESOURCE, resource_name=topic, configs=[config])
    return Recipe(dict(resources=[resource], validate_only=False), _altered(broker, topic, "segment.ms", value))


@recipe(ApiKey.ELECT_LEADERS)
def elect_leaders(broker: WindowBroker, version: int) -> Recipe:
    topic = broker.filled_topic()

    def check(response) -> None:
        if version >= 1:  # v1: the top-level error code
            expect(response.error_code, ErrorCode.NONE, response)
        result = only(only(response.replica_election_results).partition_result)
        # the only replica leads: neither a preferred (v0) nor an unclean (v1+) election is needed
        expect(result.error_code, ErrorCode.ELECTION_NOT_NEEDED, result)
    # v1: the election type: UNCLEAN (1)
    return Recipe(dict(election_type=1, topic_partitions=[dict(topic=topic, partitions=[0])], timeout=TIMEOUT * 1000),
                  check)


@recipe(ApiKey.ALTER_PARTITION_REASSIGNMENTS)
def alter_partition_reassignments(broker: WindowBroker, version: int) -> Recipe:
    topic = broker.filled_topic()

    def check(response) -> None:
        expect(response.error_code, ErrorCode.NONE, response)
        partition = only(only(response.responses).partitions)
        expect(partition.error_code, ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, partition)  # a cancel of nothing
    return Recipe(dict(timeout=TIMEOUT * 1000,
                       topics=[dict(name=topic, partitions=[dict(partition_index=0, replicas=None)])]), check)


@recipe(ApiKey.LIST_PARTITION_REASSIGNMENTS)
def list_partition_reassignments(broker: WindowBroker, version: int) -> Recipe:
    def check(response) -> None:
        expect(response.error_code, ErrorCode.NONE, response)
        assert response.topics == ()
    return Recipe(dict(timeout=TIMEOUT * 1000, topics=None), check)


# --- ACLs: v0 means literal resource names, v1 adds pattern types (KIP-290) --------------------------------

def pattern(version: int) -> int:
    return PREFIXED if version >= 1 else LITERAL


@recipe(ApiKey.CREATE_ACLS)
def create_acls(broker: WindowBroker, version: int) -> Recipe:
    name = f"acl-create-v{version}-"
    creation = dict(resource_type=TOPIC_RESOURCE, resource_name=name, resource_pattern_type=pattern(version),
                    principal="User:bob", host="*", operation=READ, permission_type=ALLOW)

    def check(response) -> None:
        result = only(response.results)
        expect(result.error_code, ErrorCode.NONE, result)
        assert broker.acls(name) == [(pattern(version), "User:bob", READ, ALLOW)]
    return Recipe(dict(creations=[creation]), check)


@recipe(ApiKey.DESCRIBE_ACLS)
def describe_acls(broker: WindowBroker, version: int) -> Recipe:
    name = "acl-described"
    broker.once("described acl", lambda: broker.create_acl(name, "User:alice"))

    def check(response) -> None:
        expect(response.error_code, ErrorCode.NONE, response)
        resource = only(response.resources)
        assert (resource.resource_type, resource.resource_name) == (TOPIC_RESOURCE, name)
        if version >= 1:
            assert resource.pattern_type == LITERAL
        acl = only(resource.acls)
        assert (acl.principal, acl.host, acl.operation, acl.permission_type) == ("User:alice", "*", READ, ALLOW)
    # v0: a literal name filter; v1+: any pattern type
    return Recipe(dict(resource_type_filter=TOPIC_RESOURCE, resource_name_filter=name,
                       pattern_type_filter=ANY if version >= 1 else LITERAL, principal_filter=None, host_filter=None,
                       operation=ANY, permission_type=ANY), check)


@recipe(ApiKey.DELETE_ACLS)
def delete_acls(broker: WindowBroker, version: int) -> Recipe:
    name = f"acl-delete-v{version}"
    broker.create_acl(name, "User:carol")
    acl_filter = dict(resource_type_filter=TOPIC_RESOURCE, resource_name_filter=name, pattern_type_filter=LITERAL,
                      principal_filter=None, host_filter=None, operation=ANY, permission_type=ANY)

    def check(response) -> None:
        result = only(response.filter_results)
        expect(result.error_code, ErrorCode.NONE, result)
        deleted = only(result.matching_acls)
        expect(deleted.error_code, ErrorCode.NONE, deleted)
        assert (deleted.resource_name, deleted.principal, deleted.operation) == (name, "User:carol", READ)
        if version >= 1:
            assert deleted.pattern_type == LITERAL
        assert broker.acls(name) == []
    return Recipe(dict(filters=[acl_filter]), check)


# --- SCRAM credentials (KIP-554) -------------------------------------------------------------------------

@recipe(ApiKey.ALTER_USER_SCRAM_CREDENTIALS)
def alter_user_scram_credentials(broker: WindowBroker, version: int) -> Recipe:
    user = f"window-user-v{version}"
    upsertion = dict(name=user, mechanism=SCRAM_SHA_512, iterations=4096, salt=b"salt", salted_password=b"p" * 64)

    def check(response) -> None:
        result = only(response.results)
        assert result.user == user
        expect(result.error_code, ErrorCode.NONE, result)
        described = only(broker.call(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, users=[dict(name=user)]).results)
        assert [(i.mechanism, i.iterations) for i in described.credential_infos] == [(SCRAM_SHA_512, 4096)]
    return Recipe(dict(deletions=[], upsertions=[upsertion]), check)


@recipe(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)
def describe_user_scram_credentials(broker: WindowBroker, version: int) -> Recipe:
    def check(response) -> None:
        expect(response.error_code, ErrorCode.NONE, response)
        result = only(response.results)
        assert result.user == "nobody"
        expect(result.error_code, ErrorCode.RESOURCE_NOT_FOUND, result)  # no credential of that user
    return Recipe(dict(users=[dict(name="nobody")]), check)


# --- client quotas (KIP-546) ---------------------------------------------------------------------------------

def _client_quota(broker: WindowBroker, client_id: str, rate: float) -> None:
    """A client id's producer quota, set at AlterClientQuotas v0."""
    response = broker.call(ApiKey.ALTER_CLIENT_QUOTAS, 0, validate_only=False, entries=[dict(
        entity=[dict(entity_type="client-id", entity_name=client_id)],
        ops=[dict(key="producer_byte_rate", value=rate, remove=False)])])
    expect(only(response.entries).error_code, ErrorCode.NONE, response)


def _quotas_of(broker: WindowBroker, client_id: str) -> list[tuple[str, float]]:
    described = broker.call(ApiKey.DESCRIBE_CLIENT_QUOTAS, 0, strict=True, components=[
        dict(entity_type="client-id", match_type=0, match=client_id)])
    return [(v.key, v.value) for entry in described.entries for v in entry.values]


@recipe(ApiKey.ALTER_CLIENT_QUOTAS)
def alter_client_quotas(broker: WindowBroker, version: int) -> Recipe:
    client_id = f"window-quota-alter-v{version}"

    def check(response) -> None:
        entry = only(response.entries)
        expect(entry.error_code, ErrorCode.NONE, entry)
        assert [(e.entity_type, e.entity_name) for e in entry.entity] == [("client-id", client_id)]
        assert _quotas_of(broker, client_id) == [("producer_byte_rate", 1048576.0)]
    return Recipe(dict(validate_only=False, entries=[dict(
        entity=[dict(entity_type="client-id", entity_name=client_id)],
        ops=[dict(key="producer_byte_rate", value=1048576.0, remove=False)])]), check)


@recipe(ApiKey.DESCRIBE_CLIENT_QUOTAS)
def describe_client_quotas(broker: WindowBroker, version: int) -> Recipe:
    client_id = f"window-quota-describe-v{version}"
    _client_quota(broker, client_id, 2048.0)

    def check(response) -> None:
        expect(response.error_code, ErrorCode.NONE, response)
        entry = only(response.entries)
        assert [(e.entity_type, e.entity_name) for e in entry.entity] == [("client-id", client_id)]
        assert [(v.key, v.value) for v in entry.values] == [("producer_byte_rate", 2048.0)]
    return Recipe(dict(strict=True, components=[dict(entity_type="client-id", match_type=0, match=client_id)]), check)
