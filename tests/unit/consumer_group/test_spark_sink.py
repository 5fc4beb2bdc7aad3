"""The zkafka sink's task transaction (``transactionalIdPrefix``): the task's id is ``<prefix>-<partition id>``,
its rows are sent then committed by ``close``; a failure while iterating aborts the transaction and the task
fails. Without the option no transactional id is used. A fake producer records the calls (no broker)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from consumer_group.spark import kafka_io, source
from consumer_group.spark.options import parse_sink_options


class FakeProducer:
    made: list["FakeProducer"] = []

    def __init__(self, params, transactional_id=None):
        self.transactional_id, self.sent, self.calls = transactional_id, [], []
        FakeProducer.made.append(self)

    def send(self, topic, value, key=None, partition=None, headers=None):
        self.sent.append((topic, value, key))

    def close(self):
        self.calls.append("commit")
        return len(self.sent)

    def abort(self):
        self.calls.append("abort")


@pytest.fixture(autouse=True)
def fakes(monkeypatch):
    FakeProducer.made = []
    monkeypatch.setattr(kafka_io, "RowProducer", FakeProducer)
    monkeypatch.setattr(source, "TaskContext", SimpleNamespace(get=lambda: SimpleNamespace(partitionId=lambda: 3)))


def sink(**options) -> source.ZkafkaWriter:
    return source.ZkafkaWriter(parse_sink_options({"kafka.bootstrap.servers": "h:1", "topic": "out", **options}),
                               ["key", "value"])


def test_a_task_commits_its_rows_in_its_own_transaction():
    message = sink(transactionalIdPrefix="app").write(iter([{"key": "k", "value": "v"}, {"key": None, "value": b"w"}]))
    (producer,) = FakeProducer.made
    assert producer.transactional_id == "app-3" and message.count == 2
    assert producer.sent == [("out", b"v", b"k"), ("out", b"w", None)] and producer.calls == ["commit"]


def test_a_failing_task_aborts_and_fails():
    def rows():
        yield {"key": "k", "value": "v"}
        raise RuntimeError("the task's input failed")
    with pytest.raises(RuntimeError, match="input failed"):
        sink(transactionalIdPrefix="app").write(rows())
    assert FakeProducer.made[0].calls == ["abort"]


def test_without_the_option_no_transactional_id():
    sink().write(iter([{"key": None, "value": "v"}]))
    assert FakeProducer.made[0].transactional_id is None
