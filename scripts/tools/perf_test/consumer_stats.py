"""Kafka 2.8's ``ConsumerPerformance`` output (pure: times are passed in, in epoch milliseconds).

Header, then one row at the end (Kafka's formats: ``%s, %s, %.4f, %.4f, %d, %.4f, %d, %d, %.4f, %.4f``)::

    start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
    2026-11-28 13:05:09:042, 2026-11-28 13:05:10:418, 95.3674, 69.3077, 1000000, 726744.1860, 312, 1064, 89.6310, 939849.6241

With ``--show-detailed-stats`` the header's first two columns are ``time, threadId`` and a row comes every
``--reporting-interval`` while records arrive (``time, 0, total MB, interval MB/s, total messages, interval
messages/s, rebalance ms in the interval, fetch ms, fetch MB/s, fetch messages/s``) and no final row, as in
Kafka. MB is 1024 * 1024 bytes of keys and values. ``rebalance.time.ms`` is the time from ``subscribe`` to
the assignment (each rebalance's, summed); ``fetch.time.ms`` the rest of the run. When the expected
number of messages did not arrive, Kafka's line comes before the row, on stdout as Kafka prints it::

    WARNING: Exiting before consuming the expected number of messages: timeout (10000 ms) exceeded. You can use the --timeout option to increase the timeout.
"""
from __future__ import annotations

from scripts.tools.perf_test.dates import DateFormat
from scripts.tools.perf_test.formats import MB, java_divide, java_fixed

NEW_FIELDS = ", rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
HEADER = "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec" + NEW_FIELDS
DETAILED_HEADER = "time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec" + NEW_FIELDS


def header(show_detailed_stats: bool) -> str:
    return DETAILED_HEADER if show_detailed_stats else HEADER


def timeout_warning(timeout_ms: int) -> str:
    return (f"WARNING: Exiting before consuming the expected number of messages: timeout ({timeout_ms} ms) "
            f"exceeded. You can use the --timeout option to increase the timeout.")


def summary_row(dates: DateFormat, start_ms: int, end_ms: int, nbytes: int, messages: int, join_ms: int) -> str:
    """Kafka's final row."""
    elapsed_s = (end_ms - start_ms) / 1000.0
    fetch_ms = (end_ms - start_ms) - join_ms
    mb = nbytes / MB
    return ", ".join((dates.format(start_ms), dates.format(end_ms), java_fixed(mb, 4),
                      java_fixed(java_divide(mb, elapsed_s), 4), str(messages),
                      java_fixed(java_divide(messages, elapsed_s), 4), str(join_ms), str(fetch_ms),
                      java_fixed(java_divide(mb, fetch_ms / 1000.0), 4),
                      java_fixed(java_divide(messages, fetch_ms / 1000.0), 4)))


def progress_row(dates: DateFormat, nbytes: int, last_bytes: int, messages: int, last_messages: int,
                 start_ms: int, end_ms: int, join_ms: int) -> str:
    """Kafka's ``printConsumerProgress`` row for the interval ``start_ms``..``end_ms`` (thread id 0)."""
    elapsed_ms = float(end_ms - start_ms)
    interval_mb = (nbytes - last_bytes) / MB
    fetch_ms = end_ms - start_ms - join_ms
    if fetch_ms <= 0:
        fetch_mb_per_s = fetch_messages_per_s = 0.0
    else:
        fetch_mb_per_s = 1000.0 * interval_mb / fetch_ms
        fetch_messages_per_s = 1000.0 * (messages - last_messages) / fetch_ms
    return ", ".join((dates.format(end_ms), "0", java_fixed(nbytes / MB, 4),
                      java_fixed(java_divide(1000.0 * interval_mb, elapsed_ms), 4), str(messages),
                      java_fixed(java_divide(messages - last_messages, elapsed_ms) * 1000.0, 4), str(join_ms),
                      str(fetch_ms), java_fixed(fetch_mb_per_s, 4), java_fixed(fetch_messages_per_s, 4)))


class Progress:
    """Kafka's ``consume`` loop state: totals, the rebalance clock, the reporting interval, the timeout."""

    def __init__(self, start_ms: int, expected: int, timeout_ms: int, reporting_interval_ms: int):
        self.expected, self.timeout_ms, self.interval_ms = expected, timeout_ms, reporting_interval_ms
        self.messages = self.bytes = self.last_messages = self.last_bytes = 0
        self.join_ms = self.join_ms_in_round = 0
        self.join_start_ms = start_ms
        self.last_report_ms = self.last_consumed_ms = self.now_ms = start_ms

    def assigned(self, now_ms: int) -> None:
        """The group handed this consumer its partitions (Kafka's ``onPartitionsAssigned``)."""
        self.join_ms += now_ms - self.join_start_ms
        self.join_ms_in_round += now_ms - self.join_start_ms

    def revoked(self, now_ms: int) -> None:
        self.join_start_ms = now_ms

    def running(self) -> bool:
        """Kafka's loop condition: more expected, and the last record (or the start) within the timeout."""
        return self.messages < self.expected and self.now_ms - self.last_consumed_ms <= self.timeout_ms

    def remaining(self) -> int:
        return max(0, self.expected - self.messages)

    def polled(self, now_ms: int, messages: int, nbytes: int) -> bool:
        """One poll's records; True when a reporting interval ended (``report`` makes its row)."""
        self.now_ms = now_ms
        if messages:
            self.last_consumed_ms = now_ms
            self.messages += messages
            self.bytes += nbytes
        return bool(messages) and now_ms - self.last_report_ms >= self.interval_ms

    def report(self, dates: DateFormat) -> str:
        """The interval's detailed row; a new interval starts."""
        row = progress_row(dates, self.bytes, self.last_bytes, self.messages, self.last_messages,
                           self.last_report_ms, self.now_ms, self.join_ms_in_round)
        self.join_ms_in_round = 0
        self.last_report_ms = self.now_ms
        self.last_messages, self.last_bytes = self.messages, self.bytes
        return row

    def timed_out(self) -> bool:
        return self.messages < self.expected
