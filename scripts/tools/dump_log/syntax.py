"""kafka-dump-log's flags: Kafka 2.8's ``DumpLogSegmentsOptions`` (pure).

``--files a.log,b.index`` (required), ``--print-data-log`` (also implied by any decoder flag), ``--deep-iteration``
(implied by ``--print-data-log``), ``--skip-record-metadata``, ``--verify-index-only``, ``--index-sanity-check``,
``--max-message-size`` (default 5242880: how far after an index entry's position its batch must end),
``--offsets-decoder``, ``--transaction-log-decoder``, ``--key-decoder-class`` / ``--value-decoder-class`` (only
``kafka.serializer.StringDecoder``, the default, exists here). A bad flag is one line and exit 1.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass

from scripts.tools.common.arguments import KafkaArgumentParser

STRING_DECODER = "kafka.serializer.StringDecoder"
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024


@dataclass(frozen=True)
class DumpOptions:
    files: tuple[str, ...]
    print_data_log: bool = False
    deep_iteration: bool = False
    skip_record_metadata: bool = False
    verify_only: bool = False
    index_sanity_only: bool = False
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    parser: str = "string"  # string | offsets | transaction (decoders.PARSERS)


def build_parser() -> argparse.ArgumentParser:
    p = KafkaArgumentParser(prog="kafka-dump-log", description="This tool helps to parse a log file and dump its "
                            "contents to the console, useful for debugging a seemingly corrupt log segment.")
    p.add_argument("--files", metavar="file1, file2, ...",
                   help="REQUIRED: The comma separated list of data and index log files to be dumped.")
    p.add_argument("--print-data-log", action="store_true", help="if set, printing the messages content when dumping "
                   "data logs. Automatically set if any decoder option is specified.")
    p.add_argument("--verify-index-only", action="store_true",
                   help="if set, just verify the index log without printing its content.")
    p.add_argument("--index-sanity-check", action="store_true", help="if set, just checks the index sanity without "
                   "printing its content. This is the same check that is executed on broker startup to determine if "
                   "an index needs rebuilding or not.")
    p.add_argument("--max-message-size", type=int, default=DEFAULT_MAX_MESSAGE_SIZE, metavar="size",
                   help="Size of largest message.")
    p.add_argument("--deep-iteration", action="store_true", help="if set, uses deep instead of shallow iteration. "
                   "Automatically set if print-data-log is enabled.")
    for flag in ("--value-decoder-class", "--key-decoder-class"):
        p.add_argument(flag, nargs="?", const=STRING_DECODER, help="if set, used to deserialize the messages "
                       f"(only {STRING_DECODER}, the default).")
    p.add_argument("--offsets-decoder", action="store_true", help="if set, log data will be parsed as offset data "
                   "from the __consumer_offsets topic.")
    p.add_argument("--transaction-log-decoder", action="store_true", help="if set, log data will be parsed as "
                   "transaction metadata from the __transaction_state topic.")
    p.add_argument("--skip-record-metadata", action="store_true", help="whether to skip printing metadata for each "
                   "record.")
    return p


def parse(argv: list[str] | None) -> DumpOptions:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.files is None:
        parser.error('Missing required argument "[files]"')
    for flag in ("value_decoder_class", "key_decoder_class"):
        value = getattr(args, flag)
        if value is not None and value != STRING_DECODER:
            parser.error(f"--{flag.replace('_', '-')}: only {STRING_DECODER} is supported, got {value}")
    if args.max_message_size <= 0:
        parser.error(f"--max-message-size must be positive, got {args.max_message_size}")
    files = tuple(name for name in args.files.split(",") if name)
    if not files:
        parser.error("--files names no file")
    decoded = args.offsets_decoder or args.transaction_log_decoder or args.value_decoder_class is not None \
        or args.key_decoder_class is not None
    print_data = args.print_data_log or decoded
    return DumpOptions(files, print_data_log=print_data, deep_iteration=args.deep_iteration or print_data,
                       skip_record_metadata=args.skip_record_metadata, verify_only=args.verify_index_only,
                       index_sanity_only=args.index_sanity_check, max_message_size=args.max_message_size,
                       parser="offsets" if args.offsets_decoder else
                       "transaction" if args.transaction_log_decoder else "string")
