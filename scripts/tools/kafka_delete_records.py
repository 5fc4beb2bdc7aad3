"""``kafka-delete-records``: Kafka 2.8's ``DeleteRecordsCommand`` over confluent-kafka's AdminClient (DeleteRecords,
sent to each partition's leader, which moves its log start offset; ``brokers.replication.delete_records``).

    kafka-delete-records --bootstrap-server HOST:PORT --offset-json-file FILE [--command-config FILE]

The JSON file is Kafka's: ``{"partitions": [{"topic": "foo", "partition": 1, "offset": 1}], "version": 1}``
(``offset`` -1: the high watermark). Output, Kafka's lines (partitions sorted here):

    Executing records delete operation
    Records delete operation completed:
    partition: foo-1	low_watermark: 1
    partition: foo-2	error: org.apache.kafka.common.errors.OffsetOutOfRangeException: ...

Exit codes: 0 (Kafka's tool exits 0 even when partitions failed: their lines say so), 1 for bad flags, an
unreadable or malformed JSON file, duplicate partitions, or a request that failed as a whole.
"""
from __future__ import annotations

import json
import sys
from typing import Any

from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from scripts.tools.common.arguments import KafkaArgumentParser, admin_tool_parser
from scripts.tools.common.client_properties import admin_client, parse_flag
from scripts.tools.common.errors import java_exception

RESULT_TIMEOUT_S = 65.0
OFFSET_JSON_DOC = '{"partitions":\n  [{"topic": "foo", "partition": 1, "offset": 1}],\n "version":1\n}'


class OffsetJsonError(ValueError):
    pass


def build_parser() -> KafkaArgumentParser:
    parser = admin_tool_parser(
        "kafka-delete-records", "This tool helps to delete records of the given partitions down to the specified offset.")
    parser.add_argument("--offset-json-file", required=True, metavar="Offset json file path",
                        help="REQUIRED: The JSON file with offset per partition. The format to use is:\n"
                             + OFFSET_JSON_DOC)
    return parser


def _entry(entry: Any) -> tuple[str, int, int]:
    if not isinstance(entry, dict):
        raise OffsetJsonError(f"bad partition entry {json.dumps(entry)}")
    topic, partition, offset = entry.get("topic"), entry.get("partition"), entry.get("offset")
    if not isinstance(topic, str) or not topic:
        raise OffsetJsonError(f'bad partition entry {json.dumps(entry)}: "topic" must be a non-empty string')
    for name, value in (("partition", partition), ("offset", offset)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise OffsetJsonError(f'bad partition entry {json.dumps(entry)}: "{name}" must be an integer')
    return topic, partition, offset


def parse_offset_json(text: str) -> list[tuple[str, int, int]]:
    """Kafka's offset JSON (version 1) as (topic, partition, offset); duplicates are an error, as in Kafka."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise OffsetJsonError(f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise OffsetJsonError("The input string is not a valid JSON")
    version = data.get("version", 1)
    if version != 1:
        raise OffsetJsonError(f"Not supported version field value {version}")
    if not isinstance(data.get("partitions"), list):
        raise OffsetJsonError("Missing partitions field")
    entries = [_entry(e) for e in data["partitions"]]
    seen = [f"{t}-{p}" for t, p, _ in entries]
    duplicates = sorted({name for name in seen if seen.count(name) > 1})
    if duplicates:
        raise OffsetJsonError(f"Offset json file contains duplicate topic partitions: {','.join(duplicates)}")
    return entries


def report_lines(results: dict[tuple[str, int], Any]) -> list[str]:
    """Kafka's lines per partition: its low watermark, or its error (a KafkaException/KafkaError)."""
    lines = ["Records delete operation completed:"]
    for (topic, partition), outcome in sorted(results.items()):
        if isinstance(outcome, int):
            lines.append(f"partition: {topic}-{partition}\tlow_watermark: {outcome}")
        else:
            lines.append(f"partition: {topic}-{partition}\terror: {java_exception(outcome)}")
    return lines


def delete(admin: AdminClient, entries: list[tuple[str, int, int]]) -> dict[tuple[str, int], Any]:
    futures = admin.delete_records([TopicPartition(t, p, o) for t, p, o in entries], request_timeout=30,
                                   operation_timeout=30)
    results: dict[tuple[str, int], Any] = {}
    for tp, future in futures.items():
        try:
            results[(tp.topic, tp.partition)] = future.result(timeout=RESULT_TIMEOUT_S).low_watermark
        except KafkaException as exc:
            results[(tp.topic, tp.partition)] = exc
    return results


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with open(args.offset_json_file, encoding="utf-8") as f:
            entries = parse_offset_json(f.read())
    except (OSError, OffsetJsonError) as exc:
        parser.error(f"argument --offset-json-file: {args.offset_json_file}: {exc}")
    properties = parse_flag(parser, "--command-config", args.command_config)
    admin = admin_client(AdminClient, args.bootstrap_server, properties, error="Error while making request: ",
                         flag="--command-config")
    if admin is None:
        return 1
    print("Executing records delete operation")
    try:
        results = delete(admin, entries) if entries else {}
    except (KafkaException, TimeoutError) as exc:
        print(f"Error while making request: {java_exception(exc)}", file=sys.stderr)
        return 1
    for line in report_lines(results):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
