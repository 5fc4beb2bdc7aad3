"""``kafka-consumer-perf-test``: Kafka 2.8's ``ConsumerPerfConfig`` (jopt-simple) flags and messages, the
settings, the CSV header and rows, the loop's state (rebalance time, reporting interval, timeout), Java's
``SimpleDateFormat``, the batch tally, and librdkafka's statistics in Kafka's metrics table (the wire:
tests/integration/test_perf_tools.py)."""
from __future__ import annotations

import re
from datetime import date, timedelta, timezone

import pytest
from confluent_kafka import KafkaError, Message

from scripts.tools.perf_test import consumer, consumer_flags, consumer_stats, formats, settings
from scripts.tools.perf_test.consumer_flags import UsageError
from scripts.tools.perf_test.consumer_stats import Progress
from scripts.tools.perf_test.dates import DateFormat, week_fields

BASE = ["--bootstrap-server", "b:9092", "--topic", "t", "--messages", "100"]
UTC = timezone.utc
T0 = 1_795_768_000_123  # 2026-11-27 08:26:40.123 UTC, a Friday


# -- flags ----------------------------------------------------------------------------------------------

def test_defaults_are_kafkas():
    options = consumer_flags.parse(BASE)
    assert (options.bootstrap_server, options.topic, options.messages) == ("b:9092", "t", 100)
    assert re.fullmatch(r"perf-consumer-\d{1,5}", options.group)
    assert (options.fetch_size, options.socket_buffer_size, options.timeout_ms) == (1048576, 2097152, 10000)
    assert (options.reporting_interval_ms, options.date_format) == (5000, "yyyy-MM-dd HH:mm:ss:SSS")
    assert not (options.from_latest or options.print_metrics or options.show_detailed_stats or options.hide_header
                or options.deprecated_threads)


def test_every_flag_and_jopt_simples_forms():
    options = consumer_flags.parse(["--broker-list", "old:1", "-topic", "t", "--messages=5", "--group", "g",
                                    "--fetch-size", "10", "--from-latest", "--socket-buffer-size", "20",
                                    "--consumer.config", "c.properties", "--print-metrics", "--show-detailed-stats",
                                    "--reporting-interval", "+30", "--timeout", "40", "--date-format", "HH",
                                    "--hide-header", "--threads", "3", "ignored-word"])
    assert (options.bootstrap_server, options.topic, options.messages, options.group) == ("old:1", "t", 5, "g")
    assert (options.fetch_size, options.from_latest, options.socket_buffer_size) == (10, True, 20)
    assert (options.consumer_config, options.print_metrics, options.show_detailed_stats) == ("c.properties", True, True)
    assert (options.reporting_interval_ms, options.timeout_ms, options.date_format) == (30, 40, "HH")
    assert options.hide_header and options.deprecated_threads


def test_bootstrap_server_wins_over_broker_list():
    assert consumer_flags.parse(BASE + ["--broker-list", "old:1"]).bootstrap_server == "b:9092"


def test_timeouts_value_is_optional_and_taken_only_when_it_is_a_number():
    assert consumer_flags.parse(BASE + ["--timeout"]).timeout_ms == 10000
    assert consumer_flags.parse(BASE + ["--timeout", "--hide-header"]).timeout_ms == 10000
    assert consumer_flags.parse(BASE + ["--timeout", "250"]).timeout_ms == 250


def test_a_value_taking_option_takes_the_next_word_whatever_it_is():
    with pytest.raises(UsageError, match=r'^Missing required argument "\[messages\]"$'):
        consumer_flags.parse(["--bootstrap-server", "b:1", "--topic", "--messages", "5"])


@pytest.mark.parametrize("argv, message", [
    (["--topic", "t", "--messages", "1"], "Missing required option(s) [bootstrap-server]"),
    (["--bootstrap-server", "b:1", "--messages", "1"], 'Missing required argument "[topic]"'),
    (["--bootstrap-server", "b:1", "--topic", "t"], 'Missing required argument "[messages]"'),
    (BASE + ["--foo"], "foo is not a recognized option"),
    (BASE + ["--fetch-size"], "Option fetch-size requires an argument"),
    (["--bootstrap-server", "b:1", "--topic", "t", "--messages", "many"],
     "Cannot parse argument 'many' of option messages"),
    (BASE + ["--fetch-size", "2147483648"], "Cannot parse argument '2147483648' of option fetch-size"),
    (BASE + ["--fetch-size", "1.5"], "Cannot parse argument '1.5' of option fetch-size"),
    (BASE + ["--topic", "u"], "Found multiple arguments for option topic, but you asked for only one"),
    (BASE + ["--reporting-interval", "0"], "Reporting interval must be greater than 0."),
    (BASE + ["--date-format", "yyyy-qq"], "Illegal pattern character 'q'"),
    (BASE + ["--date-format", "HH 'o''clock"], "Unterminated quote"),
    (BASE + ["--date-format", "XXXX"], "invalid ISO 8601 format: length=4"),
])
def test_bad_flags_are_kafkas_messages(argv, message):
    with pytest.raises(UsageError) as caught:
        consumer_flags.parse(argv)
    assert str(caught.value) == message


@pytest.mark.parametrize("argv", [BASE + ["--foo"], ["--topic", "t"], BASE + ["--consumer.config", "/nonexistent/x"]])
def test_main_bad_flags_one_line_exit_1(argv, capsys):
    assert consumer.main(argv) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1


def test_main_help(capsys):
    assert consumer.main(["--help"]) == 0
    assert "--show-detailed-stats" in capsys.readouterr().out
    assert consumer.main([]) == 1


# -- settings -------------------------------------------------------------------------------------------

def test_the_flags_go_over_the_file_as_in_kafka():
    options = consumer_flags.parse(BASE + ["--group", "g", "--fetch-size", "10", "--from-latest"])
    config = settings.consumer_config(options, {"group.id": "file-group", "bootstrap.servers": "file:1",
                                                "fetch.max.wait.ms": "50", "max.poll.records": "7",
                                                "value.deserializer": "x", "session.timeout.ms": "6000"})
    assert (config["group.id"], config["bootstrap.servers"]) == ("g", "b:9092")
    assert config["max.partition.fetch.bytes"] == "10"
    assert (config["auto.offset.reset"], config["check.crcs"]) == ("latest", "false")
    assert config["socket.receive.buffer.bytes"] == "2097152" and config["fetch.wait.max.ms"] == "50"
    assert "max.poll.records" not in config and "value.deserializer" not in config
    assert config["session.timeout.ms"] == "6000" and config["fetch.queue.backoff.ms"] == "5"
    assert settings.consumer_config(consumer_flags.parse(BASE), {})["auto.offset.reset"] == "earliest"


def test_the_file_may_change_the_tools_librdkafka_defaults():
    config = settings.consumer_config(consumer_flags.parse(BASE), {"fetch.queue.backoff.ms": "100"})
    assert config["fetch.queue.backoff.ms"] == "100"


@pytest.mark.parametrize("props, size", [({}, 10000), ({"max.poll.records": "500"}, 500),
                                         ({"max.poll.records": "0"}, 10000), ({"max.poll.records": "x"}, 10000)])
def test_batch_size_is_the_files_max_poll_records(props, size):
    assert settings.batch_size(props, 10000) == size


# -- output ---------------------------------------------------------------------------------------------

def test_headers_are_kafkas():
    assert consumer_stats.header(False) == (
        "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, "
        "fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")
    assert consumer_stats.header(True).startswith("time, threadId, data.consumed.in.MB, MB.sec, ")


def test_summary_row_is_kafkas_format():
    dates = DateFormat(zone=UTC)
    row = consumer_stats.summary_row(dates, T0, T0 + 1376, 100_000_000, 1_000_000, 312)
    assert row == ("2026-11-27 08:26:40:123, 2026-11-27 08:26:41:499, 95.3674, 69.3077, 1000000, 726744.1860, 312, "
                   "1064, 89.6310, 939849.6241")


def test_summary_row_of_nothing_consumed_and_no_fetch_time():
    row = consumer_stats.summary_row(DateFormat(zone=UTC), T0, T0, 0, 0, 0)
    assert row.split(", ")[2:] == ["0.0000", "NaN", "0", "NaN", "0", "0", "NaN", "NaN"]


def test_progress_row_is_kafkas_format():
    row = consumer_stats.progress_row(DateFormat(zone=UTC), 2_000_000, 1_000_000, 20_000, 10_000, T0, T0 + 1000, 200)
    assert row == "2026-11-27 08:26:41:123, 0, 1.9073, 0.9537, 20000, 10000.0000, 200, 800, 1.1921, 12500.0000"
    zero_fetch = consumer_stats.progress_row(DateFormat(zone=UTC), 10, 0, 1, 0, T0, T0 + 100, 100)
    assert zero_fetch.endswith(", 100, 0, 0.0000, 0.0000")


def test_timeout_warning_is_kafkas():
    assert consumer_stats.timeout_warning(10000) == (
        "WARNING: Exiting before consuming the expected number of messages: timeout (10000 ms) exceeded. You can "
        "use the --timeout option to increase the timeout.")


def test_progress_counts_the_rebalance_and_times_out_after_the_last_record():
    progress = Progress(1000, expected=10, timeout_ms=500, reporting_interval_ms=400)
    progress.assigned(1300)
    assert progress.join_ms == 300 and progress.running() and progress.remaining() == 10
    assert not progress.polled(1350, 4, 40)  # within the interval
    assert progress.polled(1400, 2, 20)  # 400 ms since the start: a row is due
    assert progress.report(DateFormat(zone=UTC)).split(", ")[4:8] == ["6", "15.0000", "300", "100"]
    assert progress.join_ms_in_round == 0 and progress.last_report_ms == 1400
    assert not progress.polled(1900, 0, 0) and progress.running()  # 500 ms without a record: not yet over
    progress.polled(1901, 0, 0)
    assert not progress.running() and progress.timed_out() and progress.messages == 6


def test_progress_ends_at_the_expected_count():
    progress = Progress(0, expected=3, timeout_ms=10, reporting_interval_ms=100)
    progress.polled(5, 3, 30)
    assert not progress.running() and not progress.timed_out() and progress.remaining() == 0


def test_a_second_rebalance_adds_its_own_time():
    progress = Progress(0, expected=3, timeout_ms=10, reporting_interval_ms=100)
    progress.assigned(100)
    progress.revoked(1000)
    progress.assigned(1050)
    assert progress.join_ms == 150


# -- SimpleDateFormat -----------------------------------------------------------------------------------

@pytest.mark.parametrize("pattern, text", [
    ("yyyy-MM-dd HH:mm:ss:SSS", "2026-11-27 08:26:40:123"), ("yy/M/d H:m:s.S", "26/11/27 8:26:40.123"),
    ("EEE, d MMM yyyy hh:mm a", "Fri, 27 Nov 2026 08:26 AM"), ("EEEE MMMM", "Friday November"),
    ("yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "2026-11-27T08:26:40.123Z"), ("Z X z", "+0000 Z UTC"),
    ("'It''s' h 'o''clock' ''", "It's 8 o'clock '"), ("D w W F u k K G", "331 48 4 4 5 8 8 AD"),
    ("yyyyy", "02026"), ("LLL", "Nov"),
])
def test_simple_date_format_fields(pattern, text):
    assert DateFormat(pattern, UTC).format(T0) == text


def test_simple_date_format_offsets_and_the_local_zone():
    plus = timezone(timedelta(hours=5, minutes=30))
    assert DateFormat("HH:mm Z X XX XXX", plus).format(T0) == "13:56 +0530 +05 +0530 +05:30"
    minus = timezone(timedelta(hours=-8))
    assert DateFormat("Z XXX", minus).format(T0) == "-0800 -08:00"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:123", DateFormat().format(T0))


@pytest.mark.parametrize("day, fields", [
    (date(2024, 12, 31), (2025, 1)), (date(2025, 1, 1), (2025, 1)), (date(2025, 1, 5), (2025, 2)),
    (date(2022, 12, 31), (2022, 53)), (date(2023, 1, 1), (2023, 1)),
])
def test_us_week_of_year(day, fields):
    assert week_fields(day) == fields


def test_midnight_and_noon_hours():
    midnight = 1_795_737_600_000  # 2026-11-27 00:00 UTC
    assert DateFormat("H k K h a", UTC).format(midnight) == "0 24 0 12 AM"
    assert DateFormat("H k K h a", UTC).format(midnight + 12 * 3600_000) == "12 12 0 12 PM"


# -- the batch tally ------------------------------------------------------------------------------------

def reader() -> consumer.Reader:
    return consumer.Reader(None, None, None, 100)


def test_tally_counts_records_and_key_and_value_bytes():
    messages = [Message(topic="t", value=b"x" * 10, key=b"kk"), Message(topic="t", value=b"y" * 5),
                Message(topic="t", value=None, key=b"k")]
    assert reader().tally(messages) == (3, 18)
    assert reader().tally([]) == (0, 0)


def test_tally_skips_and_reports_non_fatal_errors_once(capsys):
    tally = reader()
    eof = Message(topic="t", error=KafkaError(KafkaError._PARTITION_EOF))
    gone = Message(topic="t", error=KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART))
    assert tally.tally([Message(topic="t", value=b"abc"), eof, gone, gone]) == (1, 3)
    assert tally.tally([gone]) == (0, 0)
    err = capsys.readouterr().err.splitlines()
    assert err == ["WARN org.apache.kafka.common.errors.UnknownTopicOrPartitionException: Broker: Unknown topic or "
                   "partition"]


@pytest.mark.parametrize("code", [KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED,
                                  KafkaError.SASL_AUTHENTICATION_FAILED])
def test_tally_ends_the_test_on_an_authorization_failure(code):
    with pytest.raises(consumer.ConsumeFailed, match="^org.apache.kafka.common.errors."):
        reader().tally([Message(topic="t", error=KafkaError(code))])


# -- metrics --------------------------------------------------------------------------------------------

STATISTICS = {
    "name": "rdkafka#consumer-1", "client_id": "perf", "type": "consumer", "ts": 5, "rxmsgs": 12, "time": 9,
    "brokers": {"b:1/1": {"nodeid": 1, "name": "b:1/1", "state": "UP", "rtt": {"avg": 250, "p99": 900}},
                "b:1/bootstrap": {"nodeid": -1, "state": "UP"}},
    "topics": {"t": {"topic": "t", "metadata_age": 3, "partitions": {"0": {"partition": 0, "rxmsgs": 12},
                                                                       "-1": {"partition": -1, "rxmsgs": 0}}}},
    "cgrp": {"state": "up", "rebalance_cnt": 1},
}


def test_statistics_become_kafkas_metric_names():
    metrics = formats.metrics_from_statistics(STATISTICS, "consumer")
    assert metrics == {
        "consumer-metrics:ts:{client-id=perf}": 5, "consumer-metrics:rxmsgs:{client-id=perf}": 12,
        "consumer-metrics:time:{client-id=perf}": 9,
        "consumer-node-metrics:state:{client-id=perf, node-id=node-1}": "UP",
        "consumer-node-metrics:rtt-avg:{client-id=perf, node-id=node-1}": 250,
        "consumer-node-metrics:rtt-p99:{client-id=perf, node-id=node-1}": 900,
        "consumer-topic-metrics:metadata_age:{client-id=perf, topic=t}": 3,
        "consumer-partition-metrics:rxmsgs:{client-id=perf, topic=t, partition=0}": 12,
        "consumer-coordinator-metrics:state:{client-id=perf}": "up",
        "consumer-coordinator-metrics:rebalance_cnt:{client-id=perf}": 1,
    }


def test_metrics_table_is_kafkas_print_metrics():
    lines = formats.metrics_table({"b:y:{}": 2, "a:x:{client-id=c}": 1.23456, "a:s:{}": "up"})
    assert lines == ["", "Metric Name         Value", "a:s:{}            : up",
                     "a:x:{client-id=c} : 1.235", "b:y:{}            : 2.000"]
    assert formats.metrics_table({}) == []
