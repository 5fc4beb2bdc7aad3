"""The I/O both verifiable tools share: their event lines on stdout, the signals that stop them, and starting a
librdkafka client from the flags and the client properties file with one clear line when that fails.

- ``Output``: writes lines and flushes after each group (Kafka's tool flushes each ``println``; a reader of
  the stream sees every event as it happens). A closed stdout (a pipe whose reader left) is ignored, as
  Java's ``PrintStream`` ignores it: the tool goes on and still shuts down cleanly.
- ``Stopper``: SIGTERM and SIGINT set a flag the tool's loop checks (Kafka's shutdown hook: stop, close the
  client, print ``shutdown_complete``); the exit code is then 128 + the signal, as the JVM's.
- ``start_client``: Kafka's client properties file read and translated (``scripts.tools.common.
  client_properties``), SASL credentials checked once, the client made; a problem is one line on stderr
  (``<prog>: error: ...`` for flags and settings, ``Error: ...`` for refused credentials) and None.
"""
from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any, TextIO

from confluent_kafka import KafkaException

from scripts.tools.common import client_properties
from scripts.tools.verifiable.flags import UsageError

SLEEP_SLICE_S = 0.05  # how soon a sleeping tool sees a stop signal


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class Output:
    def __init__(self, stream: TextIO | None = None):
        self.stream = stream if stream is not None else sys.stdout
        self.closed = False

    def write(self, lines: Iterable[str]) -> None:
        text = "".join(lines)
        if not text or self.closed:
            return
        try:
            binary = getattr(self.stream, "buffer", None)
            if binary is not None:  # UTF-8 whatever the locale (values are the records' own text)
                self.stream.flush()
                binary.write(text.encode("utf-8", errors="surrogateescape"))
                binary.flush()
            else:
                self.stream.write(text)
                self.stream.flush()
        except BrokenPipeError:
            self.closed = True
            # No more output; keep the interpreter's final flush of stdout from failing too.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.stream.fileno())
            os.close(devnull)


class Stopper:
    def __init__(self) -> None:
        self.signum: int | None = None

    def install(self) -> None:
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._handle)

    def _handle(self, signum: int, _frame: Any) -> None:
        if self.signum is None:
            self.signum = signum

    @property
    def stopping(self) -> bool:
        return self.signum is not None

    def exit_code(self) -> int:
        return 0 if self.signum is None else 128 + self.signum

    def wait(self, seconds: float, serve: Callable[[float], Any] | None = None) -> bool:
        """Wait ``seconds`` in short slices (``serve(slice)`` waits one, e.g. a client's poll, which counts in
        whole milliseconds: a shorter rest is slept); False as soon as the tool is stopping."""
        deadline = time.monotonic() + seconds
        while not self.stopping:
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            part = min(left, SLEEP_SLICE_S)
            (serve if serve is not None and part >= 0.001 else time.sleep)(part)
        return False


def usage_error(prog: str, message: object) -> int:
    print(f"{prog}: error: {message}", file=sys.stderr)
    return 1


def read_properties(flag: str, path: str | None) -> dict[str, str]:
    """Kafka's client properties of ``flag``'s file ({} without one); UsageError naming the flag."""
    try:
        return client_properties.from_flag(flag, path)
    except client_properties.ClientPropertiesError as exc:
        raise UsageError(str(exc)) from None


def start_client(prog: str, factory, config: dict[str, str], bootstrap: str, properties: dict[str, str], what: str):
    """``factory(config)`` (a confluent-kafka Producer or Consumer), once the SASL credentials of
    ``properties`` (Kafka's names) passed; None after printing the one-line error."""
    try:
        client_properties.check_login(bootstrap, properties)
    except client_properties.LoginError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return None
    try:
        return factory(config)
    except KafkaException as exc:
        usage_error(prog, f"invalid {what} config: {exc.args[0].str() if exc.args else exc}")
    except (TypeError, ValueError) as exc:  # confluent-kafka's own checks of a setting's value
        usage_error(prog, f"invalid {what} config: {exc}")
    return None
