"""``zkafka images build [--online | --offline] [--force-base]``: build ``zkafka:<version>`` and
``zkafka-zookeeper:<version>`` from the installed zkafka (``zkafka.images.build``).

Exit codes: 0 built, 1 a step failed (the message names it), 2 bad flags.
"""
from __future__ import annotations

import argparse
import sys


def add_parser(subparsers) -> None:
    build = subparsers.add_parser(
        "build", help="build the zkafka images (zkafka:<version>, zkafka-zookeeper:<version>)",
        description="Build the images ZkafkaContainer, ZkafkaCluster and compose run, from this installed zkafka.")
    build.set_defaults(run=run)
    where = build.add_mutually_exclusive_group()
    where.add_argument("--online", dest="mode", action="store_const", const="online",
                       help="FROM python:3.11-slim and the official zookeeper:3.8 (present or pulled)")
    where.add_argument("--offline", dest="mode", action="store_const", const="offline",
                       help="FROM zkafka-base:bookworm, made from Debian packages (debootstrap, needs root): "
                            "no container registry needed")
    build.set_defaults(mode="auto")
    build.add_argument("--force-base", action="store_true", help="rebuild zkafka-base:bookworm (offline)")
    build.add_argument("--base-image", default=None, metavar="IMAGE",
                       help="the Python 3.11 base of an online build (default python:3.11-slim)")
    build.add_argument("--zookeeper-image", default=None, metavar="IMAGE",
                       help="the official-layout ZooKeeper image of an online build (default zookeeper:3.8)")


def run(args: argparse.Namespace) -> int:
    from zkafka.images import build as images

    options = {"base_image": args.base_image or images.ONLINE_BASE,
               "zookeeper_base": args.zookeeper_image or images.ONLINE_ZOOKEEPER}
    try:
        built = images.build(args.mode, force_base=args.force_base, **options)
    except images.BuildError as exc:
        print(f"zkafka images build: {exc}", file=sys.stderr)
        return 1
    print(f"{built.broker_tag}\n{built.zookeeper_tag}")
    return 0

