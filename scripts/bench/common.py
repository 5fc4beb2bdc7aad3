"""What every benchmark shares: the machine it ran on, where its clusters live, topic creation, test
certificates and how a report is printed."""
from __future__ import annotations

import json
import os
import platform
import subprocess
from collections.abc import Callable
from pathlib import Path

import confluent_kafka
from confluent_kafka.admin import AdminClient, NewTopic


def _proc_line(path: str, prefix: str) -> str | None:
    """The first line of a /proc file starting with ``prefix`` (None: no such line, or no /proc)."""
    try:
        return next((line for line in Path(path).read_text().splitlines() if line.startswith(prefix)), None)
    except OSError:
        return None


def machine() -> dict:
    """The machine and client library a benchmark ran with, for its report."""
    model = _proc_line("/proc/cpuinfo", "model name")
    mem_kib = _proc_line("/proc/meminfo", "MemTotal:")
    return {"cpu": model.split(":", 1)[1].strip() if model else platform.processor(), "cores": os.cpu_count(),
            "memory_gib": round(int(mem_kib.split()[1]) / 2**20, 1) if mem_kib else None,
            "kernel": platform.release(), "python": platform.python_version(),
            "confluent_kafka": confluent_kafka.__version__, "librdkafka": confluent_kafka.libversion()[0]}


def machine_line() -> str:
    """``machine()``'s CPU, cores, Python and kernel on one line."""
    m = machine()
    return f"{m['cpu'] or 'unknown CPU'}, {m['cores']} cores, Python {m['python']}, {platform.system()} {m['kernel']}"


def bench_base() -> Path:
    """Where benchmarks put their temporary clusters (``./.zkafka``)."""
    base = Path(".zkafka")
    base.mkdir(exist_ok=True)
    return base


def create_topic(bootstrap: str, topic: str, partitions: int = 1, replication_factor: int = 1,
                 config: dict[str, str] | None = None, assignment: list[list[int]] | None = None,
                 client_config: dict | None = None) -> None:
    """Create ``topic`` (an existing one is fine, for a re-run); ``assignment`` lists each partition's
    replicas, the first being the preferred leader, in place of the two counts; ``client_config``: the
    AdminClient's security settings."""
    client = AdminClient({"bootstrap.servers": bootstrap, **(client_config or {})})
    # confluent-kafka wants the partition count with an assignment (and no replication factor)
    new = (NewTopic(topic, len(assignment), replica_assignment=assignment, config=config or {}) if assignment else
           NewTopic(topic, partitions, replication_factor, config=config or {}))
    futures = client.create_topics([new], operation_timeout=30)
    try:
        futures[topic].result(60)
    except Exception as exc:  # noqa: BLE001 - an existing topic is fine for a re-run
        if "TOPIC_ALREADY_EXISTS" not in str(exc):
            raise


def make_certificates(directory: Path) -> tuple[Path, Path]:
    """A CA and the broker's PEM keystore (key + certificate for 127.0.0.1), made with ``openssl``."""
    directory.mkdir(parents=True, exist_ok=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    (directory / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for args in (["req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=bench-ca"],
                 ["req", "-new", *ec, "-keyout", "broker.key", "-out", "broker.csr", "-subj", "/CN=broker"],
                 ["x509", "-req", "-in", "broker.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                  "-days", "2", "-out", "broker.pem", "-extfile", "san.ext"]):
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)
    keystore = directory / "broker.keystore.pem"
    keystore.write_text((directory / "broker.key").read_text() + (directory / "broker.pem").read_text())
    return directory / "ca.pem", keystore


def print_report(result: dict, as_json: bool, format_report: Callable[[dict], list[str]]) -> int:
    """A bench's result: JSON, or its report's lines."""
    print(json.dumps(result, indent=2) if as_json else "\n".join(format_report(result)))
    return 0
