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


class StreamProducer(FakeProducer):
    """A RowProducer stand-in for the streaming path: it has the params and id a batch marker is built from."""

    def __init__(self, params, transactional_id=None):
        super().__init__(params, transactional_id)
        self.params, self.batch_marker = params, None


class Marker:
    written = False
    made: list["Marker"] = []

    def __init__(self, params, group, topic, batch_id):
        self.group, self.topic, self.batch_id, self.closed = group, topic, batch_id, False
        Marker.made.append(self)

    def already_written(self):
        return Marker.written

    def close(self):
        self.closed = True


@pytest.fixture
def streaming(monkeypatch):
    FakeProducer.made, Marker.made, Marker.written = [], [], False
    monkeypatch.setattr(kafka_io, "RowProducer", StreamProducer)
    monkeypatch.setattr(kafka_io, "BatchMarker", Marker)
    properties = {source.QUERY_ID_PROPERTY: "q1", source.BATCH_ID_PROPERTY: "5"}
    monkeypatch.setattr(source, "TaskContext", SimpleNamespace(get=lambda: SimpleNamespace(
        partitionId=lambda: 3, getLocalProperty=properties.get)))
    return properties


def stream_sink(**options) -> source.ZkafkaStreamWriter:
    return source.ZkafkaStreamWriter(parse_sink_options({"kafka.bootstrap.servers": "h:1", "topic": "out",
                                                         **options}), ["key", "value"])


def test_a_streaming_task_marks_its_micro_batch_in_its_transaction(streaming):
    message = stream_sink(transactionalIdPrefix="app").write(iter([{"key": "k", "value": "v"}]))
    (producer,), (marker,) = FakeProducer.made, Marker.made
    assert (marker.group, marker.topic, marker.batch_id) == ("app-3.q1", "out", 5)
    assert producer.batch_marker is marker and message.count == 1 and producer.calls == ["commit"]


def test_a_micro_batch_already_written_by_this_task_is_not_written_again(streaming):
    Marker.written = True
    message = stream_sink(transactionalIdPrefix="app").write(iter([{"key": "k", "value": "v"}]))
    (producer,), (marker,) = FakeProducer.made, Marker.made
    assert producer.sent == [] and message.count == 0 and marker.closed and producer.batch_marker is None


def test_a_streaming_task_without_rows_reads_no_marker(streaming):
    assert stream_sink(transactionalIdPrefix="app").write(iter([])).count == 0
    assert Marker.made == []


def test_without_the_prefix_a_streaming_task_marks_nothing(streaming):
    assert stream_sink().write(iter([{"key": "k", "value": "v"}])).count == 1
    assert Marker.made == []


def test_a_streaming_task_without_its_query_id_fails_rather_than_guess(streaming):
    del streaming[source.QUERY_ID_PROPERTY]
    with pytest.raises(RuntimeError, match="sql.streaming.queryId"):
        stream_sink(transactionalIdPrefix="app").write(iter([{"key": "k", "value": "v"}]))
    assert FakeProducer.made[0].calls == ["abort"]


def test_transactional_streaming_writes_need_the_topic_option():
    with pytest.raises(ValueError, match="'topic' option"):
        source.ZkafkaStreamWriter(parse_sink_options({"kafka.bootstrap.servers": "h:1",
                                                      "transactionalIdPrefix": "app"}), ["topic", "value"])
