"""``zkafka``: the project's command line. Thin: parse flags, make one library call, print.

Every subcommand lives in its room's command module, which exposes ``add_parser(subparsers)`` (its parser, with
``run`` as the ``run`` default) and ``run(args) -> int`` (the exit code); ``ROOMS`` lists them:

* ``log dump <dir|file>``: scripts/tools/dump_log/ (with ``kafka-dump-log``, Kafka's front end);
* ``bench all|storage|cluster|produce|consume|replication|group|spark|http|reassign|security|formats|txn``:
  scripts/bench/commands/;
* ``zookeeper start|stop|status``, ``cluster up|status|down``: scripts/local/commands/;
* ``demo groups|spark|cluster|transactions|mirror`` (``make demo``): scripts/demo/commands/;
* ``soak`` (a containerized cluster under random faults, its history checked): scripts/soak/command.py;
* ``images build`` (the images of ``zkafka.testing`` and compose): scripts/images/command.py.

Command modules import their implementation inside ``run``, so that ``zkafka --help`` stays fast. ``run`` finds
in ``args`` the raw arguments (``args.argv``, echoed in reports) and ``zkafka``'s own parser (``args.parser``).
"""
from __future__ import annotations

import argparse
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import NamedTuple

from scripts.bench import commands as bench
from scripts.demo import commands as demo
from scripts.images import command as images
from scripts.local import commands as local
from scripts.soak import command as soak
from scripts.tools import dump_log


class Room(NamedTuple):
    """A command group (``zkafka NAME SUBCOMMAND``) or, with no name, commands at the top level."""

    name: str | None
    help: str | None
    dest: str | None
    commands: tuple


ROOMS = (
    Room("log", "inspect on-disk logs", "log_command", (dump_log,)),
    Room("bench", "benchmarks", "bench_command", bench.COMMANDS),
    Room(None, None, None, local.COMMANDS),
    Room("demo", "demonstrations with real clients on a live cluster", "demo_command", demo.COMMANDS),
    Room(None, None, None, (soak,)),
    Room("images", "the zkafka container images", "images_command", (images,)),
)


def _version() -> str:
    try:
        return version("zkafka")
    except PackageNotFoundError:
        return "0+unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="zkafka", description="Kafka's classic architecture, in Python.")
    parser.add_argument("--version", action="version", version=f"zkafka {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for room in ROOMS:
        subparsers = commands
        if room.name is not None:
            group = commands.add_parser(room.name, help=room.help)
            subparsers = group.add_subparsers(dest=room.dest, metavar="SUBCOMMAND", required=True)
        for module in room.commands:
            module.add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv, namespace=argparse.Namespace(argv=argv, parser=parser))
    if getattr(args, "run", None) is None:
        parser.print_help()
        return 2
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
