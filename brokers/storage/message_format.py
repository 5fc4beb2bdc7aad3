"""``message.format.version``: Kafka's ApiVersion names and the record magic each one means.

Kafka 2.8 accepts a full name (``0.10.2-IV0``, ``2.8-IV1``; the 0.8/0.9 names have no ``-IV``
suffix) or a release (``0.10.2``, ``2.8``, ``2.8.2``, ``0.10.2.1``): a release names the latest
internal version of it. Releases before 1.0 are read on three dot-separated segments, later ones on
two (Kafka's ``ApiVersion.apply``). The record magic is 0 up to 0.9.0, 1 for 0.10.x, 2 from 0.11.0.

zkafka stores v2 batches whatever the topic's format version (produced magic 0/1 sets are
up-converted), so a Fetch below v4 is always down-converted; the value is validated and reported.
"""
from __future__ import annotations

DEFAULT = "2.8-IV1"

_LEGACY = {"0.8.0": 0, "0.8.1": 0, "0.8.2": 0, "0.9.0": 0}  # full name = release
_RELEASES: dict[str, tuple[int, int]] = {  # release -> (magic, internal versions IV0..IVn)
    "0.10.0": (1, 2), "0.10.1": (1, 3), "0.10.2": (1, 1), "0.11.0": (2, 3), "1.0": (2, 1), "1.1": (2, 1),
    "2.0": (2, 2), "2.1": (2, 3), "2.2": (2, 2), "2.3": (2, 2), "2.4": (2, 2), "2.5": (2, 1), "2.6": (2, 1),
    "2.7": (2, 3), "2.8": (2, 2),
}
VERSIONS: dict[str, int] = dict(_LEGACY)
for _release, (_magic, _count) in _RELEASES.items():
    VERSIONS[_release] = _magic
    VERSIONS.update({f"{_release}-IV{i}": _magic for i in range(_count)})


def record_magic(version: str) -> int:
    """The record magic of a ``message.format.version`` value; ValueError if Kafka would reject it."""
    segments = version.strip().split(".")
    key = ".".join(segments[: 3 if version.strip().startswith("0.") else 2])
    magic = VERSIONS.get(key)
    if magic is None:
        raise ValueError(f"Version `{version}` is not a valid version")
    return magic
