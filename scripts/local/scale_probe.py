"""A quick probe of topic creation and controller failover at a few thousand partitions (issue 25,
zk-pipeline part): ``python -m scripts.local.scale_probe --topics 20 --partitions 100``.

Starts a fresh 3-broker cluster on free ports, creates ``topics x partitions`` at RF 3 in one
CreateTopics request, times until every broker's ``/healthz`` metadata has every partition led by a live
broker; then kill -9 of the controller, timing the new controller's appearance and until every survivor's
metadata has every partition led by a live broker. Prints one JSON line.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from scripts.local.cluster import Cluster, ClusterSpec


def all_led(cluster: Cluster, brokers: list[int], expected: set[str], dead: set[int]) -> bool:
    for broker in brokers:
        health = cluster.health(broker, timeout=10.0)
        if not health:
            return False
        partitions = health["metadata"]["partitions"]
        live = set(health["metadata"]["live_brokers"]) - dead
        if not expected <= partitions.keys():
            return False
        if any(partitions[tp]["leader"] not in live for tp in expected):
            return False
    return True


def wait(predicate, timeout: float, what: str) -> float:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.5)
    return time.monotonic()


def create(cluster: Cluster, topics: int, partitions: int, timeout_s: float) -> dict:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "socket.timeout.ms": int(timeout_s * 1000)})
    names = [f"probe-{i:03d}" for i in range(topics)]
    started = time.monotonic()
    futures = admin.create_topics([NewTopic(n, partitions, 3) for n in names],
                                  operation_timeout=timeout_s, request_timeout=timeout_s)
    errors = {}
    for name, future in futures.items():
        try:
            future.result()
        except Exception as exc:  # noqa: BLE001 - reported
            errors[name] = str(exc)
    answered = time.monotonic()
    expected = {f"{n}-{p}" for n in names for p in range(partitions)}
    led = wait(lambda: all_led(cluster, cluster.broker_ids, expected, set()), 600, "creation")
    total = topics * partitions
    return {"create_answered_s": round(answered - started, 3), "create_all_led_s": round(led - started, 3),
            "create_partitions_per_s": round(total / (led - started), 1), "create_errors": len(errors),
            "first_error": next(iter(errors.values()), None), "expected": expected}


def spy(cluster: Cluster, directory: Path, phase: str, seconds: float) -> list[subprocess.Popen]:
    """py-spy on every running broker for ``seconds`` (raw stacks in ``directory``), if asked."""
    pids = {b: cluster.broker_pid(b) for b in cluster.broker_ids} if seconds else {}
    return [subprocess.Popen(["py-spy", "record", "-r", "50", "-d", str(int(seconds)), "-f", "raw", "-o",
                              str(directory / f"py-spy-{phase}-{b}.txt"), "--pid", str(pid)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for b, pid in pids.items() if pid]


def failover(cluster: Cluster, expected: set[str], start_spies) -> dict:
    controller, epoch = cluster.controller()
    pid = cluster.broker_pid(controller)
    os.kill(pid, signal.SIGKILL)
    spies = start_spies()
    killed = time.monotonic()
    survivors = [b for b in cluster.broker_ids if b != controller]

    def new_controller() -> bool:
        found = cluster.controller()
        return found is not None and found[0] != controller and found[1] > epoch
    elected = wait(new_controller, 120, "new controller")
    led = wait(lambda: all_led(cluster, survivors, expected, {controller}), 600, "failover")
    for process in spies:
        process.wait()
    return {"failover_new_controller_s": round(elected - killed, 3), "failover_after_election_s": round(led - elected, 3),
            "failover_ms_per_partition": round((led - elected) * 1000 / len(expected), 3)}


def controller_times(directory: Path) -> dict:
    """The controller's own durations, from its log lines: topic-change events (summed) and failovers."""
    created, failovers = 0.0, []
    for path in sorted(directory.glob("broker-*/broker.log")):
        for line in path.read_text(errors="replace").splitlines():
            if (m := re.search(r"new partitions.* in ([0-9.]+) s \(read in", line)):
                created += float(m.group(1))
            if (m := re.search(r"failover with (\d+) partitions done in ([0-9.]+) s \(context loaded in ([0-9.]+) s", line)):
                if int(m.group(1)):
                    failovers.append({"partitions": int(m.group(1)), "done_s": float(m.group(2)),
                                      "loaded_s": float(m.group(3))})
    return {"controller_topic_change_s": round(created, 3), "controller_failovers": failovers}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--session-timeout-ms", type=int, default=4000)
    parser.add_argument("--timeout-s", type=float, default=60.0)
    parser.add_argument("--dir", default=None)
    parser.add_argument("--no-failover", action="store_true")
    parser.add_argument("--py-spy", type=float, default=0, metavar="SECONDS",
                        help="profile every broker for SECONDS from the CreateTopics request (py-spy, raw stacks in --dir)")
    args = parser.parse_args()
    directory = Path(args.dir or tempfile.mkdtemp(prefix="scale-probe-"))
    spec = ClusterSpec.on_free_ports(3, tick_time=500, session_timeout_ms=args.session_timeout_ms)
    cluster = Cluster(directory, spec)
    cluster.up(timeout=120)
    result: dict = {"topics": args.topics, "partitions_per_topic": args.partitions, "dir": str(directory)}
    try:
        spies = spy(cluster, directory, "create", args.py_spy)
        created = create(cluster, args.topics, args.partitions, args.timeout_s)
        for process in spies:
            process.wait()
        expected = created.pop("expected")
        result.update(created)
        print(json.dumps(result), flush=True)
        if not args.no_failover:
            result.update(failover(cluster, expected, lambda: spy(cluster, directory, "failover", args.py_spy)))
    finally:
        cluster.down()
    result.update(controller_times(directory))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
