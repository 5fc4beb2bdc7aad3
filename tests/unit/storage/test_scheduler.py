"""Scheduler (scheduler.py): one daemon thread running one-shot and periodic tasks."""
from __future__ import annotations

import threading
import time

import pytest

from brokers.storage.scheduler import Scheduler

DEADLINE = 5.0  # seconds; generous, only hit when the behaviour is broken


@pytest.fixture
def scheduler():
    s = Scheduler(name="test-scheduler")
    yield s
    s.shutdown()


class Counter:
    """Counts calls; ``reached(n)`` waits (with a deadline) until ``n`` calls happened."""

    def __init__(self, fail: bool = False):
        self.count = 0
        self.fail = fail
        self.times: list[float] = []
        self._cv = threading.Condition()

    def __call__(self):
        with self._cv:
            self.count += 1
            self.times.append(time.monotonic())
            self._cv.notify_all()
        if self.fail:
            raise RuntimeError("task failed on purpose")

    def reached(self, n: int, timeout: float = DEADLINE) -> bool:
        with self._cv:
            return self._cv.wait_for(lambda: self.count >= n, timeout=timeout)


def test_scheduler_thread_is_a_named_daemon(scheduler):
    thread = scheduler._thread
    assert thread.daemon
    assert thread.name == "test-scheduler"
    assert thread.is_alive()


def test_one_shot_task_runs_after_its_delay(scheduler):
    ran = threading.Event()
    ran_at: list[float] = []
    runner: list[threading.Thread] = []

    def task():
        ran_at.append(time.monotonic())
        runner.append(threading.current_thread())
        ran.set()

    start = time.monotonic()
    scheduler.schedule_once("once", task, delay_ms=100)
    assert ran.wait(DEADLINE)
    assert ran_at[0] - start >= 0.1 - 1e-3  # not before its delay
    assert runner[0] is scheduler._thread  # on the scheduler thread, not the caller's


def test_one_shot_task_runs_exactly_once(scheduler):
    once = Counter()
    marker = threading.Event()
    scheduler.schedule_once("once", once, delay_ms=0)
    # A later task running proves the scheduler moved past the one-shot task.
    scheduler.schedule_once("marker", marker.set, delay_ms=50)
    assert marker.wait(DEADLINE)
    assert once.count == 1


def test_tasks_run_in_due_order(scheduler):
    order: list[str] = []
    done = threading.Event()
    gate = threading.Event()
    # Block the thread so all tasks are queued before any is picked.
    scheduler.schedule_once("gate", lambda: gate.wait(DEADLINE))
    scheduler.schedule_once("late", lambda: (order.append("late"), done.set()), delay_ms=60)
    scheduler.schedule_once("early", lambda: order.append("early"), delay_ms=20)
    scheduler.schedule_once("now", lambda: order.append("now"), delay_ms=0)
    gate.set()
    assert done.wait(DEADLINE)
    assert order == ["now", "early", "late"]


def test_periodic_task_runs_repeatedly(scheduler):
    periodic = Counter()
    start = time.monotonic()
    scheduler.schedule("periodic", periodic, delay_ms=0, period_ms=20)
    assert periodic.reached(5)
    # The i-th run is due no earlier than i periods after scheduling.
    for i, ran_at in enumerate(periodic.times[:5]):
        assert ran_at - start >= i * 0.02 - 1e-3, (i, ran_at - start)


def test_periodic_task_first_run_waits_for_delay(scheduler):
    periodic = Counter()
    start = time.monotonic()
    scheduler.schedule("periodic", periodic, delay_ms=80, period_ms=10)
    assert periodic.reached(1)
    assert periodic.times[0] - start >= 0.08 - 1e-3


def test_raising_task_does_not_stop_others_or_its_own_period(scheduler, caplog):
    failing = Counter(fail=True)
    healthy = Counter()
    failing_once = Counter(fail=True)
    scheduler.schedule_once("failing-once", failing_once)
    scheduler.schedule("failing", failing, delay_ms=0, period_ms=10)
    scheduler.schedule("healthy", healthy, delay_ms=0, period_ms=10)
    assert failing.reached(3)  # keeps its schedule despite raising
    assert healthy.reached(3)
    assert failing_once.count == 1
    after = threading.Event()
    scheduler.schedule_once("after", after.set)
    assert after.wait(DEADLINE)  # the thread survived
    assert scheduler._thread.is_alive()
    assert any("failing" in r.getMessage() for r in caplog.records)


def test_shutdown_stops_periodic_tasks(scheduler):
    periodic = Counter()
    scheduler.schedule("periodic", periodic, delay_ms=0, period_ms=10)
    assert periodic.reached(2)
    scheduler.shutdown()
    assert not scheduler._thread.is_alive()
    stopped_at = periodic.count
    # An event that must NOT happen: another run after shutdown.
    assert not periodic.reached(stopped_at + 1, timeout=0.2)
    assert periodic.count == stopped_at


def test_shutdown_does_not_run_delayed_tasks_and_schedule_after_is_ignored(scheduler):
    delayed = Counter()
    scheduler.schedule_once("delayed", delayed, delay_ms=100)
    scheduler.shutdown()
    assert not scheduler._thread.is_alive()  # joined: nothing can run any more
    late = Counter()
    scheduler.schedule_once("late", late)
    assert delayed.count == 0
    assert late.count == 0
    scheduler.run_pending_once_tasks()
    assert delayed.count == 1
    assert late.count == 0  # scheduling after shutdown was dropped, not queued


def test_run_pending_once_tasks_after_shutdown(scheduler):
    calls: list[str] = []
    periodic = Counter()
    scheduler.schedule("periodic", periodic, delay_ms=60_000, period_ms=60_000)
    scheduler.schedule_once("second", lambda: calls.append("second"), delay_ms=50_000)
    scheduler.schedule_once("failing", lambda: 1 / 0, delay_ms=40_000)
    scheduler.schedule_once("first", lambda: calls.append("first"), delay_ms=30_000)
    scheduler.shutdown()
    assert calls == []

    scheduler.run_pending_once_tasks()  # a failing task doesn't stop the others
    assert calls == ["first", "second"]  # immediately, in due order
    assert periodic.count == 0  # periodic tasks are not one-shot
    scheduler.run_pending_once_tasks()  # already drained
    assert calls == ["first", "second"]


def test_run_pending_once_tasks_runs_on_callers_thread(scheduler):
    seen: list[threading.Thread] = []
    scheduler.schedule_once("x", lambda: seen.append(threading.current_thread()), delay_ms=60_000)
    scheduler.shutdown()
    scheduler.run_pending_once_tasks()
    assert seen == [threading.current_thread()]


def test_run_pending_once_tasks_while_running_keeps_periodic_tasks(scheduler):
    periodic = Counter()
    once = Counter()
    scheduler.schedule_once("once", once, delay_ms=60_000)
    scheduler.schedule("periodic", periodic, delay_ms=0, period_ms=10)
    scheduler.run_pending_once_tasks()
    assert once.count == 1
    before = periodic.count
    assert periodic.reached(before + 2)  # still scheduled


def test_shutdown_from_inside_a_task_does_not_deadlock(scheduler):
    done = threading.Event()

    def task():
        scheduler.shutdown()  # must not join its own thread
        done.set()

    scheduler.schedule_once("self-stop", task)
    assert done.wait(DEADLINE)
    scheduler._thread.join(DEADLINE)
    assert not scheduler._thread.is_alive()


def test_injected_clock_decides_when_tasks_are_due():
    now = [1000.0]
    s = Scheduler(clock=lambda: now[0])
    try:
        ran = threading.Event()
        marker = threading.Event()
        s.schedule_once("later", ran.set, delay_ms=3_600_000)  # due in an hour of fake time
        s.schedule_once("marker", marker.set)  # due now: runs first, proving "later" was not due
        assert marker.wait(DEADLINE)
        assert not ran.is_set()
        now[0] += 3600
        s.schedule_once("poke", lambda: None)  # wakes the thread to look at the clock again
        assert ran.wait(DEADLINE)
    finally:
        s.shutdown()
