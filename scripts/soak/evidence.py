"""What an invalid soak keeps before its cluster is removed: the evidence a defect is found from.

A history says *that* a value sits at two offsets; only the brokers' logs say *why* (which producer id, epoch and
sequences each copy carries, which leader epoch wrote it). So when the checker finds an anomaly that is not
allowed, ``keep_evidence`` writes into ``<run>/evidence/``, while the containers still exist:

- ``broker<N>-<topic>-<partition>.txt``: ``zkafka log dump --print-data-log`` of every partition an anomaly's
  examples name (``"soak/2"``), from each broker and each of its log dirs (Kafka's kafka-dump-log output:
  batch headers with producerId / producerEpoch / baseSequence / partitionLeaderEpoch, then the records);
- ``broker<N>.log`` / ``zk<N>.log``: each container's whole log (``cluster.log`` keeps only the notable lines).

Best effort: a node that cannot be read gets a line saying why, and nothing here raises into the run.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable

from zkafka.testing.defaults import DATA_LOG_DIR, SMALL_LOG_DIR

KEY = re.compile(r"^([A-Za-z0-9._-]+)/(\d+)$")


def named_partitions(examples: Iterable[Any]) -> set[tuple[str, int]]:
    """Every ``topic/partition`` string found anywhere inside the anomaly examples (nested lists and dicts)."""
    found: set[tuple[str, int]] = set()

    def walk(value: Any) -> None:
        if isinstance(value, str):
            match = KEY.match(value)
            if match:
                found.add((match.group(1), int(match.group(2))))
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item)
    walk(list(examples))
    return found


def dump_script(topic: str, partition: int) -> str:
    """The shell run in a broker container: the partition's dump from whichever log dir holds it."""
    dirs = " ".join(f"{d}/{topic}-{partition}" for d in (DATA_LOG_DIR, SMALL_LOG_DIR))
    return (f"for d in {dirs}; do if [ -d \"$d\" ]; then echo \"== $d\"; "
            f"zkafka log dump --print-data-log --max-payload 40 \"$d\" 2>&1; fi; done")


def keep_evidence(cluster, out_dir: Path, result) -> Path | None:
    """Write the evidence of ``result``'s disallowed anomalies (see the module docstring); its directory, or
    None when the run is valid."""
    bad = result.failures()
    if not bad:
        return None
    evidence = Path(out_dir) / "evidence"
    evidence.mkdir(parents=True, exist_ok=True)
    partitions = named_partitions(example for anomaly in bad for example in anomaly.examples)
    for b in cluster.broker_ids:
        for topic, partition in sorted(partitions):
            (evidence / f"broker{b}-{topic}-{partition}.txt").write_text(
                _read(lambda: cluster.exec_root(f"broker{b}", dump_script(topic, partition), check=False)))
    for node in [*(f"broker{b}" for b in cluster.broker_ids), *(f"zk{z}" for z in cluster.zookeeper_ids)]:
        (evidence / f"{node}.log").write_text(
            _read(lambda: cluster.container(node).logs().decode(errors="replace")))
    return evidence


def _read(read) -> str:
    try:
        return read()
    except Exception as exc:  # noqa: BLE001 - a node that cannot be read is reported, not raised
        return f"(not readable: {type(exc).__name__}: {exc})\n"
