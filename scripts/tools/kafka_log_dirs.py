"""``kafka-log-dirs``: Kafka 2.8's ``LogDirsCommand``: each broker's log dirs (DescribeLogDirs, KIP-113) with the
size of every replica in them, how far a replica being moved between dirs lags (``offsetLag``, its future
replica ``isFuture`` true), and the dirs that are offline.

    kafka-log-dirs --describe --bootstrap-server HOST:PORT [--broker-list 1,2] [--topic-list a,b]
                   [--command-config FILE]

Output, Kafka's three lines (the JSON compact, as Kafka's ``Json.encodeAsString``):

    Querying brokers for log directories information
    Received log directory information from brokers 1,2,3
    {"version":1,"brokers":[{"broker":1,"logDirs":[{"logDir":"/data/a","error":null,"partitions":[
      {"partition":"t-0","size":123,"offsetLag":0,"isFuture":false}]}]}]}

An offline dir's ``error`` is ``org.apache.kafka.common.errors.KafkaStorageException``. Without
``--broker-list``, every broker in the cluster. A broker that is not in the cluster: one error line, exit 1.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from brokers.protocol.errors import ErrorCode
from scripts.tools.common.arguments import KafkaArgumentParser, admin_tool_parser
from scripts.tools.common.client_properties import ClientPropertiesError, parse_flag
from scripts.tools.common.cluster_admin import ClusterAdmin, ClusterAdminError

TIMEOUT_S = 30.0
ERROR_CLASSES = {ErrorCode.KAFKA_STORAGE_ERROR: "org.apache.kafka.common.errors.KafkaStorageException",
                 ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "org.apache.kafka.common.errors.ClusterAuthorizationException"}


def id_list(text: str) -> list[int]:
    try:
        return [int(b) for b in text.split(",") if b.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expects a comma separated list of broker ids, but received: {text}") from None


def build_parser() -> KafkaArgumentParser:
    parser = admin_tool_parser("kafka-log-dirs", "This tool helps to query log directory usage on the specified brokers.")
    parser.add_argument("--describe", action="store_true", required=True,
                        help="Describe the specified log directories on the specified brokers.")
    parser.add_argument("--topic-list", default="", metavar="Topic list",
                        help='The list of topics to be queried in the form "topic1,topic2,topic3". All topics will '
                             "be queried if no topic list is specified")
    parser.add_argument("--broker-list", type=id_list, metavar="Broker list",
                        help='The list of brokers to be queried in the form "0,1,2". All brokers in the cluster will '
                             "be queried if no broker list is specified")
    return parser


def broker_entry(broker_id: int, results: list[Any], topics: set[str]) -> dict[str, Any]:
    """One broker's ``{"broker", "logDirs"}`` from its DescribeLogDirs results (pure)."""
    dirs = []
    for result in results:
        code = ErrorCode(int(result.error_code))
        partitions = [{"partition": f"{t.name}-{p.partition_index}", "size": int(p.partition_size),
                       "offsetLag": int(p.offset_lag), "isFuture": bool(p.is_future_key)}
                      for t in result.topics if not topics or t.name in topics for p in t.partitions]
        error = None if code == ErrorCode.NONE else ERROR_CLASSES.get(code, f"org.apache.kafka.common.errors.{code.name}")
        dirs.append({"logDir": result.log_dir, "error": error, "partitions": partitions})
    return {"broker": broker_id, "logDirs": dirs}


def describe_json(entries: list[dict[str, Any]]) -> str:
    return json.dumps({"version": 1, "brokers": entries}, separators=(",", ":"))


async def _describe(args: Any, properties: dict[str, str]) -> tuple[list[int], list[dict[str, Any]]]:
    topics = {t for t in args.topic_list.split(",") if t}
    async with ClusterAdmin(args.bootstrap_server, TIMEOUT_S, "log-dirs-tool", properties) as admin:
        brokers = args.broker_list if args.broker_list else await admin.broker_ids()
        entries = [broker_entry(b, await admin.describe_log_dirs(b), topics) for b in brokers]
    return brokers, entries


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    properties = parse_flag(parser, "--command-config", args.command_config)
    print("Querying brokers for log directories information")
    try:
        brokers, entries = asyncio.run(_describe(args, properties))
    except ClientPropertiesError as exc:
        parser.error(f"argument --command-config: {exc}")
    except (ClusterAdminError, ConnectionError, OSError, asyncio.TimeoutError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    print(f"Received log directory information from brokers {','.join(map(str, brokers))}")
    print(describe_json(entries))
    return 0


if __name__ == "__main__":
    sys.exit(main())
