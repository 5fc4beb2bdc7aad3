"""Java's number formatting and Kafka's ``ToolsUtils.printMetrics`` table for the perf tools (pure).

``java_fixed(x, digits)`` is Java's ``String.format("%.<digits>f", x)``: Java rounds the shortest decimal
form of the double (``Double.toString``'s digits) half up, so ``0.125`` -> ``0.13`` and ``0.145`` -> ``0.15``
where C's printf gives ``0.12`` and ``0.14``; NaN and the infinities print ``NaN``, ``Infinity``,
``-Infinity``.

``--print-metrics``: Kafka prints its Java client's metrics, sorted by ``group:name:{tags}``::

    <blank line>
    Metric Name                                            Value
    producer-metrics:record-send-total:{client-id=producer-1}  : 1000000.000

librdkafka has no Java metrics; its statistics (``statistics.interval.ms``, one JSON document) are printed
in the same table: top-level fields as ``<kind>-metrics``, each broker's as ``<kind>-node-metrics`` (tag
``node-id``), each topic's and partition's as ``<kind>-topic-metrics`` / ``<kind>-partition-metrics``, the
consumer group's as ``<kind>-coordinator-metrics``; nested fields (``rtt``'s ``avg``, ``p99``, ...) are
joined with ``-`` (``rtt-avg``). Numbers print ``%.3f`` as Kafka's Double metrics do, text as it is.
"""
from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Context, Decimal

MB = 1024.0 * 1024.0
_WIDE = Context(prec=400)  # every digit of any double, so quantize never overflows
_SKIPPED = frozenset({"name", "client_id", "type", "nodename", "topic", "brokers", "topics", "partitions",
                      "cgrp", "eos", "nodeid", "partition", "leader", "broker", "source", "toppars"})


def java_fixed(value: float, digits: int) -> str:
    """Java's ``%.<digits>f`` of a double."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    exact = Decimal(repr(float(value)))
    return str(exact.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP, context=_WIDE))


def java_divide(numerator: float, denominator: float) -> float:
    """Java's double division: x/0 is +-Infinity (NaN for 0/0) where Python raises."""
    if denominator == 0:
        if numerator == 0 or math.isnan(numerator):
            return math.nan
        return math.copysign(math.inf, numerator) * math.copysign(1.0, denominator)
    return numerator / denominator


def _tags(**tags: object) -> str:
    return "{" + ", ".join(f"{key}={value}" for key, value in tags.items()) + "}"


def _flatten(prefix: str, data: dict, out: dict[str, object], group: str, tags: str) -> None:
    for key, value in data.items():
        if key in _SKIPPED:
            continue
        name = f"{prefix}-{key}" if prefix else key
        if isinstance(value, dict):
            _flatten(name, value, out, group, tags)
        elif isinstance(value, bool) or not isinstance(value, (int, float, str)):
            continue
        else:
            out[f"{group}:{name}:{tags}"] = value


def metrics_from_statistics(stats: dict, kind: str) -> dict[str, object]:
    """librdkafka's statistics document as ``{"group:name:{tags}": value}`` (``kind``: producer, consumer)."""
    client = stats.get("client_id", "rdkafka")
    out: dict[str, object] = {}
    _flatten("", stats, out, f"{kind}-metrics", _tags(**{"client-id": client}))
    for broker in stats.get("brokers", {}).values():
        node = broker.get("nodeid", -1)
        if node < 0:  # a bootstrap address, not yet a broker
            continue
        _flatten("", broker, out, f"{kind}-node-metrics", _tags(**{"client-id": client, "node-id": f"node-{node}"}))
    for topic, data in stats.get("topics", {}).items():
        _flatten("", data, out, f"{kind}-topic-metrics", _tags(**{"client-id": client, "topic": topic}))
        for partition, values in data.get("partitions", {}).items():
            if partition == "-1":  # librdkafka's internal unassigned-partition queue
                continue
            _flatten("", values, out, f"{kind}-partition-metrics",
                     _tags(**{"client-id": client, "topic": topic, "partition": partition}))
    if isinstance(stats.get("cgrp"), dict):
        _flatten("", stats["cgrp"], out, f"{kind}-coordinator-metrics", _tags(**{"client-id": client}))
    return out


def metrics_table(metrics: dict[str, object]) -> list[str]:
    """Kafka's ``ToolsUtils.printMetrics`` lines (none for no metrics): a blank line, the header, then one
    line per metric in name order."""
    if not metrics:
        return []
    width = max(len(name) for name in metrics)
    lines = ["", f"{'Metric Name':<{width}}   Value"]
    for name in sorted(metrics):
        value = metrics[name]
        text = java_fixed(float(value), 3) if isinstance(value, (int, float)) else str(value)
        lines.append(f"{name:<{width}} : {text}")
    return lines
