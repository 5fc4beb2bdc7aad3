"""What every workload process shares: the common flags, the history file, SIGTERM, pacing, values on the
wire, and the decisions that turn a client's error into an op's completion type.

Exit codes (the launcher reads them): ``EXIT_OK`` 0 = stopped cleanly after SIGTERM with every op complete;
``EXIT_UNFINISHED`` = stopped, but some op is still without a completion (a producer's flush ran out);
``EXIT_FATAL`` = the client reported a fatal error (fenced, idempotent producer's fatal state);
``EXIT_STUCK`` = a client call outlived its own timeout (librdkafka hang; the watchdog ended the process);
``EXIT_UNKNOWN_TXN`` = a transaction's outcome is unknown: only a new producer with the same
``transactional.id`` (its InitProducerId) settles it; ``EXIT_CLOSE_TIMEOUT`` = stopped after SIGTERM with every
op complete, but the client's ``close()`` did not return within its bound (librdkafka's close waits for the
group coordinator): a clean stop all the same (``clean_stop``); ``EXIT_NO_OFFSETS`` = a copier could not read
its group's committed offset within its bound (the launcher restarts it).

No client call blocks a workload for ever: a call without a timeout of its own runs in a ``BoundedCall``
(a daemon thread) that the workload waits for with a deadline; a workload whose client may still be inside
such a call ends with ``exit_now`` (the interpreter's own exit would destroy the client and wait again).
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from scripts.soak.history import FAIL, INFO, HistoryWriter

EXIT_OK = 0
EXIT_UNFINISHED = 10  # above Python's own 1 (an uncaught exception) and argparse's 2
EXIT_FATAL = 11
EXIT_STUCK = 12
EXIT_UNKNOWN_TXN = 13
EXIT_CLOSE_TIMEOUT = 14
EXIT_NO_OFFSETS = 15
EXIT_CODES = {EXIT_OK: "ok", EXIT_UNFINISHED: "unfinished", EXIT_FATAL: "fatal", EXIT_STUCK: "stuck",
              EXIT_UNKNOWN_TXN: "unknown-txn", EXIT_CLOSE_TIMEOUT: "close-timeout",
              EXIT_NO_OFFSETS: "no-committed-offset"}
CLEAN_EXITS = frozenset({EXIT_OK, EXIT_CLOSE_TIMEOUT})
CLOSE_S = 15.0  # how long a workload waits for its client's close() after SIGTERM


def clean_stop(code: int | None) -> bool:
    """Whether a workload's exit code after SIGTERM is a clean stop: every op it invoked is complete."""
    return code in CLEAN_EXITS


def exit_name(code: int | None) -> str:
    """An exit code as the report names it: ``ok``, ``stuck``, ``killed by signal 9``, ``not reaped``."""
    if code is None:
        return "not reaped"
    if code < 0:
        return f"killed by signal {-code}"
    return EXIT_CODES.get(code, f"exit {code}")

VALUE_RANGE = 10**9  # each producer process owns [value_base, value_base + VALUE_RANGE)

# Errors that mean the record was definitely not written: the client refused it before sending, or the
# broker refuses it on every attempt alike (so no earlier attempt can have been written either). Not
# ``_PURGE_QUEUE``: librdkafka's purge of the queues takes the transmit queue too, where a record waits for its
# retry after an attempt that may have been written.
SEND_DEFINITE = frozenset({"MSG_SIZE_TOO_LARGE", "_MSG_SIZE_TOO_LARGE", "RECORD_LIST_TOO_LARGE",
                           "INVALID_RECORD", "TOPIC_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED",
                           "_UNKNOWN_TOPIC", "_UNKNOWN_PARTITION", "INVALID_REQUIRED_ACKS"})
# A commit rejected by the group coordinator for the member's generation: the offsets were not stored.
COMMIT_DEFINITE = frozenset({"ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID", "REBALANCE_IN_PROGRESS",
                             "FENCED_INSTANCE_ID", "_NO_OFFSET", "_ASSIGNMENT_LOST", "_STATE",
                             "GROUP_AUTHORIZATION_FAILED", "TOPIC_AUTHORIZATION_FAILED"})


def send_completion(error_name: str, at_produce: bool) -> str:
    """A send that failed: ``fail`` when it was never handed to the client (``produce()`` raised) or the error is
    definite, else ``info`` (a delivery error after retries: an earlier attempt may have been written; with
    idempotence librdkafka cannot tell persisted from not either, KAFKA-13574)."""
    return FAIL if at_produce or error_name in SEND_DEFINITE else INFO


def commit_completion(error_name: str) -> str:
    return FAIL if error_name in COMMIT_DEFINITE else INFO


def encode_value(value: int) -> bytes:
    return str(value).encode()


def decode_value(raw: bytes | None) -> int | None:
    """A record's value as the soak wrote it, or None for anything else (logged by the caller)."""
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


@dataclass
class Pacer:
    """Records due at ``rate``/s since the start: the n-th record is due at n / rate seconds, so a stall (a
    BufferError, a slow poll) is caught up rather than lost, as Kafka's ThroughputThrottler does."""
    rate: float

    def due(self, elapsed_s: float) -> int:
        """How many records should have been sent ``elapsed_s`` after the start."""
        return int(elapsed_s * self.rate) + 1 if elapsed_s >= 0 else 0

    def wait_s(self, sent: int, elapsed_s: float, cap_s: float = 0.05) -> float:
        """How long to poll before the next record is due (0 if it is due already), at most ``cap_s``."""
        return max(0.0, min(cap_s, sent / self.rate - elapsed_s))


def value_of(value_base: int, n: int) -> int:
    """The n-th value a producer sends: consecutive integers from its base, within its own range."""
    if not 0 <= n < VALUE_RANGE:
        raise ValueError(f"record {n} is outside the producer's value range of {VALUE_RANGE}")
    return value_base + n


def partition_of(n: int, partitions: int) -> int:
    return n % partitions


def base_parser(kind: str, description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"python -m scripts.soak.workloads {kind}", description=description)
    p.add_argument("--bootstrap", required=True, help="HOST:PORT,...")
    p.add_argument("--history-dir", required=True, type=Path)
    p.add_argument("--process", required=True, help="this process's name in the history (e.g. producer-0)")
    p.add_argument("--after-crash", type=int, default=None, metavar="EXIT_CODE",
                   help="restarted by the launcher after the previous run exited so: write a crash op first")
    return p


def comma_list(text: str) -> list[str]:
    return [t for t in text.split(",") if t]


def history_path(history_dir: Path, process: str) -> Path:
    return Path(history_dir) / f"history-{process}.jsonl"


def open_history(args: argparse.Namespace) -> HistoryWriter:
    writer = HistoryWriter(history_path(args.history_dir, args.process), args.process)
    if args.after_crash is not None:
        writer.event("crash", [["crash", EXIT_CODES.get(args.after_crash, str(args.after_crash))]], type_=INFO)
    return writer


_STOP = threading.Event()
_STOPPED_AT: list[float] = []


def _stop(*_) -> None:
    if not _STOP.is_set():
        _STOPPED_AT.append(time.monotonic())
    _STOP.set()


def catch_stop_signals() -> None:
    """SIGTERM and SIGINT from now on ask the workload to stop (``__main__`` calls it before the client
    library is even imported, so an early SIGTERM is a clean stop too)."""
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)


class Stopping:
    """True once SIGTERM (or SIGINT) arrived: the workload finishes what it is doing and exits."""

    def __init__(self) -> None:
        catch_stop_signals()

    def __bool__(self) -> bool:
        return _STOP.is_set()

    def since_s(self) -> float:
        """Seconds since SIGTERM arrived (0 before)."""
        return time.monotonic() - _STOPPED_AT[0] if _STOPPED_AT else 0.0


class BoundedCall:
    """``call()`` in a daemon thread, waited for with a deadline: ``wait(timeout)`` is True once it returned or
    raised; then ``result()`` returns its value or raises its exception. A call that never returns leaves
    only its thread behind."""

    def __init__(self, call: Callable, name: str = "client-call") -> None:
        self._done = threading.Event()
        self._value = self._error = None
        self._thread = threading.Thread(target=self._run, args=(call,), name=name, daemon=True)
        self._thread.start()

    def _run(self, call: Callable) -> None:
        try:
            self._value = call()
        except BaseException as exc:  # handed to the waiting thread
            self._error = exc
        finally:
            self._done.set()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float) -> bool:
        return self._done.wait(max(0.0, timeout))

    def result(self):
        if self._error is not None:
            raise self._error
        return self._value


def close_bounded(close: Callable, process: str, timeout: float = CLOSE_S) -> bool:
    """The client's ``close()`` within ``timeout``; whether it returned (logged when not)."""
    call = BoundedCall(close, "close")
    if call.wait(timeout):
        try:
            call.result()
        except Exception as exc:  # a close that failed still ended
            log(process, f"close: {exc}")
        return True
    log(process, f"close() did not return within {timeout:g} s")
    return False


def exit_now(code: int) -> None:
    """End the process at once with ``code`` (its history already closed): the client may still be inside
    a call that does not return, and the interpreter's exit would wait for it."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def log(process: str, message: str) -> None:
    sys.stderr.write(f"{time.strftime('%H:%M:%S')} {process}: {message}\n")
    sys.stderr.flush()


def error_name(err) -> str:
    """A KafkaError's name (``REQUEST_TIMED_OUT``, ``_MSG_TIMED_OUT``)."""
    try:
        return err.name()
    except AttributeError:
        return type(err).__name__
