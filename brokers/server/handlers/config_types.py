"""What DescribeConfigs v3+ says of a config key besides its value: its type (``config_type``, Kafka's
``DescribeConfigsResponse.ConfigType``) and, when asked (``include_documentation``), its documentation.

Topic-level keys carry Kafka's ``LogConfig`` types and a one-line description of what the key controls;
broker keys carry the type of their ``brokers.config`` schema entry (a sensitive key is PASSWORD) and no
documentation (null, as Kafka answers for a key its ConfigDef does not document).
"""
from __future__ import annotations

from brokers.config import SCHEMA, is_sensitive

UNKNOWN, BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS, PASSWORD = range(10)

TOPIC_CONFIGS: dict[str, tuple[int, str]] = {
    "cleanup.policy": (LIST, "How old log segments are retired: \"delete\" by time or size, \"compact\" keeping "
                             "the latest value of each key, or both."),
    "delete.retention.ms": (LONG, "How long delete tombstones are kept on a compacted topic."),
    "file.delete.delay.ms": (LONG, "How long a deleted segment's files wait before they are removed."),
    "flush.messages": (LONG, "Messages between forced fsyncs of the log."),
    "flush.ms": (LONG, "Milliseconds between forced fsyncs of the log."),
    "follower.replication.throttled.replicas": (LIST, "Replicas (partition:broker, or *) whose follower side is "
                                                      "throttled."),
    "index.interval.bytes": (INT, "Bytes between offset index entries."),
    "leader.replication.throttled.replicas": (LIST, "Replicas (partition:broker, or *) whose leader side is "
                                                    "throttled."),
    "max.message.bytes": (INT, "The largest record batch the topic accepts."),
    "message.downconversion.enable": (BOOLEAN, "Whether Fetch v0-3 consumers get the topic's batches "
                                               "down-converted to magic 0/1 (false: UNSUPPORTED_VERSION)."),
    "message.format.version": (STRING, "The message format the topic is written in, as an API version "
                                       "(2.8-IV1; zkafka always stores magic 2 and converts for older fetchers)."),
    "message.timestamp.type": (STRING, "CreateTime (the producer's timestamps) or LogAppendTime (the broker's)."),
    "min.cleanable.dirty.ratio": (DOUBLE, "The dirty share of the log above which the cleaner compacts it."),
    "min.compaction.lag.ms": (LONG, "The minimum time a message stays uncompacted."),
    "min.insync.replicas": (INT, "The in-sync replicas an acks=all write needs."),
    "retention.bytes": (LONG, "The size a partition may grow to before old segments are deleted (-1: no limit)."),
    "retention.ms": (LONG, "How long segments are kept before they are deleted (-1: no limit)."),
    "segment.bytes": (INT, "The size of one log segment file."),
    "segment.index.bytes": (INT, "The size of a segment's offset and time indexes."),
    "segment.jitter.ms": (LONG, "The largest random jitter subtracted from segment.ms."),
    "segment.ms": (LONG, "The time after which a segment is rolled even if not full."),
    "unclean.leader.election.enable": (BOOLEAN, "Whether an out-of-sync replica may become leader, losing data."),
}

_SCHEMA_TYPES = {"bool": BOOLEAN, "int": INT, "str": STRING, "list": LIST, "double": DOUBLE, "map": STRING}


def topic_config_type(key: str) -> int:
    return TOPIC_CONFIGS.get(key, (UNKNOWN, None))[0]


def broker_config_type(key: str) -> int:
    if is_sensitive(key):
        return PASSWORD
    if key in TOPIC_CONFIGS:  # a dynamic broker default of a topic key (log.retention.ms is listed as itself)
        return TOPIC_CONFIGS[key][0]
    return _SCHEMA_TYPES.get(SCHEMA.get(key, ("", None))[0], UNKNOWN)


def topic_config_documentation(key: str) -> str | None:
    return TOPIC_CONFIGS.get(key, (UNKNOWN, None))[1]
