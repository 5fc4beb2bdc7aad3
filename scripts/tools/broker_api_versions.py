"""``kafka-broker-api-versions``: Kafka 2.8's ``BrokerApiVersionsCommand``: every broker's ApiVersions table, each
API with the versions the broker speaks and the version a Kafka 2.8 client would use.

    kafka-broker-api-versions --bootstrap-server HOST:PORT [--command-config FILE]

Output, Kafka's ``NodeApiVersions.toString(true)`` per broker (brokers by id here; Kafka's order is a hash
map's):

    127.0.0.1:9092 (id: 1 rack: null) -> (
    	Produce(0): 0 to 9 [usable: 9],
    	...
    	LeaderAndIsr(4): UNSUPPORTED,
    	...
    )

Every API a Kafka 2.8 ZooKeeper-mode broker may have (``ApiKeys.zkBrokerApis()``) has a line: ``min to max``
(or one version), then ``[usable: v]`` (the newer of the two sides' common versions), ``[unusable: node too
new]`` / ``[unusable: node too old]``, or ``UNSUPPORTED`` when the broker does not list it (zkafka carries the
inter-broker APIs on its control plane). An API the client does not know prints as ``UNKNOWN(key): ...``.
A broker that does not answer prints ``<broker> -> ERROR: <exception>``.
"""
from __future__ import annotations

import asyncio
import sys
from typing import Any

from brokers.protocol import codec
from brokers.protocol.api_versions import ApiKey
from scripts.tools.common.arguments import KafkaArgumentParser, admin_tool_parser
from scripts.tools.common.client_properties import ClientPropertiesError, parse_flag
from scripts.tools.common.cluster_admin import ClusterAdmin, ClusterAdminError

TIMEOUT_S = 30.0
API_VERSIONS_VERSION = 3

# Kafka 2.8.2's ApiKeys.zkBrokerApis(): key -> (name, oldest, latest version of the 2.8 client)
# (tests/unit/scripts/test_broker_api_versions.py checks it against the 2.8.2 message schemas)
KAFKA_28_ZK_BROKER_APIS: dict[int, tuple[str, int, int]] = {
    0: ("Produce", 0, 9), 1: ("Fetch", 0, 12), 2: ("ListOffsets", 0, 6), 3: ("Metadata", 0, 11),
    4: ("LeaderAndIsr", 0, 5), 5: ("StopReplica", 0, 3), 6: ("UpdateMetadata", 0, 7),
    7: ("ControlledShutdown", 0, 3), 8: ("OffsetCommit", 0, 8), 9: ("OffsetFetch", 0, 7),
    10: ("FindCoordinator", 0, 3), 11: ("JoinGroup", 0, 7), 12: ("Heartbeat", 0, 4), 13: ("LeaveGroup", 0, 4),
    14: ("SyncGroup", 0, 5), 15: ("DescribeGroups", 0, 5), 16: ("ListGroups", 0, 4), 17: ("SaslHandshake", 0, 1),
    18: ("ApiVersions", 0, 3), 19: ("CreateTopics", 0, 7), 20: ("DeleteTopics", 0, 6), 21: ("DeleteRecords", 0, 2),
    22: ("InitProducerId", 0, 4), 23: ("OffsetForLeaderEpoch", 0, 4), 24: ("AddPartitionsToTxn", 0, 3),
    25: ("AddOffsetsToTxn", 0, 3), 26: ("EndTxn", 0, 3), 27: ("WriteTxnMarkers", 0, 1),
    28: ("TxnOffsetCommit", 0, 3), 29: ("DescribeAcls", 0, 2), 30: ("CreateAcls", 0, 2), 31: ("DeleteAcls", 0, 2),
    32: ("DescribeConfigs", 0, 4), 33: ("AlterConfigs", 0, 2), 34: ("AlterReplicaLogDirs", 0, 2),
    35: ("DescribeLogDirs", 0, 2), 36: ("SaslAuthenticate", 0, 2), 37: ("CreatePartitions", 0, 3),
    38: ("CreateDelegationToken", 0, 2), 39: ("RenewDelegationToken", 0, 2), 40: ("ExpireDelegationToken", 0, 2),
    41: ("DescribeDelegationToken", 0, 2), 42: ("DeleteGroups", 0, 2), 43: ("ElectLeaders", 0, 2),
    44: ("IncrementalAlterConfigs", 0, 1), 45: ("AlterPartitionReassignments", 0, 0),
    46: ("ListPartitionReassignments", 0, 0), 47: ("OffsetDelete", 0, 0), 48: ("DescribeClientQuotas", 0, 1),
    49: ("AlterClientQuotas", 0, 1), 50: ("DescribeUserScramCredentials", 0, 0),
    51: ("AlterUserScramCredentials", 0, 0), 56: ("AlterIsr", 0, 0), 57: ("UpdateFeatures", 0, 0),
    60: ("DescribeCluster", 0, 0), 61: ("DescribeProducers", 0, 0),
}


def api_line(key: int, broker_min: int, broker_max: int) -> str:
    """One API the broker lists, as Kafka's ``NodeApiVersions.apiVersionToText``."""
    known = KAFKA_28_ZK_BROKER_APIS.get(key)
    versions = str(broker_min) if broker_min == broker_max else f"{broker_min} to {broker_max}"
    if known is None:
        return f"UNKNOWN({key}): {versions}"
    name, oldest, latest = known
    if latest < broker_min:
        usable = "[unusable: node too new]"
    elif broker_max < oldest:
        usable = "[unusable: node too old]"
    else:
        usable = f"[usable: {min(latest, broker_max)}]"
    return f"{name}({key}): {versions} {usable}"


def node_api_versions(listed: dict[int, tuple[int, int]]) -> str:
    """The broker's whole table, Kafka's ``toString(true)``: every listed API and every zkBroker API it lacks."""
    lines = {key: api_line(key, lo, hi) for key, (lo, hi) in listed.items()}
    for key, (name, _, _) in KAFKA_28_ZK_BROKER_APIS.items():
        lines.setdefault(key, f"{name}({key}): UNSUPPORTED")
    return "(\n\t" + ",\n\t".join(lines[key] for key in sorted(lines)) + "\n)"


def node_name(host: str, port: int, broker_id: int, rack: str | None) -> str:
    """Kafka's ``Node.toString``."""
    return f"{host}:{port} (id: {broker_id} rack: {'null' if rack is None else rack})"


async def _api_versions(admin: ClusterAdmin, host: str, port: int) -> dict[int, tuple[int, int]]:
    body = codec.build(codec.request_class(ApiKey.API_VERSIONS, API_VERSIONS_VERSION),
                       client_software_name="zkafka-broker-api-versions", client_software_version="2.8")
    response = await admin.request_endpoint(host, port, ApiKey.API_VERSIONS, API_VERSIONS_VERSION, body)
    if int(response.error_code) != 0:
        raise ClusterAdminError(f"ApiVersions error {int(response.error_code)}")
    return {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in response.api_keys}


async def describe(admin: ClusterAdmin) -> list[str]:
    """Each broker's block, by broker id."""
    metadata = await admin.metadata([])
    blocks = []
    for broker in sorted(metadata.brokers, key=lambda b: int(b.node_id)):
        name = node_name(broker.host, int(broker.port), int(broker.node_id), broker.rack)
        try:
            table = await _api_versions(admin, broker.host, int(broker.port))
            blocks.append(f"{name} -> {node_api_versions(table)}")
        except (ClusterAdminError, ConnectionError, OSError, asyncio.TimeoutError) as exc:
            blocks.append(f"{name} -> ERROR: {type(exc).__name__}: {exc}")
    return blocks


def build_parser() -> KafkaArgumentParser:
    return admin_tool_parser("kafka-broker-api-versions", "This tool helps to retrieve broker version information.")


async def _run(bootstrap: str, properties: dict[str, Any]) -> list[str]:
    async with ClusterAdmin(bootstrap, TIMEOUT_S, properties=properties) as admin:
        return await describe(admin)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    properties = parse_flag(parser, "--command-config", args.command_config)
    try:
        blocks = asyncio.run(_run(args.bootstrap_server, properties))
    except ClientPropertiesError as exc:
        parser.error(f"argument --command-config: {exc}")
    except (ClusterAdminError, ConnectionError, OSError, asyncio.TimeoutError) as exc:
        print(f"Error while making request: {exc}", file=sys.stderr)
        return 1
    for block in blocks:
        print(block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
