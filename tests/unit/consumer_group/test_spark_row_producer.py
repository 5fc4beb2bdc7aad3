"""``kafka_io.RowProducer``, the sink task's producer, against a fake confluent-kafka ``Producer`` (no broker):
with a transactional id it calls ``init_transactions`` and ``begin_transaction`` on construction and commits in
``close`` only when the flush delivered every record without error; a flush that leaves records, or a failed
delivery, aborts the transaction instead and ``close`` raises. Without a transactional id no transaction call is
made at all."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError, KafkaException

from consumer_group.spark import kafka_io


class FakeProducer:
    """confluent-kafka's Producer as RowProducer uses it: ``produce`` queues a delivery callback, ``flush`` runs
    them (failing the values in ``fail``) unless ``undelivered`` records are to stay queued, and returns how many
    are left; every call is recorded in ``calls``."""

    made: list["FakeProducer"] = []

    def __init__(self, config: dict):
        self.config, self.calls, self.queued, self.produced = config, [], [], []
        self.fail: set[bytes] = set()
        self.undelivered = 0
        self.full_once = False
        self.abort_error: KafkaException | None = None
        FakeProducer.made.append(self)

    def init_transactions(self, timeout):
        self.calls.append("init_transactions")

    def begin_transaction(self):
        self.calls.append("begin_transaction")

    def produce(self, topic, value=None, key=None, headers=None, on_delivery=None, **kwargs):
        if self.full_once:
            self.full_once = False
            raise BufferError("Local: Queue full")
        self.calls.append("produce")
        self.produced.append((topic, value, key, headers, kwargs.get("partition")))
        self.queued.append((value, on_delivery))

    def poll(self, timeout):
        self.calls.append("poll")
        return 0

    def flush(self, timeout):
        self.calls.append("flush")
        delivered, self.queued = self.queued[:len(self.queued) - self.undelivered], self.queued[
            len(self.queued) - self.undelivered:]
        for value, callback in delivered:
            callback(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE) if value in self.fail else None, None)
        return len(self.queued)

    def commit_transaction(self, timeout):
        self.calls.append("commit_transaction")

    def abort_transaction(self, timeout):
        self.calls.append("abort_transaction")
        if self.abort_error is not None:
            raise self.abort_error


@pytest.fixture(autouse=True)
def fake_producer(monkeypatch):
    FakeProducer.made = []
    monkeypatch.setattr(kafka_io, "Producer", FakeProducer)


def transactional() -> tuple[kafka_io.RowProducer, FakeProducer]:
    rows = kafka_io.RowProducer({"bootstrap.servers": "h:1"}, "app-3")
    return rows, FakeProducer.made[0]


def transaction_calls(fake: FakeProducer) -> list[str]:
    return [c for c in fake.calls if c not in ("produce", "poll")]


def test_a_transactional_producer_begins_on_construction_and_commits_after_a_clean_flush():
    rows, fake = transactional()
    assert fake.config["transactional.id"] == "app-3" and fake.config["acks"] == "all"
    assert fake.calls == ["init_transactions", "begin_transaction"]
    rows.send("out", b"v0", b"k0")
    rows.send("out", b"v1", partition=1, headers=[("h", b"x")])
    assert rows.close() == 2
    assert transaction_calls(fake) == ["init_transactions", "begin_transaction", "flush", "commit_transaction"]
    assert fake.produced == [("out", b"v0", b"k0", None, None), ("out", b"v1", None, [("h", b"x")], 1)]


def test_a_failed_delivery_aborts_the_transaction_and_close_raises():
    rows, fake = transactional()
    fake.fail = {b"bad"}
    for value in (b"ok", b"bad", b"ok2"):
        rows.send("out", value)
    with pytest.raises(RuntimeError, match="1 records failed"):
        rows.close()
    assert transaction_calls(fake) == ["init_transactions", "begin_transaction", "flush", "abort_transaction"]


def test_a_flush_that_leaves_records_aborts_the_transaction_and_close_raises():
    rows, fake = transactional()
    fake.undelivered = 1
    rows.send("out", b"v0")
    rows.send("out", b"v1")
    with pytest.raises(RuntimeError, match="1 records were not delivered"):
        rows.close()
    assert transaction_calls(fake) == ["init_transactions", "begin_transaction", "flush", "abort_transaction"]


def test_abort_of_a_failed_task_rolls_back_and_tolerates_a_fenced_producer():
    rows, fake = transactional()
    rows.send("out", b"v0")
    fake.abort_error = KafkaException(KafkaError(KafkaError._FENCED))
    rows.abort()  # the coordinator aborts a fenced producer's transaction itself: nothing to raise
    assert transaction_calls(fake) == ["init_transactions", "begin_transaction", "abort_transaction"]


def test_a_full_local_queue_is_drained_and_the_row_sent_once():
    rows, fake = transactional()
    fake.full_once = True
    rows.send("out", b"v0")
    assert fake.calls.count("produce") == 1 and fake.calls.index("poll") < fake.calls.index("produce")
    assert rows.close() == 1


def test_without_a_transactional_id_no_transaction_calls_are_made():
    rows = kafka_io.RowProducer({"bootstrap.servers": "h:1"})
    (fake,) = FakeProducer.made
    assert "transactional.id" not in fake.config
    rows.send("out", b"v0")
    assert rows.close() == 1
    rows.abort()
    fake.fail = {b"bad"}
    rows.send("out", b"bad")
    with pytest.raises(RuntimeError, match="records failed"):
        rows.close()
    assert transaction_calls(fake) == ["flush", "flush"]


class FakeMarker:
    """BatchMarker as RowProducer uses it: ``send_in`` adds the offsets to the transaction, ``close`` the client."""

    def __init__(self, fake: FakeProducer):
        self.fake, self.closed = fake, 0

    def send_in(self, producer):
        assert producer is self.fake
        self.fake.calls.append("send_offsets_to_transaction")

    def close(self):
        self.closed += 1


def test_the_batch_marker_goes_in_the_transaction_before_the_commit_and_its_client_is_closed():
    rows, fake = transactional()
    rows.batch_marker = marker = FakeMarker(fake)
    rows.send("out", b"v0")
    assert rows.close() == 1
    assert transaction_calls(fake) == ["init_transactions", "begin_transaction", "flush",
                                       "send_offsets_to_transaction", "commit_transaction"]
    assert marker.closed >= 1
    rows.abort()  # after the commit: nothing to roll back
    assert "abort_transaction" not in fake.calls


def test_a_failed_close_sends_no_marker_and_aborts_once():
    rows, fake = transactional()
    rows.batch_marker = marker = FakeMarker(fake)
    fake.fail = {b"bad"}
    rows.send("out", b"bad")
    with pytest.raises(RuntimeError, match="records failed"):
        rows.close()
    rows.abort()  # the task's own abort after the failure: idempotent
    assert transaction_calls(fake).count("abort_transaction") == 1
    assert "send_offsets_to_transaction" not in fake.calls and marker.closed >= 1


class FakeConsumer:
    """The marker's consumer: ``committed`` answers ``offset`` for the slot; records what it was asked."""

    def __init__(self, config, offset=-1001, error=None):
        self.config, self.offset, self.error, self.asked, self.closed = config, offset, error, [], False

    def committed(self, partitions, timeout=None):
        self.asked.extend((tp.topic, tp.partition) for tp in partitions)
        return [SimpleNamespace(offset=self.offset, error=self.error)]

    def consumer_group_metadata(self):
        return f"metadata of {self.config['group.id']}"

    def close(self):
        self.closed = True


@pytest.mark.parametrize("committed,batch,written", [(-1001, 0, False), (1, 0, True), (1, 1, False), (3, 1, True)])
def test_a_marker_at_or_past_the_batch_means_written(monkeypatch, committed, batch, written):
    made = []
    monkeypatch.setattr(kafka_io, "Consumer", lambda config: made.append(FakeConsumer(config, committed)) or made[-1])
    marker = kafka_io.BatchMarker({"bootstrap.servers": "h:1"}, "app-3.q", "out", batch)
    assert marker.already_written() is written
    (consumer,) = made
    assert consumer.config["group.id"] == "app-3.q" and consumer.config["isolation.level"] == "read_committed"
    assert consumer.asked == [("out", 0)]
    marker.close()
    assert consumer.closed


def test_the_marker_commits_batch_plus_one_for_its_group(monkeypatch):
    monkeypatch.setattr(kafka_io, "Consumer", FakeConsumer)
    sent = []
    producer = SimpleNamespace(send_offsets_to_transaction=lambda offsets, metadata, timeout: sent.append(
        ([(tp.topic, tp.partition, tp.offset) for tp in offsets], metadata)))
    kafka_io.BatchMarker({"bootstrap.servers": "h:1"}, "app-3.q", "out", 7).send_in(producer)
    assert sent == [([("out", 0, 8)], "metadata of app-3.q")]


def test_a_marker_that_cannot_be_read_raises(monkeypatch):
    monkeypatch.setattr(kafka_io, "Consumer", lambda config: FakeConsumer(
        config, error=KafkaError(KafkaError.GROUP_AUTHORIZATION_FAILED)))
    with pytest.raises(KafkaException):
        kafka_io.BatchMarker({"bootstrap.servers": "h:1"}, "g", "out", 0).already_written()
