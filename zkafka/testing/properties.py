"""Broker properties as the image's environment: the entrypoint turns ``KAFKA_*`` variables into
``server.properties`` the way Confluent's images do (strip ``KAFKA_``, lowercase, ``___`` -> ``-``,
``__`` -> ``_``, ``_`` -> ``.``); this is the inverse."""
from __future__ import annotations

from collections.abc import Mapping


def property_env(properties: Mapping[str, object]) -> dict[str, str]:
    """``{"log.retention.ms": 1000}`` -> ``{"KAFKA_LOG_RETENTION_MS": "1000"}``."""
    env = {}
    for key, value in properties.items():
        if not key or any(c.isspace() or c == "=" for c in key):
            raise ValueError(f"not a broker property name: {key!r}")
        name = key.replace("_", "\x01").replace("-", "___").replace(".", "_").replace("\x01", "__").upper()
        env[f"KAFKA_{name}"] = str(value).lower() if isinstance(value, bool) else str(value)
    return env


def parse_properties(lines: list[str]) -> dict[str, str]:
    """``["num.partitions=3", ...]`` (an ini option's lines) -> ``{"num.partitions": "3"}``; ``#`` comments and
    blank lines skipped; ValueError naming a line without ``=``."""
    properties = {}
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"not a key=value broker property: {line!r}")
        properties[key.strip()] = value.strip()
    return properties
