"""``zkafka demo spark``: Spark Structured Streaming over zkafka."""
from __future__ import annotations

import argparse


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "spark", help="Spark Structured Streaming over zkafka: msgpack clicks in, per-page counts per 10 s window "
                      "out (zkafka source and sink), read back with kafka-console-consumer")
    p.set_defaults(run=run, subparser=p)
    p.add_argument("--bootstrap-server", default=None, metavar="HOST:PORT",
                   help="an existing cluster (default: start a cluster in a temp dir and stop it after)")
    p.add_argument("--duration-s", type=float, default=60.0,
                   help="seconds the streaming query runs (default 60, at least 10)")
    p.add_argument("--rate", type=int, default=200, help="clicks/s the producer sends (default 200)")
    p.add_argument("--brokers", type=int, default=1, choices=(1, 3), help="brokers of the started cluster (default 1)")


def run(args: argparse.Namespace) -> int:
    from scripts.demo.spark import MIN_DURATION_S, demo_command

    if args.duration_s < MIN_DURATION_S or args.rate < 1:
        args.subparser.error(f"--duration-s must be at least {MIN_DURATION_S:g} and --rate positive")
    return demo_command(args.bootstrap_server, args.duration_s, args.rate, args.brokers)
