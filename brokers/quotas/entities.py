"""Client quota entities and the precedence that picks a connection's quota (Kafka 2.8's ``ClientQuotaManager``
with its ``DefaultQuotaCallback``, KIP-55): pure.

An entity is a user, a client id, or both, each either named or ``<default>``; ZooKeeper keeps its quota keys
in ``/config/users/<user>``, ``/config/clients/<client-id>`` or ``/config/users/<user>/clients/<client-id>``
(names sanitized: URL-encoded, as Kafka's ``Sanitizer``), next to a user's SCRAM credentials.

For each quota type (``QuotaType``: one broker config key each) separately, the first of these entities that has
that key set gives the connection of user U with client id C its quota::

    1 /config/users/U/clients/C         5 /config/users/<default>/clients/<default>
    2 /config/users/U/clients/<default> 6 /config/users/<default>
    3 /config/users/U                   7 /config/clients/C
    4 /config/users/<default>/clients/C 8 /config/clients/<default>

and decides the *metric tags* (user, client-id) that name the rate the connection is measured by: connections
that share tags share one rate. A user-only quota (3, 6) measures all of U's clients together (tags (U, "")),
a client-id quota (7, 8) all users of client id C together (("", C)), the others each (U, C) pair. With no
quota set, the tags are ("", C) and the limit None (unlimited).
"""
from __future__ import annotations

import enum
import logging
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass

from brokers.protocol.scram import sanitize  # Kafka's Sanitizer: the znode name of a user (or a client id)

log = logging.getLogger(__name__)

DEFAULT = "<default>"  # Kafka's ConfigEntityName.Default
USER, CLIENT_ID = "user", "client-id"  # Kafka's ClientQuotaEntity types (DescribeClientQuotas' entity_type)


class QuotaType(enum.Enum):
    """Kafka's QuotaType: (metric group, config key, whether the value is a whole number)."""

    PRODUCE = ("Produce", "producer_byte_rate", True)
    FETCH = ("Fetch", "consumer_byte_rate", True)
    REQUEST = ("Request", "request_percentage", False)
    CONTROLLER_MUTATION = ("ControllerMutation", "controller_mutation_rate", False)

    def __init__(self, group: str, key: str, whole: bool):
        self.group, self.key, self.whole = group, key, whole


QUOTA_KEYS: dict[str, QuotaType] = {quota_type.key: quota_type for quota_type in QuotaType}


class QuotaConfigError(ValueError):
    """A quota entity or value Kafka refuses (INVALID_REQUEST); the message names what is wrong."""


def desanitize(name: str) -> str:
    return urllib.parse.unquote(name)


@dataclass(frozen=True, order=True)
class QuotaEntity:
    """``user`` / ``client_id``: None = not part of the entity, ``DEFAULT`` = the default one, else a name
    (desanitized). At least one part is set."""

    user: str | None = None
    client_id: str | None = None

    @classmethod
    def checked(cls, user: str | None, client_id: str | None) -> QuotaEntity:
        """An entity a request names, or QuotaConfigError with Kafka's words (the lookups of ``metric_tags``
        make entities of any name, an empty client id included: they just match nothing)."""
        if user is None and client_id is None:
            raise QuotaConfigError("Invalid empty client quota entity")
        for kind, name in ((USER, user), (CLIENT_ID, client_id)):
            if name == "":
                raise QuotaConfigError(f"Empty {kind} not supported")
        return cls(user, client_id)

    @classmethod
    def from_znode(cls, entity_type: str, name: str) -> QuotaEntity:
        """From a config change's entity: ("users", "alice"), ("users", "alice/clients/app"),
        ("clients", "app"); names sanitized as in the znode path. QuotaConfigError for anything else."""
        if entity_type == "clients" and name and "/" not in name:
            return cls.checked(None, _entity_name(name))
        if entity_type == "users" and name:
            user, sep, rest = name.partition("/clients/")
            if not sep and "/" not in name:
                return cls.checked(_entity_name(user), None)
            if sep and user and rest and "/" not in rest:
                return cls.checked(_entity_name(user), _entity_name(rest))
        raise QuotaConfigError(f"not a client quota entity: {entity_type}/{name}")

    def znode(self) -> tuple[str, str]:
        """(entity type, sanitized name) of its ``/config/<type>/<name>`` znode."""
        if self.user is None:
            return "clients", _znode_name(self.client_id)
        if self.client_id is None:
            return "users", _znode_name(self.user)
        return "users", f"{_znode_name(self.user)}/clients/{_znode_name(self.client_id)}"

    def describe(self) -> str:
        """Kafka's ``KafkaQuotaEntity.toString``-like label: ``user 'alice', client-id 'app'``."""
        parts = [f"{kind} {'default' if name == DEFAULT else repr(name)}"
                 for kind, name in ((USER, self.user), (CLIENT_ID, self.client_id)) if name is not None]
        return ", ".join(parts)


def entities_from_znodes(configs: Mapping[tuple[str, str], Mapping[str, str]]) -> dict[QuotaEntity, Mapping[str, str]]:
    """Configs keyed by (entity type, sanitized name), as ``KafkaZkClient.get_quota_entity_configs`` reads them,
    keyed by entity instead; a znode that names no entity is left out (logged)."""
    out: dict[QuotaEntity, Mapping[str, str]] = {}
    for (entity_type, name), config in configs.items():
        try:
            out[QuotaEntity.from_znode(entity_type, name)] = config
        except QuotaConfigError as exc:
            log.warning("ignoring %s", exc)
    return out


def _entity_name(sanitized: str) -> str:
    return DEFAULT if sanitized == DEFAULT else desanitize(sanitized)


def _znode_name(name: str | None) -> str:
    assert name is not None
    return DEFAULT if name == DEFAULT else sanitize(name)


def parse_quota_value(key: str, value: str | float) -> float:
    """A quota key's value as stored or sent; QuotaConfigError for an unknown key, a value that is not a
    number (a whole one for the byte rates), or one that is not above zero."""
    quota_type = QUOTA_KEYS.get(key)
    if quota_type is None:
        raise QuotaConfigError(f"Invalid configuration key {key}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise QuotaConfigError(f"Invalid value {value!r} for configuration {key}: not a number") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise QuotaConfigError(f"Invalid value {value!r} for configuration {key}: not a number")
    if quota_type.whole and number != int(number):
        raise QuotaConfigError(f"Invalid value {value!r} for configuration {key}: must be a whole number")
    if number <= 0:
        raise QuotaConfigError(f"Invalid value {value!r} for configuration {key}: must be greater than 0")
    return number


def quotas_of(config: Mapping[str, str]) -> dict[QuotaType, float]:
    """The quota keys of an entity's stored config (other keys, such as SCRAM credentials, are skipped); a
    value that does not parse is skipped too (the writer validated it; a hand-edited znode must not stop
    the broker)."""
    out: dict[QuotaType, float] = {}
    for key, value in config.items():
        if key in QUOTA_KEYS:
            try:
                out[QUOTA_KEYS[key]] = parse_quota_value(key, value)
            except QuotaConfigError:
                continue
    return out


Tags = tuple[str, str]  # (user, client id) metric tags; "" = not part of the measured entity


def metric_tags(quotas: Mapping[QuotaEntity, float], user: str, client_id: str) -> Tags:
    """The tags of the rate a connection of ``user`` / ``client_id`` is measured by, for one quota type whose
    configured entities are the keys of ``quotas`` (Kafka's ``DefaultQuotaCallback.quotaMetricTags``)."""
    if not quotas:
        return "", client_id
    for entity, tags in ((QuotaEntity(user, client_id), (user, client_id)),
                         (QuotaEntity(user, DEFAULT), (user, client_id)),
                         (QuotaEntity(user, None), (user, "")),
                         (QuotaEntity(DEFAULT, client_id), (user, client_id)),
                         (QuotaEntity(DEFAULT, DEFAULT), (user, client_id)),
                         (QuotaEntity(DEFAULT, None), (user, ""))):
        if entity in quotas:
            return tags
    return "", client_id


def quota_limit(quotas: Mapping[QuotaEntity, float], tags: Tags) -> float | None:
    """The bound of the rate named by ``tags``, None for unlimited (Kafka's ``DefaultQuotaCallback.quotaLimit``)."""
    user, client_id = tags
    if user and client_id:
        candidates = (QuotaEntity(user, client_id), QuotaEntity(user, DEFAULT), QuotaEntity(DEFAULT, client_id),
                      QuotaEntity(DEFAULT, DEFAULT))
    elif user:
        candidates = (QuotaEntity(user, None), QuotaEntity(DEFAULT, None))
    elif client_id:
        candidates = (QuotaEntity(None, client_id), QuotaEntity(None, DEFAULT))
    else:
        return None
    for entity in candidates:
        if entity in quotas:
            return quotas[entity]
    return None
