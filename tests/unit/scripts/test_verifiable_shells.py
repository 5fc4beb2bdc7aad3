"""The verifiable tools' loops over fake confluent-kafka clients: which events the producer and the consumer
print, in which order and when (Kafka's VerifiableProducer / VerifiableConsumer), how they stop on a signal,
and the shared runtime (stdout that goes away, the stop flag). The real clients: tests/integration."""
from __future__ import annotations

import io
import json
import os
import signal

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from scripts.tools.verifiable import flags
from scripts.tools.verifiable.consumer import VerifiableConsumer
from scripts.tools.verifiable.producer import VerifiableProducer
from scripts.tools.verifiable.runtime import Output, Stopper


class Msg:
    def __init__(self, topic, partition, offset, key=None, value=None, error=None):
        self._topic, self._partition, self._offset = topic, partition, offset
        self._key, self._value, self._error = key, value, error

    def topic(self):
        return self._topic

    def partition(self):
        return self._partition

    def offset(self):
        return self._offset

    def key(self):
        return self._key

    def value(self):
        return self._value

    def error(self):
        return self._error


def lines_of(stream: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


# -- the producer -----------------------------------------------------------------------------------------
class FakeProducer:
    """Records each produce; delivers on poll/flush: partition = index % 2, failures for ``fail_values``."""

    def __init__(self, tool, fail_values=(), refuse_values=(), full_times=0, on_produce=None):
        self.tool, self.fail_values, self.refuse_values = tool, set(fail_values), set(refuse_values)
        self.full_times, self.on_produce = full_times, on_produce
        self.produced, self.queue, self.offsets = [], [], {0: 0, 1: 0}

    def produce(self, topic, value, key, timestamp=None):
        if self.full_times:
            self.full_times -= 1
            raise BufferError("Local: Queue full")
        if value.decode() in self.refuse_values:
            raise KafkaException(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE))
        self.produced.append((topic, key, value, timestamp))
        self.queue.append((topic, key, value))
        if self.on_produce:
            self.on_produce(len(self.produced))

    def poll(self, timeout=None):
        queue, self.queue = self.queue, []
        for topic, key, value in queue:
            partition = int(value.decode().split(".")[-1]) % 2
            if value.decode() in self.fail_values:
                self.tool.on_delivery(KafkaError(KafkaError._MSG_TIMED_OUT), Msg(topic, partition, -1, key, value))
            else:
                self.tool.on_delivery(None, Msg(topic, partition, self.offsets[partition], key, value))
                self.offsets[partition] += 1
        return len(queue)

    def flush(self, timeout=None):
        self.poll()
        return 0


def run_producer(argv, **fake) -> tuple[int, list[dict], FakeProducer]:
    args = flags.parse_producer(["--topic", "t", "--bootstrap-server", "h:1", *argv])
    out = io.StringIO()
    tool = VerifiableProducer(args, Output(out), Stopper())
    producer = FakeProducer(tool, **fake)
    code = tool.run(producer)
    return code, lines_of(out), producer


def test_producer_events_for_max_messages():
    code, events, producer = run_producer(["--max-messages", "4", "--value-prefix", "9", "--repeating-keys", "2"])
    assert code == 0
    assert [e["name"] for e in events] == ["startup_complete", *["producer_send_success"] * 4, "shutdown_complete",
                                           "tool_data"]
    assert [(e["key"], e["value"], e["topic"]) for e in events[1:5]] == [("0", "9.0", "t"), ("1", "9.1", "t"),
                                                                        ("0", "9.2", "t"), ("1", "9.3", "t")]
    assert {(e["partition"], e["offset"]) for e in events[1:5]} == {(0, 0), (1, 0), (0, 1), (1, 1)}
    assert (events[-1]["sent"], events[-1]["acked"], events[-1]["target_throughput"]) == (4, 4, -1)
    assert [p[3] for p in producer.produced] == [None] * 4  # no --message-create-time: the producer stamps them


def test_failed_and_refused_sends_are_send_errors():
    code, events, _ = run_producer(["--max-messages", "4"], fail_values={"1"}, refuse_values={"2"})
    assert code == 0
    errors = [e for e in events if e["name"] == "producer_send_error"]
    assert [(e["value"], e["exception"]) for e in errors] == [
        ("1", "class org.apache.kafka.common.errors.TimeoutException"),
        ("2", "class org.apache.kafka.common.errors.RecordTooLargeException")]
    assert errors[0]["message"] == "Local: Message timed out" and errors[0]["topic"] == "t"
    assert errors[1]["message"] == "Broker: Message size too large"
    assert (events[-1]["sent"], events[-1]["acked"]) == (4, 2)


def test_a_full_queue_is_waited_out_not_counted_twice():
    code, events, producer = run_producer(["--max-messages", "2"], full_times=3)
    assert code == 0 and len(producer.produced) == 2 and (events[-1]["sent"], events[-1]["acked"]) == (2, 2)


def test_creation_times_reach_the_records():
    _, _, producer = run_producer(["--max-messages", "3", "--message-create-time", "5000"])
    stamps = [p[3] for p in producer.produced]
    assert stamps[0] == 5000 and stamps == sorted(stamps)


def test_a_signal_stops_the_producer_after_what_is_in_flight():
    holder = {}

    def stop_at_three(count):
        if count == 3:
            holder["tool"].stopper._handle(signal.SIGTERM, None)

    args = flags.parse_producer(["--topic", "t", "--bootstrap-server", "h:1"])  # no limit
    out = io.StringIO()
    tool = holder["tool"] = VerifiableProducer(args, Output(out), Stopper())
    assert tool.run(FakeProducer(tool, on_produce=stop_at_three)) == 128 + signal.SIGTERM
    events = lines_of(out)
    assert [e["name"] for e in events][-2:] == ["shutdown_complete", "tool_data"]
    assert (events[-1]["sent"], events[-1]["acked"]) == (3, 3)


# -- the consumer ---------------------------------------------------------------------------------------
class Committed:
    """A TopicPartition of commit()'s result (confluent-kafka's ``error`` is read-only)."""

    def __init__(self, tp, error):
        self.topic, self.partition, self.offset, self.error = tp.topic, tp.partition, tp.offset, error


class FakeConsumer:
    """``steps``: what each consume() does in turn: ("assign", [p...]) / ("revoke", [p...]) call the callbacks,
    a list of Msg is returned; when the steps run out, ``stopper`` is signalled."""

    def __init__(self, steps, stopper, commit_error=None, partition_error=None):
        self.steps, self.stopper = list(steps), stopper
        self.commit_error, self.partition_error = commit_error, partition_error
        self.assigned: list[int] = []
        self.commits: list[list[tuple[int, int]]] = []
        self.closed = False

    def subscribe(self, topics, on_assign, on_revoke, on_lost):
        self.on_assign, self.on_revoke = on_assign, on_revoke

    def consume(self, num, timeout):
        if not self.steps:
            self.stopper._handle(signal.SIGTERM, None)
            return []
        step = self.steps.pop(0)
        if isinstance(step, tuple):
            kind, partitions = step
            tps = [TopicPartition("t", p) for p in partitions]
            if kind == "assign":
                self.assigned = sorted(set(self.assigned) | set(partitions))
                self.on_assign(self, tps)
            else:
                self.assigned = [p for p in self.assigned if p not in partitions]
                self.on_revoke(self, tps)
            return []
        return step[:num]

    def commit(self, offsets, asynchronous):
        assert asynchronous is False
        self.commits.append([(tp.partition, tp.offset) for tp in offsets])
        if self.commit_error is not None:
            raise KafkaException(self.commit_error)
        return [Committed(tp, self.partition_error if i == 0 else None) for i, tp in enumerate(offsets)]

    def close(self):
        self.closed = True
        self.on_revoke(self, [TopicPartition("t", p) for p in self.assigned])


def run_consumer(argv, steps, max_poll=500, **fake):
    args = flags.parse_consumer(["--topic", "t", "--group-id", "g", "--bootstrap-server", "h:1", *argv])
    out, stopper = io.StringIO(), Stopper()
    consumer = FakeConsumer(steps, stopper, **fake)
    code = VerifiableConsumer(args, Output(out), stopper, max_poll).run(consumer)
    assert consumer.closed
    return code, lines_of(out), consumer


def batch(*items):
    return [Msg("t", p, o, None, str(o).encode()) for p, o in items]


def test_consumer_events_and_commits_after_each_batch():
    code, events, consumer = run_consumer(["--max-messages", "5"], [
        ("assign", [0, 1]), batch((0, 0), (0, 1), (1, 0)), [], batch((1, 1), (1, 2), (1, 3))])
    assert code == 0  # stopped by the limit, not the signal
    assert [e["name"] for e in events] == ["startup_complete", "partitions_assigned", "records_consumed",
                                           "offsets_committed", "records_consumed", "offsets_committed",
                                           "partitions_revoked", "shutdown_complete"]
    assert events[2]["partitions"] == [{"topic": "t", "partition": 0, "count": 2, "minOffset": 0, "maxOffset": 1},
                                       {"topic": "t", "partition": 1, "count": 1, "minOffset": 0, "maxOffset": 0}]
    assert (events[4]["count"], events[4]["partitions"][0]["count"]) == (3, 2)  # the limit cut the second poll
    assert consumer.commits == [[(0, 2), (1, 1)], [(1, 3)]]
    assert events[5] == {"timestamp": events[5]["timestamp"], "name": "offsets_committed",
                         "offsets": [{"topic": "t", "partition": 1, "offset": 3}], "success": True}


def test_autocommit_commits_nothing_itself():
    code, events, consumer = run_consumer(["--enable-autocommit"], [("assign", [0]), batch((0, 0))])
    assert code == 128 + signal.SIGTERM and consumer.commits == []
    assert "offsets_committed" not in [e["name"] for e in events]


def test_verbose_prints_each_record_before_the_summary():
    _, events, _ = run_consumer(["--verbose"], [("assign", [0]), batch((0, 4), (0, 5))])
    names = [e["name"] for e in events]
    assert names[2:5] == ["record_data", "record_data", "records_consumed"]
    assert events[2] == {"timestamp": events[2]["timestamp"], "name": "record_data", "key": None, "value": "4",
                         "topic": "t", "partition": 0, "offset": 4}


@pytest.mark.parametrize("fake", [{"commit_error": KafkaError(KafkaError.REBALANCE_IN_PROGRESS)},
                                  {"partition_error": KafkaError(KafkaError.ILLEGAL_GENERATION)}])
def test_a_failed_commit_is_reported_and_the_consumer_goes_on(fake):
    code, events, _ = run_consumer([], [("assign", [0]), batch((0, 0)), batch((0, 1))], **fake)
    commits = [e for e in events if e["name"] == "offsets_committed"]
    assert len(commits) == 2 and all(e["success"] is False and e["error"].startswith("Broker: ") for e in commits)
    assert code == 128 + signal.SIGTERM


def test_eager_rebalances_revoke_even_nothing_but_closing_does_not():
    _, events, _ = run_consumer([], [("assign", []), ("revoke", []), ("assign", [1])])
    assert [(e["name"], len(e.get("partitions", []))) for e in events] == [
        ("startup_complete", 0), ("partitions_assigned", 0), ("partitions_revoked", 0), ("partitions_assigned", 1),
        ("partitions_revoked", 1), ("shutdown_complete", 0)]
    _, events, _ = run_consumer([], [("assign", [])])
    assert [e["name"] for e in events] == ["startup_complete", "partitions_assigned", "shutdown_complete"]


def test_cooperative_revokes_only_partitions():
    cooperative = ["--assignment-strategy", "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"]
    _, events, _ = run_consumer(cooperative, [("assign", [0, 1]), ("revoke", [1]), ("assign", []), ("revoke", [])])
    assert [(e["name"], [p["partition"] for p in e.get("partitions", [])]) for e in events] == [
        ("startup_complete", []), ("partitions_assigned", [0, 1]), ("partitions_revoked", [1]),
        ("partitions_assigned", []), ("partitions_revoked", [0]), ("shutdown_complete", [])]


def test_a_fatal_error_ends_the_consumer_with_exit_1(capsys):
    no_offset = Msg("t", 0, -1, error=KafkaError(KafkaError._AUTO_OFFSET_RESET))
    code, events, _ = run_consumer(["--reset-policy", "none"], [("assign", [0]), [no_offset], batch((0, 0))])
    assert code == 1
    assert [e["name"] for e in events][-2:] == ["partitions_revoked", "shutdown_complete"]
    assert "records_consumed" not in [e["name"] for e in events]
    err = capsys.readouterr().err
    assert err.startswith("ERROR Error during processing, terminating consumer process: "
                          "org.apache.kafka.clients.consumer.NoOffsetForPartitionException: ")


def test_other_errors_are_warnings_on_stderr(capsys):
    unknown = Msg("t", 0, -1, error=KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART))
    code, events, _ = run_consumer([], [("assign", [0]), [unknown, *batch((0, 0))]])
    assert code == 128 + signal.SIGTERM
    assert [e["partitions"] for e in events if e["name"] == "records_consumed"] == [
        [{"topic": "t", "partition": 0, "count": 1, "minOffset": 0, "maxOffset": 0}]]
    assert capsys.readouterr().err.startswith("WARN org.apache.kafka.common.errors.UnknownTopicOrPartitionException")


# -- runtime ----------------------------------------------------------------------------------------------
def test_output_flushes_each_group_and_survives_a_closed_pipe():
    read_end, write_end = os.pipe()
    stream = os.fdopen(write_end, "w")
    out = Output(stream)
    out.write(["a\n", "b\n"])
    assert os.read(read_end, 100) == b"a\nb\n"  # flushed: the reader sees it at once
    os.close(read_end)
    out.write(["c\n"])  # the reader left: EPIPE, ignored from now on
    assert out.closed
    out.write(["d\n"])
    stream.close()


def test_stopper_keeps_the_first_signal_and_cuts_waits_short():
    stopper = Stopper()
    assert stopper.exit_code() == 0 and stopper.wait(0.01) is True
    served = []
    assert stopper.wait(0.003, served.append) is True and served and all(s >= 0.001 for s in served)
    stopper._handle(signal.SIGINT, None)
    stopper._handle(signal.SIGTERM, None)
    assert stopper.stopping and stopper.exit_code() == 128 + signal.SIGINT
    assert stopper.wait(10) is False
