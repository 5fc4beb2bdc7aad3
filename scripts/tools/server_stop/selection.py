"""kafka-server-stop's pure side: which processes are zkafka brokers, which of them a ``--config`` filter
selects, and the tool's flags.

A broker is ``python -m brokers [--config] server.properties ...`` (how ``zkafka cluster up`` and the tests
start them; interpreter flags before ``-m`` allowed) or ``.../kafka-server-start server.properties ...`` run by
its interpreter. ``broker_config(argv)`` returns the properties path that broker was given (as written: relative
paths are resolved by the caller against the process's working directory).

Kafka 2.8's script stops every ``kafka.Kafka`` JVM on the machine. ``--config PATH`` (repeatable; zkafka's own
flag, so that scripts and tests stop only their brokers) keeps the brokers whose properties file is PATH, or lies
below PATH when PATH is a directory (a ``zkafka cluster up --dir`` directory: all of that cluster's brokers).
``SIGNAL`` in the environment picks the signal (``TERM`` by default, as Kafka's script: a broker's controlled
shutdown); e.g. ``SIGNAL=KILL``.
"""
from __future__ import annotations

import argparse
import signal
from pathlib import PurePath

from scripts.tools.common.arguments import KafkaArgumentParser

START_SCRIPT = "kafka-server-start"
VALUED_FLAGS = ("--config", "--override", "--log-level")  # python -m brokers' flags that take a value
NO_SERVER = "No kafka server to stop"


class StopError(ValueError):
    """A bad flag or SIGNAL: one line on stderr, exit 1."""


def _module_arguments(argv: list[str]) -> list[str] | None:
    """The arguments after ``python [interpreter flags] -m brokers``; None for any other command."""
    j = 1
    while j < len(argv):
        word = argv[j]
        if word in ("-m", "-mbrokers"):
            module_at = j + 1 if word == "-m" else j
            if word == "-m" and (j + 1 >= len(argv) or argv[j + 1] != "brokers"):
                return None
            return argv[module_at + 1:]
        if word in ("-X", "-W"):  # options with a value
            j += 2
        elif word.startswith("-") and word not in ("-", "-c"):
            j += 1
        else:
            return None  # a script, ``-c CODE`` or stdin: not ``-m brokers``
    return None


def _broker_arguments(argv: list[str]) -> list[str] | None:
    """The arguments after ``-m brokers`` or after the ``kafka-server-start`` script; None if not a broker."""
    if not argv:
        return None
    if PurePath(argv[0]).name == START_SCRIPT:
        return argv[1:]
    if not PurePath(argv[0]).name.startswith("python"):
        return None  # ``vim kafka-server-start`` is no broker
    if len(argv) > 1 and PurePath(argv[1]).name == START_SCRIPT:
        return argv[2:]
    return _module_arguments(argv)


def broker_config(argv: list[str]) -> str | None:
    """The server.properties a broker process was started with, or None when ``argv`` is not a broker's."""
    args = _broker_arguments(argv)
    if args is None:
        return None
    positional = None
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--config" and i + 1 < len(args):
            return args[i + 1]
        if word.startswith("--config="):
            return word.split("=", 1)[1]
        if word in VALUED_FLAGS:
            i += 2
            continue
        if not word.startswith("-") and positional is None:
            positional = word
        i += 1
    return positional


def resolve(config: str, cwd: str) -> PurePath:
    """The broker's properties path, absolute (a relative one is the broker's working directory's)."""
    path = PurePath(config)
    return path if path.is_absolute() else PurePath(cwd) / path


def selected(config: PurePath, targets: list[tuple[PurePath, bool]]) -> bool:
    """Whether ``--config`` targets [(path, is_dir)] select a broker started with ``config`` (all when none)."""
    if not targets:
        return True
    return any(config.is_relative_to(path) if is_dir else config == path for path, is_dir in targets)


def build_parser() -> argparse.ArgumentParser:
    parser = KafkaArgumentParser(
        prog="kafka-server-stop", description="Stop the zkafka brokers running on this machine (SIGTERM: "
                                              "each does a controlled shutdown). Kafka's script has no flags.")
    parser.add_argument("--config", action="append", default=[], metavar="PATH",
                        help="stop only the brokers started with this server.properties, or with one below this "
                             "directory (repeatable; zkafka's addition)")
    return parser


def signal_of(name: str | None) -> signal.Signals:
    """``SIGNAL`` (``TERM``, ``SIGTERM``, ``15``...) -> the signal; TERM when unset."""
    text = (name or "TERM").strip().upper()
    try:
        return signal.Signals(int(text)) if text.isdigit() else signal.Signals[text if text.startswith("SIG") else "SIG" + text]
    except (KeyError, ValueError):
        raise StopError(f"kafka-server-stop: SIGNAL={name}: not a signal name or number") from None
