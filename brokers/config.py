"""BrokerConfig: a Kafka-style ``server.properties`` with Kafka's key names and defaults.

Every key is declared once in ``SCHEMA`` (type, default). An unknown key or a value of the wrong
type raises ``ConfigError`` naming the key and the file line. The components' own settings
(``GroupConfig``, ``LogManagerConfig``, ``FetcherConfig``: Kafka builds each from ``KafkaConfig``)
are views of this schema: their fields are ``schema_field(key)``, whose default is the schema's, and
``from_schema(cls, config)`` reads them from a broker config, so a default lives only in ``SCHEMA``. Broker-level ``log.*`` defaults are
translated to topic-level keys (``log.segment.bytes`` -> ``segment.bytes``) in ``log_defaults`` so
that ``brokers.app`` can build the storage layer's LogConfig without this module importing it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Callable

from brokers.security.acls import AUTHORIZER_CLASSES
from brokers.model import EndPoint


class ConfigError(ValueError):
    pass


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

_PARSERS: dict[str, Callable[[str], Any]] = {"int": int, "bool": _bool, "str": str.strip, "list": _list,
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
    "zookeeper.max.in.flight.requests": ("int", 10),
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
    # accepted: common in server.properties, no effect in zkafka yet
    "num.network.threads": ("int", 3),
    "num.io.threads": ("int", 8),
    "socket.send.buffer.bytes": ("int", 102400),
    "socket.receive.buffer.bytes": ("int", 102400),
    "socket.request.max.bytes": ("int", 104857600),
    "num.recovery.threads.per.data.dir": ("int", 1),
    "transaction.state.log.replication.factor": ("int", 3),
    "transaction.state.log.min.isr": ("int", 2),
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
}


@dataclass(frozen=True)
class BrokerConfig:
    values: dict[str, Any]
    log_defaults: dict[str, str]
    source: str = "<properties>"
    listener_overrides: dict[str, dict[str, Any]] = field(default_factory=dict)  # lower-case listener -> key -> value
    sasl_jaas: dict[str, str] = field(default_factory=dict)  # listener.name.<l>.<mech>.sasl.jaas.config
    http_overrides: dict[str, Any] = field(default_factory=dict)  # http.ssl.* -> ssl.* key -> value

    def __getitem__(self, key: str) -> Any:
        if key not in SCHEMA:
            raise KeyError(f"unknown broker config {key!r}")
        return self.values[key]

    def listener_value(self, listener: str, key: str) -> Any:
        """``listener.name.<listener>.<key>`` if set, else the broker-wide ``key``."""
        return self.listener_overrides.get(listener.lower(), {}).get(key, self[key])

    def http_value(self, key: str) -> Any:
        """``http.<key>`` if set, else the broker-wide ``key`` (the HTTP port's TLS settings)."""
        return self.http_overrides.get(key, self[key])

    @property
    def broker_id(self) -> int:
        return self.values["broker.id"]

    @property
    def zookeeper_connect(self) -> str:
        return self.values["zookeeper.connect"]

    @property
    def zookeeper_session_timeout_ms(self) -> int:
        return self.values["zookeeper.session.timeout.ms"]

    @property
    def zookeeper_connection_timeout_ms(self) -> int:
        return self.values["zookeeper.connection.timeout.ms"] or self.zookeeper_session_timeout_ms

    @property
    def log_dirs(self) -> list[Path]:
        return [Path(d) for d in (self.values["log.dirs"] or [self.values["log.dir"]])]

    @property
    def listeners(self) -> list[EndPoint]:
        return [EndPoint.parse(text, self.values["listener.security.protocol.map"]) for text in self.values["listeners"]]

    @property
    def advertised_listeners(self) -> list[EndPoint]:
        texts = self.values["advertised.listeners"]
        if not texts:
            return [e if e.host not in ("", "0.0.0.0") else EndPoint(e.listener, "127.0.0.1", e.port, e.security_protocol)
                    for e in self.listeners]
        return [EndPoint.parse(text, self.values["listener.security.protocol.map"]) for text in texts]

    @property
    def inter_broker_endpoint(self) -> EndPoint | None:
        """The advertised endpoint brokers reach each other on: ``inter.broker.listener.name``, else the
        first advertised listener (what the replica fetchers pick); its security protocol decides TLS/SASL."""
        advertised = self.advertised_listeners
        name = self.values["inter.broker.listener.name"] or (advertised[0].listener if advertised else None)
        return next((e for e in advertised if e.listener == name), None)

    def sasl_jaas_config(self, listener: str, mechanism: str) -> str | None:
        """``listener.name.<listener>.<mechanism>.sasl.jaas.config`` (both lower case, as in Kafka)."""
        return self.sasl_jaas.get(f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config")

    @property
    def http_port(self) -> int:
        return self.values["http.port"]

    @classmethod
    def from_file(cls, path: Path, overrides: dict[str, str] | None = None) -> "BrokerConfig":
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise ConfigError(f"cannot read broker config {path}: {exc.strerror}") from None
        props = parse_properties(text, str(path))
        props.update(overrides or {})
        return cls.from_properties(props, str(path))

    @classmethod
    def from_properties(cls, props: dict[str, str], source: str = "<properties>") -> "BrokerConfig":
        values = {key: default for key, (_, default) in SCHEMA.items()}
        log_defaults: dict[str, str] = {}
        precedence: dict[str, int] = {}
        listener_overrides: dict[str, dict[str, Any]] = {}
        jaas: dict[str, str] = {}
        http_overrides: dict[str, Any] = {}
        for key, raw in props.items():
            if key.startswith("http.") and key[5:] in HTTP_SSL_KEYS:
                http_overrides[key[5:]] = _convert(key, raw, _PARSERS[SCHEMA[key[5:]][0]], source)
                continue
            if (match := PER_LISTENER.match(key)) and match.group(2) in SCHEMA:
                kind = SCHEMA[match.group(2)][0]
                listener_overrides.setdefault(match.group(1).lower(), {})[match.group(2)] = _convert(
                    key, raw, _PARSERS[kind], source)
                continue
            if key in LOG_KEYS:
                topic_key, convert = LOG_KEYS[key]
                rank = list(LOG_KEYS).index(key)
                if topic_key not in precedence or rank < precedence[topic_key]:
                    log_defaults[topic_key] = _convert(key, raw, convert, source)
                    precedence[topic_key] = rank
                continue
            if SASL_JAAS_KEY.fullmatch(key):  # secrets: kept apart from values (DescribeConfigs lists those)
                jaas[key] = raw.strip()
                continue
            if key not in SCHEMA:
                raise ConfigError(f"{source}: unknown broker config {key!r}")
            kind = SCHEMA[key][0]
            values[key] = _convert(key, raw, _PARSERS[kind], source)
        config = cls(values, log_defaults, source, listener_overrides, jaas, http_overrides)
        config.validate()
        return config

    def validate(self) -> None:
        if not self.values["zookeeper.connect"]:
            raise ConfigError(f"{self.source}: zookeeper.connect is required (e.g. zookeeper.connect=127.0.0.1:2181)")
        credentials = self.values["zookeeper.digest.credentials"]
        if credentials is not None and ":" not in credentials[1:]:
            raise ConfigError(f"{self.source}: zookeeper.digest.credentials must be user:password")
        if self.values["zookeeper.set.acl"] and not credentials:
            raise ConfigError(f"{self.source}: zookeeper.set.acl=true needs zookeeper.digest.credentials=user:password "
                              "(the identity that owns the brokers' znodes; Kafka takes it from JAAS's Client section)")
        for key in ("zookeeper.session.timeout.ms", "num.partitions", "default.replication.factor",
                    "min.insync.replicas", "offsets.topic.num.partitions", "offsets.topic.replication.factor"):
            if self.values[key] <= 0:
                raise ConfigError(f"{self.source}: {key} must be positive, got {self.values[key]}")
        if not 0 <= self.values["http.port"] <= 65535:
            raise ConfigError(f"{self.source}: http.port must be a port number, got {self.values['http.port']}")
        for key in ("listeners", "advertised.listeners"):
            try:
                getattr(self, key.replace(".", "_"))
            except ValueError as exc:
                raise ConfigError(f"{self.source}: {key}: {exc}") from None
        self._validate_listener_names()
        self._validate_authorizer()
        self._validate_http_security()

    def _validate_http_security(self) -> None:
        method = self.values["http.authentication.method"].upper()
        if method not in HTTP_AUTHENTICATION_METHODS:
            raise ConfigError(f"{self.source}: http.authentication.method must be one of "
                              f"{', '.join(HTTP_AUTHENTICATION_METHODS)}, got {self.values['http.authentication.method']!r}")
        self.values["http.authentication.method"] = method
        secret = self.values["control.plane.secret"]
        if secret is not None and len(secret) < MIN_CONTROL_SECRET_CHARS:
            raise ConfigError(f"{self.source}: control.plane.secret must be at least {MIN_CONTROL_SECRET_CHARS} "
                              f"characters (got {len(secret)})")

    @property
    def control_plane_secret(self) -> bytes | None:
        """The configured control-plane secret; None: the brokers share a generated one through ZooKeeper."""
        secret = self.values["control.plane.secret"]
        return secret.encode() if secret else None

    def _validate_authorizer(self) -> None:
        name = self.values["authorizer.class.name"]
        if name and name not in AUTHORIZER_CLASSES:
            raise ConfigError(f"{self.source}: authorizer.class.name {name!r} is not supported: the only authorizer "
                              f"is {AUTHORIZER_CLASSES[0]} (or leave it empty for no authorization)")

    def _validate_listener_names(self) -> None:
        """Kafka's rules: listener names unique, every advertised one bound, the inter-broker one advertised."""
        names = [e.listener for e in self.listeners]
        if len(set(names)) != len(names):
            raise ConfigError(f"{self.source}: listeners: each listener name must appear once, got {names}")
        advertised = [e.listener for e in self.advertised_listeners]
        if not set(advertised) <= set(names):
            raise ConfigError(f"{self.source}: advertised.listeners names {sorted(set(advertised) - set(names))} "
                              f"that listeners does not bind ({names})")
        inter = self.values["inter.broker.listener.name"]
        if inter is not None and inter not in advertised:
            raise ConfigError(f"{self.source}: inter.broker.listener.name {inter!r} is not an advertised listener "
                              f"({advertised})")


def _convert(key: str, raw: str, convert: Callable[[str], Any], source: str) -> Any:
    try:
        return convert(raw)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{source}: broker config {key!r} has a bad value {raw!r} ({exc})") from None


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def parse_properties(text: str, source: str = "<properties>") -> dict[str, str]:
    """Java ``.properties``: ``#``/``!`` comments, ``=``/``:``/space separators, ``\\`` line
    continuation, ``\\t`` ``\\n`` ``\\uXXXX`` escapes. A line without a key raises ConfigError."""
    props: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        number = i + 1
        line = lines[i].lstrip()
        i += 1
        if not line or line[0] in "#!":
            continue
        while _continues(line) and i < len(lines):
            line = line[:-1] + lines[i].lstrip()
            i += 1
        match = re.match(r"((?:\\.|[^=:\s\\])+)\s*[=:\s]?\s*(.*)$", line)
        if not match:
            raise ConfigError(f"{source}:{number}: cannot parse {lines[number - 1]!r}")
        props[_unescape(match.group(1))] = _unescape(match.group(2).rstrip())
    return props


def _continues(line: str) -> bool:
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _unescape(text: str) -> str:
    def replace(match: re.Match[str]) -> str:
        body = match.group(1)
        if body.startswith("u"):
            return chr(int(body[1:], 16))
        return _ESCAPES.get(body, body)

    return re.sub(r"\\(u[0-9a-fA-F]{4}|.)", replace, text)
