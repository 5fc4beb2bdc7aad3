"""scripts.tools.kafka_mirror_maker.sync_writer.OffsetSyncWriter with a fake producer: each sync produced to the
one-partition topic, acknowledgements matched in FIFO order, and a partition's progress held at its oldest
unacknowledged sync (the invariant offset translation relies on), released on acknowledgement."""
from __future__ import annotations


from scripts.tools.kafka_mirror_maker.records import OffsetSync
from scripts.tools.kafka_mirror_maker.sync_writer import OffsetSyncWriter

TOPIC = "mm2-offset-syncs.b.internal"
T0, T1, U0 = ("t", 0), ("t", 1), ("u", 0)


class FakeProducer:
    """Records produce/poll/flush; ``ack(n)`` / ``fail(n, error)`` fire the oldest pending delivery callbacks."""

    def __init__(self) -> None:
        self.produced: list[tuple] = []
        self.pending: list = []
        self.polls: list[float] = []
        self.flushes: list[float] = []

    def produce(self, topic, value, key, partition, on_delivery) -> None:
        self.produced.append((topic, value, key, partition))
        self.pending.append(on_delivery)

    def poll(self, timeout: float) -> int:
        self.polls.append(timeout)
        return 0

    def flush(self, timeout: float) -> int:
        self.flushes.append(timeout)
        return len(self.pending)

    def ack(self, n: int = 1) -> None:
        for _ in range(n):
            self.pending.pop(0)(None, object())

    def fail(self, error: str = "MSG_TIMED_OUT") -> None:
        self.pending.pop(0)(error, object())


def writer() -> tuple[OffsetSyncWriter, FakeProducer]:
    producer = FakeProducer()
    return OffsetSyncWriter(producer, TOPIC), producer


def sync(tp: tuple[str, int], upstream: int, downstream: int | None = None) -> OffsetSync:
    return OffsetSync(tp[0], tp[1], upstream, upstream if downstream is None else downstream)


def test_write_produces_each_sync_to_partition_0_in_mm2s_format_and_polls_once():
    w, producer = writer()
    syncs = [sync(T0, 5, 2), sync(U0, 7, 7)]
    w.write(syncs)
    assert producer.produced == [(TOPIC, s.value(), s.key(), 0) for s in syncs]
    assert producer.polls == [0] and w.written == 2
    w.write([])
    assert producer.polls == [0, 0] and w.written == 2 and len(producer.produced) == 2


def test_a_partition_without_syncs_commits_its_next_offset():
    w, _ = writer()
    assert w.safe_offset(T0, 42) == 42
    w.write([sync(U0, 3)])
    assert w.safe_offset(T0, 42) == 42                  # another partition's sync does not hold T0


def test_progress_is_held_at_the_oldest_unacknowledged_sync_and_released_in_order():
    w, producer = writer()
    w.write([sync(T0, 10), sync(T0, 20)])
    assert w.safe_offset(T0, 25) == 10
    assert w.safe_offset(T0, 5) == 5                     # never beyond the acknowledged records either
    producer.ack()
    assert w.safe_offset(T0, 25) == 20
    producer.ack()
    assert w.safe_offset(T0, 25) == 25
    assert w.failure is None


def test_acknowledgements_are_matched_to_their_partition_in_produce_order():
    w, producer = writer()
    w.write([sync(T0, 10), sync(T1, 3)])
    w.write([sync(U0, 8), sync(T0, 30)])
    producer.ack(2)                                      # T0@10 and T1@3
    assert (w.safe_offset(T0, 40), w.safe_offset(T1, 40), w.safe_offset(U0, 40)) == (30, 40, 8)
    producer.ack()                                       # U0@8
    assert (w.safe_offset(T0, 40), w.safe_offset(U0, 40)) == (30, 40)
    producer.ack()
    assert w.safe_offset(T0, 40) == 40
    assert not w.in_flight


def test_a_failed_delivery_is_recorded_and_keeps_progress_held():
    w, producer = writer()
    w.write([sync(T0, 10), sync(T1, 4)])
    producer.fail("first")
    assert w.failure == "first"
    assert w.safe_offset(T0, 50) == 10                  # the lost sync's record is mirrored (and synced) again
    producer.ack()
    assert w.safe_offset(T1, 50) == 50


def test_the_first_failure_is_kept():
    w, producer = writer()
    w.write([sync(T0, 1), sync(T0, 2)])
    producer.fail("first")
    producer.fail("second")
    assert w.failure == "first"
    assert w.safe_offset(T0, 9) == 1


def test_an_acknowledgement_after_a_failure_of_the_same_partition_keeps_holding_at_the_failed_sync():
    w, producer = writer()
    w.write([sync(T0, 10), sync(T0, 20)])
    producer.fail()
    producer.ack()                                       # the sync at 20 is durable, the one at 10 is lost
    assert w.safe_offset(T0, 30) == 10


def test_poll_and_flush_go_to_the_producer_flush_returns_the_unacknowledged_count():
    w, producer = writer()
    w.write([sync(T0, 1), sync(T0, 2), sync(T0, 3)])
    w.poll()
    assert producer.polls == [0, 0]
    producer.ack()
    assert w.flush(7.5) == 2 and producer.flushes == [7.5]
    producer.ack(2)
    assert w.flush(1.0) == 0
