"""Client quotas as ``/metrics``, the admin API and the dashboard show them: one broker's ``QuotaManagers``
(``brokers.quotas``) read into plain data, and every broker's merged. Pure: the caller hands in the managers.

Each quota type measures the clients of one *sensor* per metric tags (user, client id; "" = not part of the
measured entity, Kafka's tags): a ``SensorReading`` is what one sensor shows now, its measured value being

============================ ======================= =========================================
Produce / Fetch              ``byte_rate``           bytes/s over the quota window
Request                      ``request_time``        % of one event loop's time (100 = all of it)
ControllerMutation           ``tokens``              credits left in the token bucket (None while
                                                     the tags are unlimited: a bucket needs a rate)
============================ ======================= =========================================

and its bound (``limit``, None = unlimited), the throttle time it handed out (ms, summed), the responses that
carried one, and how long it stays throttled from now. A type with no quota configured shows no sensor at all
(nothing is measured then, Kafka's ``quotasEnabled``; the sensors left from a removed quota are frozen, not
news). Reading a rate drops the samples that left the window and refills a bucket up to now: both are what the
next request would do first, so a read changes no answer.

Each broker measures the requests it serves (as Kafka's brokers do): a client producing to partitions led by
two brokers has a sensor on each, each with the whole bound. ``cluster_quotas`` lists them side by side, each
row naming its broker; configured entities are the cluster's (every broker reads the same ``/config/users``
and ``/config/clients`` znodes), listed once with the brokers that enforce them.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from brokers.quotas.entities import QuotaEntity, QuotaType
from brokers.quotas.manager import ClientSensor, QuotaManagers

# quota type -> (the measured value's metric name, its unit, the bound's unit)
MEASURES: dict[QuotaType, tuple[str, str, str]] = {
    QuotaType.PRODUCE: ("byte_rate", "bytes/s", "bytes/s"),
    QuotaType.FETCH: ("byte_rate", "bytes/s", "bytes/s"),
    QuotaType.REQUEST: ("request_time", "%", "%"),
    QuotaType.CONTROLLER_MUTATION: ("tokens", "mutations", "mutations/s"),
}
TYPE_ORDER = {quota_type.group: n for n, quota_type in enumerate(QuotaType)}


@dataclass(frozen=True)
class SensorReading:
    quota_type: QuotaType
    user: str
    client_id: str
    value: float | None  # byte rate, request-time %, or tokens left (see MEASURES); None: not measurable
    limit: float | None  # None: unlimited
    throttle_time_ms_total: int
    throttled_responses: int
    throttle_remaining_ms: int  # 0: not throttled now

    @property
    def metric(self) -> str:
        return MEASURES[self.quota_type][0]

    @property
    def throttled_now(self) -> bool:
        return self.throttle_remaining_ms > 0


def measured(sensor: ClientSensor, now_ms: int) -> float | None:
    """A sensor's value now: its rate, or the credits left in its bucket (None for an unlimited bucket)."""
    if sensor.meter is not None:
        return sensor.meter.rate(now_ms)
    if sensor.bucket is not None and sensor.limit is not None:
        return sensor.bucket.tokens(sensor.limit, now_ms)
    return None


def readings(quotas: QuotaManagers) -> list[SensorReading]:
    """Every sensor of every quota type with a quota configured, by type then tags."""
    out = []
    for quota_type, manager in quotas.by_type.items():
        if not manager.quotas:
            continue
        now = manager.clock()
        for (user, client_id), sensor in sorted(manager.sensors.items()):
            out.append(SensorReading(quota_type, user, client_id, measured(sensor, now), sensor.limit,
                                     sensor.throttle_time_ms_total, sensor.throttled,
                                     max(0, sensor.throttled_until_ms - now)))
    return out


def _number(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def sensor_row(reading: SensorReading, broker_id: int) -> dict:
    """One sensor as the admin API shows it: ``rate`` (byte rate or request-time %) or ``tokens``, with units,
    ``usage`` (rate / limit; for a bucket, None), the throttle totals and whether it is throttled now."""
    metric, unit, limit_unit = MEASURES[reading.quota_type]
    rate = reading.value if metric != "tokens" else None
    usage = rate / reading.limit if rate is not None and reading.limit else None
    return {"broker": broker_id, "quota_type": reading.quota_type.group, "quota_key": reading.quota_type.key,
            "user": reading.user, "client_id": reading.client_id, "metric": metric, "unit": unit,
            "rate": _number(rate), "tokens": _number(reading.value if metric == "tokens" else None),
            "limit": reading.limit, "limit_unit": limit_unit, "usage": _number(usage),
            "throttle_time_ms_total": reading.throttle_time_ms_total,
            "throttled_responses": reading.throttled_responses,
            "throttled_now": reading.throttled_now, "throttle_remaining_ms": reading.throttle_remaining_ms}


def _entity_key(entity: QuotaEntity) -> tuple:
    """Entities sorted user first; None (not part of it) before names (a dataclass order would compare None)."""
    return (entity.user is not None, entity.user or "", entity.client_id is not None, entity.client_id or "")


def entity_rows(entities: Mapping[QuotaEntity, Mapping[str, float]]) -> list[dict]:
    """The configured entities: ``user`` / ``client_id`` None when not part of the entity, ``"<default>"`` for
    the default one; ``quotas`` their keys (``producer_byte_rate``, ...) and bounds."""
    return [{"user": entity.user, "client_id": entity.client_id, "entity": entity.describe(),
             "quotas": dict(sorted(entities[entity].items()))} for entity in sorted(entities, key=_entity_key)]


def local_quotas(quotas: QuotaManagers, broker_id: int) -> dict:
    """This broker's configured entities and sensors (``GET /api/v1/quotas``, and the fan-out's answer)."""
    return {"broker_id": broker_id, "entities": entity_rows(quotas.entities()),
            "sensors": [sensor_row(reading, broker_id) for reading in readings(quotas)]}


def _sensor_order(row: Mapping[str, Any]) -> tuple:
    """Throttled now first, then by type, user, client id, broker."""
    return (not row.get("throttled_now"), TYPE_ORDER.get(row.get("quota_type"), len(TYPE_ORDER)),
            str(row.get("user")), str(row.get("client_id")), row.get("broker", 0))


def cluster_quotas(by_broker: Mapping[int, Mapping[str, Any] | None]) -> dict:
    """Every broker's ``local_quotas`` merged: ``entities`` once per (entity, bounds) with the ``brokers``
    enforcing them (two rows for one entity while a change has reached only some brokers), every broker's
    ``sensors`` (throttled now first), ``throttled_now`` their count and ``unanswered`` the brokers that did
    not answer (their sensors are unknown, not absent)."""
    entities: dict[tuple, dict] = {}
    sensors: list[dict] = []
    for broker_id, answer in sorted(by_broker.items()):
        if answer is None:
            continue
        for row in answer.get("entities") or ():
            key = (row.get("user"), row.get("client_id"), tuple(sorted((row.get("quotas") or {}).items())))
            merged = entities.setdefault(key, {**row, "brokers": []})
            merged["brokers"].append(broker_id)
        sensors.extend(answer.get("sensors") or ())
    sensors.sort(key=_sensor_order)
    rows = sorted(entities.values(), key=lambda r: (_entity_key(QuotaEntity(r["user"], r["client_id"])),
                                                     sorted(r["quotas"].items())))
    return {"entities": rows, "sensors": sensors, "throttled_now": sum(bool(s.get("throttled_now")) for s in sensors),
            "unanswered": sorted(broker_id for broker_id, answer in by_broker.items() if answer is None)}
