"""``zkafka bench replication``: what replication costs, on one 3-broker cluster on this machine.

One fresh cluster (temp dir under ``./.zkafka``, free ports, ZooKeeper tickTime 500,
``zookeeper.session.timeout.ms`` as given) and three measurements, in this order:

1. Throughput, as in Kreps' 2014 post: one producer process (``scripts.bench.clients``' producer) sends N
   records to a 6-partition topic: ``rf1`` (RF 1) with acks=1, then ``rf3`` (RF 3,
   ``min.insync.replicas=2``) with acks=1 and then acks=all. Leaders are spread evenly (explicit
   assignment). After each run the bench waits until the high watermarks cover every record (the
   followers have caught up) so that one run's replication does not eat into the next one.
   Reported: records/s, MB/s, broker CPU (all three brokers) and the ratios RF3-acks1 / RF1 and
   RF3-acksall / RF3-acks1 next to Kreps' 0.96 and 0.54.
2. Latency: RF 3 acks=all, one partition, at fixed rates (``scripts.bench.latency``): producer ack and
   end-to-end latency measured from each record's scheduled send time.
3. Failover: acks=all at 1,000 records/s to a one-partition RF 3 topic whose leader is not the
   controller; ``kill -9`` of that leader; time until a surviving broker's metadata names a new
   leader (the cluster's part) and until a record sent after the kill is acknowledged (what a
   client sees: the client finding the new leader, plus the acks=all write reaching a second
   in-sync replica through the other follower's fetcher).
   About the session timeout: the controller learns of the death when ZooKeeper expires the dead
   broker's session, a session timeout after its last heartbeat (which may predate the kill).

The cluster's directory is removed after a successful run and kept (broker logs) after a failure.
Progress goes to stderr; the report (tables, or JSON) to stdout.
"""
from __future__ import annotations

import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from scripts.bench.clients import BenchOptions, measure_produce
from scripts.bench.common import bench_base, create_topic, machine
from scripts.bench.latency import PacedProducer, run_latency
from scripts.bench.stats import first_ack_after, replication_ratios, schedule, spread_assignment
from scripts.local.cluster import Cluster, ClusterSpec

BROKERS = 3
MIN_INSYNC = {"min.insync.replicas": "2"}
THROUGHPUT_RUNS = (("RF1 acks=1", "rf1", "1"), ("RF3 acks=1", "rf3", "1"), ("RF3 acks=all", "rf3", "all"))
CATCH_UP_TIMEOUT_S = 60.0
FAILOVER_RATE = 1000
FAILOVER_TOPIC = "failover"
FAILOVER_KILL_AFTER_S = 2.0
FAILOVER_LIMIT_S = 120.0


@dataclass
class ReplicationBenchOptions:
    records: int = 2_000_000
    record_bytes: int = 100
    rates: list[int] = field(default_factory=lambda: [1000, 10000])
    duration_s: float = 10.0
    partitions: int = 6
    session_timeout_ms: int = 6000
    directory: Path | None = None
    max_in_flight: int = 5  # the paced producers' max.in.flight.requests.per.connection (Java's default)

    @property
    def paced_producer(self) -> dict:
        return {"max.in.flight.requests.per.connection": self.max_in_flight}


def _progress(message: str) -> None:
    print(f"[bench replication] {message}", file=sys.stderr, flush=True)


def _high_watermarks(consumer: Consumer, topic: str, partitions: int) -> int:
    return sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=5, cached=False)[1]
               for p in range(partitions))


def wait_replicated(bootstrap: str, topic: str, partitions: int, expected: int) -> float | None:
    """Seconds until the topic's high watermarks add up to ``expected`` (None: not within the timeout)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-replication-watermarks"})
    start = time.monotonic()
    try:
        while time.monotonic() - start < CATCH_UP_TIMEOUT_S:
            if _high_watermarks(consumer, topic, partitions) >= expected:
                return time.monotonic() - start
            time.sleep(0.05)
        return None
    finally:
        consumer.close()


def run_throughput(cluster: Cluster, options: ReplicationBenchOptions) -> list[dict]:
    bootstrap, brokers = cluster.bootstrap_servers, cluster.broker_ids
    create_topic(bootstrap, "rf1", assignment=spread_assignment(options.partitions, brokers, 1))
    create_topic(bootstrap, "rf3", config=MIN_INSYNC, assignment=spread_assignment(options.partitions, brokers, 3))
    pids = [cluster.broker_pid(b) for b in brokers]
    acked: dict[str, int] = {}
    results = []
    for label, topic, acks in THROUGHPUT_RUNS:
        _progress(f"throughput: {label}, {options.records:,} records to {topic}")
        bench = BenchOptions(options.records, options.record_bytes, acks, "none", options.partitions, 1, topic)
        result = measure_produce(bootstrap, bench, pids)
        acked[topic] = acked.get(topic, 0) + result["records"] - result["errors"]
        result.update(run=label, topic=topic, acks=acks,
                      catch_up_s=wait_replicated(bootstrap, topic, options.partitions, acked[topic]))
        results.append(result)
    return results


def run_latencies(cluster: Cluster, options: ReplicationBenchOptions) -> list[dict]:
    results = []
    for i, rate in enumerate(options.rates):
        topic = f"latency-{rate}"
        create_topic(cluster.bootstrap_servers, topic, config=MIN_INSYNC,
                     assignment=spread_assignment(1, cluster.broker_ids, 3, first=i))
        _progress(f"latency: {rate:,} records/s for {options.duration_s:g} s, RF3 acks=all")
        results.append(run_latency(cluster.bootstrap_servers, topic, rate, options.duration_s, options.record_bytes,
                                   **options.paced_producer))
    return results


class _FailoverWatch:
    """Kills the leader once the producer has run for a while; then notes when a surviving broker's
    metadata names another leader and when the first record sent after the kill is acknowledged,
    and says stop half a second after that."""

    def __init__(self, cluster: Cluster, leader: int, producer: PacedProducer, kill_at_ns: int,
                 topic: str = FAILOVER_TOPIC):
        self.cluster, self.leader, self.producer, self.kill_at_ns = cluster, leader, producer, kill_at_ns
        self.topic = topic
        survivors = ",".join(f"127.0.0.1:{cluster.kafka_port(b)}" for b in cluster.broker_ids if b != leader)
        self.admin = AdminClient({"bootstrap.servers": survivors})
        self.killed_ns: int | None = None
        self.elected: tuple[int, int] | None = None  # (ns, new leader) once the metadata shows one
        self.recovered_ns: int | None = None
        self._seen = self._next_poll = 0

    def __call__(self, now: int) -> bool:
        if self.killed_ns is None:
            if now >= self.kill_at_ns:
                self.killed_ns = time.monotonic_ns()
                self.cluster.signal_broker(self.leader, signal.SIGKILL)
            return True
        if self.elected is None and now >= self._next_poll:
            self._poll_leader()
        if self.recovered_ns is None:
            reports = self.producer.reports
            self.recovered_ns = first_ack_after(reports[self._seen:], self.killed_ns)
            self._seen = len(reports)
        return self.recovered_ns is None or self.elected is None or now - self.recovered_ns < 500_000_000

    def _poll_leader(self) -> None:
        try:
            leader = self.admin.list_topics(self.topic, timeout=1).topics[self.topic].partitions[0].leader
        except Exception:  # noqa: BLE001 - a survivor that does not answer yet: ask again
            leader = -1
        if leader not in (-1, self.leader):
            self.elected = (time.monotonic_ns(), leader)
        self._next_poll = time.monotonic_ns() + 20_000_000


def run_failover(cluster: Cluster, options: ReplicationBenchOptions, topic: str = FAILOVER_TOPIC,
                 with_acked: bool = False) -> dict:
    """Kill -9 the leader of a fresh one-partition RF 3 topic under acks=all load (see the module doc);
    ``with_acked`` adds the stamps of every acknowledged record (to check for loss afterwards)."""
    controller = cluster.controller()[0]
    leader = next(b for b in cluster.broker_ids if b != controller)
    replicas = [leader] + [b for b in cluster.broker_ids if b != leader]
    create_topic(cluster.bootstrap_servers, topic, config=MIN_INSYNC, assignment=[replicas])
    producer = PacedProducer(cluster.bootstrap_servers, topic, options.record_bytes, **options.paced_producer)
    producer.warm_up()
    start = time.monotonic_ns()
    watch = _FailoverWatch(cluster, leader, producer, start + int(FAILOVER_KILL_AFTER_S * 1e9), topic)
    _progress(f"failover: acks=all at {FAILOVER_RATE} records/s, kill -9 of broker {leader} "
              f"after {FAILOVER_KILL_AFTER_S:g} s (session timeout {options.session_timeout_ms} ms)")
    producer.run(schedule(start, FAILOVER_RATE, FAILOVER_LIMIT_S), watch)
    unacked = producer.flush(30)

    def since_kill(ns: int | None) -> float | None:
        return (ns - watch.killed_ns) / 1e9 if ns is not None and watch.killed_ns is not None else None

    result = {"session_timeout_ms": options.session_timeout_ms, "killed_leader": leader, "controller": controller,
              "seconds": since_kill(watch.recovered_ns),
              "leader_elected_s": since_kill(watch.elected[0] if watch.elected else None),
              "new_leader": watch.elected[1] if watch.elected else None,
              "failed": producer.failed(), "unacked": unacked}
    if with_acked:
        result["acked"] = [stamp for stamp, _, ok in producer.reports if ok]
    return result


def run_replication_bench(options: ReplicationBenchOptions) -> dict:
    spec = ClusterSpec.on_free_ports(BROKERS, tick_time=500, session_timeout_ms=options.session_timeout_ms)
    base = options.directory or bench_base()
    base.mkdir(parents=True, exist_ok=True)
    cluster = Cluster(Path(tempfile.mkdtemp(prefix="bench-replication-", dir=base)), spec)
    _progress(f"starting {BROKERS} brokers in {cluster.dir}")
    try:
        cluster.up(120)
        throughput = run_throughput(cluster, options)
        latency = run_latencies(cluster, options)
        failover = run_failover(cluster, options)
    except BaseException:
        _progress(f"failed; broker logs are in {cluster.dir}/broker-<id>/broker.log")
        raise
    finally:
        cluster.down()
    shutil.rmtree(cluster.dir, ignore_errors=True)  # ~1.5 GB of logs at the default record count
    by_run = {r["run"]: r["records_per_s"] for r in throughput}
    ratios = replication_ratios(by_run.get("RF1 acks=1"), by_run.get("RF3 acks=1"), by_run.get("RF3 acks=all"))
    return {"machine": machine(), "brokers": BROKERS, "records": options.records, "record_bytes": options.record_bytes,
            "partitions": options.partitions, "session_timeout_ms": options.session_timeout_ms,
            "max_in_flight": options.max_in_flight,
            "throughput": throughput, "ratios": [r.as_dict() for r in ratios], "latency": latency,
            "failover": failover}


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _latency_cells(summary: dict) -> str:
    return " | ".join(_ms(summary[k]) for k in ("p50_ms", "p99_ms", "p99.9_ms", "max_ms"))


def format_report(result: dict) -> list[str]:
    m = result["machine"]
    lines = [f"{result['brokers']} brokers + ZooKeeper + clients on one machine: {m['cpu']}, {m['cores']} cores, "
             f"{m['memory_gib']} GiB, Linux {m['kernel']}, Python {m['python']}, confluent-kafka "
             f"{m['confluent_kafka']} (librdkafka {m['librdkafka']})", "",
             f"Throughput: {result['records']:,} records of {result['record_bytes']} B, 1 producer process, "
             f"{result['partitions']} partitions, leaders spread over the brokers",
             "| run | records/s | MB/s | broker CPU-s (all brokers) | errors | high watermark caught up after (s) |",
             "|---|---|---|---|---|---|"]
    for r in result["throughput"]:
        caught = "not within 60 s" if r["catch_up_s"] is None else f"{r['catch_up_s']:.2f}"
        lines.append(f"| {r['run']} | {r['records_per_s']:,.0f} | {r['mb_per_s']:.1f} | {r['broker_cpu_s']:.2f} | "
                     f"{r['errors']} | {caught} |")
    by_run = {r["run"]: r["records_per_s"] for r in result["throughput"]}
    lines += ["", "| ratio | measured (Kreps 2014) |", "|---|---|"]
    for ratio in replication_ratios(by_run.get("RF1 acks=1"), by_run.get("RF3 acks=1"), by_run.get("RF3 acks=all")):
        lines.append(f"| {ratio.name} | {ratio.describe()} |")
    lines += ["", "Latency (ms) from the scheduled send time: RF3 acks=all, min.insync.replicas=2, 1 partition, "
              f"linger.ms=0, max.in.flight.requests.per.connection={result['max_in_flight']}, 1 producer, 1 consumer",
              "| rate (records/s) | seconds | ack p50 | ack p99 | ack p99.9 | ack max | end-to-end p50 | p99 | p99.9 | "
              "max | missing | producer max late (ms) |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["latency"]:
        lines.append(f"| {r['rate']:,} | {r['duration_s']:g} | {_latency_cells(r['ack'])} | "
                     f"{_latency_cells(r['end_to_end'])} | {r['end_to_end']['missing']} | {r['max_send_late_ms']:.2f} |")
    lines += ["", *_failover_lines(result["failover"])]
    return lines


def _failover_lines(f: dict) -> list[str]:
    seconds = "no successful produce within 120 s" if f["seconds"] is None else f"{f['seconds']:.2f}"
    elected = "-" if f["leader_elected_s"] is None else f"{f['leader_elected_s']:.2f}"
    return [f"Failover: acks=all at {FAILOVER_RATE} records/s, kill -9 of the partition leader "
            f"(broker {f['killed_leader']}; the controller is broker {f['controller']})",
            "| zookeeper.session.timeout.ms | kill -9 -> a broker's metadata names a new leader (s) | "
            "kill -9 -> first acked produce (s) | new leader | failed deliveries |",
            "|---|---|---|---|---|",
            f"| {f['session_timeout_ms']} | {elected} | {seconds} | {f['new_leader'] or '-'} | {f['failed']} |"]
