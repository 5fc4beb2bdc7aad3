"""``kafka-consumer-perf-test``'s flags (pure): Kafka 2.8's ``ConsumerPerfConfig`` (jopt-simple), with its
messages, and the consumer's settings.

    kafka-consumer-perf-test (--bootstrap-server | --broker-list) HOST:PORT --topic T --messages N
        [--group G (perf-consumer-<random>)] [--fetch-size BYTES (1048576)] [--from-latest]
        [--socket-buffer-size BYTES (2097152)] [--consumer.config FILE] [--print-metrics]
        [--show-detailed-stats] [--reporting-interval MS (5000)] [--timeout [MS] (10000)]
        [--date-format PATTERN (yyyy-MM-dd HH:mm:ss:SSS)] [--hide-header]
        [--threads N] [--num-fetch-threads N]  (deprecated and ignored, with Kafka's WARNING line)

jopt-simple's rules: ``--name value`` or ``--name=value`` (one dash works too); an option that takes a
value takes the next word whatever it is; ``--timeout``'s value is optional (the next word only if it is a
number); words that are no option's value are ignored. Problems are ``UsageError``, Kafka's message, one
line, exit 1: ``foo is not a recognized option``, ``Option topic requires an argument``, ``Missing required
option(s) [bootstrap-server]``, ``Missing required argument "[topic]"``, ``Cannot parse argument 'x' of
option messages``, ``Reporting interval must be greater than 0.``, ``Illegal pattern character 'q'``.

The consumer's settings are made from these options by ``settings.consumer_config``.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass

from scripts.tools.perf_test.dates import DEFAULT_PATTERN, DateFormat

# name -> (kind, default): kind "flag" (no value), "str", "int" (Java Integer), "long", "optional-long"
OPTIONS: dict[str, tuple[str, object]] = {
    "bootstrap-server": ("str", None), "broker-list": ("str", None), "topic": ("str", None),
    "group": ("str", None), "fetch-size": ("int", 1024 * 1024), "from-latest": ("flag", False),
    "socket-buffer-size": ("int", 2 * 1024 * 1024), "threads": ("int", 10), "num-fetch-threads": ("int", 1),
    "consumer.config": ("str", None), "print-metrics": ("flag", False), "show-detailed-stats": ("flag", False),
    "timeout": ("optional-long", 10000), "messages": ("long", None), "reporting-interval": ("int", 5000),
    "date-format": ("str", DEFAULT_PATTERN), "hide-header": ("flag", False), "help": ("flag", False),
    "version": ("flag", False),
}
DEPRECATED_WARNING = ("WARNING: option [threads] and [num-fetch-threads] have been deprecated and will be ignored "
                      "by the test")
_JAVA_INT = re.compile(r"[+-]?[0-9]+\Z")
_BITS = {"int": 32, "long": 64, "optional-long": 64}


class UsageError(ValueError):
    """Bad flags: Kafka's message, one line, exit 1."""


@dataclass(frozen=True)
class ConsumerOptions:
    bootstrap_server: str
    topic: str
    messages: int
    group: str
    fetch_size: int
    from_latest: bool
    socket_buffer_size: int
    consumer_config: str | None
    print_metrics: bool
    show_detailed_stats: bool
    timeout_ms: int
    reporting_interval_ms: int
    date_format: str
    hide_header: bool
    deprecated_threads: bool


def java_number(text: str, kind: str, name: str) -> int:
    value = int(text) if _JAVA_INT.match(text) else None
    if value is None or not -(1 << (_BITS[kind] - 1)) <= value < (1 << (_BITS[kind] - 1)):
        raise UsageError(f"Cannot parse argument '{text}' of option {name}")
    return value


def _option_name(word: str) -> tuple[str, str | None] | None:
    """(name, inline value) of an option word, None for a plain word."""
    if not word.startswith("-") or word in ("-", "--"):
        return None
    name, sep, value = word.lstrip("-").partition("=")
    return name, (value if sep else None)


def scan(argv: list[str]) -> dict[str, list[str]]:
    """jopt-simple's scan: each option given, with its values (a flag's list holds ``""`` per use)."""
    seen: dict[str, list[str]] = {}
    words = list(argv)
    while words:
        parsed = _option_name(words.pop(0))
        if parsed is None:
            continue  # a non-option argument: jopt-simple keeps it, the tool never reads it
        name, inline = parsed
        if name not in OPTIONS:
            raise UsageError(f"{name} is not a recognized option")
        kind = OPTIONS[name][0]
        if kind == "flag":
            value = ""
        elif inline is not None:
            value = inline
        elif kind == "optional-long":
            value = words.pop(0) if words and _JAVA_INT.match(words[0]) else ""
        elif not words:
            raise UsageError(f"Option {name} requires an argument")
        else:
            value = words.pop(0)
        seen.setdefault(name, []).append(value)
    if "bootstrap-server" not in seen and "broker-list" not in seen:
        raise UsageError("Missing required option(s) [bootstrap-server]")
    return seen


def _value(seen: dict[str, list[str]], name: str) -> object:
    kind, default = OPTIONS[name]
    values = [v for v in seen.get(name, []) if not (kind == "optional-long" and v == "")]
    if kind == "flag":
        return name in seen
    if not values:
        return default
    if len(values) > 1:
        raise UsageError(f"Found multiple arguments for option {name}, but you asked for only one")
    return values[0] if kind == "str" else java_number(values[0], kind, name)


def parse(argv: list[str]) -> ConsumerOptions:
    """The options of ``argv``; UsageError with Kafka's message for what Kafka refuses."""
    seen = scan(argv)
    for name in ("topic", "messages"):
        if name not in seen:
            raise UsageError(f'Missing required argument "[{name}]"')
    value = {name: _value(seen, name) for name in OPTIONS}
    if value["reporting-interval"] <= 0:
        raise UsageError("Reporting interval must be greater than 0.")
    try:
        DateFormat(value["date-format"])
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return ConsumerOptions(
        bootstrap_server=value["bootstrap-server"] if "bootstrap-server" in seen else value["broker-list"],
        topic=value["topic"], messages=value["messages"],
        group=value["group"] or f"perf-consumer-{random.randrange(100000)}", fetch_size=value["fetch-size"],
        from_latest=value["from-latest"], socket_buffer_size=value["socket-buffer-size"],
        consumer_config=value["consumer.config"], print_metrics=value["print-metrics"],
        show_detailed_stats=value["show-detailed-stats"], timeout_ms=value["timeout"],
        reporting_interval_ms=value["reporting-interval"], date_format=value["date-format"],
        hide_header=value["hide-header"], deprecated_threads="threads" in seen or "num-fetch-threads" in seen)
