"""``kafka-mirror-maker translate-offsets``: MM2's ``RemoteClusterUtils.translateOffsets`` as a tool — a
group's offsets at the target, from the newest checkpoints in ``<source>.checkpoints.internal`` there — and,
with ``--execute``, those offsets committed for the group at the target (the failover step; the group must
have no member there, as ``kafka-consumer-groups --reset-offsets`` requires).

Output (one row per partition, columns as ``kafka-consumer-groups`` aligns them)::

    GROUP  TOPIC  PARTITION  UPSTREAM-OFFSET  TRANSLATED-OFFSET
"""
from __future__ import annotations

from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, TopicPartition

from scripts.tools.kafka_mirror_maker import clients
from scripts.tools.kafka_mirror_maker.checkpoints import read_to_end
from scripts.tools.kafka_mirror_maker.config import MirrorMakerConfig
from scripts.tools.kafka_mirror_maker.policy import ReplicationPolicy
from scripts.tools.kafka_mirror_maker.records import Checkpoint, RecordFormatError

TIMEOUT_S = 30.0
HEADER = ("GROUP", "TOPIC", "PARTITION", "UPSTREAM-OFFSET", "TRANSLATED-OFFSET")


class TranslateError(RuntimeError):
    pass


def newest(checkpoints: list[Checkpoint], group: str) -> dict[tuple[str, int], Checkpoint]:
    """The last checkpoint read for each (remote topic, partition) of ``group``."""
    out: dict[tuple[str, int], Checkpoint] = {}
    for checkpoint in checkpoints:
        if checkpoint.group == group:
            out[(checkpoint.topic, checkpoint.partition)] = checkpoint
    return dict(sorted(out.items()))


def table(rows: dict[tuple[str, int], Checkpoint]) -> list[str]:
    lines = [HEADER] + [(c.group, c.topic, str(c.partition), str(c.upstream_offset), str(c.downstream_offset))
                        for c in rows.values()]
    widths = [max(len(line[i]) for line in lines) for i in range(len(HEADER))]
    return [" ".join(cell.ljust(widths[i]) for i, cell in enumerate(line)).rstrip() for line in lines]


def _policy(config: MirrorMakerConfig, source: str, target: str) -> ReplicationPolicy:
    for flow in config.flows:
        if (flow.source, flow.target) == (source, target):
            return flow.policy
    if config.flows:
        return config.flows[0].policy
    raise TranslateError("no enabled flow in the configuration to take replication.policy.class from")


def read_checkpoints(config: MirrorMakerConfig, source: str, target: str) -> list[Checkpoint]:
    for alias in (source, target):
        if alias not in config.clusters:
            raise TranslateError(f"unknown cluster alias '{alias}' (clusters = {', '.join(config.clusters)})")
    topic = _policy(config, source, target).checkpoints_topic(source)
    reader = clients.reader(config.clusters[target], "mirror-maker-translate-offsets")
    try:
        if topic not in reader.list_topics(timeout=TIMEOUT_S).topics:
            raise TranslateError(f"{topic} does not exist at cluster {target}: no checkpoints emitted yet")
        records, _ = read_to_end(reader, topic, 0, None, TIMEOUT_S)
    finally:
        reader.close()
    out = []
    for msg in records:
        try:
            out.append(Checkpoint.decode(msg.key(), msg.value()))
        except RecordFormatError:
            continue
    return out


def execute(config: MirrorMakerConfig, target: str, group: str, rows: dict[tuple[str, int], Checkpoint]) -> None:
    admin = clients.admin(config.clusters[target])
    described = admin.describe_consumer_groups([group], request_timeout=TIMEOUT_S)[group].result()
    if described.members or described.state not in (ConsumerGroupState.EMPTY, ConsumerGroupState.DEAD,
                                                    ConsumerGroupState.UNKNOWN):
        raise TranslateError(f"Assignments can only be reset if the group '{group}' is inactive, but the current "
                             f"state is {described.state.name.title()}.")
    offsets = [TopicPartition(c.topic, c.partition, c.downstream_offset) for c in rows.values()]
    request = [ConsumerGroupTopicPartitions(group, offsets)]
    admin.alter_consumer_group_offsets(request, request_timeout=TIMEOUT_S)[group].result()
