"""The broker config schema: every ``server.properties`` key zkafka knows, with its type and default
(Kafka's ``KafkaConfig.configDef``), and the key families around it.

``SCHEMA`` declares each key once; ``schema_field``/``from_schema`` let the components' own settings
(``GroupConfig``, ``LogManagerConfig``, ``FetcherConfig``) view it, so a default lives only here.
``LOG_KEYS`` maps broker-level ``log.*`` keys to the topic-level keys of LogConfig; ``PER_LISTENER``,
``HTTP_SSL_KEYS`` and ``SASL_JAAS_KEY`` name the keys that override a broker-wide one for a listener or
for the HTTP port. Reading a file against this schema is ``brokers.config.broker_config``'s.
"""
from __future__ import annotations

import re
from dataclasses import field, fields
from typing import Any, Callable

# Kafka's broker-side JAAS config: listener.name.<listener>.<sasl mechanism>.sasl.jaas.config
SASL_JAAS_KEY = re.compile(r"listener\.name\.[a-z0-9_\-]+\.[a-z0-9\-]+\.sasl\.jaas\.config")


def _bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError("expected true or false")
    return lowered == "true"


def _list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def _map(text: str) -> dict[str, str]:
    out = {}
    for item in _list(text):
        key, sep, value = item.partition(":")
        if not sep:
            raise ValueError(f"expected KEY:VALUE pairs, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def is_sensitive(key: str) -> bool:
    """Kafka's PASSWORD-typed configs: DescribeConfigs answers them with a null value and is_sensitive."""
    return key in SENSITIVE_KEYS or key.endswith((".password", ".sasl.jaas.config")) or key == "sasl.jaas.config"


HTTP_AUTHENTICATION_METHODS = ("NONE", "BASIC")
MIN_CONTROL_SECRET_CHARS = 16
SENSITIVE_KEYS = frozenset({"zookeeper.digest.credentials", "control.plane.secret"})

PARSERS: dict[str, Callable[[str], Any]] = {"int": int, "bool": _bool, "str": str.strip, "list": _list,
                                           "double": float, "map": _map}

# key: (type, default). None = unset. "accepted" keys exist in common server.properties files; they
# parse and validate but change nothing yet.
SCHEMA: dict[str, tuple[str, Any]] = {
    "broker.id": ("int", -1),
    "broker.id.generation.enable": ("bool", True),
    "reserved.broker.max.id": ("int", 1000),
    "broker.rack": ("str", None),
    "zookeeper.connect": ("str", None),
    "zookeeper.session.timeout.ms": ("int", 18000),
    "zookeeper.connection.timeout.ms": ("int", None),
    "zookeeper.max.in.flight.requests": ("int", 50),  # pipelined batches (brokers.zk.gateway_batch); Kafka's is 10
    "zookeeper.set.acl": ("bool", False),
    # ZooKeeper digest credentials ("user:password"; Kafka takes its ZooKeeper identity from JAAS's Client section)
    "zookeeper.digest.credentials": ("str", None),
    "listeners": ("list", ["PLAINTEXT://:9092"]),
    "advertised.listeners": ("list", None),
    "listener.security.protocol.map": ("map", None),
    "inter.broker.listener.name": ("str", None),
    # SASL (brokers.server.sasl). Kafka's default is GSSAPI, which zkafka does not speak: here every
    # supported mechanism is enabled unless the list says otherwise.
    "sasl.enabled.mechanisms": ("list", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]),
    "sasl.mechanism.inter.broker.protocol": ("str", "GSSAPI"),
    "http.port": ("int", 8080),
    # brokers/server/tls.py: the HTTP port serves HTTPS with the ssl.* keystore (http.ssl.* overrides it,
    # HTTP_SSL_KEYS) and brokers call each other's HTTP ports over https, trusting ssl.truststore.location
    "http.ssl.enabled": ("bool", False),
    # brokers.http.auth: BASIC makes every HTTP path but /healthz and /readyz need a SCRAM user's password
    "http.authentication.method": ("str", "NONE"),
    # brokers.security.control_auth: the key brokers sign their HTTP calls to each other with (unset: generated
    # once per cluster and kept in ZooKeeper)
    "control.plane.secret": ("str", None),
    "authorizer.class.name": ("str", ""),  # kafka.security.authorizer.AclAuthorizer enables ACLs
    "allow.everyone.if.no.acl.found": ("bool", False),
    "super.users": ("str", None),  # principals separated by ';' (User:admin;User:broker)
    # TLS (brokers/server/tls.py): each also as listener.name.<listener lower case>.<key>
    "ssl.keystore.type": ("str", "JKS"),
    "ssl.keystore.location": ("str", None),
    "ssl.key.password": ("str", None),
    "ssl.truststore.type": ("str", "JKS"),
    "ssl.truststore.location": ("str", None),
    "ssl.client.auth": ("str", "none"),
    "ssl.enabled.protocols": ("list", ["TLSv1.2", "TLSv1.3"]),
    "ssl.protocol": ("str", "TLSv1.3"),
    "ssl.endpoint.identification.algorithm": ("str", "https"),
    "ssl.principal.mapping.rules": ("str", "DEFAULT"),
    "log.dirs": ("list", None),
    "log.dir": ("str", "/tmp/kafka-logs"),
    "num.partitions": ("int", 1),
    "max.partitions": ("int", 2**31 - 1),  # KIP-578: partitions in the cluster (brokers/admin/partition_limits.py)
    "max.broker.partitions": ("int", 2**31 - 1),  # KIP-578: partition replicas on one broker
    "default.replication.factor": ("int", 1),
    "min.insync.replicas": ("int", 1),
    "unclean.leader.election.enable": ("bool", False),
    "auto.create.topics.enable": ("bool", True),
    "delete.topic.enable": ("bool", True),
    "auto.leader.rebalance.enable": ("bool", True),
    "leader.imbalance.check.interval.seconds": ("int", 300),
    "leader.imbalance.per.broker.percentage": ("int", 10),
    "controlled.shutdown.enable": ("bool", True),
    "controlled.shutdown.max.retries": ("int", 3),
    "controlled.shutdown.retry.backoff.ms": ("int", 5000),
    "controller.socket.timeout.ms": ("int", 30000),
    "request.timeout.ms": ("int", 30000),
    "replica.lag.time.max.ms": ("int", 30000),
    "replica.fetch.wait.max.ms": ("int", 500),
    "replica.fetch.min.bytes": ("int", 1),
    "replica.fetch.max.bytes": ("int", 1048576),
    "replica.fetch.response.max.bytes": ("int", 10485760),
    "replica.fetch.backoff.ms": ("int", 1000),
    "replica.socket.timeout.ms": ("int", 30000),
    "num.replica.fetchers": ("int", 1),
    "max.incremental.fetch.session.cache.slots": ("int", 1000),
    "replica.high.watermark.checkpoint.interval.ms": ("int", 5000),
    "offsets.topic.num.partitions": ("int", 50),
    "offsets.topic.replication.factor": ("int", 3),
    "offsets.retention.minutes": ("int", 10080),
    "offset.metadata.max.bytes": ("int", 4096),
    "group.initial.rebalance.delay.ms": ("int", 3000),
    "group.min.session.timeout.ms": ("int", 6000),
    "group.max.session.timeout.ms": ("int", 1800000),
    "group.max.size": ("int", 2147483647),
    "offsets.retention.check.interval.ms": ("int", 600000),
    "offsets.commit.timeout.ms": ("int", 5000),
    "log.retention.check.interval.ms": ("int", 300000),
    "log.flush.offset.checkpoint.interval.ms": ("int", 60000),
    "log.flush.start.offset.checkpoint.interval.ms": ("int", 60000),
    "log.flush.scheduler.interval.ms": ("int", 1000),
    "log.cleaner.enable": ("bool", True),
    "log.cleaner.backoff.ms": ("int", 15000),
    "log.cleaner.threads": ("int", 1),
    # client quotas (brokers/quotas): the sample windows rates are measured over (Kafka's defaults)
    "quota.window.num": ("int", 11),
    "quota.window.size.seconds": ("int", 1),
    "controller.quota.window.num": ("int", 11),
    "controller.quota.window.size.seconds": ("int", 1),
    # accepted: common in server.properties, no effect in zkafka yet
    "num.network.threads": ("int", 3),
    "num.io.threads": ("int", 8),
    "socket.send.buffer.bytes": ("int", 102400),
    "socket.receive.buffer.bytes": ("int", 102400),
    "socket.request.max.bytes": ("int", 104857600),
    "num.recovery.threads.per.data.dir": ("int", 1),
    # the transaction coordinator (Kafka 2.8's TransactionStateManager / TransactionCoordinator defaults)
    "transaction.state.log.num.partitions": ("int", 50),
    "transaction.state.log.replication.factor": ("int", 3),
    "transaction.state.log.min.isr": ("int", 2),
    "transaction.state.log.segment.bytes": ("int", 104857600),
    "transaction.state.log.load.buffer.size": ("int", 5242880),
    "transaction.max.timeout.ms": ("int", 900000),
    "transactional.id.expiration.ms": ("int", 604800000),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": ("int", 10000),
    "transaction.remove.expired.transaction.cleanup.interval.ms": ("int", 3600000),
    "transaction.partition.verification.enable": ("bool", True),
}


def _same(value: Any) -> Any:
    return value


def schema_field(key: str, convert: Callable[[Any], Any] = _same) -> Any:
    """A dataclass field that views broker config ``key``: its default is ``convert`` of the schema's
    default, and ``from_schema`` reads it as ``convert(config[key])`` (e.g. minutes to milliseconds)."""
    return field(default=convert(SCHEMA[key][1]), metadata={"broker_key": key, "convert": convert})


def from_schema(cls: type, config: Any, **others: Any) -> Any:
    """``cls`` (a dataclass of ``schema_field``s) read from ``config`` (a BrokerConfig, or anything
    indexable by Kafka's keys); ``others`` fill the fields that are not broker keys."""
    viewed = {f.name: f.metadata["convert"](config[f.metadata["broker_key"]])
              for f in fields(cls) if "broker_key" in f.metadata}
    return cls(**viewed, **others)


# keys a listener may override with listener.name.<listener lower case>.<key>
PER_LISTENER = re.compile(r"listener\.name\.([^.]+)\.(ssl\..+)$")
# keys the HTTP port may override with http.<key> (http.ssl.enabled=true); no client certificates there
HTTP_SSL_KEYS = ("ssl.keystore.type", "ssl.keystore.location", "ssl.key.password", "ssl.truststore.type",
                 "ssl.truststore.location", "ssl.enabled.protocols", "ssl.protocol",
                 "ssl.endpoint.identification.algorithm")

# broker key -> topic key (LogConfig), in order of precedence where several map to one topic key
LOG_KEYS: dict[str, tuple[str, Callable[[str], str]]] = {
    "log.segment.bytes": ("segment.bytes", str),
    "log.roll.ms": ("segment.ms", str),
    "log.roll.hours": ("segment.ms", lambda v: str(int(v) * 3600000)),
    "log.roll.jitter.ms": ("segment.jitter.ms", str),
    "log.roll.jitter.hours": ("segment.jitter.ms", lambda v: str(int(v) * 3600000)),
    "log.index.size.max.bytes": ("segment.index.bytes", str),
    "log.index.interval.bytes": ("index.interval.bytes", str),
    "log.retention.ms": ("retention.ms", str),
    "log.retention.minutes": ("retention.ms", lambda v: str(int(v) * 60000)),
    "log.retention.hours": ("retention.ms", lambda v: str(int(v) * 3600000)),
    "log.retention.bytes": ("retention.bytes", str),
    "log.cleanup.policy": ("cleanup.policy", str),
    "log.cleaner.delete.retention.ms": ("delete.retention.ms", str),
    "log.cleaner.min.cleanable.ratio": ("min.cleanable.dirty.ratio", str),
    "log.cleaner.min.compaction.lag.ms": ("min.compaction.lag.ms", str),
    "log.segment.delete.delay.ms": ("file.delete.delay.ms", str),
    "log.flush.interval.messages": ("flush.messages", str),
    "log.flush.interval.ms": ("flush.ms", str),
    "message.max.bytes": ("max.message.bytes", str),
    "log.message.timestamp.type": ("message.timestamp.type", str),
    "log.message.downconversion.enable": ("message.downconversion.enable", str),
    # not ``str``: static, as in Kafka (DynamicLogConfig excludes it)
    "log.message.format.version": ("message.format.version", lambda v: v.strip()),
}
