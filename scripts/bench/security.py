"""``zkafka bench security``: what security costs.

1. In process, no network (``scripts.bench.security_acls``): authorizer decisions per second with 0 to
   100,000 ACLs, for a hit, a miss and a super user.
2. End to end, one one-broker cluster per mode, all of them up for the whole run so that repetitions can
   alternate between them, in an order rotated by one mode per repetition (a disturbance from outside
   then hits every mode alike):

   * ``plaintext``: PLAINTEXT, no authorizer (what every other benchmark measures);
   * ``plaintext-acl``: PLAINTEXT with ``AclAuthorizer``, ``allow.everyone.if.no.acl.found=false``,
     ``--acls`` ACLs of the mix loaded, and ``User:ANONYMOUS`` granted All on the prefix ``bench`` and Read
     on the group ``bench-consume``;
   * ``sasl-scram``: SASL_PLAINTEXT, SCRAM-SHA-512 user ``alice`` with the same grants and ACLs;
   * ``ssl``: SSL (TLS 1.3, a P-256 certificate made with ``openssl``; no client certificate), no
     authorizer;
   * ``plaintext-pread``: PLAINTEXT without sendfile (``ZKAFKA_SENDFILE_MIN_BYTES=0`` in the broker's
     environment), which is how a TLS connection sends record bytes: with ``ssl`` it splits TLS's cost
     into "no zero copy" and "encryption".

   After one unmeasured warm-up round per broker, per repetition and mode, ``--records`` records of
   ``--record-size`` B are produced into a fresh topic by ``zkafka bench produce``'s producer (one
   process, acks=1, linger.ms=10, no compression) and read back by ``zkafka bench consume``'s consumer;
   broker CPU from /proc.
3. Connection set-up (``scripts.bench.security_logins``): ``--logins`` sequential logins each over
   PLAINTEXT, SSL, SASL PLAIN and SASL SCRAM-SHA-512, the ZooKeeper credential read alone, and the
   client's PBKDF2.

ACLs and SCRAM users are written to ZooKeeper before the broker starts (the ACL znodes directly, as
``kafka-acls --authorizer-properties`` would; users with ``kafka-configs --zookeeper``), so the broker's
start-up load has them all before it serves. The clusters live under ``--dir`` (default ``./.zkafka``)
and are deleted after a successful run, kept with their logs after a failure.
"""
from __future__ import annotations

import asyncio
import contextlib
import io
import os
import shutil
import ssl
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from brokers.security import acls as acl
from brokers.security.authorizer import pattern_znode
from brokers.security.acls import AclEntry, Acls, ResourcePattern
from brokers.protocol.sasl import SaslClientConfig
from brokers.zk.gateway import ZkGateway
from scripts.tools.kafka_configs import command as kafka_configs
from scripts.bench.clients import BenchOptions, measure_produce, run_consume
from scripts.bench.common import bench_base, create_topic, machine, make_certificates
from scripts.bench.security_acls import acl_mix, format_decisions, run_decisions
from scripts.bench.security_options import MODES, SecurityBenchOptions
from scripts.bench.security_logins import LoginTarget, measure_credential_reads, measure_logins, pbkdf2_ms
from scripts.local.cluster import Cluster, ClusterSpec

AUTHORIZER = {"authorizer.class.name": acl.AUTHORIZER_CLASSES[0], "allow.everyone.if.no.acl.found": "false"}
ADMIN_JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";'
PLAIN_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'
SASL = {"listeners": "SASL_PLAINTEXT://127.0.0.1:{kafka_port}", "inter.broker.listener.name": "SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512", "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": ADMIN_JAAS,
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS, "super.users": "User:admin"}
ALICE = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice",
         "sasl.password": "alice-secret"}
GROUP = "bench-consume"  # scripts.bench.clients' consumer group
ENVIRONMENT = {"plaintext-pread": {"ZKAFKA_SENDFILE_MIN_BYTES": "0"}}  # the broker's, by mode


@dataclass
class Mode:
    name: str
    cluster: Cluster
    client_config: dict

    @property
    def broker_pid(self) -> int:
        return self.cluster.broker_pid(1)


def _progress(message: str) -> None:
    print(f"[bench security] {message}", file=sys.stderr, flush=True)


def grants(principal: str) -> Acls:
    """What the bench's clients need: All on topics prefixed ``bench`` (create, produce, consume,
    describe), Read on the consumer's group."""
    return {ResourcePattern(acl.TOPIC, "bench", acl.PREFIXED): frozenset({AclEntry(principal, "*", acl.ALL, acl.ALLOW)}),
            ResourcePattern(acl.GROUP, GROUP): frozenset({AclEntry(principal, "*", acl.READ, acl.ALLOW)})}


async def _write_acls(zookeeper_connect: str, acls: Acls) -> None:
    zk = ZkGateway(zookeeper_connect, session_timeout_ms=10000)
    await zk.start()
    try:
        for pattern, entries in acls.items():
            path, data = pattern_znode(pattern, entries)
            await zk.create(path, data, makepath=True)
    finally:
        await zk.close()


def _add_scram_users(zookeeper_connect: str) -> None:
    for user in ("admin", "alice"):
        with contextlib.redirect_stdout(io.StringIO()):
            code = kafka_configs.main(["--zookeeper", zookeeper_connect, "--alter", "--entity-type", "users",
                                       "--entity-name", user, "--add-config", f"SCRAM-SHA-512=[password={user}-secret]"])
        if code != 0:
            raise RuntimeError(f"kafka-configs could not add the SCRAM user {user} (exit {code})")


def _mode_settings(name: str, pki: tuple[Path, Path] | None) -> tuple[dict, str, dict, str | None]:
    """(broker properties, the spec's listener, client config, principal to grant or None)."""
    if name in ("plaintext", "plaintext-pread"):
        return {}, "PLAINTEXT", {}, None
    if name == "plaintext-acl":
        return dict(AUTHORIZER), "PLAINTEXT", {}, acl.ANONYMOUS
    if name == "sasl-scram":
        return {**AUTHORIZER, **SASL}, "PLAINTEXT", dict(ALICE), "User:alice"
    if name == "ssl":
        ca, keystore = pki
        return ({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(keystore), "ssl.truststore.type": "PEM",
                 "ssl.truststore.location": str(ca), "ssl.client.auth": "none"},
                "SSL", {"security.protocol": "SSL", "ssl.ca.location": str(ca)}, None)
    raise ValueError(f"unknown mode {name!r}: one of {', '.join(MODES)}")


@contextlib.contextmanager
def _environment(variables: dict[str, str]):
    """``variables`` set for the processes started inside the block (the broker inherits them)."""
    saved = {k: os.environ.get(k) for k in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def start_mode(name: str, base: Path, options: SecurityBenchOptions, pki: tuple[Path, Path] | None) -> Mode:
    properties, listener, client_config, principal = _mode_settings(name, pki)
    spec = ClusterSpec.on_free_ports(1, kafka_listener=listener, properties=properties)
    cluster = Cluster(base / name, spec)
    try:
        cluster.dir.mkdir(parents=True, exist_ok=True)
        cluster.zookeeper.start(60)
        if name == "sasl-scram":
            _add_scram_users(cluster.zookeeper_connect)
        if principal is not None:
            asyncio.run(_write_acls(cluster.zookeeper_connect, {**acl_mix(options.acls), **grants(principal)}))
        with _environment(ENVIRONMENT.get(name, {})):
            cluster.up(180)
    except BaseException:
        cluster.down()
        raise
    return Mode(name, cluster, client_config)


def run_throughput(mode: Mode, options: SecurityBenchOptions, rep: int | str, records: int | None = None) -> dict:
    """Produce ``records`` (default ``options.records``) into the fresh topic ``bench-<rep>`` and consume
    them all back; a failed delivery or a missing record fails the bench."""
    records = records or options.records
    bench = BenchOptions(records, options.record_bytes, topic=f"bench-{rep}", client_config=mode.client_config)
    bootstrap = mode.cluster.bootstrap_servers
    create_topic(bootstrap, bench.topic, client_config=mode.client_config)
    produce = measure_produce(bootstrap, bench, [mode.broker_pid])
    consume = run_consume(bootstrap, bench, mode.broker_pid)
    if produce["errors"] or consume["records"] != records:
        raise RuntimeError(f"{mode.name}: {produce['errors']} failed deliveries, {consume['records']} of "
                           f"{records} records consumed")
    return {"mode": mode.name, "rep": rep, "produce": produce, "consume": consume}


def warm_up(mode: Mode, options: SecurityBenchOptions) -> None:
    """One unmeasured round of a fifth of the records: the first one on a broker cost it 2-5x the CPU
    per GB of the next ones (``__consumer_offsets`` is created, the VM backs the broker's memory)."""
    run_throughput(mode, options, "warm-up", max(1000, options.records // 5))


def login_targets(modes: dict[str, Mode], pki: tuple[Path, Path] | None) -> list[LoginTarget]:
    targets = []
    if "plaintext" in modes:
        m = modes["plaintext"]
        targets.append(LoginTarget("PLAINTEXT", m.cluster.kafka_port(1), m.broker_pid))
    if "ssl" in modes:
        m, context = modes["ssl"], ssl.create_default_context(cafile=str(pki[0]))
        targets.append(LoginTarget("SSL", m.cluster.kafka_port(1), m.broker_pid, context))
    if "sasl-scram" in modes:
        m = modes["sasl-scram"]
        for mechanism in ("PLAIN", "SCRAM-SHA-512"):
            targets.append(LoginTarget(f"SASL {mechanism}", m.cluster.kafka_port(1), m.broker_pid,
                                       sasl=SaslClientConfig(mechanism, "alice", "alice-secret")))
    return targets


def rotated(modes: tuple[str, ...], rep: int) -> tuple[str, ...]:
    """Repetition ``rep``'s order: each mode goes first once in every ``len(modes)`` repetitions, so that
    none always pays for running first (or after a particular other mode)."""
    start = rep % len(modes)
    return modes[start:] + modes[:start]


def summarize(runs: list[dict], modes: tuple[str, ...]) -> list[dict]:
    """Per mode and direction: median, min and max records/s and broker CPU-s per GB over the repetitions,
    and the median's ratio to plaintext's."""
    rows = []
    for kind in ("produce", "consume"):
        plaintext = [r[kind]["records_per_s"] for r in runs if r["mode"] == "plaintext"]
        base = statistics.median(plaintext) if plaintext else None
        for name in modes:
            rates = [r[kind]["records_per_s"] for r in runs if r["mode"] == name]
            cpu = [r[kind]["broker_cpu_s_per_gb"] for r in runs if r["mode"] == name]
            if not rates:
                continue
            median = statistics.median(rates)
            rows.append({"kind": kind, "mode": name, "n": len(rates), "median": median, "min": min(rates),
                         "max": max(rates), "cpu_per_gb": statistics.median(cpu),
                         "vs_plaintext": median / base if base else None})
    return rows


def run_security_bench(options: SecurityBenchOptions) -> dict:
    result = {"machine": machine(), "options": {k: v for k, v in vars(options).items() if k != "directory"}}
    _progress(f"authorizer decisions with {', '.join(map(str, options.decision_sizes))} ACLs")
    result["decisions"] = run_decisions(options.decision_sizes, options.decision_seconds)
    base = Path(tempfile.mkdtemp(prefix="bench-security-", dir=options.directory or bench_base()))
    pki = make_certificates(base / "pki") if "ssl" in options.modes else None
    modes: dict[str, Mode] = {}
    try:
        for name in options.modes:
            _progress(f"starting the {name} broker")
            modes[name] = start_mode(name, base, options, pki)
            warm_up(modes[name], options)
        result["runs"] = []
        for rep in range(options.reps):
            for name in rotated(options.modes, rep):
                _progress(f"rep {rep + 1}/{options.reps}: {name}, {options.records:,} records")
                result["runs"].append(run_throughput(modes[name], options, rep))
        result["throughput"] = summarize(result["runs"], options.modes)
        result["logins"] = []
        for target in login_targets(modes, pki):
            _progress(f"{options.logins} logins over {target.name}")
            result["logins"].append(measure_logins(target, options.logins))
        if "sasl-scram" in modes:
            result["credential_read"] = measure_credential_reads(modes["sasl-scram"].cluster.zookeeper_connect,
                                                                 "alice", options.logins)
            result["pbkdf2_ms"] = pbkdf2_ms()
    finally:
        for mode in modes.values():
            mode.cluster.down()
    shutil.rmtree(base, ignore_errors=True)
    return result


def format_report(result: dict) -> list[str]:
    m, o = result["machine"], result["options"]
    lines = [f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB, Linux {m['kernel']}, Python {m['python']}, "
             f"confluent-kafka {m['confluent_kafka']} (librdkafka {m['librdkafka']})", "",
             "Authorizer decisions per second (matching_acls with the prefix index, then decide):", ""]
    lines += format_decisions(result["decisions"])
    if result.get("throughput"):
        lines += ["", f"{o['records']:,} records of {o['record_bytes']} B per run, {o['reps']} run(s) per mode "
                      f"(ACL modes: {o['acls']:,} ACLs loaded), median [min-max]:", "",
                  "| run | mode | records/s | MB/s | broker CPU-s per GB | vs plaintext |", "|---|---|---|---|---|---|"]
        for r in result["throughput"]:
            ratio = f"{r['vs_plaintext']:.2f}" if r["vs_plaintext"] else "-"
            lines.append(f"| {r['kind']} | {r['mode']} | {r['median']:,.0f} [{r['min']:,.0f}-{r['max']:,.0f}] | "
                         f"{r['median'] * o['record_bytes'] / 1e6:.1f} | {r['cpu_per_gb']:.2f} | {ratio} |")
    if result.get("logins"):
        lines += ["", f"Connection set-up, {o['logins']} sequential logins each (connect, authenticate, ApiVersions, "
                      "close):", "", "| connection | logins/s | p50 ms | p99 ms | broker CPU ms/login | client CPU ms/login |",
                  "|---|---|---|---|---|---|"]
        for r in result["logins"]:
            lines.append(f"| {r['connection']} | {r['per_s']:,.0f} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | "
                         f"{r['broker_cpu_ms']:.2f} | {r['client_cpu_ms']:.2f} |")
    if "credential_read" in result:
        read = result["credential_read"]
        lines += ["", f"SCRAM's ZooKeeper read of /config/users/alice alone: p50 {read['p50_ms']:.2f} ms, "
                      f"p99 {read['p99_ms']:.2f} ms, {read['cpu_ms']:.2f} CPU-ms per read; the client's PBKDF2 (4096 x HMAC-SHA-512): {result['pbkdf2_ms']:.2f} ms"]
    return lines

