"""What the mirroring tests share: an acknowledged-records producer on its own thread, and reading a topic's
partitions back (the mirror process itself: ``scripts.tools.kafka_mirror_maker.launcher.MirrorProcess``)."""
from __future__ import annotations

import threading
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition


class AckedProducer:
    """Produces ``<topic>/<partition>/<seq>`` values round-robin over topics and partitions on a thread until
    stopped; ``acked[(topic, partition)]`` lists the values the cluster acknowledged, in the order of the delivery
    reports, which is the partition's offset order (idempotence). Not sorted by the reported offset: a retried batch
    the leader no longer remembers is acknowledged as DUPLICATE_SEQUENCE_NUMBER, which librdkafka reports as
    delivered with no offset."""

    def __init__(self, bootstrap: str, partitions: dict[str, int], rate_per_s: float = 400.0):
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                                  "linger.ms": 5, "topic.metadata.refresh.interval.ms": 1000})
        self.partitions = partitions
        self.rate = rate_per_s
        self.acked: dict[tuple[str, int], list[bytes]] = {}
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.sent = 0

    def start(self) -> "AckedProducer":
        self._thread.start()
        return self

    def _delivered(self, error, msg) -> None:
        if error is not None:
            self.errors.append(str(error))
        else:
            self.acked.setdefault((msg.topic(), msg.partition()), []).append(msg.value())

    def _run(self) -> None:
        seq = 0
        while not self._stop.wait(1.0 / self.rate * 10):
            slots = [(t, p) for t, n in sorted(self.partitions.items()) for p in range(n)]
            for _ in range(10):
                topic, partition = slots[seq % len(slots)]
                try:
                    self.producer.produce(topic, f"{topic}/{partition}/{seq}".encode(), f"k{seq}".encode(),
                                          partition, on_delivery=self._delivered, headers=[("seq", str(seq).encode())])
                except KafkaException as exc:  # a partition just added, not yet in the producer's metadata
                    if exc.args[0].code() != KafkaError._UNKNOWN_PARTITION:
                        raise
                seq += 1
            self.producer.poll(0)
        self.sent = seq

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        assert self.producer.flush(60) == 0

    def acked_values(self) -> dict[tuple[str, int], list[bytes]]:
        return {tp: list(values) for tp, values in list(self.acked.items())}

    def total(self) -> int:
        return sum(len(v) for v in self.acked.values())


def read_partition(bootstrap: str, topic: str, partition: int, *, committed_only: bool = True,
                   timeout: float = 30.0) -> list:
    """Every record of ``topic``/``partition`` up to its end now (read_committed by default)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "mirror-test-reader", "enable.auto.commit": False,
                         "isolation.level": "read_committed" if committed_only else "read_uncommitted",
                         "enable.partition.eof": True, "auto.offset.reset": "earliest"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
        consumer.assign([TopicPartition(topic, partition, low)])
        records, done = [], low >= high
        deadline = time.monotonic() + timeout
        while not done:
            if time.monotonic() > deadline:
                raise AssertionError(f"reading {topic}-{partition} did not reach its end in {timeout} s")
            for msg in consumer.consume(1000, 1.0):
                if msg.error() is None:
                    records.append(msg)
                elif msg.error().code() == KafkaError._PARTITION_EOF:
                    done = True
        return records
    finally:
        consumer.close()
