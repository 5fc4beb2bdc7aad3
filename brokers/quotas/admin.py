"""The admin side of client quotas (KIP-546), as Kafka 2.8's ``ZkAdminManager`` decides it: which entities a
DescribeClientQuotas filter selects, and what an AlterClientQuotas entry writes. Pure: the handlers
(``brokers.server.handlers.client_quotas``) and the tools read and write ZooKeeper around these.

Entities are ``QuotaEntity`` (``DEFAULT`` for the default user or client id, which the wire names with a null
``entity_name``). Their stored configs are whole ``/config/users|clients/...`` znodes: quota keys (``QUOTA_KEYS``)
beside other keys (a user's SCRAM credentials), all strings.

Describe: a filter is components, at most one per entity type (``user``, ``client-id``; ``ip`` is accepted alone
and selects nothing: zkafka keeps no IP quotas), each matching a type's name EXACT(0)ly, its DEFAULT(1) or any
SPECIFIED(2) name (the default included). An entity is selected when every component matches its part and, with
``strict``, it has no part no component names. Only entities with a quota key are answered, quota keys only,
values as floats.

Alter: an entry names its entity as (type, name) pairs and its ops (key, value, remove). An entry with any error
(Kafka's INVALID_REQUEST messages: ``QuotaConfigError``) writes nothing; the others are planned on the current
config, ops in order: a set stores a byte rate as a whole number (``1024``), the others as Java prints a double
(``200.0``); a remove drops the key. Non-quota keys are never touched: an op naming one is ``Invalid
configuration key k``, a remove too (Kafka 2.8 would drop the key), so AlterClientQuotas cannot delete a SCRAM
credential. A value must be a finite number above zero (``parse_quota_value``; Kafka 2.8 stores a negative one).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from brokers.quotas.entities import (
    CLIENT_ID,
    DEFAULT,
    QUOTA_KEYS,
    USER,
    QuotaConfigError,
    QuotaEntity,
    parse_quota_value,
)

IP = "ip"  # Kafka's ClientQuotaEntity.IP: connection-rate quotas, which zkafka does not keep
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2  # DescribeClientQuotas' match types
EPSILON = 1e-6  # Kafka's tolerance when a double names a whole number
LONG_MAX = 2 ** 63 - 1


class UnsupportedQuotaEntityType(QuotaConfigError):
    """A filter component of a type Kafka does not know (UNSUPPORTED_VERSION, not INVALID_REQUEST)."""


@dataclass(frozen=True)
class FilterComponent:
    """One DescribeClientQuotas component: ``match`` is the name for MATCH_EXACT, else unused."""

    entity_type: str
    match_type: int
    match: str | None = None


@dataclass(frozen=True)
class QuotaOp:
    """One AlterClientQuotas op: set ``key`` to ``value``, or with ``remove`` drop it."""

    key: str
    value: float = 0.0
    remove: bool = False


def java_double(value: float) -> str:
    """``value`` as Java's ``Double.toString`` writes it: ``200.0``, ``0.5``, ``1.0E7``, ``1.0E-4``."""
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    magnitude = abs(value)
    if magnitude == 0 or 1e-3 <= magnitude < 1e7:
        return repr(value)  # Python's repr is decimal in this range, shortest digits, always with a point
    _, digits, exponent = Decimal(repr(magnitude)).normalize().as_tuple()
    text = "".join(map(str, digits))
    power = exponent + len(text) - 1
    return f"{'-' if value < 0 else ''}{text[0]}.{text[1:] or '0'}E{power}"


# -- DescribeClientQuotas ---------------------------------------------------------------------------------
def _components(components: Iterable[FilterComponent]) -> dict[str, FilterComponent]:
    """The components by entity type, with Kafka's errors for a duplicate, empty or unknown type."""
    by_type: dict[str, FilterComponent] = {}
    for component in components:
        kind = component.entity_type
        if kind in (USER, CLIENT_ID, IP):
            if kind in by_type:
                label = {USER: "user", CLIENT_ID: "client", IP: "ip"}[kind]
                raise QuotaConfigError(f"Duplicate {label} filter component entity type")
            by_type[kind] = component
        elif kind == "":
            raise QuotaConfigError("Unexpected empty filter component entity type")
        else:
            raise UnsupportedQuotaEntityType(f"Custom entity type '{kind}' not supported")
        if component.match_type not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED):
            raise QuotaConfigError(f"Unexpected match type: {component.match_type}")
        if component.match_type == MATCH_EXACT and component.match is None:
            raise QuotaConfigError(f"Unexpected null match for an exact {kind} filter component")
    if IP in by_type and len(by_type) > 1:
        raise QuotaConfigError("Invalid entity filter component combination, IP filter component should not be "
                               "used with user or clientId filter component.")
    return by_type


def _matches(component: FilterComponent | None, name: str | None, strict: bool) -> bool:
    """Kafka's ``matches``: ``name`` is one part of an entity (None: not part of it, DEFAULT: the default)."""
    if component is None:
        return name is None or not strict
    if component.match_type == MATCH_EXACT:
        return name is not None and name != DEFAULT and name == component.match
    if component.match_type == MATCH_DEFAULT:
        return name == DEFAULT
    return name is not None


def quota_values(config: Mapping[str, str]) -> dict[str, float]:
    """An entity's stored quota keys as the floats DescribeClientQuotas answers (a value that is no number
    is left out: a hand-edited znode must not fail the describe)."""
    values: dict[str, float] = {}
    for key, value in config.items():
        if key in QUOTA_KEYS:
            try:
                values[key] = float(value)
            except ValueError:
                continue
    return values


def select_entities(components: Iterable[FilterComponent], strict: bool,
                    entities: Iterable[QuotaEntity]) -> list[QuotaEntity]:
    """The ``entities`` the filter selects (whatever their configs hold), in entity order; QuotaConfigError
    (UnsupportedQuotaEntityType) for a filter Kafka refuses."""
    by_type = _components(components)
    if IP in by_type:
        return []
    user, client_id = by_type.get(USER), by_type.get(CLIENT_ID)
    chosen = [entity for entity in entities
              if _matches(user, entity.user, strict) and _matches(client_id, entity.client_id, strict)]
    return sorted(chosen, key=_order)


def describe_client_quotas(components: Iterable[FilterComponent], strict: bool,
                           configs: Mapping[QuotaEntity, Mapping[str, str]]) -> dict[QuotaEntity, dict[str, float]]:
    """DescribeClientQuotas: the entities of ``configs`` the filter selects that hold a quota key, with their
    quota values (keys in order), in entity order."""
    selected: dict[QuotaEntity, dict[str, float]] = {}
    for entity in select_entities(components, strict, configs):
        values = quota_values(configs[entity])
        if values:
            selected[entity] = dict(sorted(values.items()))
    return selected


def _order(entity: QuotaEntity) -> tuple[bool, str, bool, str]:
    """Users (each followed by its clients), then client ids; defaults first."""
    return entity.user is None, entity.user or "", entity.client_id is not None, entity.client_id or ""


def entity_parts(entity: QuotaEntity) -> list[tuple[str, str | None]]:
    """The entity as the wire names it: (entity type, name or None for the default), user first."""
    return [(kind, None if name == DEFAULT else name)
            for kind, name in ((USER, entity.user), (CLIENT_ID, entity.client_id)) if name is not None]


# -- AlterClientQuotas ----------------------------------------------------------------------------------
def quota_entity(parts: Sequence[tuple[str, str | None]]) -> QuotaEntity:
    """The entity an entry names ((type, name or None for the default) pairs); QuotaConfigError with Kafka's
    words for an empty entity, an unknown type (``ip`` too), an empty name, a type named twice."""
    if not parts:
        raise QuotaConfigError("Invalid empty client quota entity")
    names: dict[str, str] = {}
    for kind, name in parts:
        if kind not in (USER, CLIENT_ID):
            raise QuotaConfigError(f"Unhandled client quota entity type: {kind}")
        if name == "":
            raise QuotaConfigError(f"Empty {kind} not supported")
        if kind in names:
            raise QuotaConfigError(f"Duplicate {kind} entity type in client quota entity")
        names[kind] = DEFAULT if name is None else name
    return QuotaEntity.checked(names.get(USER), names.get(CLIENT_ID))


def stored_value(key: str, value: float) -> str:
    """The text a set op stores; QuotaConfigError for an unknown key, a positive byte rate that is no whole
    number (Kafka's LONG check, within 1e-6), a value that is not a finite number above zero."""
    quota_type = QUOTA_KEYS.get(key)
    if quota_type is None:
        raise QuotaConfigError(f"Invalid configuration key {key}")
    text = java_double(value)
    if quota_type.whole and math.isfinite(value) and value > 0:
        whole = int(value + EPSILON)  # Scala's (value + epsilon).toLong truncates toward zero
        if abs(whole - value) > EPSILON or whole > LONG_MAX:
            raise QuotaConfigError(f"Configuration {key} must be a LONG value")
        text = str(whole)
    parse_quota_value(key, text)
    return text


def altered_config(current: Mapping[str, str], ops: Iterable[QuotaOp]) -> dict[str, str]:
    """The entity's whole new config after ``ops`` in order (other keys kept); QuotaConfigError for the first
    bad op."""
    config = dict(current)
    for op in ops:
        if op.remove:
            if op.key not in QUOTA_KEYS:
                raise QuotaConfigError(f"Invalid configuration key {op.key}")
            config.pop(op.key, None)
        else:
            config[op.key] = stored_value(op.key, op.value)
    return config


@dataclass(frozen=True)
class AlterationPlan:
    """``results``: per entry in request order, None or the QuotaConfigError that refused it; ``writes``: each
    altered entity's whole new config (an entity altered twice: the ops of both, in order)."""

    results: list[QuotaConfigError | None]
    writes: dict[QuotaEntity, dict[str, str]]


def plan_alterations(entries: Iterable[tuple[Sequence[tuple[str, str | None]], Sequence[QuotaOp]]],
                     configs: Mapping[QuotaEntity, Mapping[str, str]]) -> AlterationPlan:
    """AlterClientQuotas' entries ((entity parts, ops)) over the current stored ``configs``."""
    results: list[QuotaConfigError | None] = []
    writes: dict[QuotaEntity, dict[str, str]] = {}
    for parts, ops in entries:
        try:
            entity = quota_entity(parts)
            current = writes[entity] if entity in writes else configs.get(entity, {})
            writes[entity] = altered_config(current, ops)
        except QuotaConfigError as exc:
            results.append(exc)
            continue
        results.append(None)
    return AlterationPlan(results, writes)
