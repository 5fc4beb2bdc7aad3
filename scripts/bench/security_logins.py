"""``zkafka bench security``: what opening one authenticated connection costs.

Each login is one new TCP connection from ``brokers.client.KafkaConnection`` (the brokers' own client:
asyncio, our SCRAM client), sequential from one client: connect (+ TLS handshake on SSL, + SaslHandshake
and SaslAuthenticate rounds on SASL), one ApiVersions v3, close. Measured: logins/s, per-login wall time
(p50, p99), and the broker's and the client's CPU per login (``/proc/<pid>/stat`` and
``time.process_time``, so the client's share includes SCRAM's PBKDF2, which the client computes).

Two parts of a SCRAM login are also timed on their own: the ZooKeeper read of ``/config/users/<user>``
that the broker does at every SCRAM authentication (``KafkaZkClient.get_entity_config``, as
``brokers.app`` calls it, from a separate ZooKeeper session), and the client's PBKDF2 of the password
(``iterations`` rounds of HMAC-SHA-512; the broker stores the derived keys and never runs it).
"""
from __future__ import annotations

import asyncio
import hashlib
import ssl
import time
from dataclasses import dataclass

from brokers.client.connection import KafkaConnection
from brokers.protocol import codec
from brokers.protocol.api_versions import ApiKey
from brokers.protocol.sasl import SaslClientConfig
from brokers.zk.client import KafkaZkClient
from brokers.zk.gateway import ZkGateway
from scripts.bench.procstat import cpu_seconds
from scripts.bench.stats import percentile

API_VERSIONS, API_VERSIONS_VERSION = ApiKey.API_VERSIONS, 3
TIMEOUT = 10.0


@dataclass(frozen=True)
class LoginTarget:
    name: str                     # the table's row: "PLAINTEXT", "SSL", "SASL PLAIN", "SASL SCRAM-SHA-512"
    port: int
    broker_pid: int
    ssl_context: ssl.SSLContext | None = None
    sasl: SaslClientConfig | None = None


async def _login(target: LoginTarget, body) -> None:
    connection = KafkaConnection("127.0.0.1", target.port, "bench-security", target.ssl_context, target.sasl)
    await connection.connect(TIMEOUT)
    try:
        response = await connection.request(API_VERSIONS, API_VERSIONS_VERSION, body, TIMEOUT)
        if response.error_code != 0:
            raise ConnectionError(f"ApiVersions answered error {int(response.error_code)}")
    finally:
        connection.close()


async def _logins(target: LoginTarget, count: int) -> dict:
    body = codec.build(codec.request_class(API_VERSIONS, API_VERSIONS_VERSION),
                       client_software_name="zkafka-bench", client_software_version="1")
    await _login(target, body)  # warm-up: imports, the broker's first SCRAM lookup, TLS session setup
    times = []
    broker_cpu, client_cpu, start = cpu_seconds(target.broker_pid), time.process_time(), time.perf_counter()
    for _ in range(count):
        begin = time.perf_counter()
        await _login(target, body)
        times.append(time.perf_counter() - begin)
    elapsed = time.perf_counter() - start
    broker_cpu, client_cpu = cpu_seconds(target.broker_pid) - broker_cpu, time.process_time() - client_cpu
    times.sort()
    return {"connection": target.name, "logins": count, "per_s": count / elapsed,
            "p50_ms": percentile(times, 50) * 1e3, "p99_ms": percentile(times, 99) * 1e3,
            "broker_cpu_ms": broker_cpu / count * 1e3, "client_cpu_ms": client_cpu / count * 1e3}


def measure_logins(target: LoginTarget, count: int) -> dict:
    return asyncio.run(_logins(target, count))


async def _zk_reads(zookeeper_connect: str, user: str, count: int) -> tuple[list[float], float]:
    gateway = ZkGateway(zookeeper_connect, session_timeout_ms=10000)
    await gateway.start()
    try:
        kzc, times = KafkaZkClient(gateway), []
        await kzc.get_entity_config("users", user)
        cpu = time.process_time()
        for _ in range(count):
            begin = time.perf_counter()
            await kzc.get_entity_config("users", user)
            times.append(time.perf_counter() - begin)
        return sorted(times), time.process_time() - cpu
    finally:
        await gateway.close()


def measure_credential_reads(zookeeper_connect: str, user: str, count: int) -> dict:
    """The broker's per-login ZooKeeper read, done from here the way the broker does it: p50 and p99 in ms,
    and the CPU it costs this process per read (event loop + kazoo's thread), in ms."""
    times, cpu = asyncio.run(_zk_reads(zookeeper_connect, user, count))
    return {"reads": count, "p50_ms": percentile(times, 50) * 1e3, "p99_ms": percentile(times, 99) * 1e3,
            "cpu_ms": cpu / count * 1e3}


def pbkdf2_ms(iterations: int = 4096, rounds: int = 20) -> float:
    """The client's salted-password derivation for SCRAM-SHA-512, best of ``rounds``, in ms."""
    best = float("inf")
    for _ in range(rounds):
        begin = time.perf_counter()
        hashlib.pbkdf2_hmac("sha512", b"alice-secret", b"0123456789abcdef", iterations)
        best = min(best, time.perf_counter() - begin)
    return best * 1e3
