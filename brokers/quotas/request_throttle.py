"""RequestThrottle: one request's throttle decision (Kafka's ``RequestChannel.Request.apiThrottleTimeMs`` and the
``sendResponseMaybeThrottle`` family), and ``LoopTime``, the request-handling time it is measured by.

KafkaApis makes one per request while any quota is configured. Bandwidth quotas are recorded as the request is
handled (``bandwidth``: Produce's request bytes, a consumer Fetch's response bytes); the request-time quota
(``request_percentage``) when the response is made: ``throttle_time_ms()`` is called exactly once, by the code
that encodes the response (a hand-encoded Produce or Fetch answer, else KafkaApis), and answers the largest of
the throttle times (Kafka: ``max(bandwidthThrottleTimeMs, requestThrottleTimeMs)``). The listener then mutes
the connection for that long (KIP-219): the response leaves at once and carries the time, the client's next
request is read after it.

Request time is what the handler's coroutine ran on the event loop, summed over its steps (``LoopTime`` drives
the coroutine and times each ``send``): a Fetch parked for 500 ms costs its two short steps, not half a
second. 100 % is one event loop fully busy for the whole window (Kafka: one request handler thread).
"""
from __future__ import annotations

import time
from collections.abc import Coroutine, Generator
from typing import Any

from brokers.quotas.manager import ClientQuotaManager, QuotaManagers

PERCENT_PER_SECOND = 100.0  # Kafka's nanosToPercentage: a second of handling is 100 (% of a second)


class LoopTime:
    """An awaitable that runs ``coroutine`` and adds up the time each of its steps held the event loop."""

    __slots__ = ("coroutine", "seconds", "_step_started")

    def __init__(self, coroutine: Coroutine[Any, Any, Any]):
        self.coroutine = coroutine
        self.seconds = 0.0
        self._step_started = 0.0  # perf_counter() at the start of the step running now, 0.0 between steps

    def elapsed(self) -> float:
        """Seconds so far, the step running now included (the handler asks while encoding its answer)."""
        started = self._step_started
        return self.seconds + (time.perf_counter() - started if started else 0.0)

    def __await__(self) -> Generator[Any, Any, Any]:
        clock, send, throw = time.perf_counter, self.coroutine.send, self.coroutine.throw
        value = error = None
        while True:
            self._step_started = started = clock()
            try:
                yielded = send(value) if error is None else throw(error)
            except StopIteration as stop:
                self.seconds += clock() - started
                self._step_started = 0.0
                return stop.value
            except BaseException:
                self.seconds += clock() - started
                self._step_started = 0.0
                raise
            self.seconds += clock() - started
            self._step_started = 0.0
            try:
                value, error = (yield yielded), None
            except GeneratorExit:
                self.coroutine.close()
                raise
            except BaseException as exc:  # cancellation and friends go into the handler, as a plain await would
                value, error = None, exc


class RequestThrottle:
    """The throttle of one request from ``user`` (the principal's name) with ``client_id``."""

    __slots__ = ("quotas", "user", "client_id", "timer", "exempt", "_bandwidth_ms", "_bandwidth_by", "_decided")

    def __init__(self, quotas: QuotaManagers, user: str, client_id: str):
        self.quotas, self.user, self.client_id = quotas, user, client_id
        self.timer: LoopTime | None = None  # set by KafkaApis while a request quota is configured
        self.exempt = False  # replica fetches and inter-broker calls: never client-throttled
        self._bandwidth_ms = 0
        self._bandwidth_by: ClientQuotaManager | None = None
        self._decided: int | None = None

    def bandwidth(self, manager: ClientQuotaManager, value: float) -> int:
        """Record ``value`` bytes against a bandwidth quota; the throttle time it alone asks for."""
        if self.exempt:
            return 0
        throttle_ms = manager.record(self.user, self.client_id, value)
        self.charge(manager, throttle_ms)
        return throttle_ms

    def charge(self, manager: ClientQuotaManager, throttle_ms: int) -> None:
        """A throttle time ``manager``'s quota asks for (bandwidth, or controller mutations): the response
        carries the longest one asked."""
        if throttle_ms > self._bandwidth_ms:
            self._bandwidth_ms, self._bandwidth_by = throttle_ms, manager

    def throttle_time_ms(self) -> int:
        """The response's throttle time, decided at the first call (later calls repeat it): the request time
        is recorded now, and the quota asking for the longest throttle is charged with it."""
        if self._decided is not None:
            return self._decided
        request_ms = 0
        if self.timer is not None and not self.exempt:
            request_ms = self.quotas.request.record(self.user, self.client_id,
                                                    self.timer.elapsed() * PERCENT_PER_SECOND)
        decided = max(self._bandwidth_ms, request_ms)
        if decided:
            by = self._bandwidth_by if self._bandwidth_ms >= request_ms else self.quotas.request
            assert by is not None
            by.throttled(self.user, self.client_id, decided)
        self._decided = decided
        return decided
