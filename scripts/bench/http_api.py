"""``zkafka bench http``: the REST proxy's throughput and the admin endpoints' latency, on real processes.

On a fresh 3-broker cluster (topic ``bench-http``, 3 partitions, RF 3): ``--threads`` keep-alive HTTP
clients POST batches of ``--batch`` records of ``--record-size`` bytes (JSON with UTF-8 text values,
then msgpack with binary values), each to the partition endpoint of the broker that leads it ("direct")
or of one that does not ("forwarded"); then one client reads every partition back with ``max_bytes``
1 MiB (JSON, then msgpack). Last, the latency of ``GET /metrics`` and ``GET /api/v1/overview`` with a
consumer group's offsets committed. Clients are stdlib ``http.client`` threads (scripts do not import
aiohttp); they share the machine with the brokers, as every bench here does.

``--tls`` serves every HTTP port over HTTPS (``http.ssl.enabled=true``, a P-256 broker certificate and
CA made with ``openssl``): the clients' keep-alive connections, the forwarding to leaders, the fan-out
and the control plane all run over TLS 1.3 (one handshake per client connection, then records).
"""
from __future__ import annotations

import base64
import http.client
import json
import ssl
import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import msgpack

from scripts.bench.common import make_certificates
from scripts.local.cluster import Cluster, running_cluster
from scripts.tools.kafka_configs.command import main as kafka_configs
from scripts.tools.kafka_topics.command import main as kafka_topics

TOPIC, PARTITIONS = "bench-http", 3


@dataclass(frozen=True)
class HttpBenchOptions:
    records: int = 300_000
    batch: int = 500
    record_size: int = 100
    threads: int = 4
    scrapes: int = 50
    secure: bool = False  # ACL authorizer on and HTTP basic auth required: what security costs per request
    tls: bool = False  # the HTTP ports serve HTTPS (http.ssl.enabled): what TLS costs per request


SECURE_PROPERTIES = {  # every request authenticated (SCRAM user "bench") and authorized (no ACLs: allowed)
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
    "http.authentication.method": "BASIC",
}
BENCH_USER, BENCH_PASSWORD = "bench", "bench-secret"


def tls_properties(ca: Path, keystore: Path) -> dict[str, str]:
    """HTTPS on every broker's HTTP port, with the broker keystore and the CA the brokers trust."""
    return {"http.ssl.enabled": "true", "ssl.keystore.type": "PEM", "ssl.keystore.location": str(keystore),
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(ca)}


class Client:
    """One keep-alive connection per thread."""

    _local = threading.local()
    auth: dict[str, str] = {}  # the Authorization header of a --secure run, on every request
    tls: ssl.SSLContext | None = None  # a --tls run: HTTPS, trusting the bench CA

    def __init__(self, port: int):
        self.port = port

    def request(self, method: str, path: str, body: bytes | None = None, headers: dict | None = None) -> tuple[int, bytes]:
        connections = self._local.__dict__.setdefault("connections", {})
        connection = connections.get(self.port)
        if connection is None:
            connection = connections[self.port] = (
                http.client.HTTPConnection("127.0.0.1", self.port, timeout=60) if self.tls is None
                else http.client.HTTPSConnection("127.0.0.1", self.port, timeout=60, context=self.tls))
        connection.request(method, path, body=body, headers={**self.auth, **(headers or {})})
        response = connection.getresponse()
        return response.status, response.read()


def _bodies(options: HttpBenchOptions, fmt: str) -> tuple[bytes, dict]:
    if fmt == "json":
        records = [{"value": "x" * options.record_size} for _ in range(options.batch)]
        return json.dumps({"records": records}).encode(), {"Content-Type": "application/json"}
    records = [{"value": bytes(options.record_size)} for _ in range(options.batch)]
    return msgpack.packb({"records": records}), {"Content-Type": "application/x-msgpack",
                                                   "Accept": "application/x-msgpack"}


def _leaders(cluster: Cluster, broker_id: int = 1) -> dict[int, int]:
    status, body = Client(cluster.http_port(broker_id)).request("GET", f"/api/v1/partitions?topic={TOPIC}")
    if status == 404:
        return {}
    assert status == 200, body
    return {row["partition"]: row["leader"] for row in json.loads(body)["partitions"]}


def produce(cluster: Cluster, options: HttpBenchOptions, fmt: str, forwarded: bool) -> dict:
    leaders = _leaders(cluster)
    body, headers = _bodies(options, fmt)
    requests = options.records // options.batch
    latencies: list[float] = []

    def one(i: int) -> None:
        partition = i % PARTITIONS
        broker = leaders[partition] if not forwarded else next(b for b in cluster.broker_ids if b != leaders[partition])
        started = time.perf_counter()
        status, answer = Client(cluster.http_port(broker)).request(
            "POST", f"/api/v1/topics/{TOPIC}/partitions/{partition}/records", body, headers)
        latencies.append(time.perf_counter() - started)
        if status != 200:
            raise RuntimeError(f"produce answered {status}: {answer[:200]!r}")
    started = time.perf_counter()
    with ThreadPoolExecutor(options.threads) as pool:
        list(pool.map(one, range(requests)))
    elapsed = time.perf_counter() - started
    return {"run": f"produce {fmt}, {'forwarded' if forwarded else 'direct'}",
            "records_per_s": requests * options.batch / elapsed, "mb_per_s": len(body) * requests / elapsed / 1e6,
            **_percentiles(latencies)}


def consume(cluster: Cluster, fmt: str) -> dict:
    leaders = _leaders(cluster)
    headers = {"Accept": "application/x-msgpack"} if fmt == "msgpack" else {}
    unpack = msgpack.unpackb if fmt == "msgpack" else json.loads
    count, started, latencies = 0, time.perf_counter(), []
    for partition, leader in leaders.items():
        client, offset = Client(cluster.http_port(leader)), 0
        while True:
            t0 = time.perf_counter()
            status, body = client.request(
                "GET", f"/api/v1/topics/{TOPIC}/partitions/{partition}/records?offset={offset}&max_bytes=1048576",
                headers=headers)
            latencies.append(time.perf_counter() - t0)
            answer = unpack(body)
            if status != 200 or not answer["records"]:
                break
            count += len(answer["records"])
            offset = answer["next_offset"]
    elapsed = time.perf_counter() - started
    return {"run": f"consume {fmt}", "records_per_s": count / elapsed, "records": count, **_percentiles(latencies)}


def scrape(cluster: Cluster, path: str, times: int) -> dict:
    client = Client(cluster.http_port(1))
    latencies = []
    for _ in range(times):
        started = time.perf_counter()
        status, _ = client.request("GET", path)
        latencies.append(time.perf_counter() - started)
        assert status == 200
    return {"run": f"GET {path}", **_percentiles(latencies)}


def _percentiles(latencies: list[float]) -> dict:
    ordered = sorted(latencies)
    return {"p50_ms": 1000 * statistics.median(ordered), "p99_ms": 1000 * ordered[int(0.99 * (len(ordered) - 1))]}


def _commit_group_offsets(cluster: Cluster) -> None:
    from confluent_kafka import Consumer, TopicPartition  # only the offsets matter: a simple consumer
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "bench-http-group"})
    consumer.commit(offsets=[TopicPartition(TOPIC, p, 10) for p in range(PARTITIONS)], asynchronous=False)
    consumer.close()


def run_http_bench(options: HttpBenchOptions, directory: Path | None = None) -> list[dict]:
    base = Path(directory) if directory else Path(".zkafka")
    base.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="bench-http-", dir=base))
    properties = dict(SECURE_PROPERTIES) if options.secure else {}
    if options.tls:
        ca, keystore = make_certificates(run_dir / "pki")
        properties.update(tls_properties(ca, keystore))
    with running_cluster(run_dir / "cluster", 3, timeout=120, tick_time=500,
                         session_timeout_ms=6000, properties=properties) as cluster:
        Client.tls = cluster.http_ssl_context
        if options.secure:
            kafka_configs(["--zookeeper", cluster.zookeeper_connect, "--alter", "--entity-type", "users",
                           "--entity-name", BENCH_USER, "--add-config", f"SCRAM-SHA-512=[password={BENCH_PASSWORD}]"])
            token = base64.b64encode(f"{BENCH_USER}:{BENCH_PASSWORD}".encode()).decode()
            Client.auth = {"Authorization": f"Basic {token}"}
        try:
            return _run(cluster, options)
        finally:
            Client.auth, Client.tls = {}, None


def _run(cluster: Cluster, options: HttpBenchOptions) -> list[dict]:
    kafka_topics(["--zookeeper", cluster.zookeeper_connect, "--create", "--topic", TOPIC,
                  "--partitions", str(PARTITIONS), "--replication-factor", "3"])
    deadline = time.monotonic() + 30
    while not all(len(leaders := _leaders(cluster, b)) == PARTITIONS and -1 not in leaders.values()
                  for b in cluster.broker_ids):  # every broker knows every leader: none answers 404
        if time.monotonic() > deadline:
            raise TimeoutError("the topic's partitions have no leaders")
        time.sleep(0.1)
    results = [produce(cluster, options, fmt, forwarded) for fmt in ("json", "msgpack")
               for forwarded in (False, True)]
    results += [consume(cluster, fmt) for fmt in ("json", "msgpack")]
    _commit_group_offsets(cluster)
    results += [scrape(cluster, path, options.scrapes) for path in ("/metrics", "/api/v1/overview")]
    return results


def format_report(results: list[dict]) -> str:
    lines = ["| run | records/s | MB/s (body) | p50 ms | p99 ms |", "|---|---|---|---|---|"]
    for r in results:
        rate = f"{r['records_per_s']:,.0f}" if "records_per_s" in r else "—"
        mb = f"{r['mb_per_s']:.1f}" if "mb_per_s" in r else "—"
        lines.append(f"| {r['run']} | {rate} | {mb} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} |")
    return "\n".join(lines)
