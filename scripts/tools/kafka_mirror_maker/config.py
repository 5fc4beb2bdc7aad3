"""MirrorMaker 2's properties file (Kafka's ``connect-mirror-maker.properties``) parsed and checked into the
clusters and the enabled replication flows (pure: no client, no network). Every error is a MirrorConfigError
whose message starts with the offending key as written in the file (or ``--clusters``).

Clusters:

- ``clusters`` (required): the aliases, comma separated; each unique, of topic-name characters without ``.``
  (``[A-Za-z0-9_-]+``: the alias prefixes keys and names topics)
- ``<alias>.bootstrap.servers``: required for every cluster of a flow this process runs (``clusters`` of the
  result: those and any other cluster given one)
- ``<alias>.security.protocol``, ``<alias>.ssl.*``, ``<alias>.sasl.*`` over the top-level ``security.protocol``,
  ``ssl.*``, ``sasl.*``: every client of the cluster (``ClusterConfig.client``, librdkafka's names)
- ``<alias>.consumer.*`` / ``.producer.*`` / ``.admin.*`` over the top-level ``consumer.*`` / ``producer.*`` /
  ``admin.*`` (not MM2's own ``consumer.poll.timeout.ms``, ``admin.timeout.ms``): one kind of client

Flows: ``<source>-><target>.<key>`` overrides the top-level ``<key>``, else the default (Kafka 2.8's MM2):

- ``enabled`` false; ``topics`` ``.*``; ``topics.exclude`` (deprecated ``topics.blacklist``)
  ``.*[\\-\\.]internal, .*\\.replica, __.*``; ``groups`` ``.*``; ``groups.exclude`` (``groups.blacklist``)
  ``console-consumer-.*, connect-.*, __.*``; ``config.properties.exclude`` (``config.properties.blacklist``)
  the throttled replicas, ``message.timestamp.*``, ``unclean.leader.election.enable``, ``min.insync.replicas``
  (regular expressions, comma separated, matching whole names; an empty list matches nothing)
- ``replication.factor`` 2; ``offset-syncs.topic.replication.factor``, ``checkpoints.topic.replication.factor``,
  ``heartbeats.topic.replication.factor`` 3 (-1: the broker's default)
- ``refresh.topics``, ``refresh.groups``, ``sync.topic.configs`` ``.enabled`` true ``.interval.seconds`` 600;
  ``emit.checkpoints`` true 60; ``emit.heartbeats`` true 1; ``sync.group.offsets`` false 60 (a negative
  interval disables, as in MM2)
- ``offset.flush.interval.ms`` (Connect's worker key) 60000: how often an at-least-once flow commits its
  progress (a killed mirror re-sends at most that long's records)
- ``offset.lag.max`` 100; ``replication.policy.class`` ``org.apache.kafka.connect.mirror.DefaultReplicationPolicy``;
  ``replication.policy.separator`` ``.``; ``topic.filter.class``, ``group.filter.class``,
  ``config.property.filter.class``: only MM2's default classes
- ``exactly.once.source.support`` disabled (``enabled`` | ``preparing`` | ``disabled``; Kafka 3.5's key, per
  target cluster there: ``<target>.exactly.once.source.support`` comes between the flow's key and the top-level one)
- ``transaction.timeout.ms`` (zkafka's) 60000: the flow's key, else the target's producer setting
  (``<target>.producer.transaction.timeout.ms``, ``producer.transaction.timeout.ms``), else the top-level key

A top-level ``enabled`` is every flow's default, as it is in MM2. Any other key (Connect's worker settings,
``<alias>.<key>`` and ``<source>-><target>.<key>`` that MM2 hands to Connect) is ignored: ``ignored`` lists them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from brokers.config import ConfigError, parse_properties
from scripts.tools.common.client_properties import ClientPropertiesError, librdkafka_config
from scripts.tools.kafka_mirror_maker.policy import policy_for

if TYPE_CHECKING:
    from scripts.tools.kafka_mirror_maker.policy import ReplicationPolicy

ROLES = ("consumer", "producer", "admin")
_MM2_ROLE_KEYS = frozenset({"consumer.poll.timeout.ms", "admin.timeout.ms"})  # MM2's settings, not a client's
_ALIAS = re.compile(r"[A-Za-z0-9_-]+")
_LIST_SEPARATOR = re.compile(r"\s*,\s*")
_INTEGER = re.compile(r"[+-]?\d+")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)")
_LEADING_FLAGS = re.compile(r"\(\?([imsx]+)\)")
_NOTHING = re.compile(r"(?!)")
SCHEDULES = {"refresh.topics": ("true", "600"), "refresh.groups": ("true", "600"),
             "sync.topic.configs": ("true", "600"), "emit.checkpoints": ("true", "60"),
             "emit.heartbeats": ("true", "1"), "sync.group.offsets": ("false", "60")}
DEFAULTS = {
    "enabled": "false", "topics": ".*", "topics.exclude": r".*[\-\.]internal, .*\.replica, __.*",
    "groups": ".*", "groups.exclude": "console-consumer-.*, connect-.*, __.*",
    "config.properties.exclude": r"follower\.replication\.throttled\.replicas, "
                                 r"leader\.replication\.throttled\.replicas, message\.timestamp\.difference\.max\.ms, "
                                 r"message\.timestamp\.type, unclean\.leader\.election\.enable, min\.insync\.replicas",
    "replication.factor": "2", "offset-syncs.topic.replication.factor": "3",
    "checkpoints.topic.replication.factor": "3", "heartbeats.topic.replication.factor": "3",
    "offset.lag.max": "100", "offset.flush.interval.ms": "60000", "exactly.once.source.support": "disabled", "transaction.timeout.ms": "60000",
    "replication.policy.class": "org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
    "replication.policy.separator": ".",
    "topic.filter.class": "org.apache.kafka.connect.mirror.DefaultTopicFilter",
    "group.filter.class": "org.apache.kafka.connect.mirror.DefaultGroupFilter",
    "config.property.filter.class": "org.apache.kafka.connect.mirror.DefaultConfigPropertyFilter",
    **{f"{name}.enabled": enabled for name, (enabled, _) in SCHEDULES.items()},
    **{f"{name}.interval.seconds": interval for name, (_, interval) in SCHEDULES.items()},
}
DEPRECATED = {"topics.exclude": "topics.blacklist", "groups.exclude": "groups.blacklist",
              "config.properties.exclude": "config.properties.blacklist"}
FLOW_KEYS = frozenset(DEFAULTS) | frozenset(DEPRECATED.values())


class MirrorConfigError(ValueError):
    """A MirrorMaker 2 properties file that cannot run: the message names the key (or the file)."""


@dataclass(frozen=True)
class ClusterConfig:
    alias: str
    bootstrap_servers: str
    client: dict[str, str]  # librdkafka's settings of every client of the cluster, bootstrap.servers included
    consumer: dict[str, str]  # over ``client`` for a consumer
    producer: dict[str, str]
    admin: dict[str, str]


@dataclass(frozen=True)
class FlowConfig:
    source: str
    target: str
    topics: re.Pattern
    topics_exclude: re.Pattern
    groups: re.Pattern
    groups_exclude: re.Pattern
    config_properties_exclude: re.Pattern
    replication_factor: int
    offset_syncs_topic_replication_factor: int
    checkpoints_topic_replication_factor: int
    heartbeats_topic_replication_factor: int
    sync_topic_configs_enabled: bool
    sync_topic_configs_interval_s: float
    refresh_topics_enabled: bool
    refresh_topics_interval_s: float
    refresh_groups_enabled: bool
    refresh_groups_interval_s: float
    emit_checkpoints_enabled: bool
    emit_checkpoints_interval_s: float
    emit_heartbeats_enabled: bool
    emit_heartbeats_interval_s: float
    sync_group_offsets_enabled: bool
    sync_group_offsets_interval_s: float
    offset_lag_max: int
    exactly_once: bool
    transaction_timeout_ms: int
    offset_flush_interval_s: float
    policy: ReplicationPolicy
    name: str

    def topic_allowed(self, topic: str) -> bool:
        return bool(self.topics.fullmatch(topic)) and not self.topics_exclude.fullmatch(topic)

    def group_allowed(self, group: str) -> bool:
        return bool(self.groups.fullmatch(group)) and not self.groups_exclude.fullmatch(group)

    def config_property_allowed(self, name: str) -> bool:
        return not self.config_properties_exclude.fullmatch(name)


@dataclass(frozen=True)
class MirrorMakerConfig:
    clusters: dict[str, ClusterConfig]  # those of ``flows`` and any with bootstrap servers, in ``clusters``' order
    flows: list[FlowConfig]  # the enabled flows whose target is one of ``only_clusters``
    ignored: tuple[str, ...] = ()  # the keys this module does not read, sorted


def load(path: str | Path, only_clusters: list[str] | None = None) -> MirrorMakerConfig:
    """``parse`` of the properties file at ``path``."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise MirrorConfigError(f"{path}: cannot read the file: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        props = parse_properties(text, str(path))
    except ConfigError as exc:
        raise MirrorConfigError(str(exc)) from None
    return parse(props, only_clusters)


def parse(props: dict[str, str], only_clusters: list[str] | None = None) -> MirrorMakerConfig:
    """The clusters and enabled flows of MM2's ``props``; ``only_clusters`` (MM2's ``--clusters``) keeps the flows
    that target one of them. Every enabled flow is checked, kept or not."""
    aliases = _aliases(props)
    targets = _only(only_clusters, aliases)
    _check_flow_keys(props, aliases)
    pairs = [(s, t) for s in aliases for t in aliases if s != t]
    flows = [_flow(props, s, t) for s, t in pairs if _bool(*_pick(props, f"{s}->{t}.", "enabled"))]
    flows = [flow for flow in flows if flow.target in targets]
    used = {alias for flow in flows for alias in (flow.source, flow.target)}
    clusters = {alias: _cluster(props, alias) for alias in aliases
                if alias in used or props.get(f"{alias}.bootstrap.servers", "").strip()}
    return MirrorMakerConfig(clusters, flows, tuple(sorted(k for k in props if not _known(k, aliases))))


def _aliases(props: dict[str, str]) -> list[str]:
    value = props.get("clusters", "").strip()
    if not value:
        raise MirrorConfigError("clusters: required, the comma-separated cluster aliases (e.g. clusters = A, B)")
    aliases: list[str] = []
    for alias in _LIST_SEPARATOR.split(value):
        if not _ALIAS.fullmatch(alias):
            raise MirrorConfigError(f"clusters: invalid cluster alias {alias!r}: letters, digits, '_' and '-' only")
        if alias in aliases:
            raise MirrorConfigError(f"clusters: duplicate cluster alias {alias!r}")
        aliases.append(alias)
    return aliases


def _only(only_clusters: list[str] | None, aliases: list[str]) -> set[str]:
    for alias in only_clusters or ():
        if alias not in aliases:
            raise MirrorConfigError(f"--clusters: unknown cluster alias {alias!r} (clusters = {', '.join(aliases)})")
    return set(only_clusters or aliases)


def _flow_key(key: str) -> tuple[str, str, str] | None:
    """``(source, target, setting)`` of a ``source->target.setting`` key, else None."""
    head, _, setting = key.partition(".")
    source, arrow, target = head.partition("->")
    return (source, target, setting) if arrow else None


def _check_flow_keys(props: dict[str, str], aliases: list[str]) -> None:
    for key in props:
        parts = _flow_key(key)
        if parts is None:
            continue
        source, target, setting = parts
        for alias in (source, target):
            if alias not in aliases:
                raise MirrorConfigError(f"{key}: unknown cluster alias {alias!r} (clusters = {', '.join(aliases)})")
        if source == target:
            raise MirrorConfigError(f"{key}: a flow replicates between two different clusters")
        if not setting:
            raise MirrorConfigError(f"{key}: a flow key names a setting: {source}->{target}.<setting>")


def _known(key: str, aliases: list[str]) -> bool:
    """Whether ``parse`` reads ``key`` (a cluster's, a flow's or a top-level key)."""
    if (parts := _flow_key(key)) is not None:
        return parts[2] in FLOW_KEYS
    alias, _, rest = key.partition(".")
    if alias in aliases:
        return rest in ("bootstrap.servers", "exactly.once.source.support") or _client_key(rest) or _role(rest)
    return key == "clusters" or key in FLOW_KEYS or _client_key(key) or (_role(key) and key not in _MM2_ROLE_KEYS)


def _client_key(key: str) -> bool:
    return key == "security.protocol" or key.startswith(("ssl.", "sasl."))


def _role(key: str) -> bool:
    return key.startswith(tuple(f"{role}." for role in ROLES))


def _pick(props: dict[str, str], prefix: str, name: str, *fallbacks: str) -> tuple[str, str]:
    """``(key, value)`` of setting ``name``: ``prefix + name`` (then its deprecated name), the ``fallbacks`` keys,
    the top-level ``name`` (then its deprecated name), else the default (named ``prefix + name``)."""
    names = (name, DEPRECATED[name]) if name in DEPRECATED else (name,)
    for key in (*(prefix + n for n in names), *fallbacks, *names):
        if key in props:
            return key, props[key]
    return prefix + name, DEFAULTS[name]


def _flow(props: dict[str, str], source: str, target: str) -> FlowConfig:
    prefix = f"{source}->{target}."

    def pick(name: str, *fallbacks: str) -> tuple[str, str]:
        return _pick(props, prefix, name, *fallbacks)

    for name in ("topic.filter.class", "group.filter.class", "config.property.filter.class"):
        key, value = pick(name)
        if value.strip() != DEFAULTS[name]:
            raise MirrorConfigError(f"{key}: only {DEFAULTS[name]} is supported, not {value.strip()!r}")
    schedules: dict[str, bool | float] = {}
    for name in SCHEDULES:
        enabled, interval = _bool(*pick(f"{name}.enabled")), _interval(*pick(f"{name}.interval.seconds"))
        field_name = name.replace(".", "_")
        schedules[f"{field_name}_enabled"] = enabled and interval > 0
        schedules[f"{field_name}_interval_s"] = interval
    return FlowConfig(
        source=source, target=target, name=f"{source}->{target}",
        **{name.replace(".", "_"): _patterns(*pick(name)) for name in
           ("topics", "topics.exclude", "groups", "groups.exclude", "config.properties.exclude")},
        **{name.replace(".", "_").replace("-", "_"): _replication_factor(*pick(name)) for name in
           ("replication.factor", "offset-syncs.topic.replication.factor", "checkpoints.topic.replication.factor",
            "heartbeats.topic.replication.factor")},
        **schedules,
        offset_lag_max=_integer(*pick("offset.lag.max"), minimum=0),
        exactly_once=_exactly_once(*pick("exactly.once.source.support", f"{target}.exactly.once.source.support")),
        transaction_timeout_ms=_integer(*pick("transaction.timeout.ms", f"{target}.producer.transaction.timeout.ms",
                                              "producer.transaction.timeout.ms"), minimum=1),
        offset_flush_interval_s=_integer(*pick("offset.flush.interval.ms"), minimum=1) / 1000.0,
        policy=_policy(pick("replication.policy.class"), pick("replication.policy.separator")))


def _bool(key: str, value: str) -> bool:
    if value.strip().lower() not in ("true", "false"):
        raise MirrorConfigError(f"{key}: {value!r} is not a boolean (true or false)")
    return value.strip().lower() == "true"


def _integer(key: str, value: str, minimum: int | None = None) -> int:
    if not _INTEGER.fullmatch(value.strip()):
        raise MirrorConfigError(f"{key}: {value!r} is not an integer")
    number = int(value.strip())
    if minimum is not None and number < minimum:
        raise MirrorConfigError(f"{key}: {number} is less than {minimum}")
    return number


def _replication_factor(key: str, value: str) -> int:
    factor = _integer(key, value)
    if factor != -1 and not 1 <= factor <= 32767:
        raise MirrorConfigError(f"{key}: {factor} is not a replication factor (1 to 32767, or -1 for the broker's)")
    return factor


def _interval(key: str, value: str) -> float:
    if not _NUMBER.fullmatch(value.strip()):
        raise MirrorConfigError(f"{key}: {value!r} is not a number of seconds")
    seconds = float(value.strip())
    if seconds == 0:
        raise MirrorConfigError(f"{key}: 0 is not an interval (a negative one disables)")
    return seconds


def _exactly_once(key: str, value: str) -> bool:
    support = value.strip().lower()
    if support not in ("enabled", "preparing", "disabled"):
        raise MirrorConfigError(f"{key}: {value!r} is not one of enabled, preparing, disabled")
    return support == "enabled"


def _policy(class_setting: tuple[str, str], separator_setting: tuple[str, str]) -> ReplicationPolicy:
    if not separator_setting[1].strip():
        raise MirrorConfigError(f"{separator_setting[0]}: the separator is empty")
    try:
        return policy_for(class_setting[1].strip(), separator_setting[1].strip())
    except ValueError as exc:
        raise MirrorConfigError(f"{class_setting[0]}: {exc}") from None


def _patterns(key: str, value: str) -> re.Pattern:
    """MM2's list of regular expressions: any of them (each a whole name); none matches nothing."""
    items = [item for item in _LIST_SEPARATOR.split(value.strip()) if item]
    groups = []
    for item in items:
        flags = _LEADING_FLAGS.match(item)  # Java's (?i) applies to the rest: a scoped group here
        group = f"(?{flags.group(1)}:{item[flags.end():]})" if flags else f"(?:{item})"
        try:
            re.compile(group)
        except re.error as exc:
            raise MirrorConfigError(f"{key}: invalid regular expression {item!r}: {exc}") from None
        groups.append(group)
    try:
        return re.compile("|".join(groups)) if groups else _NOTHING
    except re.error as exc:
        raise MirrorConfigError(f"{key}: invalid regular expressions {value.strip()!r}: {exc}") from None


def _cluster(props: dict[str, str], alias: str) -> ClusterConfig:
    """Cluster ``alias``'s client settings: ``<alias>.<key>`` over the top-level ``<key>``."""
    prefix = f"{alias}."
    bootstrap = props.get(f"{prefix}bootstrap.servers", "").strip()
    if not bootstrap:
        raise MirrorConfigError(f"{prefix}bootstrap.servers: required for the flows of cluster {alias!r}")
    own = {k[len(prefix):]: k for k in props if k.startswith(prefix)}  # setting -> key in the file
    client = {k: k for k in props if _client_key(k)} | {k: key for k, key in own.items() if _client_key(k)}
    roles = []
    for role in ROLES:
        top = {k[len(role) + 1:]: k for k in props if k.startswith(f"{role}.") and k not in _MM2_ROLE_KEYS}
        top = {k: key for k, key in top.items() if client.get(k, k) == k}  # yields to <alias>.<k>
        mine = {k[len(role) + 1:]: key for k, key in own.items() if k.startswith(f"{role}.")}
        roles.append(_librdkafka(props, top | mine))
    _check_protocol(props, client)
    return ClusterConfig(alias, bootstrap, {**_librdkafka(props, client), "bootstrap.servers": bootstrap}, *roles)


def _check_protocol(props: dict[str, str], client: dict[str, str]) -> None:
    if (key := client.get("security.protocol")) is None:
        return
    if props[key].strip().upper() not in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
        raise MirrorConfigError(f"{key}: {props[key]!r} is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL")


def _librdkafka(props: dict[str, str], keys: dict[str, str]) -> dict[str, str]:
    """librdkafka's settings for the Kafka client settings ``keys`` (setting -> key in the file); an error names
    the key in the file."""
    try:
        return librdkafka_config({setting: props[key] for setting, key in keys.items()})
    except ClientPropertiesError as exc:
        setting, colon, problem = str(exc).partition(":")
        if colon and setting in keys:
            raise MirrorConfigError(f"{keys[setting]}:{problem}") from None
        raise MirrorConfigError(f"{', '.join(sorted(set(keys.values())))}: {exc}") from None
