"""ClientQuotaManager: one quota type's configured entities and the rates its clients are measured by (Kafka's
``ClientQuotaManager``, ``ClientRequestQuotaManager`` and ``ControllerMutationQuotaManager``); ``QuotaManagers``
holds the four a broker has. Single-threaded: only the broker's event loop calls these.

A byte rate's throttle time is the longer of Kafka's (the sampled rate back at its bound) and a one-window token
bucket's (``SMOOTHED``): a client is never more than one window's worth ahead of its quota, so it gets its quota
evenly instead of in Kafka's 10-window bursts. The request-time quota and KIP-599's mutations are Kafka's alone.

A connection is measured by the ``ClientSensor`` of its metric tags (``brokers.quotas.entities.metric_tags``):
clients whose quota comes from one user-only entity share that user's rate, and so on. Each sensor keeps its
rate (a ``RateMeter``, or a ``TokenBucket`` for controller mutations) and what ``/metrics`` and the dashboard
show: the throttle time it handed out, and until when it is throttled. The (user, client id) -> sensor lookup
is one dict hit per request; it is cleared whenever a quota changes (the tags may then differ). With no quota
of a type configured, nothing is recorded for it (Kafka's ``quotasEnabled``). A sensor idle for an hour is
dropped (Kafka's ``InactiveSensorExpirationTimeSeconds``).
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from brokers.config import from_schema, schema_field
from brokers.quotas.entities import QuotaEntity, QuotaType, Tags, metric_tags, quota_limit, quotas_of
from brokers.quotas.rates import RateMeter, TokenBucket

log = logging.getLogger(__name__)

SENSOR_EXPIRY_MS = 3600 * 1000
# Byte rates are also held by a token bucket of one window (zkafka's, not Kafka's): Kafka's sampled rate alone lets
# a client take 10 windows' worth at once and then nothing until that sample leaves the 11-window rate, so a
# client that always wants more runs in ~11 s steps; with the bucket it gets its quota window by window.
SMOOTHED = frozenset({QuotaType.PRODUCE, QuotaType.FETCH})
EXPIRY_CHECK_MS = 60 * 1000


def monotonic_ms() -> int:
    return int(time.monotonic() * 1000)


@dataclass(frozen=True)
class QuotaConfig:
    """The broker's quota measurement settings (Kafka's ``ClientQuotaManagerConfig``)."""

    num_samples: int = schema_field("quota.window.num")
    window_ms: int = schema_field("quota.window.size.seconds", lambda seconds: seconds * 1000)
    controller_num_samples: int = schema_field("controller.quota.window.num")
    controller_window_ms: int = schema_field("controller.quota.window.size.seconds", lambda seconds: seconds * 1000)

    @classmethod
    def from_broker(cls, config) -> QuotaConfig:
        return from_schema(cls, config)


class ClientSensor:
    """The rate of one set of metric tags and its throttle record."""

    __slots__ = ("tags", "limit", "meter", "bucket", "throttle_time_ms_total", "throttled", "throttled_until_ms",
                 "recorded_total", "last_used_ms")

    def __init__(self, tags: Tags, limit: float | None, meter: RateMeter | None, bucket: TokenBucket | None):
        self.tags, self.limit, self.meter, self.bucket = tags, limit, meter, bucket
        self.throttle_time_ms_total = 0
        self.throttled = 0  # responses that carried a throttle time
        self.throttled_until_ms = 0
        self.recorded_total = 0.0
        self.last_used_ms = 0

    def note_throttle(self, throttle_ms: int, now_ms: int) -> None:
        self.throttle_time_ms_total += throttle_ms
        self.throttled += 1
        self.throttled_until_ms = max(self.throttled_until_ms, now_ms + throttle_ms)


class ClientQuotaManager:
    """One quota type: ``quotas`` maps each configured entity to its bound; ``record`` measures a client and
    answers the throttle time (ms) its response carries and its connection is muted for."""

    def __init__(self, quota_type: QuotaType, num_samples: int = 11, window_ms: int = 1000,
                 clock: Callable[[], int] = monotonic_ms, max_throttle_ms: int | None = None):
        self.quota_type, self.num_samples, self.window_ms = quota_type, num_samples, window_ms
        self.clock = clock
        self.max_throttle_ms = max_throttle_ms  # the request quota throttles at most one window
        self.quotas: dict[QuotaEntity, float] = {}
        self.sensors: dict[Tags, ClientSensor] = {}
        self._by_client: dict[tuple[str, str], ClientSensor] = {}
        self._expired_at_ms = 0

    @property
    def enabled(self) -> bool:
        return bool(self.quotas)

    # -- configuration -------------------------------------------------------------------------
    def update(self, entity: QuotaEntity, bound: float | None) -> bool:
        """Set (or with None remove) one entity's bound; True if that changed anything. Every sensor's
        limit is recomputed and the client lookup cleared: a default's change reaches many tags."""
        if self.quotas.get(entity) == bound:
            return False
        if bound is None:
            del self.quotas[entity]
        else:
            self.quotas[entity] = bound
        log.info("%s quota for %s %s", self.quota_type.group, entity.describe(),
                 "removed" if bound is None else f"now {bound:g}")
        self._by_client.clear()
        for sensor in self.sensors.values():
            limit = quota_limit(self.quotas, sensor.tags)
            if limit != sensor.limit and self.quota_type in SMOOTHED:
                sensor.bucket = TokenBucket(1, self.window_ms)  # a new bound starts level, not in the old one's debt
            sensor.limit = limit
        return True

    # -- measurement ---------------------------------------------------------------------------
    def sensor(self, user: str, client_id: str) -> ClientSensor:
        key = (user, client_id)
        found = self._by_client.get(key)
        now = self.clock()
        if found is None:
            if now - self._expired_at_ms >= EXPIRY_CHECK_MS:
                self._expire(now)
            tags = metric_tags(self.quotas, user, client_id)
            found = self.sensors.get(tags)
            if found is None:
                found = self.sensors[tags] = self._new_sensor(tags)
            self._by_client[key] = found
        found.last_used_ms = now
        return found

    def _new_sensor(self, tags: Tags) -> ClientSensor:
        limit = quota_limit(self.quotas, tags)
        if self.quota_type is QuotaType.CONTROLLER_MUTATION:
            return ClientSensor(tags, limit, None, TokenBucket(self.num_samples, self.window_ms))
        smoother = TokenBucket(1, self.window_ms) if self.quota_type in SMOOTHED else None
        return ClientSensor(tags, limit, RateMeter(self.num_samples, self.window_ms), smoother)

    def _expire(self, now_ms: int) -> None:
        self._expired_at_ms = now_ms
        idle = [tags for tags, sensor in self.sensors.items() if now_ms - sensor.last_used_ms >= SENSOR_EXPIRY_MS]
        if idle:
            for tags in idle:
                del self.sensors[tags]
            self._by_client.clear()

    def record(self, user: str, client_id: str, value: float) -> int:
        """Measure ``value`` (bytes, or request-time percentage) for this client and answer its throttle time
        in ms: 0 within its quota or with no quota of this type configured (then nothing is recorded)."""
        if not self.quotas:
            return 0
        sensor = self.sensor(user, client_id)
        assert sensor.meter is not None
        now, limit = sensor.last_used_ms, sensor.limit
        sensor.meter.record(value, now)
        sensor.recorded_total += value
        if limit is None:
            return 0
        throttle_ms = sensor.meter.throttle_time_ms(limit, now)
        if sensor.bucket is not None:  # a byte rate: never more than one window's worth ahead of the quota
            sensor.bucket.record(value, limit, now)
            throttle_ms = max(throttle_ms, sensor.bucket.throttle_time_ms(limit, now))
        if self.max_throttle_ms is not None:
            throttle_ms = min(throttle_ms, self.max_throttle_ms)
        return throttle_ms

    def unrecord(self, user: str, client_id: str, value: float) -> None:
        """Take back a recorded value (a throttled Fetch sends nothing: Kafka's ``unrecordQuotaSensor``)."""
        if self.quotas:
            sensor = self.sensor(user, client_id)
            assert sensor.meter is not None
            sensor.meter.record(-value, sensor.last_used_ms)
            sensor.recorded_total -= value
            if sensor.bucket is not None and sensor.limit is not None:
                sensor.bucket.record(-value, sensor.limit, sensor.last_used_ms)

    def throttled(self, user: str, client_id: str, throttle_ms: int) -> None:
        """The response carries ``throttle_ms`` because of this quota: count it (Kafka's throttle-time sensor)."""
        if throttle_ms > 0 and self.quotas:
            sensor = self.sensor(user, client_id)
            sensor.note_throttle(throttle_ms, sensor.last_used_ms)

    def max_value_in_window(self, user: str, client_id: str) -> float | None:
        """The most one request may take without being throttled for sure, None when unlimited: what caps a
        consumer's fetch. Kafka's ``getMaxValueInQuotaWindow`` is the bound over all but one window; a byte rate
        here is also held within one window's worth (``SMOOTHED``), so that is the cap."""
        if not self.quotas:
            return None
        limit = self.sensor(user, client_id).limit
        if limit is None:
            return None
        windows = 1 if self.quota_type in SMOOTHED else self.num_samples - 1
        return limit * windows * self.window_ms / 1000.0

    # -- controller mutations (KIP-599) ----------------------------------------------------------
    def record_mutations(self, user: str, client_id: str, permits: float, strict: bool) -> int:
        """Controller mutations (partitions created or deleted). ``strict`` (CreateTopics v6+, CreatePartitions
        v3+, DeleteTopics v5+): refused, with the time until credits return, while the bucket is below zero,
        else taken whatever their number (answer 0). Permissive (older versions): always taken; the answer is
        the throttle time the response carries."""
        if not self.quotas:
            return 0
        sensor = self.sensor(user, client_id)
        bucket, limit, now = sensor.bucket, sensor.limit, sensor.last_used_ms
        assert bucket is not None
        if limit is None:
            return 0
        if strict:
            refused_ms = bucket.throttle_time_ms(limit, now)
            if refused_ms:
                return refused_ms
            bucket.record(permits, limit, now)
            sensor.recorded_total += permits
            return 0
        bucket.record(permits, limit, now)
        sensor.recorded_total += permits
        return bucket.throttle_time_ms(limit, now)

    def mutation_throttle_ms(self, user: str, client_id: str) -> int:
        """The time until this client's credits are back at zero (the strict response's throttle time)."""
        if not self.quotas:
            return 0
        sensor = self.sensor(user, client_id)
        assert sensor.bucket is not None
        return 0 if sensor.limit is None else sensor.bucket.throttle_time_ms(sensor.limit, sensor.last_used_ms)


class QuotaManagers:
    """The broker's four client quota managers (Kafka's ``QuotaManagers``), fed by ``/config/users`` and
    ``/config/clients`` through ``update_entity``."""

    def __init__(self, config: QuotaConfig | None = None, clock: Callable[[], int] = monotonic_ms):
        config = config or QuotaConfig()
        self.config = config
        self.produce = ClientQuotaManager(QuotaType.PRODUCE, config.num_samples, config.window_ms, clock)
        self.fetch = ClientQuotaManager(QuotaType.FETCH, config.num_samples, config.window_ms, clock)
        self.request = ClientQuotaManager(QuotaType.REQUEST, config.num_samples, config.window_ms, clock,
                                          max_throttle_ms=config.window_ms)
        self.controller_mutation = ClientQuotaManager(QuotaType.CONTROLLER_MUTATION, config.controller_num_samples,
                                                      config.controller_window_ms, clock)
        self.by_type = {QuotaType.PRODUCE: self.produce, QuotaType.FETCH: self.fetch, QuotaType.REQUEST: self.request,
                        QuotaType.CONTROLLER_MUTATION: self.controller_mutation}

        self.enabled = False  # any quota at all configured: with none, requests skip quota work entirely

    def update_entity(self, entity: QuotaEntity, config: Mapping[str, str]) -> None:
        """An entity's stored config (its whole ``/config/...`` znode, {} when gone) becomes its quotas: every
        type it sets is updated, every type it lacks removed (Kafka's ``QuotaConfigHandler``)."""
        bounds = quotas_of(config)
        for quota_type, manager in self.by_type.items():
            manager.update(entity, bounds.get(quota_type))
        self.enabled = any(manager.quotas for manager in self.by_type.values())

    def entities(self) -> dict[QuotaEntity, dict[str, float]]:
        """Every configured entity with its quota keys: what this broker enforces now."""
        out: dict[QuotaEntity, dict[str, float]] = {}
        for quota_type, manager in self.by_type.items():
            for entity, bound in manager.quotas.items():
                out.setdefault(entity, {})[quota_type.key] = bound
        return out
