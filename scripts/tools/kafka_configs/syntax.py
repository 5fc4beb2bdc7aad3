"""Kafka ConfigCommand's syntax for ``--add-config`` and ``--delete-config``, and its user error, shared by
``kafka-configs``' modes (``command``: ``--zookeeper``; ``admin`` and ``users_admin``: ``--bootstrap-server``).

``--add-config`` is comma-separated ``key=value`` pairs, where a value in square brackets may hold commas
(``k=[a,b]`` sets ``a,b``); ``--delete-config`` is comma-separated config names.
"""
from __future__ import annotations

import re

_OUTSIDE_BRACKETS = r"(?=[^\]]*(?:\[|$))"  # Kafka's: a separator not inside [...]


class ConfigCommandError(Exception):
    """A user error Kafka's ConfigCommand reports and exits 1 on."""


def parse_add_config(text: str) -> dict[str, str]:
    """``k1=v1,k2=[a,b]`` -> {"k1": "v1", "k2": "a,b"}; ValueError naming the bad pair otherwise."""
    configs: dict[str, str] = {}
    for pair in re.split("," + _OUTSIDE_BRACKETS, text):
        parts = re.split(r"\s*=\s*" + _OUTSIDE_BRACKETS, pair)
        if len(parts) != 2 or not parts[0].strip():
            raise ValueError(f'Invalid entity config {pair!r}: all configs to be added must be in the format "key=val".')
        key, value = parts[0].strip(), parts[1].strip()
        if value.startswith("[") != value.endswith("]"):
            raise ValueError(f"Invalid entity config {pair!r}: unbalanced square brackets")
        configs[key] = re.sub(r"[\[\]]", "", value).strip()
    return configs


def parse_delete_config(text: str) -> list[str]:
    keys = [key.strip() for key in text.split(",")]
    if not all(keys):
        raise ValueError(f"Invalid --delete-config {text!r}: expected comma-separated config names")
    return keys
