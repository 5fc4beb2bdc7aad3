"""``kafka-producer-perf-test``: Kafka 2.8's ``ProducerPerformance`` flags and messages, its output lines
(Java's number formatting), the statistics and latency sample, the throttle, the settings, and the run
loop against a fake librdkafka producer (the wire: tests/integration/test_perf_tools.py)."""
from __future__ import annotations

import math

import pytest
from confluent_kafka import KafkaError, Message

from scripts.tools.perf_test import producer, producer_flags, producer_stats, settings
from scripts.tools.perf_test.formats import java_divide, java_fixed
from scripts.tools.perf_test.producer_flags import DEFAULT_TRANSACTIONAL_ID, UsageError
from scripts.tools.perf_test.producer_stats import Stats, Throttle

BASE = ["--topic", "t", "--num-records", "10", "--record-size", "100", "--throughput", "-1"]
PROPS = ["--producer-props", "bootstrap.servers=localhost:9092"]


# -- Java's formatting ----------------------------------------------------------------------------------

@pytest.mark.parametrize("value, digits, text", [
    (0.125, 2, "0.13"), (0.145, 2, "0.15"), (0.05, 1, "0.1"), (2.5, 0, "3"), (1234567.891, 6, "1234567.891000"),
    (-0.001, 2, "-0.00"), (1e21, 1, "1000000000000000000000.0"), (math.nan, 2, "NaN"), (math.inf, 4, "Infinity"),
    (-math.inf, 1, "-Infinity"), (7, 4, "7.0000"),
])
def test_java_fixed_rounds_the_shortest_decimal_half_up(value, digits, text):
    assert java_fixed(value, digits) == text


def test_java_divide_by_zero_is_infinity_or_nan():
    assert java_divide(5, 0) == math.inf and java_divide(-5, 0) == -math.inf and math.isnan(java_divide(0, 0))
    assert java_divide(6, 4) == 1.5


# -- output lines ---------------------------------------------------------------------------------------

def test_window_line_is_kafkas_format():
    line = producer_stats.window_line(50025, 5_002_500, 5003.0, 50025 * 4.47, 55.81)
    assert line == ("50025 records sent, 9999.0 records/sec (0.95 MB/sec), 4.5 ms avg latency, "
                    "55.8 ms max latency.")


def test_total_line_is_kafkas_format():
    line = producer_stats.total_line(1000000, 100_000_000, 1234.0, 1000000 * 7.784, 15.424, [8, 11, 13, 15])
    assert line == ("1000000 records sent, 810372.771475 records/sec (77.28 MB/sec), 7.78 ms avg latency, "
                    "15.42 ms max latency, 8 ms 50th, 11 ms 95th, 13 ms 99th, 15 ms 99.9th.")


def test_total_line_with_nothing_completed_prints_java_nan():
    assert ", NaN ms avg latency, 0.00 ms max latency, 0 ms 50th" in producer_stats.total_line(0, 0, 10.0, 0.0, 0.0,
                                                                                               [0, 0, 0, 0])


# -- statistics -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("records, sampling", [(1, 1), (499_999, 1), (500_000, 1), (999_999, 1), (1_000_000, 2),
                                               (10_000_000, 20), (12_345_678, 24)])
def test_sampling_is_kafkas(records, sampling):
    assert producer_stats.sampling_for(records) == sampling


def test_percentiles_index_int_p_times_size_of_the_sorted_sample():
    sample = list(range(1000, 0, -1))  # 1..1000, unsorted
    assert producer_stats.percentiles(sample) == [501, 951, 991, 1000]
    assert producer_stats.percentiles([]) == [0.0, 0.0, 0.0, 0.0]
    assert producer_stats.percentiles([3.0]) == [3.0, 3.0, 3.0, 3.0]


def test_stats_keeps_every_sampling_th_completion_across_batches():
    stats = Stats(2_000_000, 0.0)  # sampling 4
    batches = [[float(i) for i in range(start, start + size)] for start, size in ((0, 3), (3, 6), (9, 10))]
    for batch in batches:
        stats.add(batch, 0, 1.0)
    assert list(stats.sample) == [0.0, 4.0, 8.0, 12.0, 16.0]
    assert stats.count == 19 and stats.total_s == sum(range(19)) and stats.max_s == 18.0


def test_stats_prints_a_window_once_it_is_five_seconds_old_then_starts_a_new_one():
    stats = Stats(100, 1000.0)
    assert stats.add([0.002, 0.004], 200, 5999.0) is None
    line = stats.add([0.006], 100, 6000.0)
    assert line == "3 records sent, 0.6 records/sec (0.00 MB/sec), 4.0 ms avg latency, 6.0 ms max latency."
    assert (stats.window_count, stats.window_start_ms) == (0, 6000.0)
    assert stats.add([], 0, 20000.0) is None  # no completion, no window (as Kafka's: it prints from a callback)
    assert stats.add([0.001], 100, 20000.0).startswith("1 records sent, 0.1 records/sec")
    assert stats.total(11000.0) == ("4 records sent, 0.400000 records/sec (0.00 MB/sec), 3.25 ms avg latency, "
                                    "6.00 ms max latency, 4 ms 50th, 6 ms 95th, 6 ms 99th, 6 ms 99.9th.")


def test_stats_percentiles_are_whole_milliseconds_rounded():
    stats = Stats(10, 0.0)
    stats.add([0.0014, 0.0016, 0.0025, 0.0100], 0, 1.0)
    assert stats.percentiles_ms() == [3, 10, 10, 10]
    assert stats.total(1000.0).endswith("3 ms 50th, 10 ms 95th, 10 ms 99th, 10 ms 99.9th.")


# -- throttle -------------------------------------------------------------------------------------------

def test_throttle_allows_the_schedule_and_says_how_long_to_wait():
    throttle = Throttle(1000, 100.0)
    assert throttle.allowed(0, 100.0) == 1
    assert throttle.allowed(1, 100.0) == 0 and throttle.wait_s(1, 100.0) == pytest.approx(0.001)
    assert throttle.allowed(1, 100.5) == 500 and throttle.wait_s(501, 100.5) == pytest.approx(0.001)
    assert throttle.allowed(900, 100.5) == 0 and throttle.wait_s(900, 100.5) == pytest.approx(0.4)


def test_a_negative_throughput_never_throttles():
    throttle = Throttle(-1, 0.0)
    assert throttle.allowed(10**9, 0.0) >= 10**9 and throttle.wait_s(10**9, 0.0) == 0.0


# -- flags ----------------------------------------------------------------------------------------------

def test_parse_every_flag():
    options = producer_flags.parse(["--topic", "t", "--num-records", "5", "--payload-file", "f", "--payload-delimiter",
                                    ",", "--throughput", "100", "--producer-props", "a=1", "b=x=y", "--producer.config",
                                    "c.properties", "--print-metrics", "--transactional-id", "tx",
                                    "--transaction-duration-ms", "50"])
    assert (options.topic, options.num_records, options.record_size, options.payload_file) == ("t", 5, None, "f")
    assert (options.payload_delimiter, options.throughput, options.producer_props) == (",", 100, {"a": "1", "b": "x=y"})
    assert (options.producer_config, options.print_metrics, options.transactional_id) == ("c.properties", True, "tx")
    assert options.transactions and options.transaction_duration_ms == 50


def test_defaults_no_transactions_and_a_new_line_delimiter():
    options = producer_flags.parse(BASE + PROPS)
    assert options.payload_delimiter == "\n" and options.transactional_id is None and not options.transactions
    assert producer_flags.parse(BASE + PROPS + ["--transaction-duration-ms", "0", "--transactional-id", "x"]
                                ).transactional_id is None
    assert producer_flags.parse(BASE + PROPS + ["--transaction-duration-ms", "9"]).transactional_id == \
        DEFAULT_TRANSACTIONAL_ID


@pytest.mark.parametrize("argv, message", [
    (["--num-records", "1", "--record-size", "1", "--throughput", "1"] + PROPS,
     "the following arguments are required: --topic"),
    (["--topic", "t", "--num-records", "1", "--throughput", "1"] + PROPS,
     "one of the arguments --record-size --payload-file is required"),
    (BASE + ["--payload-file", "f"] + PROPS, "argument --payload-file: not allowed with argument --record-size"),
    (["--topic", "t", "--num-records", "x", "--record-size", "1", "--throughput", "1"] + PROPS,
     "argument --num-records: could not convert 'x' to Long (For input string: \"x\")"),
    (["--topic", "t", "--num-records", "1", "--record-size", "2147483648", "--throughput", "1"] + PROPS,
     "argument --record-size: could not convert '2147483648' to Integer (For input string: \"2147483648\")"),
    (BASE, "Either --producer-props or --producer.config must be specified."),
    (BASE + PROPS + ["--bogus"], "unrecognized arguments: --bogus"),
    (BASE + ["--producer-props", "novalue"], "Invalid property: novalue"),
    (BASE + ["--producer-props", "=v"], "Invalid property: =v"),
    (["--topic", "t", "--num-records", "0", "--record-size", "1", "--throughput", "1"] + PROPS,
     "argument --num-records: must be at least 1, not 0"),
    (["--topic", "t", "--num-records", "1", "--record-size", "-1", "--throughput", "1"] + PROPS,
     "argument --record-size: must not be negative, not -1"),
    (["--topic", "t", "--num-records", "1", "--record-size", "1", "--throughput", "0"] + PROPS,
     "argument --throughput: 0 would never send a second record (use -1 for no throttle)"),
    (BASE + PROPS + ["--payload-delimiter", "("], "argument --payload-delimiter: not a regular expression"),
])
def test_bad_flags_are_usage_errors(argv, message):
    with pytest.raises(UsageError) as caught:
        producer_flags.parse(argv)
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize("argv", [BASE + ["--bogus"], BASE, ["--topic"]])
def test_main_bad_flags_one_line_exit_1(argv, capsys):
    assert producer.main(argv) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("producer-performance: error: ")


def test_main_without_arguments_prints_the_help(capsys):
    assert producer.main([]) == 0
    assert capsys.readouterr().out.startswith("usage: producer-performance")


def test_main_without_bootstrap_servers_is_kafkas_message(capsys):
    assert producer.main(BASE + ["--producer-props", "acks=all"]) == 1
    assert capsys.readouterr().err == ("producer-performance: error: Missing required configuration "
                                       "\"bootstrap.servers\" which has no default value.\n")


def test_a_missing_producer_config_file_names_the_flag(tmp_path, capsys):
    assert producer.main(BASE + ["--producer.config", str(tmp_path / "nope")]) == 1
    assert f"argument --producer.config: cannot read {tmp_path / 'nope'}" in capsys.readouterr().err


@pytest.mark.parametrize("text, pattern, payloads", [
    ("a\nb\nc\n", "\n", [b"a", b"b", b"c"]), ("a\n\nb\n\n\n", "\n", [b"a", b"", b"b"]), ("\na", "\n", [b"", b"a"]),
    ("x1y22z", "[0-9]+", [b"x", b"y", b"z"]), ("\n\n", "\n", []), ("héllo", "\n", ["héllo".encode()]),
])
def test_payloads_split_as_javas_string_split(text, pattern, payloads):
    assert producer_flags.split_payloads(text, pattern) == payloads


def test_read_payloads_prints_kafkas_two_lines(tmp_path, capsys):
    path = tmp_path / "payloads.txt"
    path.write_text("one,two,three")
    options = producer_flags.parse(["--topic", "t", "--num-records", "1", "--payload-file", str(path),
                                    "--payload-delimiter", ",", "--throughput", "-1"] + PROPS)
    assert producer.read_payloads(options) == [b"one", b"two", b"three"]
    assert capsys.readouterr().out == f"Reading payloads from: {path}\nNumber of messages read: 3\n"
    path.write_text("")
    with pytest.raises(UsageError, match="File does not exist or empty file provided."):
        producer.read_payloads(options)


# -- settings -------------------------------------------------------------------------------------------

def test_producer_props_override_the_file_and_java_names_are_translated():
    config = settings.producer_config(
        {"bootstrap.servers": "file:1", "acks": "all", "max.request.size": "2000000", "key.serializer": "x",
         "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
         "sasl.jaas.config": 'x.PlainLoginModule required username="u" password="p";'},
        {"bootstrap.servers": "flag:2", "linger.ms": "7"}, None)
    assert config["bootstrap.servers"] == "flag:2" and config["acks"] == "all" and config["linger.ms"] == "7"
    assert config["message.max.bytes"] == "2000000" and "key.serializer" not in config
    assert (config["sasl.username"], config["sasl.password"]) == ("u", "p") and "sasl.jaas.config" not in config
    assert "transactional.id" not in config and config["log_level"] == "4"


def test_producer_defaults_to_kafka_28s_acks_1_and_sets_the_transactional_id():
    config = settings.producer_config({}, {"bootstrap.servers": "b:1"}, "tx-1")
    assert config["acks"] == "1" and config["transactional.id"] == "tx-1"


def test_a_jks_store_is_a_usage_error():
    with pytest.raises(UsageError, match="ssl.truststore.type: JKS is not supported"):
        settings.producer_config({}, {"bootstrap.servers": "b:1", "ssl.truststore.location": "t.jks",
                                      "ssl.truststore.type": "JKS"}, None)


# -- the run loop, against a fake producer --------------------------------------------------------------

class FakeProducer:
    """librdkafka's produce_batch / poll / flush / transactions, delivering each record on the next poll;
    ``full_once`` makes the first batch find the queue full after half its records; ``fail`` the records'
    delivery error."""

    def __init__(self, full_once: bool = False, fail: KafkaError | None = None):
        self.queued: list[tuple] = []
        self.full_once, self.fail = full_once, fail
        self.batches: list[int] = []
        self.transactions: list[str] = []

    def produce_batch(self, topic, messages, on_delivery):
        count = len(messages)
        if self.full_once:
            self.full_once, count = False, len(messages) // 2
            for message in messages[count:]:
                message["_error"] = KafkaError(KafkaError._QUEUE_FULL)
        self.batches.append(count)
        self.queued += [(on_delivery, m["value"]) for m in messages[:count]]
        return count

    def poll(self, _timeout=0):
        done, self.queued = self.queued, []
        for callback, value in done:
            callback(self.fail, Message(topic="t", value=value, latency=0.002))
        return len(done)

    def flush(self, _timeout=0):
        self.poll()
        return 0

    def begin_transaction(self):
        self.transactions.append("begin")

    def commit_transaction(self):
        self.poll()
        self.transactions.append("commit")


def options(*extra: str, records: int = 5000) -> producer_flags.ProducerOptions:
    return producer_flags.parse(["--topic", "t", "--num-records", str(records), "--record-size", "10",
                                 "--throughput", "-1", *PROPS, *extra])


def test_run_sends_every_record_in_chunks_and_counts_each_completion():
    fake = FakeProducer()
    run = producer.Run(fake, options(), None)
    run.produce()
    assert fake.batches == [producer.CHUNK, producer.CHUNK, 1000]
    assert (run.stats.count, run.stats.bytes, run.failed) == (5000, 50000, 0)
    assert run.stats.max_s == pytest.approx(0.002) and run.stats.total(run.stats.start_ms + 1000).startswith(
        "5000 records sent, 5000.000000 records/sec (0.05 MB/sec), 2.00 ms avg latency, 2.00 ms max latency, 2 ms 50th")
    value = fake.batches and run.fixed[0]["value"]
    assert len(value) == 10 and set(value) <= set(range(65, 91))  # A-Z, as Kafka's payload


def test_a_full_queue_retries_the_rest():
    fake = FakeProducer(full_once=True)
    run = producer.Run(fake, options(), None)
    run.produce()
    assert sum(fake.batches) == 5000 and fake.batches[0] == producer.CHUNK // 2 and run.stats.count == 5000
    assert not any("_error" in m for m in run.fixed)


def test_failed_records_count_and_are_one_line_each_on_stderr(capsys):
    run = producer.Run(FakeProducer(fail=KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)), options(records=3), None)
    run.produce()
    assert (run.stats.count, run.failed) == (3, 3)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 3 and lines[0].startswith("org.apache.kafka.common.errors.TopicAuthorizationException")


def test_payloads_are_picked_at_random_and_their_sizes_counted():
    run = producer.Run(FakeProducer(), options(records=300), [b"a", b"bbb"])
    run.produce()
    assert run.stats.count == 300 and 300 < run.stats.bytes < 900


def test_transactions_begin_and_commit_around_the_chunks():
    fake = FakeProducer()
    run = producer.Run(fake, options("--transaction-duration-ms", "1"), None)
    run.produce()
    assert fake.transactions[0] == "begin" and fake.transactions[-1] == "commit"
    assert fake.transactions.count("begin") == fake.transactions.count("commit") >= 1
