"""Consumer groups' offsets translated from the source cluster to the target (MM2's
``MirrorCheckpointTask``), and heartbeats (``MirrorHeartbeatTask``).

Every ``emit.checkpoints.interval.seconds`` the emitter reads the new offset syncs of the flow
(``mm2-offset-syncs.<target>.internal`` at the source) into its ``OffsetSyncStore``, lists the source's groups
that ``groups`` / ``groups.exclude`` let through, and for each committed offset of a mirrored partition writes a
``Checkpoint`` (group, remote topic, partition, upstream offset, translated downstream offset, metadata) to
``<source>.checkpoints.internal`` at the target, when it changed since the last one it wrote.

With ``sync.group.offsets.enabled``, every ``sync.group.offsets.interval.seconds`` the newest translated
offsets are committed at the target for the groups with no member there (Empty, Dead or unknown), and only
forwards: an offset the target group already passed is left alone (MM2 2.8's rule).
"""
from __future__ import annotations

import logging
import time

from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition

from scripts.tools.kafka_mirror_maker import clients
from scripts.tools.kafka_mirror_maker.config import ClusterConfig, FlowConfig
from scripts.tools.kafka_mirror_maker.metrics import FlowMetrics
from scripts.tools.kafka_mirror_maker.offset_sync import OffsetSyncStore
from scripts.tools.kafka_mirror_maker.records import Checkpoint, Heartbeat, OffsetSync, RecordFormatError
from scripts.tools.kafka_mirror_maker.topic_sync import mirrors

log = logging.getLogger("kafka_mirror_maker.checkpoints")
TIMEOUT_S = 30.0
READ_TIMEOUT_S = 10.0
INACTIVE = (ConsumerGroupState.EMPTY, ConsumerGroupState.DEAD, ConsumerGroupState.UNKNOWN)


def read_to_end(consumer, topic: str, partition: int = 0, start: int | None = None,
                timeout_s: float = READ_TIMEOUT_S) -> tuple[list, int]:
    """Records of ``topic``/``partition`` from ``start`` (its beginning when None) to its current end, and
    the next offset to read; the consumer is left assigned there."""
    low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout_s)
    position = low if start is None else max(start, low)
    records = []
    if position >= high:
        return records, position
    consumer.assign([TopicPartition(topic, partition, position)])
    deadline = time.monotonic() + timeout_s
    while position < high and time.monotonic() < deadline:
        first = consumer.poll(0.1)  # not consume(n, t), which waits for n records or t
        for msg in [] if first is None else [first, *consumer.consume(499, 0)]:
            if msg.error() is None:
                records.append(msg)
                position = msg.offset() + 1
            elif msg.error().code() == KafkaError._PARTITION_EOF:  # compacted away or markers up to the end
                return records, max(position, high)
    return records, position


class CheckpointEmitter:
    def __init__(self, flow: FlowConfig, source: ClusterConfig, target: ClusterConfig, metrics: FlowMetrics):
        self.flow, self.metrics = flow, metrics
        self.source_admin = clients.admin(source)
        self.target_admin = clients.admin(target)
        self.syncs_reader = clients.reader(source, f"mirror-maker-{flow.source}-{flow.target}-syncs-reader")
        self.producer = clients.plain_producer(flow, target, "checkpoints")
        self.store = OffsetSyncStore()
        self.syncs_position: int | None = None
        self.emitted: dict[tuple[str, str, int], Checkpoint] = {}   # (group, remote topic, partition) -> newest

    def close(self) -> None:
        self.syncs_reader.close()
        self.producer.flush(TIMEOUT_S)

    def _read_syncs(self) -> None:
        topic = self.flow.policy.offset_syncs_topic(self.flow.target)
        records, self.syncs_position = read_to_end(self.syncs_reader, topic, 0, self.syncs_position)
        for msg in records:
            try:
                self.store.add(OffsetSync.decode(msg.key(), msg.value()))
            except RecordFormatError as exc:
                log.warning("%s: skipping offset sync at %d: %s", topic, msg.offset(), exc)

    def _groups(self) -> list[str]:
        listing = self.source_admin.list_consumer_groups(request_timeout=TIMEOUT_S).result()
        return sorted(g.group_id for g in listing.valid if self.flow.group_allowed(g.group_id))

    def _group_offsets(self, group: str) -> list[TopicPartition]:
        request = [ConsumerGroupTopicPartitions(group)]
        result = self.source_admin.list_consumer_group_offsets(request, request_timeout=TIMEOUT_S)
        return result[group].result().topic_partitions or []

    def checkpoints(self) -> list[Checkpoint]:
        """The flow's translated offsets now (reads syncs and the source's groups)."""
        started = time.time()
        self._read_syncs()
        out = []
        for group in self._groups():
            for tp in self._group_offsets(group):
                if tp.offset < 0 or not mirrors(self.flow, tp.topic):
                    continue
                downstream = self.store.translate(tp.topic, tp.partition, tp.offset)
                if downstream is None:
                    continue
                remote = self.flow.policy.format_remote_topic(self.flow.source, tp.topic)
                out.append(Checkpoint(group, remote, tp.partition, tp.offset, downstream, tp.metadata or ""))
        self.metrics.checkpoint_latency_ms = int((time.time() - started) * 1000)
        return out

    def emit(self) -> int:
        """Write the changed checkpoints; returns how many."""
        topic = self.flow.policy.checkpoints_topic(self.flow.source)
        changed = [c for c in self.checkpoints() if self.emitted.get((c.group, c.topic, c.partition)) != c]
        for checkpoint in changed:
            self.producer.produce(topic, checkpoint.value(), checkpoint.key(), 0)
        if not changed:
            return 0
        if self.producer.flush(TIMEOUT_S):
            raise KafkaException(f"checkpoints not acknowledged by {self.flow.target} in {TIMEOUT_S} s")
        for checkpoint in changed:  # only once acknowledged: a lost one is written again next round
            self.emitted[(checkpoint.group, checkpoint.topic, checkpoint.partition)] = checkpoint
        self.metrics.add("checkpoints", len(changed))
        return len(changed)

    def sync_group_offsets(self) -> int:
        """Commit the newest translated offsets at the target for groups inactive there; returns how many
        groups were moved."""
        by_group: dict[str, list[Checkpoint]] = {}
        for checkpoint in self.emitted.values():
            by_group.setdefault(checkpoint.group, []).append(checkpoint)
        moved = 0
        for group, checkpoints in sorted(by_group.items()):
            try:
                moved += self._sync_group(group, checkpoints)
            except KafkaException as exc:
                log.warning("%s: syncing offsets of group %s: %s", self.flow.name, group, exc)
        return moved

    def _sync_group(self, group: str, checkpoints: list[Checkpoint]) -> int:
        described = self.target_admin.describe_consumer_groups([group], request_timeout=TIMEOUT_S)[group].result()
        if described.state not in INACTIVE or described.members:
            return 0
        request = [ConsumerGroupTopicPartitions(group)]
        current = self.target_admin.list_consumer_group_offsets(request, request_timeout=TIMEOUT_S)[group].result()
        have = {(tp.topic, tp.partition): tp.offset for tp in current.topic_partitions or []}
        forward = [TopicPartition(c.topic, c.partition, c.downstream_offset) for c in checkpoints
                   if c.downstream_offset > have.get((c.topic, c.partition), -1)]
        if not forward:
            return 0
        request = [ConsumerGroupTopicPartitions(group, forward)]
        self.target_admin.alter_consumer_group_offsets(request, request_timeout=TIMEOUT_S)[group].result()
        log.info("%s: group %s at %s moved to %s", self.flow.name, group, self.flow.target,
                 ", ".join(f"{t.topic}-{t.partition}@{t.offset}" for t in forward))
        return 1


class HeartbeatEmitter:
    """``Heartbeat(source, target, now)`` to ``heartbeats`` at the target; mirrored onwards by any flow out of
    the target, their arrival shows a path of flows working end to end."""

    def __init__(self, flow: FlowConfig, target: ClusterConfig, metrics: FlowMetrics):
        self.flow, self.metrics = flow, metrics
        self.producer = clients.plain_producer(flow, target, "heartbeats")

    def emit(self) -> None:
        beat = Heartbeat(self.flow.source, self.flow.target, int(time.time() * 1000))
        self.producer.produce(self.flow.policy.heartbeats_topic(), beat.value(), beat.key(), 0,
                              on_delivery=self._delivered)
        self.producer.poll(0)

    def _delivered(self, error, _msg) -> None:
        if error is None:
            self.metrics.add("heartbeats")
        else:
            log.warning("%s: heartbeat: %s", self.flow.name, error)

    def close(self) -> None:
        self.producer.flush(TIMEOUT_S)
