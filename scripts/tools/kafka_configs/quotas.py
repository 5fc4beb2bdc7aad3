"""``kafka-configs --entity-type users|clients``: client quotas (KIP-55, KIP-546), the pure half (Kafka 2.8's
ConfigCommand): the entity flags, what an alteration may hold, and the lines printed.

Entity flags: ``--entity-type`` repeats (``users`` and ``clients`` together name a user's client id), each paired
by position with the ``--entity-name`` / ``--entity-default`` given (in command-line order; ``""`` is the default
below); or Kafka's shorthands ``--user U``, ``--client C``, ``--user-defaults``, ``--client-defaults``, never
both kinds at once. ``--alter`` names every type; ``--describe`` may leave the last ones unnamed (every entity
of that type).

Over ``--bootstrap-server`` (``scripts.tools.kafka_configs.quotas_admin``) an alteration is quota keys only
(Kafka's ``Only quota configs can be added ...``), or for a user SCRAM credentials only (never both, never for the
default user); describe prints ``Quota configs for user-principal 'alice', client-id 'app' are
producer_byte_rate=1024.0, ...`` (the default: ``the default user-principal``), values as Java prints a double.
Over ``--zookeeper`` (``command``) the entity's znode is read and written whole: quota keys validated as the
brokers do, SCRAM credentials (a named user only) stored as Kafka's credential strings, other keys refused;
describe prints ``Configs for user-principal 'alice', client-id 'app' are producer_byte_rate=1024`` (the
default: ``default user-principal``), a user's SCRAM credentials on a line of their own (iterations only).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from brokers.protocol.scram import HASHES
from brokers.quotas.admin import MATCH_DEFAULT, MATCH_EXACT, MATCH_SPECIFIED, FilterComponent, java_double
from brokers.quotas.entities import (
    CLIENT_ID,
    DEFAULT,
    QUOTA_KEYS,
    USER,
    QuotaConfigError,
    QuotaEntity,
    parse_quota_value,
)
from scripts.tools.kafka_configs import users
from scripts.tools.kafka_configs.syntax import ConfigCommandError

QUOTA_ENTITY_TYPES = ("users", "clients")
_WIRE_TYPE = {"users": USER, "clients": CLIENT_ID}
SCRAM, QUOTAS = "scram", "quotas"  # what a --bootstrap-server alteration of users/clients changes


class EntityFlagsError(ValueError):
    """Entity flags Kafka refuses; the message names the flags (the tool exits 2 with it)."""


def entity_flags(entity_types: Sequence[str], entity_names: Sequence[str], user: str | None, client: str | None,
                 user_defaults: bool, client_defaults: bool) -> tuple[list[str], list[str]]:
    """(entity types, entity names) as Kafka's ``ConfigCommandOptions.entityTypes/entityNames`` list them: the
    ``--entity-*`` flags, then the shorthands (client before user, names before defaults)."""
    shorthands = [(t, n) for t, n in (("clients", client), ("users", user)) if n is not None]
    shorthands += [(t, "") for t, flag in (("clients", client_defaults), ("users", user_defaults)) if flag]
    if shorthands and (entity_types or entity_names):
        raise EntityFlagsError("--entity-{type,name,default} should not be used in conjunction with specific "
                               "entity flags")
    return [*entity_types, *(t for t, _ in shorthands)], [*entity_names, *(n for _, n in shorthands)]


def check_entity_flags(types: Sequence[str], names: Sequence[str], alter: bool) -> None:
    """Kafka's checks of users/clients entity flags; EntityFlagsError naming the problem."""
    duplicates = sorted({t for t in types if types.count(t) > 1})
    if duplicates:
        raise EntityFlagsError(f"Duplicate entity type(s) specified: {','.join(duplicates)}")
    if len(types) > 1 and set(types) != set(QUOTA_ENTITY_TYPES):
        raise EntityFlagsError("Only 'users' and 'clients' entity types may be specified together")
    if alter and len(names) != len(types):
        raise EntityFlagsError("--entity-name or --entity-default must be specified with each --entity-type for "
                               "--alter")
    if len(names) > len(types):
        raise EntityFlagsError("More entity names specified than entity types")


def _pairs(types: Sequence[str], names: Sequence[str]) -> dict[str, str | None]:
    """Wire entity type -> name (None: unnamed, DEFAULT: the default), pairing by position."""
    return {_WIRE_TYPE[t]: (None if i >= len(names) else DEFAULT if names[i] == "" else names[i])
            for i, t in enumerate(types)}


def quota_entity(types: Sequence[str], names: Sequence[str]) -> QuotaEntity:
    """The one entity ``--alter`` names (every type named)."""
    pairs = _pairs(types, names)
    return QuotaEntity(pairs.get(USER), pairs.get(CLIENT_ID))


def describe_filter(types: Sequence[str], names: Sequence[str]) -> list[FilterComponent]:
    """``--describe``'s strict DescribeClientQuotas filter: a named type matches EXACT, a default DEFAULT, an
    unnamed one any SPECIFIED name (Kafka's ``ClientQuotaFilter.containsOnly``)."""
    components = []
    for kind, name in _pairs(types, names).items():
        if name is None:
            components.append(FilterComponent(kind, MATCH_SPECIFIED))
        elif name == DEFAULT:
            components.append(FilterComponent(kind, MATCH_DEFAULT))
        else:
            components.append(FilterComponent(kind, MATCH_EXACT, name))
    return components


def fully_named(types: Sequence[str], names: Sequence[str]) -> bool:
    return len(names) == len(types)


# -- --bootstrap-server ------------------------------------------------------------------------------------
def bootstrap_alteration(types: Sequence[str], names: Sequence[str], added: Mapping[str, str],
                         deleted: Sequence[str]) -> str:
    """QUOTAS or SCRAM: what an ``--alter`` over the brokers changes; ConfigCommandError with Kafka's words."""
    keys = [*added, *deleted]
    unknown = [key for key in keys if key not in QUOTA_KEYS and key not in HASHES]
    scram = [key for key in keys if key in HASHES]
    quotas = [key for key in keys if key in QUOTA_KEYS]
    if types[0] == "clients" or len(types) == 2:
        for verb, group in (("added", added), ("deleted", deleted)):
            unexpected = [key for key in group if key not in QUOTA_KEYS]
            if unexpected:
                raise ConfigCommandError(f"Only quota configs can be {verb} for 'clients' using --bootstrap-server. "
                                         f"Unexpected config names: {','.join(unexpected)}")
        return QUOTAS
    for verb, group in (("added", added), ("deleted", deleted)):
        unexpected = [key for key in group if key in unknown]
        if unexpected:
            raise ConfigCommandError(f"Only quota and SCRAM credential configs can be {verb} for 'users' using "
                                     f"--bootstrap-server. Unexpected config names: {','.join(unexpected)}")
    if scram and "" in names:
        raise ConfigCommandError("The use of --entity-default or --user-defaults is not allowed with User SCRAM "
                                 "Credentials using --bootstrap-server.")
    if scram and quotas:
        raise ConfigCommandError("Cannot alter both quota and SCRAM credential configs simultaneously for 'users' "
                                 "using --bootstrap-server.")
    return SCRAM if scram else QUOTAS


def quota_ops(added: Mapping[str, str], deleted: Sequence[str], current: Mapping[str, float]) -> list[dict]:
    """AlterClientQuotas' ops (key, value, remove); ConfigCommandError for a key to delete that the entity does
    not have, or a value that is no number (Kafka's words; the broker judges the rest)."""
    missing = [key for key in deleted if key not in current]
    if missing:
        raise ConfigCommandError(f"Invalid config(s): {','.join(missing)}")
    ops = []
    for key, value in added.items():
        try:
            number = float(value)
        except ValueError:
            raise ConfigCommandError(f"Cannot parse quota configuration value for {key}: {value}") from None
        ops.append(dict(key=key, value=number, remove=False))
    return ops + [dict(key=key, value=0.0, remove=True) for key in deleted]


def quota_label(entity: QuotaEntity) -> str:
    """The entity as ``--describe`` over the brokers names it: ``user-principal 'alice', client-id 'app'``."""
    parts = []
    for label, name in (("user-principal", entity.user), ("client-id", entity.client_id)):
        if name is not None:
            parts.append(f"the default {label}" if name == DEFAULT else f"{label} '{name}'")
    return ", ".join(parts)


def quota_line(entity: QuotaEntity, values: Mapping[str, float]) -> str:
    entries = ", ".join(f"{key}={java_double(value)}" for key, value in values.items())
    return f"Quota configs for {quota_label(entity)} are {entries}"


def completed_line(types: Sequence[str], names: Sequence[str]) -> str:
    """What ``--alter`` over the brokers prints: Kafka names the first entity type given, and its name."""
    if names[0]:
        return f"Completed updating config for {types[0][:-1]} {names[0]}."
    return f"Completed updating default config for {types[0]} in the cluster."


# -- --zookeeper -------------------------------------------------------------------------------------------
def zookeeper_label(entity: QuotaEntity) -> str:
    """Kafka's ``ConfigEntity.toString``: ``user-principal 'alice', client-id 'app'``, ``default client-id``."""
    parts = []
    for label, name in (("user-principal", entity.user), ("client-id", entity.client_id)):
        if name is not None:
            parts.append(f"default {label}" if name == DEFAULT else f"{label} '{name}'")
    return ", ".join(parts)


def takes_scram(entity: QuotaEntity) -> bool:
    """Only a named user's own znode holds SCRAM credentials (Kafka validates the others as client configs)."""
    return entity.client_id is None and entity.user not in (None, DEFAULT)


def zookeeper_config(entity: QuotaEntity, current: Mapping[str, str], added: Mapping[str, str],
                     deleted: Sequence[str]) -> dict[str, str]:
    """The entity's whole new znode config (``--zookeeper --alter``); ConfigCommandError (UserConfigError for a
    SCRAM value) for a key to delete it lacks, a key it cannot hold, a quota value the brokers would refuse."""
    missing = [key for key in deleted if key not in current]
    if missing:
        raise ConfigCommandError(f"Invalid config(s): {','.join(missing)}")
    allowed = {*QUOTA_KEYS, *(HASHES if takes_scram(entity) else ())}
    unknown = [key for key in added if key not in allowed]
    if unknown:
        raise ConfigCommandError(f"Unknown Dynamic Configuration: {','.join(unknown)}.")
    config = {key: value for key, value in current.items() if key not in deleted}
    for key, value in added.items():
        if key in HASHES:
            config[key] = users.scram_credential(key, value)
            continue
        try:
            parse_quota_value(key, value)
        except QuotaConfigError as exc:
            raise ConfigCommandError(str(exc)) from None
        config[key] = value
    return config


def zookeeper_lines(entity: QuotaEntity, config: Mapping[str, str]) -> list[str]:
    """``--zookeeper --describe`` of one entity: its keys (credentials apart: iterations only, on their own line)."""
    plain = {key: value for key, value in sorted(config.items()) if key not in HASHES}
    scram = {key: value for key, value in config.items() if key in HASHES}
    lines = []
    if plain or not scram:
        lines.append(f"Configs for {zookeeper_label(entity)} are {','.join(f'{k}={v}' for k, v in plain.items())}")
    if scram and entity.user is not None:
        lines += users.describe_lines(entity.user, scram)
    return lines
