"""``kafka-cluster``: Kafka 2.8's ``ClusterTool`` over confluent-kafka's AdminClient (DescribeCluster, KIP-700).

    kafka-cluster cluster-id (--bootstrap-server | -b) HOST:PORT [--config | -c FILE]
    kafka-cluster unregister (--bootstrap-server | -b) HOST:PORT --id N [--config FILE]

``cluster-id`` prints ``Cluster ID: <id>`` (the id in ZooKeeper's ``/cluster/id``). ``unregister`` is KRaft's
UnregisterBroker, which a ZooKeeper-mode cluster does not have: as Kafka 2.8 against such a cluster it prints
``The target cluster does not support the broker unregistration API.`` (exit 0, as Kafka's tool). A missing
``--bootstrap-server`` is ``Please specify --bootstrap-server.`` (exit 1).
"""
from __future__ import annotations

import sys

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from scripts.tools.common.arguments import KafkaArgumentParser, host_port_list
from scripts.tools.common.client_properties import admin_client, parse_flag
from scripts.tools.common.errors import java_exception

TIMEOUT_S = 30.0


def build_parser() -> KafkaArgumentParser:
    parser = KafkaArgumentParser(prog="kafka-cluster", description="The Kafka cluster tool.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=KafkaArgumentParser)
    cluster_id = commands.add_parser("cluster-id", help="Get information about the ID of a cluster.")
    unregister = commands.add_parser("unregister", help="Unregister a broker..")
    for sub in (cluster_id, unregister):
        sub.add_argument("--bootstrap-server", "-b", type=host_port_list,
                         help="A list of host/port pairs to use for establishing the connection to the kafka cluster.")
        sub.add_argument("--config", "-c", help="A property file containing configs to passed to AdminClient.")
    unregister.add_argument("--id", "-i", type=int, required=True, help="The ID of the broker to unregister.")
    return parser


def cluster_id_line(cluster_id: str | None) -> str:
    if not cluster_id:
        return "No cluster ID found. The Kafka version is probably too old."
    return f"Cluster ID: {cluster_id}"


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    properties = parse_flag(parser, "--config", args.config)
    bootstrap = args.bootstrap_server or properties.pop("bootstrap.servers", None)
    if not bootstrap:
        print("Please specify --bootstrap-server.", file=sys.stderr)
        return 1
    if args.command == "unregister":
        print("The target cluster does not support the broker unregistration API.")
        return 0
    admin = admin_client(AdminClient, bootstrap, properties, error="Error while making request: ", flag="--config")
    if admin is None:
        return 1
    try:
        description = admin.describe_cluster(request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S + 5)
    except (KafkaException, TimeoutError) as exc:
        print(f"Error while making request: {java_exception(exc)}", file=sys.stderr)
        return 1
    print(cluster_id_line(description.cluster_id))
    return 0


if __name__ == "__main__":
    sys.exit(main())
