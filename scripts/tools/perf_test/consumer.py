"""``kafka-consumer-perf-test``: Kafka 2.8's ``ConsumerPerformance`` over confluent-kafka (librdkafka).

    kafka-consumer-perf-test --bootstrap-server HOST:PORT --topic T --messages N [--group G] [--timeout MS]
        [--show-detailed-stats [--reporting-interval MS]] [--from-latest] [--fetch-size BYTES]
        [--consumer.config FILE] [--print-metrics] [--hide-header] [--date-format PATTERN]

A consumer in group G subscribes to T and reads until N messages arrived or no message came for
``--timeout`` ms (10 s; then Kafka's WARNING line); output (stdout), Kafka's CSV exactly
(``consumer_stats``)::

    start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
    2026-11-28 13:05:09:042, 2026-11-28 13:05:10:418, 95.3674, 69.3077, 1000000, 726744.1860, 312, 1064, 89.6310, 939849.6241

Records are read ``consume(num_messages=...)`` at a time (10,000, or the ``--consumer.config`` file's
``max.poll.records``) and counted and measured per batch (``len`` and the keys' lengths by ``map``), never
one Python step per record; the last batch asks only for the messages still expected, so exactly N are
read. ``--print-metrics`` adds librdkafka's statistics in Kafka's metrics table (``formats``).

A non-fatal client error (an unknown topic, a broker gone) is one line on stderr, once per kind, and the
test goes on as Kafka's does; an authorization or authentication failure, or a fatal error, ends it:
one line (Kafka's exception name and message), exit 1. Bad flags: Kafka's message, one line, exit 1.
"""
from __future__ import annotations

import json
import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Message

from scripts.tools.common import client_properties
from scripts.tools.common.errors import java_exception, quiet_on_broken_pipe
from scripts.tools.perf_test import consumer_flags, consumer_stats, formats, settings
from scripts.tools.perf_test.consumer_flags import ConsumerOptions, UsageError
from scripts.tools.perf_test.consumer_stats import Progress
from scripts.tools.perf_test.dates import DateFormat

BATCH = 10_000
POLL_S = 0.1  # Kafka's poll(Duration.ofMillis(100))
STATISTICS_INTERVAL_MS = 500
FATAL = frozenset({KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED,
                   KafkaError.CLUSTER_AUTHORIZATION_FAILED, KafkaError.SASL_AUTHENTICATION_FAILED,
                   KafkaError._AUTHENTICATION})


class ConsumeFailed(Exception):
    """The consumer cannot go on; the message is its one line."""


def _now_ms() -> int:
    return int(time.time() * 1000)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("zkafka")
    except PackageNotFoundError:
        return "0+unknown"


def usage() -> str:
    lines = ["This tool helps in performance test for the full zookeeper consumer", "Option"]
    lines += [f"--{name}" + ("" if kind == "flag" else f" <{kind}>" + (f" (default: {default})" if default else ""))
              for name, (kind, default) in consumer_flags.OPTIONS.items()]
    return "\n".join(lines)


class Reader:
    """The consume loop: batches into ``Progress``, errors sorted into fatal and reported-once."""

    def __init__(self, consumer: Consumer, options: ConsumerOptions, dates: DateFormat, batch: int):
        self.consumer, self.options, self.dates, self.batch = consumer, options, dates, batch
        self.reported: set[int] = set()

    def tally(self, messages: list[Message]) -> tuple[int, int]:
        """(records, bytes of keys and values) of one batch; ConsumeFailed on a fatal error."""
        if not any(map(Message.error, messages)):
            keys = sum(map(len, filter(None, map(Message.key, messages))))
            return len(messages), sum(map(len, messages)) + keys
        good = [m for m in messages if not self._error(m.error())]
        return self.tally(good) if good else (0, 0)

    def _error(self, error: KafkaError | None) -> bool:
        if error is None:
            return False
        if error.fatal() or error.code() in FATAL:
            raise ConsumeFailed(java_exception(error))
        if error.code() not in self.reported and error.code() != KafkaError._PARTITION_EOF:
            self.reported.add(error.code())
            print(f"WARN {java_exception(error)}", file=sys.stderr)
        return True

    def run(self, progress: Progress) -> None:
        self.consumer.subscribe([self.options.topic], on_assign=lambda _c, _p: progress.assigned(_now_ms()),
                                on_revoke=lambda _c, _p: progress.revoked(_now_ms()))
        while progress.running():
            messages = self.consumer.consume(num_messages=min(self.batch, progress.remaining()), timeout=POLL_S)
            count, nbytes = self.tally(messages)
            if progress.polled(_now_ms(), count, nbytes):
                row = progress.report(self.dates)
                if self.options.show_detailed_stats:
                    print(row, flush=True)
        if progress.timed_out():
            print(consumer_stats.timeout_warning(self.options.timeout_ms))


def _final_statistics(consumer: Consumer, latest: list[str]) -> dict:
    """librdkafka's next statistics document after the run (the previous one if none comes); the
    partitions are paused first, so the polls that serve it return no record."""
    consumer.pause(consumer.assignment())
    seen = len(latest)
    deadline = time.monotonic() + 3 * STATISTICS_INTERVAL_MS / 1000.0
    while len(latest) == seen and time.monotonic() < deadline:
        consumer.poll(0.05)
    return json.loads(latest[-1]) if latest else {}


def _configure(argv: list[str]) -> tuple[ConsumerOptions, dict[str, str], int, DateFormat]:
    options = consumer_flags.parse(argv)
    file_props = client_properties.from_flag("--consumer.config", options.consumer_config)
    config = settings.consumer_config(options, file_props)
    return options, config, settings.batch_size(file_props, BATCH), DateFormat(options.date_format)


def _start(config: dict[str, str]) -> Consumer | None:
    try:
        client_properties.check_login(config["bootstrap.servers"], config)
        return Consumer(config)
    except (client_properties.LoginError, client_properties.ClientPropertiesError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
    except KafkaException as exc:  # librdkafka checks every setting here
        print(f"Error: invalid consumer config: {exc.args[0].str() if exc.args else exc}", file=sys.stderr)
    return None


def _measure(consumer: Consumer, options: ConsumerOptions, dates: DateFormat, batch: int,
             statistics: list[str]) -> tuple[Progress, int, int, dict[str, object]]:
    """Kafka's measured part: from just before ``subscribe`` until the loop ends; and the metrics."""
    start_ms = _now_ms()
    progress = Progress(start_ms, options.messages, options.timeout_ms, options.reporting_interval_ms)
    Reader(consumer, options, dates, batch).run(progress)
    end_ms = _now_ms()
    metrics = (formats.metrics_from_statistics(_final_statistics(consumer, statistics), "consumer")
               if options.print_metrics else {})
    return progress, start_ms, end_ms, metrics


def run_tool(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or "--help" in argv:
        print(usage(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 1
    if "--version" in argv:
        print(_version())
        return 0
    try:
        options, config, batch, dates = _configure(argv)
    except (UsageError, client_properties.ClientPropertiesError) as exc:
        print(exc, file=sys.stderr)
        return 1
    if options.deprecated_threads:
        print(consumer_flags.DEPRECATED_WARNING)
    if not options.hide_header:
        print(consumer_stats.header(options.show_detailed_stats), flush=True)
    statistics: list[str] = []
    if options.print_metrics:
        config.update({"statistics.interval.ms": str(STATISTICS_INTERVAL_MS), "stats_cb": statistics.append})
    consumer = _start(config)
    if consumer is None:
        return 1
    try:
        progress, start_ms, end_ms, metrics = _measure(consumer, options, dates, batch, statistics)
    except ConsumeFailed as exc:
        print(exc, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        consumer.close()
    if not options.show_detailed_stats:
        print(consumer_stats.summary_row(dates, start_ms, end_ms, progress.bytes, progress.messages, progress.join_ms))
    if metrics:
        print("\n".join(formats.metrics_table(metrics)))
    return 0


def main(argv: list[str] | None = None) -> int:
    return quiet_on_broken_pipe(run_tool, argv)


if __name__ == "__main__":
    sys.exit(main())
