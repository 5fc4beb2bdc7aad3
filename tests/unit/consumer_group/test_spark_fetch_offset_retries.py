"""Spark's ``fetchOffset.numRetries`` and ``fetchOffset.retryIntervalMs`` on the zkafka source: parsed with the
other source options, and used by ``kafka_io.watermarks``, which asks again, with a new client, after a retriable
failure. A fake Consumer answers or fails (no broker) and ``time.sleep`` only records."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError, KafkaException

from consumer_group.spark import kafka_io
from consumer_group.spark.options import OptionError
from consumer_group.spark.source_options import SourceOptions, parse_source_options

BOOT = {"kafka.bootstrap.servers": "b1:9092"}


def src(streaming: bool = True, **opts: str) -> SourceOptions:
    return parse_source_options({**BOOT, "subscribe": "t", **opts}, streaming=streaming)


# ----------------------------------------------------------------------------------------------- options


@pytest.mark.parametrize("streaming", [True, False])
def test_defaults_are_sparks(streaming):
    o = src(streaming)
    assert (o.fetch_offset_retries, o.fetch_offset_retry_interval_ms) == (3, 1000)


def test_both_options_are_read_whatever_their_case():
    o = src(**{"fetchOffset.numRetries": "5", "FETCHOFFSET.RETRYINTERVALMS": " 250 "})
    assert (o.fetch_offset_retries, o.fetch_offset_retry_interval_ms) == (5, 250)
    o = src(False, **{"fetchoffset.numretries": "0", "fetchOffset.retryIntervalMs": "0"})
    assert (o.fetch_offset_retries, o.fetch_offset_retry_interval_ms) == (0, 0)  # zero: no retry, no wait


@pytest.mark.parametrize("name", ["fetchOffset.numRetries", "fetchOffset.retryIntervalMs"])
@pytest.mark.parametrize("value", ["-1", "1.5", "three", "", "1e3"])
def test_a_negative_or_non_integer_value_names_its_option(name, value):
    with pytest.raises(OptionError) as info:
        src(**{name: value})
    assert info.value.option == name and str(info.value).startswith(f"Option '{name}':")


def test_the_options_are_not_kafka_params():
    o = src(**{"fetchOffset.numRetries": "1", "fetchOffset.retryIntervalMs": "10"})
    assert o.kafka_params == {"bootstrap.servers": "b1:9092", "isolation.level": "read_uncommitted"}


# -------------------------------------------------------------------------------------------- watermarks

PARTITIONS = [("t", 0), ("t", 1)]
ANSWER = {("t", 0): (0, 10), ("t", 1): (5, 7)}
TIMED_OUT = KafkaException(KafkaError(KafkaError._TIMED_OUT))


class FakeConsumer:
    def __init__(self, params, outcome):
        self.params, self.outcome, self.closed, self.asked = params, outcome, False, []

    def get_watermark_offsets(self, tp, timeout=None, cached=False):
        assert not self.closed
        self.asked.append(((tp.topic, tp.partition), timeout))
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome[(tp.topic, tp.partition)]

    def close(self):
        self.closed = True


@pytest.fixture
def kafka(monkeypatch):
    """``kafka.outcomes``: what each new consumer does (an exception to raise, or the answers); ``kafka.made``
    the consumers, ``kafka.sleeps`` the seconds slept."""
    state = SimpleNamespace(outcomes=[], made=[], sleeps=[])

    def consumer(params):
        made = FakeConsumer(params, state.outcomes.pop(0))
        state.made.append(made)
        return made

    monkeypatch.setattr(kafka_io, "_consumer", consumer)
    monkeypatch.setattr(kafka_io, "time", SimpleNamespace(sleep=state.sleeps.append))
    return state


def options(retries: int = 3, interval_ms: int = 250) -> SourceOptions:
    return SourceOptions(bootstrap_servers="b1:9092", subscribe=("t",),
                         kafka_params={"bootstrap.servers": "b1:9092", "isolation.level": "read_committed"},
                         fetch_offset_retries=retries, fetch_offset_retry_interval_ms=interval_ms)


def test_the_first_answer_is_returned_without_a_retry(kafka):
    kafka.outcomes = [ANSWER]
    assert kafka_io.watermarks(options(), PARTITIONS) == ANSWER
    (consumer,) = kafka.made
    assert consumer.closed and kafka.sleeps == []
    assert consumer.params == {"bootstrap.servers": "b1:9092", "isolation.level": "read_committed"}
    assert consumer.asked == [(("t", 0), kafka_io.OFFSETS_TIMEOUT_S), (("t", 1), kafka_io.OFFSETS_TIMEOUT_S)]


def test_timeouts_are_asked_again_with_a_new_client_after_the_interval(kafka):
    kafka.outcomes = [TIMED_OUT, TIMED_OUT, ANSWER]
    assert kafka_io.watermarks(options(retries=3, interval_ms=250), PARTITIONS) == ANSWER
    assert len(kafka.made) == 3 and len({id(c) for c in kafka.made}) == 3
    assert all(c.closed for c in kafka.made)
    assert kafka.sleeps == [0.25, 0.25]


def test_an_error_kafka_calls_retriable_is_asked_again(kafka):
    leader_gone = KafkaException(KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION, "leader moved", retriable=True))
    assert leader_gone.args[0].retriable()
    kafka.outcomes = [leader_gone, ANSWER]
    assert kafka_io.watermarks(options(), PARTITIONS) == ANSWER
    assert len(kafka.made) == 2 and all(c.closed for c in kafka.made) and kafka.sleeps == [0.25]


@pytest.mark.parametrize("code", [KafkaError._UNKNOWN_PARTITION, KafkaError.TOPIC_AUTHORIZATION_FAILED])
def test_a_non_retriable_error_is_raised_at_once(kafka, code):
    error = KafkaException(KafkaError(code))
    assert not error.args[0].retriable()
    kafka.outcomes = [error, ANSWER]
    with pytest.raises(KafkaException) as info:
        kafka_io.watermarks(options(), PARTITIONS)
    assert info.value is error
    assert len(kafka.made) == 1 and kafka.made[0].closed and kafka.sleeps == []


def test_another_exception_is_not_retried(kafka):
    kafka.outcomes = [RuntimeError("boom"), ANSWER]
    with pytest.raises(RuntimeError, match="boom"):
        kafka_io.watermarks(options(), PARTITIONS)
    assert len(kafka.made) == 1 and kafka.made[0].closed and kafka.sleeps == []


def test_when_the_retries_are_exhausted_the_last_failure_is_raised(kafka):
    last = KafkaException(KafkaError(KafkaError._TIMED_OUT, "third"))
    kafka.outcomes = [TIMED_OUT, TIMED_OUT, last, ANSWER]
    with pytest.raises(KafkaException) as info:
        kafka_io.watermarks(options(retries=2, interval_ms=1000), PARTITIONS)
    assert info.value is last
    assert len(kafka.made) == 3 and all(c.closed for c in kafka.made)
    assert kafka.sleeps == [1.0, 1.0]  # between attempts, not after the last one


def test_no_retries_means_one_attempt(kafka):
    kafka.outcomes = [TIMED_OUT, ANSWER]
    with pytest.raises(KafkaException):
        kafka_io.watermarks(options(retries=0), PARTITIONS)
    assert len(kafka.made) == 1 and kafka.made[0].closed and kafka.sleeps == []


def test_parsed_options_drive_the_retries(kafka):
    kafka.outcomes = [TIMED_OUT, ANSWER]
    parsed = src(False, **{"fetchOffset.numRetries": "1", "fetchOffset.retryIntervalMs": "40"})
    assert kafka_io.watermarks(parsed, PARTITIONS) == ANSWER and kafka.sleeps == [0.04]
