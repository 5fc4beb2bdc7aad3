"""Kafka's perf tools against a real 3-broker cluster (real ZooKeeper, real broker processes), run as the
installed console scripts and their output parsed as a script parses it: ``kafka-producer-perf-test``'s
final line field by field (acks=all to an RF-3 topic; the records really are in the log), its window
line and throttle, ``--payload-file`` and ``--print-metrics``, transactions read back by a read_committed
consumer; ``kafka-consumer-perf-test``'s CSV row (every record counted once, the columns consistent with
each other), ``--show-detailed-stats``, the timeout WARNING; a bad flag is one line and exit 1. The
secured cluster (``--producer.config`` / ``--consumer.config``, ACLs) is in test_tool_client_properties."""
from __future__ import annotations

import re
import subprocess
import sys
import uuid
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from scripts.local.cluster import running_cluster

BIN = Path(sys.executable).parent
PARTITIONS = 3
RECORDS = 20_000
FINAL = re.compile(r"(\d+) records sent, (\d+\.\d{6}) records/sec \((\d+\.\d{2}) MB/sec\), "
                   r"(\d+\.\d{2}) ms avg latency, "
                   r"(\d+\.\d{2}) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th\.")
WINDOW = re.compile(r"(\d+) records sent, (\d+\.\d) records/sec \((\d+\.\d{2}) MB/sec\), (\d+\.\d) ms avg latency, "
                    r"(\d+\.\d) ms max latency\.")
HEADER = ("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, "
          "fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")
DATE = "%Y-%m-%d %H:%M:%S:%f"  # Kafka's yyyy-MM-dd HH:mm:ss:SSS


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("perf") / "cluster", 3, tick_time=500, session_timeout_ms=6000,
                         properties={"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "3",
                                     "transaction.state.log.num.partitions": "3"}) as c:
        yield c


def tool(name: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    done = subprocess.run([str(BIN / name), *args], capture_output=True, text=True, timeout=timeout)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def new_topic(cluster) -> str:
    topic = f"perf-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})  # kept while its future runs
    admin.create_topics([NewTopic(topic, PARTITIONS, 3, config={"min.insync.replicas": "2"})])[topic].result(30)
    return topic


def produce(cluster, topic: str, records: int, *extra: str, props: tuple[str, ...] = ("acks=all",)):
    return tool("kafka-producer-perf-test", "--topic", topic, "--num-records", str(records), "--throughput", "-1",
                *extra, "--producer-props", f"bootstrap.servers={cluster.bootstrap_servers}", *props)


def final_fields(stdout: str) -> tuple:
    match = FINAL.fullmatch(stdout.splitlines()[-1])
    assert match, stdout
    count, rate, mb, avg, peak, *percentiles = match.groups()
    return int(count), float(rate), float(mb), float(avg), float(peak), [int(p) for p in percentiles]


def end_offsets(cluster, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "offsets"})
    try:
        return sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=15)[1] for p in range(PARTITIONS))
    finally:
        consumer.close()


@pytest.fixture(scope="module")
def produced(cluster) -> SimpleNamespace:
    """A topic with RECORDS records of 100 bytes, written by the producer perf test (acks=all, RF 3), and
    the test's stdout."""
    topic = new_topic(cluster)
    done = produce(cluster, topic, RECORDS, "--record-size", "100")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return SimpleNamespace(topic=topic, stdout=done.stdout)


def test_producer_final_line_field_by_field(cluster, produced):
    count, rate, mb, avg, peak, percentiles = final_fields(produced.stdout)
    assert count == RECORDS and end_offsets(cluster, produced.topic) == RECORDS
    assert rate > 0 and abs(mb - rate * 100 / (1024 * 1024)) <= 0.006  # MB/sec: the same rate in MiB of values
    assert 0 < avg <= peak and percentiles == sorted(percentiles) and percentiles[-1] <= round(peak) + 1
    assert all(WINDOW.fullmatch(line) for line in produced.stdout.splitlines()[:-1]), produced.stdout


def test_consumer_row_counts_every_record_once(cluster, produced):
    done = tool("kafka-consumer-perf-test", "--bootstrap-server", cluster.bootstrap_servers, "--topic", produced.topic,
                "--messages", str(RECORDS), "--group", f"perf-{uuid.uuid4().hex[:6]}")
    assert done.returncode == 0, done.stderr
    header, row = done.stdout.splitlines()
    assert header == HEADER
    start, end, mb, mb_per_s, messages, per_s, rebalance, fetch, fetch_mb, fetch_per_s = row.split(", ")
    elapsed_ms = round((datetime.strptime(end, DATE) - datetime.strptime(start, DATE)).total_seconds() * 1000)
    assert int(messages) == RECORDS and mb == f"{RECORDS * 100 / 1048576:.4f}"
    assert int(rebalance) >= 0 and int(fetch) == elapsed_ms - int(rebalance)
    assert float(per_s) == pytest.approx(RECORDS / (elapsed_ms / 1000), rel=1e-3)
    assert float(fetch_per_s) == pytest.approx(RECORDS / (int(fetch) / 1000), rel=1e-3)
    assert float(mb_per_s) == pytest.approx(float(mb) / (elapsed_ms / 1000), rel=1e-3, abs=1e-4)
    assert float(fetch_mb) == pytest.approx(float(mb) / (int(fetch) / 1000), rel=1e-3, abs=1e-4)


def test_consumer_detailed_stats_rows_and_no_summary(cluster, produced):
    done = tool("kafka-consumer-perf-test", "--broker-list", cluster.bootstrap_servers, "--topic", produced.topic,
                "--messages", str(RECORDS), "--show-detailed-stats", "--reporting-interval", "1",
                "--date-format", "HH:mm:ss.SSS")
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    assert header.startswith("time, threadId, data.consumed.in.MB, ") and rows, done.stdout
    counts = [int(row.split(", ")[4]) for row in rows]
    assert all(re.fullmatch(r"\d\d:\d\d:\d\d\.\d{3}", row.split(", ")[0]) and row.split(", ")[1] == "0" for row in rows)
    assert counts == sorted(counts) and counts[-1] <= RECORDS and all(len(r.split(", ")) == 10 for r in rows)


def test_consumer_times_out_with_kafkas_warning(cluster, produced):
    done = tool("kafka-consumer-perf-test", "--bootstrap-server", cluster.bootstrap_servers, "--topic", produced.topic,
                "--messages", str(RECORDS + 1), "--timeout", "1000", "--hide-header")
    assert done.returncode == 0, done.stderr
    warning, row = done.stdout.splitlines()
    assert warning == ("WARNING: Exiting before consuming the expected number of messages: timeout (1000 ms) "
                       "exceeded. You can use the --timeout option to increase the timeout.")
    assert row.split(", ")[4] == str(RECORDS)


def test_throttled_producer_prints_a_window_line_and_keeps_the_rate(cluster):
    topic = new_topic(cluster)
    done = tool("kafka-producer-perf-test", "--topic", topic, "--num-records", "5500", "--record-size", "10",
                "--throughput", "1000", "--producer-props", f"bootstrap.servers={cluster.bootstrap_servers}")
    assert done.returncode == 0, done.stderr
    *windows, _final = done.stdout.splitlines()
    assert len(windows) == 1 and (match := WINDOW.fullmatch(windows[0])), done.stdout
    assert 900 <= float(match.group(2)) <= 1100
    count, rate, *_ = final_fields(done.stdout)
    assert count == 5500 and 900 <= rate <= 1050


def test_payload_file_and_print_metrics(cluster, tmp_path):
    topic, payloads = new_topic(cluster), tmp_path / "payloads.txt"
    payloads.write_text("alpha|beta|gamma|")
    done = produce(cluster, topic, 300, "--payload-file", str(payloads), "--payload-delimiter", "\\|",
                   "--print-metrics")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == [f"Reading payloads from: {payloads}", "Number of messages read: 3"]
    assert final_fields(lines[2])[0] == 300 and lines[3] == "" and lines[4].startswith("Metric Name ")
    assert any(re.fullmatch(r"producer-metrics:txmsgs:\{client-id=rdkafka\} +: 300\.000", line) for line in lines)
    assert end_offsets(cluster, topic) == 300


def test_transactions_are_committed(cluster, tmp_path):
    topic = new_topic(cluster)
    done = produce(cluster, topic, 5000, "--record-size", "20", "--transaction-duration-ms", "20",
                   "--transactional-id", f"perf-{uuid.uuid4().hex[:6]}")
    assert done.returncode == 0 and final_fields(done.stdout)[0] == 5000, done.stderr
    config = tmp_path / "consumer.properties"
    config.write_text("isolation.level=read_committed\nmax.poll.records=700\n")
    read = tool("kafka-consumer-perf-test", "--bootstrap-server", cluster.bootstrap_servers, "--topic", topic,
                "--messages", "5000", "--consumer.config", str(config), "--hide-header", "--timeout", "5000")
    assert read.returncode == 0 and read.stdout.count("\n") == 1, read.stdout + read.stderr
    assert read.stdout.split(", ")[4] == "5000"


@pytest.mark.parametrize("name, args, message", [
    ("kafka-producer-perf-test", ["--topic", "t", "--num-records", "ten", "--record-size", "1", "--throughput", "-1",
                                  "--producer-props", "bootstrap.servers=127.0.0.1:1"],
     "producer-performance: error: argument --num-records: could not convert 'ten' to Long"),
    ("kafka-producer-perf-test", ["--topic", "t", "--num-records", "1", "--record-size", "1", "--throughput", "-1",
                                  "--producer-props", "bootstrap.servers=127.0.0.1:1", "no.such.property=1"],
     'Error: invalid producer config: No such configuration property: "no.such.property"'),
    ("kafka-consumer-perf-test", ["--bootstrap-server", "127.0.0.1:1", "--topic", "t", "--messages", "1", "--bogus"],
     "bogus is not a recognized option"),
])
def test_a_bad_flag_is_one_line_and_exit_1(name, args, message):
    done = tool(name, *args)
    assert done.returncode == 1 and done.stdout == "", done.stdout
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(message), done.stderr
