"""The perf tools' librdkafka settings, built as Kafka's tools build their clients' properties.

Producer (``kafka-producer-perf-test``): the ``--producer.config`` file, then ``--producer-props`` over it
(Kafka's precedence), then the transactional id; no ``bootstrap.servers`` is Kafka's ``Missing required
configuration "bootstrap.servers" which has no default value.``

Consumer (``kafka-consumer-perf-test``): the ``--consumer.config`` file, then the flags over it, as Kafka
puts them: ``bootstrap.servers``, ``group.id`` (the flag or its random default, even over the file's, as in
Kafka 2.8), ``receive.buffer.bytes`` (``--socket-buffer-size``), ``max.partition.fetch.bytes``
(``--fetch-size``), ``auto.offset.reset`` (``latest`` with ``--from-latest``, else ``earliest``),
``check.crcs=false``.

Both are Kafka's Java names: ``scripts.tools.common.client_properties`` turns the security ones into
librdkafka's (``sasl.jaas.config``, PEM ``ssl.*``), and the ``JAVA_*_NAMES`` tables here the few others
librdkafka spells differently (``max.request.size``, ``receive.buffer.bytes``, ``fetch.max.wait.ms``) or
lacks (serializers, ``buffer.memory``, ``max.block.ms``, ``max.poll.records``: dropped; the consumer's
``max.poll.records`` is its batch size instead). Under them, the tools' defaults: the tools' WARN log
level; for the producer Kafka 2.8's ``acks=1`` (librdkafka's default is all) over librdkafka's own batching
(``linger.ms=5``, up to 1 MB per batch); for the consumer a short ``fetch.queue.backoff.ms`` and a bigger
local queue, so that a full queue does not pause fetching for a second (BENCHMARKS.md, issue 4). A key
librdkafka does not know is refused when the client is made.
"""
from __future__ import annotations

import re

from scripts.tools.common.client_properties import TOOLS_LOG_LEVEL, ClientPropertiesError, librdkafka_config
from scripts.tools.perf_test import consumer_flags, producer_flags
from scripts.tools.perf_test.consumer_flags import ConsumerOptions

PRODUCER_DEFAULTS = {"acks": "1"}
CONSUMER_DEFAULTS = {"fetch.queue.backoff.ms": "5", "queued.max.messages.kbytes": "262144"}
JAVA_PRODUCER_NAMES: dict[str, str | None] = {"max.request.size": "message.max.bytes", "key.serializer": None,
                                              "value.serializer": None, "max.block.ms": None, "buffer.memory": None}
JAVA_CONSUMER_NAMES: dict[str, str | None] = {"receive.buffer.bytes": "socket.receive.buffer.bytes",
                                              "send.buffer.bytes": "socket.send.buffer.bytes",
                                              "fetch.max.wait.ms": "fetch.wait.max.ms", "key.deserializer": None,
                                              "value.deserializer": None, "max.poll.records": None}
MISSING_BOOTSTRAP = 'Missing required configuration "bootstrap.servers" which has no default value.'
_POSITIVE = re.compile(r"\+?[0-9]+\Z")


def java_names(props: dict[str, str], table: dict[str, str | None]) -> dict[str, str]:
    """``props`` with the Java names of ``table`` renamed (or dropped, for None)."""
    out: dict[str, str] = {}
    for key, value in props.items():
        name = table.get(key, key)
        if name is not None:
            out[name] = value
    return out


def producer_config(file_props: dict[str, str], flag_props: dict[str, str],
                    transactional_id: str | None) -> dict[str, str]:
    """The producer's settings; producer_flags.UsageError without ``bootstrap.servers`` or for a bad
    security setting."""
    merged = {**file_props, **flag_props}
    if not merged.get("bootstrap.servers", "").strip():
        raise producer_flags.UsageError(MISSING_BOOTSTRAP)
    try:
        translated = librdkafka_config(java_names(merged, JAVA_PRODUCER_NAMES))
    except ClientPropertiesError as exc:
        raise producer_flags.UsageError(str(exc)) from None
    config = {**TOOLS_LOG_LEVEL, **PRODUCER_DEFAULTS, **translated}
    if transactional_id is not None:
        config["transactional.id"] = transactional_id
    return config


def consumer_config(options: ConsumerOptions, file_props: dict[str, str]) -> dict[str, str]:
    """The consumer's settings; consumer_flags.UsageError for a bad security setting."""
    props = {**file_props, "bootstrap.servers": options.bootstrap_server, "group.id": options.group,
             "receive.buffer.bytes": str(options.socket_buffer_size),
             "max.partition.fetch.bytes": str(options.fetch_size),
             "auto.offset.reset": "latest" if options.from_latest else "earliest", "check.crcs": "false"}
    try:
        translated = librdkafka_config(java_names(props, JAVA_CONSUMER_NAMES))
    except ClientPropertiesError as exc:
        raise consumer_flags.UsageError(str(exc)) from None
    return {**TOOLS_LOG_LEVEL, **CONSUMER_DEFAULTS, **translated}


def batch_size(file_props: dict[str, str], default: int) -> int:
    """Records per ``consume()`` call: the file's ``max.poll.records`` when it is a positive number."""
    text = file_props.get("max.poll.records", "").strip()
    return int(text) if _POSITIVE.match(text) and int(text) > 0 else default
