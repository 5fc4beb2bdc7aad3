"""Command lines as Kafka's tools treat them: a bad flag or value is one line on stderr and exit code 1.

``KafkaArgumentParser`` is argparse with Kafka's failure shape: ``<prog>: <message>`` (argparse would
print the usage and exit 2). ``--help`` still prints the whole usage and exits 0.
"""
from __future__ import annotations

import argparse
import sys
from typing import NoReturn

EXIT_BAD_ARGUMENTS = 1


class KafkaArgumentParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: {message}", file=sys.stderr)
        sys.exit(EXIT_BAD_ARGUMENTS)


def host_port_list(text: str) -> str:
    """``--bootstrap-server`` / ``--broker-list``: ``host:port[,host:port...]`` (an argparse type)."""
    for item in text.split(","):
        host, _, port = item.strip().rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise argparse.ArgumentTypeError(f"{item.strip()!r} is not host:port")
    return text


def partition_list(text: str) -> list[int]:
    """A comma separated list of partition ids (an argparse type)."""
    try:
        ids = [int(p) for p in text.split(",") if p.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expects a comma separated list of numeric partition ids, but received: {text}") from None
    if any(p < 0 for p in ids):
        raise argparse.ArgumentTypeError(f"partition ids must be >= 0: {text}")
    return ids


def admin_tool_parser(prog: str, description: str) -> KafkaArgumentParser:
    """The parser of an admin tool: ``--bootstrap-server`` (required) and ``--command-config``, Kafka's words."""
    parser = KafkaArgumentParser(prog=prog, description=description)
    parser.add_argument("--bootstrap-server", required=True, type=host_port_list,
                        metavar="server(s) to use for bootstrapping", help="REQUIRED: The server(s) to connect to.")
    parser.add_argument("--command-config", metavar="command config property file",
                        help="A property file containing configs to be passed to Admin Client.")
    return parser
