"""What a running ``kafka-mirror-maker`` measures, per flow and per remote partition, in MirrorMaker 2's
names (``MirrorMetrics``: ``kafka.connect.mirror:type=MirrorSourceConnector,target=<t>,topic=<remote>,
partition=<p>``), and the Prometheus text and JSON they are shown as.

Per partition (source side of a flow, keyed by the remote topic as MM2 keys them):

- ``record-count``, ``byte-count``: records and key+value+header bytes acknowledged by the target;
- ``record-age-ms``: now minus the record's timestamp when the mirror polled it from the source;
- ``replication-latency-ms``: the target's acknowledgement time minus the record's timestamp;
- ``lag``: the source partition's high watermark (librdkafka's cached one) minus the next offset to mirror.

Per flow: the latency histogram (``brokers.stats.LatencyHistogram``, Prometheus' shape) and the last
``RESERVOIR`` latencies for exact percentiles in ``/api/v1/mirror`` (the benchmark reads p50/p99 there);
checkpoints emitted and ``checkpoint-latency-ms`` (how long the newest checkpoint round took: reading the
syncs, listing the groups, translating); heartbeats emitted; restarts of the flow's task after a fatal client error.

Written from the flow's threads and read by the HTTP thread: every update is a handful of int additions
under one lock per flow; a scrape copies under the same lock.
"""
from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field

from brokers.stats import LatencyHistogram

LATENCY_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
RESERVOIR = 100_000
PREFIX = "kafka_connect_mirror"


@dataclass
class PartitionMetrics:
    record_count: int = 0
    byte_count: int = 0
    record_age_ms: int = 0
    replication_latency_ms: int = 0
    replication_latency_max_ms: int = 0
    lag: int = 0


@dataclass
class FlowMetrics:
    """One flow's numbers (see the module docstring)."""
    source: str
    target: str
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    partitions: dict[tuple[str, int], PartitionMetrics] = field(default_factory=dict)
    latency: LatencyHistogram = field(default_factory=lambda: LatencyHistogram(LATENCY_BUCKETS_S))
    recent_latencies_ms: deque = field(default_factory=lambda: deque(maxlen=RESERVOIR))
    checkpoints: int = 0
    checkpoint_latency_ms: int = 0
    heartbeats: int = 0
    offset_syncs: int = 0
    task_restarts: int = 0
    topics: int = 0

    def _partition(self, topic: str, partition: int) -> PartitionMetrics:
        key = (topic, partition)
        found = self.partitions.get(key)
        if found is None:
            found = self.partitions[key] = PartitionMetrics()
        return found

    def record_polled(self, topic: str, partition: int, age_ms: int) -> None:
        with self.lock:
            self._partition(topic, partition).record_age_ms = age_ms

    def records_acknowledged(self, topic: str, partition: int, count: int, size: int, latency_ms: int) -> None:
        """``count`` records of ``size`` bytes acknowledged; ``latency_ms`` for the newest of them."""
        with self.lock:
            found = self._partition(topic, partition)
            found.record_count += count
            found.byte_count += size
            found.replication_latency_ms = latency_ms
            found.replication_latency_max_ms = max(found.replication_latency_max_ms, latency_ms)
            self.latency.observe(latency_ms / 1000.0)
            self.recent_latencies_ms.append(latency_ms)

    def set_lag(self, topic: str, partition: int, lag: int) -> None:
        with self.lock:
            self._partition(topic, partition).lag = max(0, lag)

    def add(self, name: str, n: int = 1) -> None:
        with self.lock:
            setattr(self, name, getattr(self, name) + n)

    def snapshot(self) -> dict:
        """The flow as ``/api/v1/mirror`` shows it."""
        with self.lock:
            latencies = sorted(self.recent_latencies_ms)
            partitions = [{"topic": t, "partition": p, **vars(m)} for (t, p), m in sorted(self.partitions.items())]
            totals = {"record_count": sum(m.record_count for m in self.partitions.values()),
                      "byte_count": sum(m.byte_count for m in self.partitions.values()),
                      "lag": sum(m.lag for m in self.partitions.values())}
            return {"flow": f"{self.source}->{self.target}", "source": self.source, "target": self.target,
                    **totals, "replication_latency_ms": _quantiles(latencies),
                    "checkpoints": self.checkpoints, "checkpoint_latency_ms": self.checkpoint_latency_ms,
                    "heartbeats": self.heartbeats, "offset_syncs": self.offset_syncs,
                    "task_restarts": self.task_restarts, "topics": self.topics, "partitions": partitions}


def _quantiles(sorted_ms: list[int]) -> dict:
    if not sorted_ms:
        return {"count": 0, "p50": None, "p99": None, "max": None}
    pick = lambda q: sorted_ms[min(len(sorted_ms) - 1, int(q * len(sorted_ms)))]  # noqa: E731
    return {"count": len(sorted_ms), "p50": pick(0.50), "p99": pick(0.99), "max": sorted_ms[-1]}


def _labels(**labels) -> str:
    body = ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels.items())
    return "{" + body + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


PARTITION_SERIES = (("record_count", "counter", "records the target acknowledged"),
                    ("byte_count", "counter", "key, value and header bytes the target acknowledged"),
                    ("record_age_ms", "gauge", "now minus the newest polled record's timestamp"),
                    ("replication_latency_ms", "gauge", "target acknowledgement minus record timestamp, newest"),
                    ("replication_latency_max_ms", "gauge", "the largest replication latency seen"),
                    ("lag", "gauge", "source high watermark minus the next offset to mirror"))
FLOW_SERIES = (("checkpoints", "counter", "checkpoints emitted to <source>.checkpoints.internal"),
               ("checkpoint_latency_ms", "gauge", "age of the newest checkpoint round's translation"),
               ("heartbeats", "counter", "heartbeats emitted"),
               ("offset_syncs", "counter", "offset syncs emitted"),
               ("task_restarts", "counter", "the flow's task rebuilt its clients after a fatal error"),
               ("topics", "gauge", "topics mirrored"))


def prometheus_text(flows: list[FlowMetrics]) -> str:
    """Prometheus' text exposition (version 0.0.4) of every flow."""
    snapshots = [(flow, flow.snapshot()) for flow in flows]
    lines: list[str] = []
    for name, kind, text in PARTITION_SERIES:
        metric = f"{PREFIX}_source_{name}" + ("_total" if kind == "counter" else "")
        lines += [f"# HELP {metric} {text}", f"# TYPE {metric} {kind}"]
        for flow, snap in snapshots:
            for part in snap["partitions"]:
                labels = _labels(source=flow.source, target=flow.target, topic=part["topic"],
                                 partition=part["partition"])
                lines.append(f"{metric}{labels} {part[name]}")
    for name, kind, text in FLOW_SERIES:
        metric = f"{PREFIX}_{name}" + ("_total" if kind == "counter" else "")
        lines += [f"# HELP {metric} {text}", f"# TYPE {metric} {kind}"]
        lines += [f"{metric}{_labels(source=f.source, target=f.target)} {s[name]}" for f, s in snapshots]
    metric = f"{PREFIX}_replication_latency_seconds"
    lines += [f"# HELP {metric} target acknowledgement minus record timestamp", f"# TYPE {metric} histogram"]
    for flow, _ in snapshots:
        with flow.lock:
            buckets, total, count = flow.latency.cumulative(), flow.latency.sum, flow.latency.count
        for le, n in buckets:
            lines.append(f"{metric}_bucket{_labels(source=flow.source, target=flow.target, le=le)} {n}")
        lines.append(f"{metric}_sum{_labels(source=flow.source, target=flow.target)} {total}")
        lines.append(f"{metric}_count{_labels(source=flow.source, target=flow.target)} {count}")
    return "\n".join(lines) + "\n"
