"""DynamicBrokerConfig: the broker configs that change while the broker runs (Kafka's
DynamicBrokerConfig), kept in ZooKeeper at ``/config/brokers/<id>`` (this broker) and
``/config/brokers/<default>`` (cluster-wide default).

Precedence, highest first (Kafka's): DYNAMIC_BROKER_CONFIG (2, per broker) > DYNAMIC_DEFAULT_BROKER_CONFIG
(3, cluster default) > STATIC_BROKER_CONFIG (4, server.properties) > DEFAULT_CONFIG (5).

The dynamic keys, each applied live:

* ``leader.replication.throttled.rate`` / ``follower.replication.throttled.rate``: bytes/s, default
  Long.MAX_VALUE (no throttle); read by the replication layer as ``leader_replication_throttled_rate``
  and ``follower_replication_throttled_rate``.
* the log defaults ``log.segment.bytes``, ``log.roll.ms``, ``log.roll.jitter.ms``, ``log.retention.ms``,
  ``log.retention.bytes``, ``log.cleanup.policy``, ``log.index.size.max.bytes``, ``log.index.interval.bytes``,
  ``log.cleaner.delete.retention.ms``, ``log.cleaner.min.cleanable.ratio``, ``log.cleaner.min.compaction.lag.ms``,
  ``log.segment.delete.delay.ms``, ``log.flush.interval.messages``, ``log.flush.interval.ms``,
  ``message.max.bytes``, ``log.message.timestamp.type`` and ``min.insync.replicas``: they become the
  default LogConfig of every topic without its own override (``log_defaults``).

Every other broker key is read-only (``Cannot update these configs dynamically``). Listeners are called
(on the event loop) after every change.
"""
from __future__ import annotations

import logging
from typing import Callable, Mapping

from brokers.config import LOG_KEYS, BrokerConfig
from brokers.storage.log_config import LONG_MAX, InvalidConfigError, LogConfig

log = logging.getLogger(__name__)

DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5

LEADER_THROTTLED_RATE = "leader.replication.throttled.rate"
FOLLOWER_THROTTLED_RATE = "follower.replication.throttled.rate"
THROTTLE_KEYS = (LEADER_THROTTLED_RATE, FOLLOWER_THROTTLED_RATE)

# dynamic broker key -> the topic-level key it is the default of (Kafka's LogConfig synonyms); the
# .hours/.minutes variants stay static, as in Kafka
LOG_SYNONYMS: dict[str, str] = {
    key: topic_key for key, (topic_key, convert) in LOG_KEYS.items() if convert is str
}
LOG_SYNONYMS["min.insync.replicas"] = "min.insync.replicas"
TOPIC_TO_BROKER_KEY: dict[str, str] = {topic_key: key for key, topic_key in LOG_SYNONYMS.items()}
DYNAMIC_KEYS = frozenset(THROTTLE_KEYS) | frozenset(LOG_SYNONYMS)


def validate_broker_overrides(overrides: Mapping[str, str]) -> None:
    """Raise ReadOnlyConfigError for keys that cannot change live, InvalidConfigError for bad values."""
    read_only = sorted(set(overrides) - DYNAMIC_KEYS)
    if read_only:
        raise ReadOnlyConfigError(f"Cannot update these configs dynamically: {', '.join(read_only)} "
                                  f"(dynamic broker configs: {', '.join(sorted(DYNAMIC_KEYS))})")
    for key, value in overrides.items():
        if key in THROTTLE_KEYS:
            _rate(key, value)
            continue
        try:
            LogConfig.from_properties({LOG_SYNONYMS[key]: value})
        except InvalidConfigError as exc:
            raise InvalidConfigError(f"broker config {key!r}: {exc}") from None


class ReadOnlyConfigError(InvalidConfigError):
    pass


def _rate(key: str, value: str) -> int:
    try:
        rate = int(str(value).strip())
    except ValueError:
        raise InvalidConfigError(f"broker config {key!r} needs a long, got {value!r}") from None
    if not 0 <= rate <= LONG_MAX:
        raise InvalidConfigError(f"broker config {key!r} must be >= 0, got {rate}")
    return rate


def _log_props(overrides: Mapping[str, str]) -> dict[str, str]:
    return {LOG_SYNONYMS[key]: value for key, value in overrides.items() if key in LOG_SYNONYMS}


Synonym = tuple[str, str, int]  # name, value, config source


class DynamicBrokerConfig:
    def __init__(self, broker_id: int, static: BrokerConfig):
        self.broker_id = broker_id
        self.static = static
        self.static_log_defaults = {**static.log_defaults, "min.insync.replicas": str(static["min.insync.replicas"])}
        self.cluster_default: dict[str, str] = {}
        self.per_broker: dict[str, str] = {}
        self._listeners: list[Callable[["DynamicBrokerConfig"], None]] = []
        self._refresh_rates()

    # -- updates -------------------------------------------------------------------------------
    def update(self, entity: str, overrides: Mapping[str, str]) -> bool:
        """New overrides for ``<default>`` or this broker's id (others are ignored); keys that are not
        dynamic or values that do not parse are dropped with a warning (a znode written by other tools).
        Returns whether anything changed; listeners hear about changes."""
        accepted = {}
        for key, value in overrides.items():
            try:
                validate_broker_overrides({key: value})
                accepted[key] = str(value)
            except InvalidConfigError as exc:
                log.warning("ignoring dynamic broker config %s=%s from /config/brokers/%s: %s", key, value, entity, exc)
        if entity == "<default>":
            changed, self.cluster_default = accepted != self.cluster_default, accepted
        elif entity == str(self.broker_id):
            changed, self.per_broker = accepted != self.per_broker, accepted
        else:
            return False
        if changed:
            self._refresh_rates()
            log.info("dynamic broker config now: default %s, broker %d %s", self.cluster_default, self.broker_id,
                     self.per_broker)
            for listener in list(self._listeners):
                listener(self)
        return changed

    def add_listener(self, callback: Callable[["DynamicBrokerConfig"], None]) -> None:
        """``callback(self)`` after every ``update`` that changed the overrides, synchronously inside ``update``."""
        self._listeners.append(callback)

    # -- reads ---------------------------------------------------------------------------------
    def synonyms(self, key: str) -> list[Synonym]:
        """Every value ``key`` (a broker key) has, highest precedence first, ending with the default."""
        found: list[Synonym] = []
        if key in self.per_broker:
            found.append((key, self.per_broker[key], DYNAMIC_BROKER_CONFIG))
        if key in self.cluster_default:
            found.append((key, self.cluster_default[key], DYNAMIC_DEFAULT_BROKER_CONFIG))
        if key in THROTTLE_KEYS:
            return found + [(key, str(LONG_MAX), DEFAULT_CONFIG)]
        topic_key = LOG_SYNONYMS.get(key)
        if topic_key is None:
            return found
        if topic_key in self.static_log_defaults:
            static = self.static_log_defaults[topic_key]
            default = LogConfig().to_properties()[topic_key]
            if key != "min.insync.replicas" or static != default:
                found.append((key, static, STATIC_BROKER_CONFIG))
        found.append((key, LogConfig().to_properties()[topic_key], DEFAULT_CONFIG))
        return found

    def topic_synonyms(self, topic_key: str) -> list[Synonym]:
        """The broker-level values behind a topic key without an override (empty for topic-only keys)."""
        key = TOPIC_TO_BROKER_KEY.get(topic_key)
        return self.synonyms(key) if key else []

    def value(self, key: str) -> str:
        return self.synonyms(key)[0][1]

    def log_defaults(self) -> dict[str, str]:
        """The topic-level defaults: static ``log.*`` settings under the dynamic ones."""
        return {**self.static_log_defaults, **_log_props(self.cluster_default), **_log_props(self.per_broker)}

    def default_log_config(self) -> LogConfig:
        return LogConfig.from_properties(self.log_defaults())

    def overrides(self, per_broker: bool) -> dict[str, str]:
        return dict(self.per_broker if per_broker else self.cluster_default)

    def _refresh_rates(self) -> None:
        """The throttle bounds as plain ints: the replication hot paths read them per fetch, so they are
        resolved once per change, not through the synonym chain on every read."""
        self.leader_replication_throttled_rate = int(self.value(LEADER_THROTTLED_RATE))
        self.follower_replication_throttled_rate = int(self.value(FOLLOWER_THROTTLED_RATE))
