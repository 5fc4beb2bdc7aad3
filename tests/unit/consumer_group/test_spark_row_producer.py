"""``kafka_io.RowProducer``, the sink task's producer, against a fake confluent-kafka ``Producer`` (no broker):
with a transactional id it calls ``init_transactions`` and ``begin_transaction`` on construction and commits in
``close`` only when the flush delivered every record without error; a flush that leaves records, or a failed
delivery, aborts the transaction instead and ``close`` raises. Without a transactional id no transaction call is
made at all."""
from __future__ import annotations

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
