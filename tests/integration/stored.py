"""What the brokers actually stored: batch headers read straight from the partitions' .log files,
with the project's own RecordBatch reader (brokers.protocol.record_batch)."""
from __future__ import annotations

from brokers.model import TopicPartition
from brokers.protocol.errors import CorruptRecordError
from brokers.protocol.record_batch import BatchHeader, iter_batches
from scripts.local.cluster import Cluster


def stored_batches(cluster: Cluster, topic: str) -> dict[int, list[BatchHeader]]:
    """Every stored batch of ``topic`` per partition, from every broker holding a copy (deduplicated
    by base offset, so this keeps working once followers replicate). A torn tail ends a file's scan."""
    found: dict[int, dict[int, BatchHeader]] = {}
    for broker_id in cluster.broker_ids:
        for directory in cluster.log_dir(broker_id).glob(f"{topic}-*"):
            try:
                tp = TopicPartition.from_dir_name(directory.name)
            except ValueError:
                continue
            if tp.topic != topic:
                continue
            for segment in sorted(directory.glob("*.log")):
                try:
                    for header in iter_batches(segment.read_bytes()):
                        found.setdefault(tp.partition, {})[header.base_offset] = header
                except CorruptRecordError:
                    pass  # a partial batch at the very end of the active segment
    return {p: [batches[b] for b in sorted(batches)] for p, batches in found.items()}
