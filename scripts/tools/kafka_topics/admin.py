"""``kafka-topics --bootstrap-server HOST:PORT``: the same five actions through the brokers.

confluent-kafka's AdminClient sends CreateTopics / CreatePartitions / DeleteTopics / DescribeConfigs and
reads Metadata,
as Kafka's ``TopicCommand`` does with ``--bootstrap-server``. Output is the ``--zookeeper`` path's:

* ``--create``: ``Created topic T.`` once the brokers answer, which is after every partition has a
  leader in the answering broker's metadata (the request's timeout is 30 s). ``--partitions`` and
  ``--replication-factor`` are optional here (-1: the brokers' ``num.partitions`` /
  ``default.replication.factor``), as in Kafka ≥ 2.4. ``--if-not-exists`` makes TOPIC_ALREADY_EXISTS
  a silent success.
* ``--alter --partitions N [--replica-assignment ...]``: CreatePartitions (NewPartitions with the new
  partitions' replica lists: ``--replica-assignment`` minus the existing partitions' entries). Kafka's
  warning about keyed records first, then ``Adding partitions succeeded!`` once the brokers answer, which
  is after every new partition has a leader in the answering broker's metadata.
* ``--delete``: ``Topic T is marked for deletion.`` once the topic has left the metadata.
* ``--list``: every topic name, sorted, internal ones included.
* ``--describe [--topic T]``: ``Topic: T<TAB>PartitionCount: N<TAB>ReplicationFactor: R<TAB>Configs: k=v,...``
  (the topic's overrides only, sorted by key), then one line per partition with Leader (``none`` when
  there is none), Replicas and Isr from the metadata. A ``--topic`` that does not exist is an error
  here (Kafka's behaviour), where the ZooKeeper path prints nothing.

``--command-config`` is Kafka's client properties file (``scripts.tools.common.client_properties``: security.protocol,
sasl.*, PEM ssl.*); SASL credentials the brokers refuse are one ``Error: ...`` line.

Exit codes: 0 ok, 1 a Kafka error (printed as ``Error: NAME: message``).
"""
from __future__ import annotations

import argparse
import sys

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewPartitions, NewTopic

from scripts.tools.common import client_properties
from scripts.tools.kafka_topics.replica_assignment import new_replica_lists

TIMEOUT_S = 30.0
ADD_PARTITIONS_WARNING = ("WARNING: If partitions are increased for a topic that has a key, the partition logic or "
                          "ordering of the messages will be affected")


def run(args: argparse.Namespace, properties: dict[str, str] | None = None) -> int:
    """``properties``: Kafka's client properties of ``--command-config`` (``scripts.tools.common.client_properties``)."""
    admin = client_properties.admin_client(AdminClient, args.bootstrap_server, properties or {})
    if admin is None:
        return 1
    try:
        if args.create:
            return _create(admin, args)
        if args.alter:
            return _alter(admin, args)
        if args.delete:
            return _delete(admin, args.topic)
        if args.list:
            for topic in sorted(admin.list_topics(timeout=TIMEOUT_S).topics):
                print(topic)
            return 0
        return _describe(admin, args.topic)
    except KafkaException as exc:
        return _error(exc)


def _error(exc: KafkaException) -> int:
    err = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
    print(f"Error: {err.name()}: {err.str()}" if err else f"Error: {exc}", file=sys.stderr)
    return 1


def _code(exc: KafkaException) -> int | None:
    return exc.args[0].code() if exc.args and isinstance(exc.args[0], KafkaError) else None


def _create(admin: AdminClient, args: argparse.Namespace) -> int:
    config = dict(item.split("=", 1) for item in args.config)
    topic = NewTopic(args.topic, num_partitions=-1 if args.partitions is None else args.partitions,
                     replication_factor=-1 if args.replication_factor is None else args.replication_factor,
                     config=config)
    future = admin.create_topics([topic], operation_timeout=TIMEOUT_S, request_timeout=TIMEOUT_S + 15)[args.topic]
    try:
        future.result()
    except KafkaException as exc:
        if args.if_not_exists and _code(exc) == KafkaError.TOPIC_ALREADY_EXISTS:
            return 0
        if _code(exc) == KafkaError.REQUEST_TIMED_OUT:
            print(f"Created topic {args.topic}, but its partitions have no leaders yet (is a controller running?)",
                  file=sys.stderr)
            return 1
        raise
    print(f"Created topic {args.topic}.")
    return 0


def _alter(admin: AdminClient, args: argparse.Namespace) -> int:
    metadata = admin.list_topics(timeout=TIMEOUT_S)  # all topics: a one-topic request may auto-create it
    if args.topic not in metadata.topics:
        print(f"Error: topic {args.topic!r} does not exist", file=sys.stderr)
        return 1
    existing = len(metadata.topics[args.topic].partitions)
    replica_lists = new_replica_lists(args.replica_assignment, existing)
    new = (NewPartitions(args.topic, args.partitions) if replica_lists is None
           else NewPartitions(args.topic, args.partitions, replica_lists))
    print(ADD_PARTITIONS_WARNING)
    future = admin.create_partitions([new], operation_timeout=TIMEOUT_S, request_timeout=TIMEOUT_S + 15)[args.topic]
    try:
        future.result()
    except KafkaException as exc:
        if _code(exc) == KafkaError.REQUEST_TIMED_OUT:
            print(f"Added partitions to {args.topic}, but they have no leaders yet (is a controller running?)",
                  file=sys.stderr)
            return 1
        raise
    print("Adding partitions succeeded!")
    return 0


def _delete(admin: AdminClient, topic: str) -> int:
    future = admin.delete_topics([topic], operation_timeout=TIMEOUT_S, request_timeout=TIMEOUT_S + 15)[topic]
    try:
        future.result()
    except KafkaException as exc:
        if _code(exc) == KafkaError.UNKNOWN_TOPIC_OR_PART:
            print(f"Error: topic {topic!r} does not exist", file=sys.stderr)
            return 1
        raise
    print(f"Topic {topic} is marked for deletion.")
    return 0


def _describe(admin: AdminClient, only: str | None) -> int:
    # All topics, never Metadata for one name: the AdminClient's metadata requests allow auto-creation.
    metadata = admin.list_topics(timeout=TIMEOUT_S)
    topics = sorted(t for t in metadata.topics if only is None or t == only)
    if only is not None and not topics:
        print(f"Error: topic {only!r} does not exist", file=sys.stderr)
        return 1
    configs = _overrides(admin, topics)
    for name in topics:
        if name not in configs:  # deleted between the two requests
            continue
        partitions = sorted(metadata.topics[name].partitions.values(), key=lambda p: p.id)
        rf = len(partitions[0].replicas) if partitions else 0
        overrides = ",".join(f"{k}={v}" for k, v in sorted(configs[name].items()))
        print(f"Topic: {name}\tPartitionCount: {len(partitions)}\tReplicationFactor: {rf}\tConfigs: {overrides}")
        for p in partitions:
            leader = p.leader if p.leader >= 0 else "none"
            print(f"\tTopic: {name}\tPartition: {p.id}\tLeader: {leader}\t"
                  f"Replicas: {','.join(map(str, p.replicas))}\tIsr: {','.join(map(str, p.isrs))}")
    return 0


def _overrides(admin: AdminClient, topics: list[str]) -> dict[str, dict[str, str]]:
    """Each topic's own settings (DescribeConfigs source DYNAMIC_TOPIC_CONFIG): what ZooKeeper holds for it."""
    if not topics:
        return {}
    futures = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, t) for t in topics],
                                     request_timeout=TIMEOUT_S)
    result = {}
    for resource, future in futures.items():
        try:
            entries = future.result()
        except KafkaException as exc:
            if _code(exc) == KafkaError.UNKNOWN_TOPIC_OR_PART:
                continue
            raise
        result[resource.name] = {e.name: e.value for e in entries.values()
                                 if _source(e.source) == ConfigSource.DYNAMIC_TOPIC_CONFIG.value}
    return result


def _source(source: object) -> int:
    return int(getattr(source, "value", source))
