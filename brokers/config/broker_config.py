"""BrokerConfig: ``server.properties`` read and validated against the schema (Kafka's ``KafkaConfig``).

An unknown key or a value of the wrong type raises ``ConfigError`` naming the key and the file line;
``parse_properties`` reads Java's ``.properties`` format. The keys, types and defaults are declared in
``brokers.config.schema``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from brokers.config.schema import (
    HTTP_AUTHENTICATION_METHODS,
    HTTP_SSL_KEYS,
    LOG_KEYS,
    MIN_CONTROL_SECRET_CHARS,
    PARSERS,
    PER_LISTENER,
    SASL_JAAS_KEY,
    SCHEMA,
)
from brokers.model import EndPoint
from brokers.security.acls import AUTHORIZER_CLASSES


class ConfigError(ValueError):
    pass


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
                http_overrides[key[5:]] = _convert(key, raw, PARSERS[SCHEMA[key[5:]][0]], source)
                continue
            if (match := PER_LISTENER.match(key)) and match.group(2) in SCHEMA:
                kind = SCHEMA[match.group(2)][0]
                listener_overrides.setdefault(match.group(1).lower(), {})[match.group(2)] = _convert(
                    key, raw, PARSERS[kind], source)
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
            values[key] = _convert(key, raw, PARSERS[kind], source)
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
                    "min.insync.replicas", "offsets.topic.num.partitions", "offsets.topic.replication.factor",
                    "quota.window.num", "quota.window.size.seconds", "controller.quota.window.num",
                    "controller.quota.window.size.seconds"):
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
