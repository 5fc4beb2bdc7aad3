"""The verifiable tools' pure parts: the JSON event lines byte for byte as Kafka's tools print them
(scripts.tools.verifiable.events), the producer's keys, values, creation times and throttle (pacing), and what
the consumer makes of a poll (batches)."""
from __future__ import annotations

import json
import math

import pytest
from confluent_kafka import KafkaError, KafkaException

from scripts.tools.verifiable import batches, events
from scripts.tools.verifiable.pacing import CreateTimes, Keys, Throttler, value_of

TS = 1700000000123


# -- events: Kafka's lines --------------------------------------------------------------------------------
def test_lifecycle_events():
    assert events.startup_complete(TS) == '{"timestamp":1700000000123,"name":"startup_complete"}\n'
    assert events.shutdown_complete(TS) == '{"timestamp":1700000000123,"name":"shutdown_complete"}\n'


def test_producer_send_success_fields_in_kafkas_order():
    assert events.send_success(TS, None, "7", "orders", 2, 41) == (
        '{"timestamp":1700000000123,"name":"producer_send_success","key":null,"value":"7","topic":"orders",'
        '"partition":2,"offset":41}\n')
    assert '"key":"3","value":"5.12"' in events.send_success(TS, "3", "5.12", "t", 0, 0)
    for unknown in (None, -1001):  # acks=0: the broker says no offset; Kafka's RecordMetadata has -1
        assert events.send_success(TS, None, "1", "t", 0, unknown).endswith('"partition":0,"offset":-1}\n')


def test_producer_send_error_names_the_java_exception():
    error = KafkaError(KafkaError._MSG_TIMED_OUT)
    assert events.send_error(TS, "1", "9", "orders", error) == (
        '{"timestamp":1700000000123,"name":"producer_send_error","topic":"orders","key":"1","value":"9",'
        '"exception":"class org.apache.kafka.common.errors.TimeoutException","message":"Local: Message timed out"}\n')


@pytest.mark.parametrize("code, java", [
    (KafkaError.NOT_LEADER_FOR_PARTITION, "org.apache.kafka.common.errors.NotLeaderOrFollowerException"),
    (KafkaError.NOT_ENOUGH_REPLICAS, "org.apache.kafka.common.errors.NotEnoughReplicasException"),
    (KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
     "org.apache.kafka.common.errors.NotEnoughReplicasAfterAppendException"),
    (KafkaError.MSG_SIZE_TOO_LARGE, "org.apache.kafka.common.errors.RecordTooLargeException"),
    (KafkaError.REQUEST_TIMED_OUT, "org.apache.kafka.common.errors.TimeoutException"),
    (KafkaError._UNKNOWN_TOPIC, "org.apache.kafka.common.errors.UnknownTopicOrPartitionException"),
    (KafkaError.TOPIC_AUTHORIZATION_FAILED, "org.apache.kafka.common.errors.TopicAuthorizationException"),
    (KafkaError.KAFKA_STORAGE_ERROR, "org.apache.kafka.common.errors.KafkaStorageException"),
    (KafkaError.ILLEGAL_GENERATION, "org.apache.kafka.clients.consumer.CommitFailedException"),
    (KafkaError._AUTO_OFFSET_RESET, "org.apache.kafka.clients.consumer.NoOffsetForPartitionException"),
])
def test_java_exception_classes(code, java):
    assert events.java_exception_class(KafkaError(code)) == f"class {java}"
    assert events.java_exception_class(KafkaException(KafkaError(code))) == f"class {java}"


def test_errors_that_are_not_kafkas():
    assert events.java_exception_class(RuntimeError("boom")) == "class org.apache.kafka.common.KafkaException"
    assert events.error_message(RuntimeError("boom")) == "boom"
    error = KafkaException(KafkaError(KafkaError._TRANSPORT))
    assert events.error_message(error) == "Local: Broker transport failure"
    assert events.java_exception_text(error) == ("org.apache.kafka.common.errors.NetworkException: "
                                                 "Local: Broker transport failure")


def test_tool_data_with_javas_double():
    assert events.tool_data(TS, 10, 9, -1, 32.15434083601286) == (
        '{"timestamp":1700000000123,"name":"tool_data","sent":10,"acked":9,"target_throughput":-1,'
        '"avg_throughput":32.15434083601286}\n')
    assert events.tool_data(TS, 1, 1, 0, 1000.0).endswith('"target_throughput":0,"avg_throughput":1000.0}\n')


@pytest.mark.parametrize("value, text", [
    (0.0, "0.0"), (5.0, "5.0"), (0.001, "0.001"), (1234567.5, "1234567.5"), (9999999.0, "9999999.0"),
    (1e7, "1.0E7"), (12345678.9, "1.23456789E7"), (211640.21164021164, "211640.21164021164"),
    (0.0005, "5.0E-4"), (1.25e-5, "1.25E-5"), (-2.5e8, "-2.5E8"),
    (math.nan, '"NaN"'), (math.inf, '"Infinity"'), (-math.inf, '"-Infinity"'),
])
def test_java_double(value, text):
    assert events.java_double(value) == text


def test_average_throughput_as_kafka_computes_it():
    assert events.average_throughput(100, 2000) == 50.0
    assert math.isnan(events.average_throughput(0, 0)) and math.isinf(events.average_throughput(3, 0))


def test_consumer_events_in_kafkas_order():
    assert events.partitions_assigned(TS, [("t", 0), ("t", 2)]) == (
        '{"timestamp":1700000000123,"name":"partitions_assigned","partitions":[{"topic":"t","partition":0},'
        '{"topic":"t","partition":2}]}\n')
    assert events.partitions_revoked(TS, []) == (
        '{"timestamp":1700000000123,"name":"partitions_revoked","partitions":[]}\n')
    assert events.records_consumed(TS, 25, [("t", 1, 20, 0, 19), ("t", 0, 5, 7, 11)]) == (
        '{"timestamp":1700000000123,"name":"records_consumed","count":25,"partitions":['
        '{"topic":"t","partition":1,"count":20,"minOffset":0,"maxOffset":19},'
        '{"topic":"t","partition":0,"count":5,"minOffset":7,"maxOffset":11}]}\n')
    assert events.record_data(TS, None, "3", "t", 0, 3) == (
        '{"timestamp":1700000000123,"name":"record_data","key":null,"value":"3","topic":"t","partition":0,'
        '"offset":3}\n')


def test_offsets_committed_has_an_error_only_when_it_failed():
    assert events.offsets_committed(TS, [("t", 0, 20)]) == (
        '{"timestamp":1700000000123,"name":"offsets_committed","offsets":[{"topic":"t","partition":0,"offset":20}],'
        '"success":true}\n')
    failed = json.loads(events.offsets_committed(TS, [("t", 1, 5)], "Broker: Specified group generation id is not "
                                                                   "valid"))
    assert list(failed) == ["timestamp", "name", "offsets", "error", "success"]
    assert failed["success"] is False and failed["error"].startswith("Broker: Specified group")


def test_strings_are_escaped_and_not_ascii_only():
    line = events.record_data(TS, 'a"b', "é\n", "t", 0, 0)
    assert '"key":"a\\"b","value":"é\\n"' in line and json.loads(line)["value"] == "é\n"


# -- pacing: keys, values, creation times ---------------------------------------------------------------
def test_values_are_the_index_with_an_optional_prefix():
    assert [value_of(i, None) for i in range(3)] == ["0", "1", "2"]
    assert value_of(12, 4) == "4.12" and value_of(0, -1) == "-1.0"


def test_repeating_keys():
    assert [Keys(None).next() for _ in range(2)] == [None, None]
    keys = Keys(3)
    assert [keys.next() for _ in range(7)] == ["0", "1", "2", "0", "1", "2", "0"]
    never_resets = Keys(0)
    assert [never_resets.next() for _ in range(3)] == ["0", "1", "2"]  # Kafka's counter never equals 0 again


def test_creation_times_grow_by_the_time_since_start_as_kafka_does():
    times = CreateTimes(1000, start_ms=50_000)
    assert [times.next(now) for now in (50_000, 50_010, 50_030)] == [1000, 1000, 1010]
    assert times.current == 1040
    assert CreateTimes(None, 0).next(123) is None


# -- pacing: the throttle -------------------------------------------------------------------------------
class Clock:
    def __init__(self):
        self.ns = 0
        self.sleeps: list[float] = []
        self.stop_after: int | None = None

    def now_ns(self) -> int:
        return self.ns

    def sleep(self, seconds: float) -> bool:
        self.sleeps.append(seconds)
        if self.stop_after is not None and len(self.sleeps) > self.stop_after:
            self.ns += int(seconds * 1e9) // 2
            return False
        self.ns += int(seconds * 1e9)
        return True


def test_no_throttle_below_zero_and_none_before_time_passes():
    clock = Clock()
    assert not Throttler(-1, 0, clock.sleep, clock.now_ns).should_throttle(10**6, 1)
    throttler = Throttler(10, 1000, clock.sleep, clock.now_ns)
    assert not throttler.should_throttle(5, 1000)  # no time elapsed yet: Kafka does not throttle
    assert throttler.should_throttle(11, 2000) and not throttler.should_throttle(10, 2000)


def test_throttle_sleeps_off_the_deficit_in_steps_of_at_least_2_ms():
    clock = Clock()
    fast = Throttler(1000, 0, clock.sleep, clock.now_ns)  # 1 ms per record: sleeps every other record
    fast.throttle()
    assert clock.sleeps == [] and fast.deficit_ns == 1_000_000
    fast.throttle()
    assert clock.sleeps == [0.002] and fast.deficit_ns == 0
    slow = Throttler(4, 0, clock.sleep, clock.now_ns)
    slow.throttle()
    assert clock.sleeps[-1] == 0.25 and slow.deficit_ns == 0


def test_a_stop_cuts_the_throttle_short_and_keeps_what_was_not_slept():
    clock = Clock()
    clock.stop_after = 0
    throttler = Throttler(2, 0, clock.sleep, clock.now_ns)
    throttler.throttle()
    assert clock.sleeps == [0.5] and throttler.deficit_ns == 250_000_000


def test_throughput_zero_waits_until_stopped():
    clock = Clock()
    clock.stop_after = 3
    Throttler(0, 0, clock.sleep, clock.now_ns).throttle()
    assert len(clock.sleeps) == 4


# -- batches: one poll ------------------------------------------------------------------------------------
class Rec:
    def __init__(self, topic, partition, offset):
        self._tp, self._offset = (topic, partition), offset

    def topic(self):
        return self._tp[0]

    def partition(self):
        return self._tp[1]

    def offset(self):
        return self._offset


def recs(*items):
    return [Rec("t", p, o) for p, o in items]


def test_a_poll_summarised_partition_by_partition_in_order_of_appearance():
    records = recs((1, 5), (1, 6), (0, 0), (1, 7), (0, 1), (2, 9))
    batch = batches.take(records, -1, 0)
    assert batch.count == 6 and batch.taken == 6
    assert batch.summaries == [("t", 1, 3, 5, 7), ("t", 0, 2, 0, 1), ("t", 2, 1, 9, 9)]
    assert batch.offsets == [("t", 1, 8), ("t", 0, 2), ("t", 2, 10)]
    assert [(r.partition(), r.offset()) for r in batch.records] == [(1, 5), (1, 6), (1, 7), (0, 0), (0, 1), (2, 9)]


def test_the_message_limit_cuts_the_poll_as_kafka_does():
    records = recs((0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (2, 0))
    batch = batches.take(records, 10, 6)  # 4 left
    assert batch.count == 6 and batch.taken == 4  # count stays what the poll returned
    assert batch.summaries == [("t", 0, 3, 0, 2), ("t", 1, 1, 0, 0)]
    assert batch.offsets == [("t", 0, 3), ("t", 1, 1)]
    exact = batches.take(records, 3, 0)
    assert exact.summaries == [("t", 0, 3, 0, 2)] and exact.taken == 3
    done = batches.take(records, 5, 5)
    assert (done.count, done.summaries, done.offsets, done.taken) == (6, [], [], 0)


def test_topics_are_told_apart():
    batch = batches.take([Rec("a", 0, 1), Rec("b", 0, 4)], -1, 0)
    assert batch.summaries == [("a", 0, 1, 1, 1), ("b", 0, 1, 4, 4)]
