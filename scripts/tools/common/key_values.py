"""``KEY=VALUE`` flags (``--property``, ``--producer-property``, ``--consumer-property``) of the console tools."""
from __future__ import annotations

import argparse


def key_values(parser: argparse.ArgumentParser, flag: str, items: list[str]) -> dict[str, str]:
    """``items`` as a dict; an item without ``=`` or with an empty key exits through ``parser`` naming ``flag``."""
    bad = [item for item in items if "=" not in item or item.startswith("=")]
    if bad:
        parser.error(f"{flag} takes KEY=VALUE, got {bad[0]!r}")
    return dict(item.split("=", 1) for item in items)
