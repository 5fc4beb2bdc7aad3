"""``zkafka bench testcontainers``: how long a test waits for zkafka in Docker — ``start()`` to the first
acknowledged produce of the test itself — for ``ZkafkaContainer`` and a ``ZkafkaCluster`` (3 ZooKeeper
nodes, 3 brokers by default), a fresh one per round, and how long ``stop()`` takes."""
from __future__ import annotations

import statistics
import time

from scripts.bench.common import machine, machine_line

GOALS_S = {"container": 3.0, "cluster": 15.0}


def first_ack(bootstrap_servers: str) -> None:
    """The test's own first produce (acks=all, a topic auto-created on the way), acknowledged."""
    from confluent_kafka import Producer

    errors: list = []
    producer = Producer({"bootstrap.servers": bootstrap_servers, "acks": "all"})
    producer.produce("bench-first-ack", b"x", on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(60)
    if errors != [None]:
        raise RuntimeError(f"the first produce was not acknowledged: {errors}")


def one_round(make) -> dict:
    target = make()
    started = time.monotonic()
    target.start()
    start_s = time.monotonic() - started
    first_ack(target.get_bootstrap_server())
    first_ack_s = time.monotonic() - started
    stopping = time.monotonic()
    target.stop()
    return {"start_s": start_s, "ready_probe_s": target.ready_seconds, "first_ack_s": first_ack_s,
            "stop_s": time.monotonic() - stopping}


def summary(rounds: list[dict]) -> dict:
    return {key: {"min": min(r[key] for r in rounds), "median": statistics.median(r[key] for r in rounds),
                  "max": max(r[key] for r in rounds)} for key in rounds[0]}


def run_testcontainers_bench(rounds: int, brokers: int, zookeepers: int) -> dict:
    from zkafka.testing.local_engine import use_local_engine

    use_local_engine()
    from zkafka.testing import ZkafkaCluster, ZkafkaContainer

    kinds = {"container": ZkafkaContainer, "cluster": lambda: ZkafkaCluster(brokers=brokers, zookeepers=zookeepers)}
    result: dict = {"machine": machine(), "machine_line": machine_line(), "rounds": rounds, "brokers": brokers,
                    "zookeepers": zookeepers, "kinds": {}}
    for kind, make in kinds.items():
        runs = [one_round(make) for _ in range(rounds)]
        result["kinds"][kind] = {"rounds": runs, "summary": summary(runs), "goal_s": GOALS_S[kind]}
    return result


def format_report(result: dict) -> list[str]:
    lines = [f"zkafka bench testcontainers: {result['rounds']} rounds each; {result['machine_line']}",
             "| target | start() s | start() -> first ack s | stop() s | goal (first ack) |",
             "|---|---|---|---|---|"]
    names = {"container": "ZkafkaContainer (1 broker + its ZooKeeper)",
             "cluster": f"ZkafkaCluster ({result['zookeepers']} ZooKeeper + {result['brokers']} brokers)"}
    for kind, data in result["kinds"].items():
        s = data["summary"]
        cell = lambda key: f"{s[key]['median']:.2f} ({s[key]['min']:.2f}–{s[key]['max']:.2f})"  # noqa: E731
        lines.append(f"| {names[kind]} | {cell('start_s')} | {cell('first_ack_s')} | {cell('stop_s')} | "
                     f"≤ {data['goal_s']:g} s |")
    lines.append("median (min–max); start() returns after its own acknowledged probe produce")
    return lines
