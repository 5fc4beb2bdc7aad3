"""Two front ends over one reader (``brokers.storage.dump``):

* ``kafka-dump-log --files a.log,b.index [--print-data-log] ...``: Kafka 2.8's DumpLogSegments, its flags
  (``syntax``) and its exact output (``kafka_format``; ``--offsets-decoder`` / ``--transaction-log-decoder``:
  ``decoders``); ``command`` runs it. Exit 0, or 1 for a bad flag or a file it cannot dump (one line).
* ``zkafka log dump <partition dir | file>`` (below): the same content for a whole partition directory at once,
  with zkafka's summaries (``Batches: N``, index ``MISMATCH`` marks, ``CORRUPT`` tails, the leader-epoch
  checkpoint). Exit codes: 0, or 2 when the path is missing or not a segment file.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("dump", help="print batches, offsets, timestamps, codecs, CRC validity, index entries "
                                           "(like Kafka's DumpLogSegments)")
    p.set_defaults(run=run)
    p.add_argument("path", type=Path, help="a partition directory or a .log/.index/.timeindex/.txnindex/.snapshot file")
    p.add_argument("--print-data-log", "--deep-iteration", dest="print_records", action="store_true",
                   help="also decode and print every record (key, value, headers)")
    p.add_argument("--max-payload", type=int, default=60, help="bytes of key/value to print (default 60)")


def run(args: argparse.Namespace) -> int:
    from brokers.storage.dump import dump_path

    try:
        for line in dump_path(args.path, print_records=args.print_records, max_payload=args.max_payload):
            print(line)
    except (FileNotFoundError, ValueError) as exc:
        print(f"zkafka log dump: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    return 0


def console_main() -> None:
    """The ``kafka-dump-log`` console script."""
    from scripts.tools.dump_log.command import main

    sys.exit(main())
