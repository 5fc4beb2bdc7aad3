"""``zkafka bench scale``'s pure parts: the flags, what the brokers' metadata says (every partition led,
every ISR full, all brokers agreeing), slopes, percentiles and the report (markdown tables and a log-log
SVG plot). The run itself (clusters, clients, signals) is ``scripts.bench.scale_run``.

Kafka's published slopes (``/work/shared/reference/scale.md``) sit next to ours in the table: controller
failover ~0.63 ms/partition with synchronous ZooKeeper calls and ~0.17 with pipelined async ones
(KAFKA-5642), ~2 ms/partition for a naive controller reading ZooKeeper (Jun Rao 2015); controlled
shutdown 6.5 min -> 30 s -> 3 s at 10k partitions per broker (Kafka 1.0 -> 1.1); leader election after
an unclean failure ~5 ms per partition led (Jun Rao 2015).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from scripts.bench.stats import percentile

STEPS = ("create", "latency", "l1", "idle", "controlled_shutdown", "restart", "uncontrolled", "failover")
TOPIC_PREFIX = "scale-"
L1_TOPIC = "l1-beside-idle"  # not a bench partition: the steps' "every partition led" counts leave it out
L1_SCENARIO, L1_SECONDS = "L1-10k-rf3-l0", 10.0  # the suite's scenario, run beside the idle partitions

LABELS = {
    "create": "topic creation until every partition has a leader in every broker's metadata",
    "failover": "controller failover (kill -9) until every survivor's metadata has every partition led, "
                "minus zookeeper.session.timeout.ms",
    "failover_new_controller": "  of which: until a new controller (total, session timeout included)",
    "controlled_shutdown": "controlled shutdown (SIGTERM) of a broker until it exits and every partition is led "
                           "elsewhere",
    "restart": "broker restart: process start until registered and back in every ISR",
    "restart_registered": "  of which: until registered",
    "uncontrolled": "kill -9 of a broker until every partition it led has a new leader, minus the session timeout",
}

KAFKA_SLOPES = {  # ms per partition, and where the figure comes from
    "create": "no published ZK-mode figure",
    "failover": "0.63 (sync ZK, Kafka 1.0) / 0.17 (async ZK, Kafka 1.1), KAFKA-5642; ~2 naive (Jun Rao 2015)",
    "failover_new_controller": "",
    "controlled_shutdown": "39 (Kafka 1.0.0: 6.5 min) / 3 (no per-partition log: 30 s) / 0.3 (1.1: 3 s), "
                           "at 10k partitions per broker",
    "restart": "~24 per partition on the broker (LinkedIn rolling bounce, 2 min at 5k, pre-1.1, KAFKA-3436)",
    "restart_registered": "",
    "uncontrolled": "~5 per partition led (Jun Rao 2015)",
}


# -- flags -------------------------------------------------------------------------------------------------
def parse_sizes(text: str) -> list[int]:
    """``--partitions 1000,5000,10000``: positive partition counts, in the order given, no duplicates."""
    sizes = []
    for item in (s.strip() for s in text.split(",")):
        try:
            size = int(item.replace("_", ""))
        except ValueError:
            raise ValueError(f"not a partition count: {item!r}") from None
        if size < 1:
            raise ValueError(f"partition counts must be positive, got {size}")
        if size in sizes:
            raise ValueError(f"{size} given twice")
        sizes.append(size)
    return sizes


def parse_steps(text: str) -> tuple[str, ...]:
    """``--steps create,failover``: a subset of ``STEPS``, returned in the run's order (creation always runs:
    every other step needs the topics; a restart is of the broker the controlled shutdown stopped)."""
    wanted = {s.strip() for s in text.split(",") if s.strip()}
    unknown = sorted(wanted - set(STEPS))
    if unknown:
        raise ValueError(f"unknown step(s) {', '.join(unknown)}; choose from {', '.join(STEPS)}")
    if not wanted:
        raise ValueError("no step given")
    wanted |= {"create"} | ({"controlled_shutdown"} if "restart" in wanted else set())
    return tuple(s for s in STEPS if s in wanted)


def topic_layout(partitions: int, per_topic: int) -> list[tuple[str, int]]:
    """(name, partition count) of the topics holding ``partitions`` partitions, ``per_topic`` each (the last
    one takes the rest)."""
    if partitions < 1 or per_topic < 1:
        raise ValueError("partitions and per_topic must be positive")
    count = math.ceil(partitions / per_topic)
    return [(f"{TOPIC_PREFIX}{i:05d}", min(per_topic, partitions - i * per_topic)) for i in range(count)]


# -- what the brokers' metadata says (``/healthz`` ``metadata.partitions``: "topic-p" -> state) -------------
def bench_partitions(partitions: Mapping[str, dict]) -> dict[str, dict]:
    return {tp: s for tp, s in partitions.items() if tp.startswith(TOPIC_PREFIX)}


def all_led(view: Mapping[str, dict] | None, expected: int, live: Iterable[int]) -> bool:
    """The view knows all ``expected`` bench partitions and each is led by a live broker."""
    if view is None:
        return False
    mine, live = bench_partitions(view), set(live)
    return len(mine) == expected and all(s["leader"] in live for s in mine.values())


def led_by(view: Mapping[str, dict], broker: int) -> set[str]:
    return {tp for tp, s in bench_partitions(view).items() if s["leader"] == broker}


def leaders_moved(view: Mapping[str, dict] | None, partitions: Iterable[str], live: Iterable[int]) -> bool:
    """Each of ``partitions`` is led by one of ``live`` in the view."""
    if view is None:
        return False
    live = set(live)
    return all(tp in view and view[tp]["leader"] in live for tp in partitions)


def in_every_isr(view: Mapping[str, dict] | None, broker: int, expected: int) -> bool:
    """``broker`` is in the ISR of every bench partition that it is a replica of (and the view has them all)."""
    if view is None:
        return False
    mine = bench_partitions(view)
    return len(mine) == expected and all(broker in s["isr"] for s in mine.values() if broker in s["replicas"])


def full_and_agreeing(views: Mapping[int, Mapping[str, dict] | None], expected: int) -> bool:
    """Every view has all ``expected`` bench partitions, each with a leader and its full replica set in the
    ISR, and every view says the same leader and ISR per partition."""
    if not views or any(v is None for v in views.values()):
        return False
    seen = [{tp: (s["leader"], sorted(s["isr"])) for tp, s in bench_partitions(v).items()} for v in views.values()]
    first = seen[0]
    if len(first) != expected or any(other != first for other in seen[1:]):
        return False
    reference = bench_partitions(next(iter(views.values())))
    return all(s["leader"] >= 0 and sorted(s["isr"]) == sorted(s["replicas"]) for s in reference.values())


def disagreement(views: Mapping[int, Mapping[str, dict] | None], expected: int) -> str:
    """Why ``full_and_agreeing`` is false, in a line (a test's failure message)."""
    missing = [b for b, v in views.items() if v is None]
    if missing:
        return f"no metadata from broker(s) {missing}"
    parts = []
    for b, v in views.items():
        mine = bench_partitions(v)
        short = [tp for tp, s in mine.items() if s["leader"] < 0 or sorted(s["isr"]) != sorted(s["replicas"])]
        parts.append(f"broker {b}: {len(mine)}/{expected} partitions, {len(short)} without leader or full ISR"
                     f"{' e.g. ' + short[0] + ' ' + str(mine[short[0]]) if short else ''}")
    return "; ".join(parts)


# -- numbers -----------------------------------------------------------------------------------------------
def slope_ms(seconds: float, partitions: int) -> float:
    """Milliseconds per partition."""
    if partitions < 1:
        raise ValueError("partitions must be positive")
    return seconds * 1000 / partitions


def p50_p99_ms(seconds: Sequence[float]) -> dict:
    values = sorted(seconds)
    return {"count": len(values), "p50_ms": percentile(values, 50) * 1000, "p99_ms": percentile(values, 99) * 1000}


def status_kib(status_text: str, field: str) -> int:
    """A ``/proc/<pid>/status`` field in KiB (``VmRSS``), 0 when absent."""
    for line in status_text.splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def per_replica(after: float, before: float, replicas: int) -> float:
    return (after - before) / replicas if replicas else 0.0
