"""DescribeConfigs (32, v0-v4): topic and broker configs with their sources and synonyms. With an authorizer:
DescribeConfigs on the topic or the cluster.

**DescribeConfigs**: resource type 2 (topic) lists every topic-level key, valued by the topic's
override (source DYNAMIC_TOPIC_CONFIG, 1) or else by the broker's current default for it: a dynamic
broker config (DYNAMIC_BROKER_CONFIG 2, DYNAMIC_DEFAULT_BROKER_CONFIG 3), server.properties
(STATIC_BROKER_CONFIG 4) or Kafka's default (DEFAULT_CONFIG 5); an unknown topic is
UNKNOWN_TOPIC_OR_PARTITION. Resource type 4 with this broker's id lists the broker's own keys that
have a value, source STATIC_BROKER_CONFIG (4) when it differs from the default and DEFAULT_CONFIG (5)
when it is the default (as Kafka reports them), read-only, plus the dynamic broker keys
(``brokers.dynamic_config.broker_config``) with their current source, not read-only; the empty name (the cluster
default) lists only the cluster-default dynamic overrides, as Kafka does. Another broker's id is
INVALID_REQUEST, other resource types too. ``configuration_keys`` null means every key (librdkafka
sends null), a list filters. With ``include_synonyms`` each entry carries its synonyms, highest
precedence first (a topic key's broker-level synonyms under their broker names, ``log.retention.ms``).

Versions: v0 answers ``is_default`` (the codec derives it from the DEFAULT_CONFIG source) and has no
synonyms; v1 adds ``include_synonyms`` and ``config_source``; v3 ``config_type`` (always) and, with
``include_documentation``, each key's documentation (``config_types``); v4 is flexible.
"""
from __future__ import annotations

from typing import Any

from brokers.config import SCHEMA, is_sensitive
from brokers.dynamic_config.config_ops import BROKER_RESOURCE, TOPIC_RESOURCE
from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.protocol.framing import RequestHeader
from brokers.security.acls import DESCRIBE_CONFIGS
from brokers.server.context import ServerContext
from brokers.server.handlers import config_resource_denied, error_message, response
from brokers.server.handlers.config_types import broker_config_type, topic_config_documentation, topic_config_type

DYNAMIC_TOPIC_CONFIG = 1
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5


def _config_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(item) for item in value)
    if isinstance(value, dict):
        return ",".join(f"{key}:{item}" for key, item in value.items())
    return str(value)


Synonym = tuple[str, str, int]  # name, value, config source
Entry = tuple[str, int, bool, list[Synonym]]  # value, config source, read-only, synonyms (best first)


def _entry(synonyms: list[Synonym], read_only: bool) -> Entry:
    return synonyms[0][1], synonyms[0][2], read_only, synonyms


async def _topic_entries(context: ServerContext, name: str) -> dict[str, Entry]:
    if name not in context.metadata_cache.topics():
        raise KafkaError(f"topic {name!r} does not exist", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    return topic_entries(context, await context.admin.topic_config(name))


def topic_entries(context: ServerContext, overrides: dict[str, str]) -> dict[str, Entry]:
    """Every topic-level key of a topic with these ``overrides``: its value, source, read-only flag (never)
    and synonyms (Kafka's ``createTopicConfigEntry`` over ``LogConfig``), for DescribeConfigs and CreateTopics."""
    entries = {}
    for key, value in context.admin.log_config_defaults().items():
        synonyms = context.admin.topic_config_synonyms(key) or [(key, value, DEFAULT_CONFIG)]
        if key in overrides:
            synonyms = [(key, overrides[key], DYNAMIC_TOPIC_CONFIG), *synonyms]
        entries[key] = _entry(synonyms, False)
    return entries


def _broker_entries(context: ServerContext, name: str) -> dict[str, Entry]:
    if name not in ("", str(context.broker_id)):
        raise KafkaError(f"unexpected broker id, expected {context.broker_id} or empty string, but received {name}",
                         ErrorCode.INVALID_REQUEST)
    entries = {}
    for key, value in context.config.values.items():
        if value is None:
            continue
        default = SCHEMA.get(key, (None, None))[1]
        text, source = _config_text(value), DEFAULT_CONFIG if value == default else STATIC_BROKER_CONFIG
        text = None if is_sensitive(key) else text  # a password is never shown (Kafka: value null, sensitive)
        entries[key] = (text, source, True, [(key, text, source)])
    if name == "":  # the cluster default: only its dynamic overrides
        entries = {}
    for key, synonyms in context.admin.dynamic_broker_entries(per_broker=name != "").items():
        if synonyms:
            entries[key] = _entry(synonyms, False)
    return entries



def _type_and_documentation(resource_type: int, key: str, documentation: bool) -> tuple[int, str | None]:
    if resource_type == TOPIC_RESOURCE:
        return topic_config_type(key), topic_config_documentation(key) if documentation else None
    return broker_config_type(key), None


async def _describe(context: ServerContext, resource: Any, synonyms: bool, documentation: bool) -> dict[str, Any]:
    result = dict(error_code=ErrorCode.NONE, error_message=None, resource_type=resource.resource_type,
                  resource_name=resource.resource_name, configs=[])
    try:
        if resource.resource_type == TOPIC_RESOURCE:
            entries = await _topic_entries(context, resource.resource_name)
        elif resource.resource_type == BROKER_RESOURCE:
            entries = _broker_entries(context, resource.resource_name)
        else:
            raise KafkaError(f"unsupported resource type {resource.resource_type}", ErrorCode.INVALID_REQUEST)
    except KafkaError as exc:
        result.update(error_code=exc.code, error_message=error_message(exc))
        return result
    keys = resource.configuration_keys
    wanted = sorted(entries) if keys is None else [key for key in dict.fromkeys(keys) if key in entries]
    for key in wanted:
        value, source, read_only, entry_synonyms = entries[key]
        secret = is_sensitive(key)
        config_type, doc = _type_and_documentation(resource.resource_type, key, documentation)
        result["configs"].append(dict(
            name=key, value=None if secret else value, read_only=read_only, config_source=source, is_sensitive=secret,
            synonyms=[dict(name=n, value=None if secret else v, source=s) for n, v, s in entry_synonyms]
            if synonyms else [],
            config_type=config_type, documentation=doc))
    return result


def _denied_config_result(resource: Any, error: ErrorCode) -> dict[str, Any]:
    return dict(error_code=error, error_message=None, resource_type=resource.resource_type,
                resource_name=resource.resource_name, configs=[])


async def handle_describe_configs(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    synonyms = getattr(request, "include_synonyms", False)
    documentation = getattr(request, "include_documentation", False)
    results = []
    for resource in request.resources:
        denied = config_resource_denied(context, DESCRIBE_CONFIGS, resource)
        results.append(_denied_config_result(resource, denied) if denied is not None
                       else await _describe(context, resource, synonyms, documentation))
    return response(header, results=results)
