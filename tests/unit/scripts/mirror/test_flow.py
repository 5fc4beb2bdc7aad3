"""scripts.tools.kafka_mirror_maker.flow's scheduling decisions: which periodic jobs a flow runs (from its
settings), when each first runs, and how due jobs are rescheduled. No client is created: ``MirrorFlow`` is
built without ``__init__`` and given fake emitters."""
from __future__ import annotations

import time

import pytest

from scripts.tools.kafka_mirror_maker.config import FlowConfig, parse
from scripts.tools.kafka_mirror_maker.flow import Job, MirrorFlow, due_jobs, job_schedule


def flow_of(**extra: str) -> FlowConfig:
    props = {"clusters": "a, b", "a.bootstrap.servers": "a1:9092", "b.bootstrap.servers": "b1:9092",
             "a->b.enabled": "true", **extra}
    return parse(props).flows[0]


def noop() -> None:
    pass


# --- due_jobs ------------------------------------------------------------------------------------------------------

def test_due_jobs_runs_those_whose_turn_came_and_reschedules_them_one_interval_after_now():
    fast, slow, later = Job("fast", 1.0, noop), Job("slow", 10.0, noop), Job("later", 5.0, noop, due=105.0)
    jobs = [fast, slow, later]
    assert due_jobs(jobs, 100.0) == [fast, slow]               # due 0.0: at once; in the list's order
    assert (fast.due, slow.due, later.due) == (101.0, 110.0, 105.0)
    assert due_jobs(jobs, 100.5) == []
    assert due_jobs(jobs, 101.0) == [fast]                     # due exactly now counts
    assert fast.due == 102.0
    assert due_jobs(jobs, 105.0) == [fast, later]
    assert later.due == 110.0


def test_a_late_tick_runs_a_job_once_and_does_not_catch_up():
    job = Job("j", 1.0, noop)
    assert due_jobs([job], 50.0) == [job]
    assert due_jobs([job], 60.0) == [job]                      # ten intervals missed: one run
    assert job.due == 61.0                                     # from now, not from the missed turn
    assert due_jobs([job], 60.9) == []


def test_due_jobs_of_no_jobs():
    assert due_jobs([], 1.0) == []


# --- job_schedule --------------------------------------------------------------------------------------------------

def test_default_schedule_mm2s_intervals_refresh_delayed_by_its_startup_run():
    assert job_schedule(flow_of()) == [("refresh topics", 600.0, 600.0), ("sync topic configs", 600.0, 0.0),
                                       ("emit heartbeats", 1.0, 0.0), ("emit checkpoints", 60.0, 0.0)]


def test_sync_group_offsets_runs_one_interval_after_start_and_after_checkpoints():
    schedule = job_schedule(flow_of(**{"sync.group.offsets.enabled": "true",
                                       "a->b.sync.group.offsets.interval.seconds": "5"}))
    assert [name for name, _, _ in schedule][-2:] == ["emit checkpoints", "sync group offsets"]
    assert schedule[-1] == ("sync group offsets", 5.0, 5.0)


def test_sync_group_offsets_needs_checkpoints():
    schedule = job_schedule(flow_of(**{"sync.group.offsets.enabled": "true", "emit.checkpoints.enabled": "false"}))
    assert [name for name, _, _ in schedule] == ["refresh topics", "sync topic configs", "emit heartbeats"]


@pytest.mark.parametrize("setting, job", [
    ("refresh.topics", "refresh topics"), ("sync.topic.configs", "sync topic configs"),
    ("emit.heartbeats", "emit heartbeats"), ("emit.checkpoints", "emit checkpoints")])
def test_each_job_is_turned_off_by_enabled_false_or_a_negative_interval(setting, job):
    names = lambda schedule: [name for name, _, _ in schedule]  # noqa: E731
    assert job in names(job_schedule(flow_of()))
    assert job not in names(job_schedule(flow_of(**{f"{setting}.enabled": "false"})))
    assert job not in names(job_schedule(flow_of(**{f"a->b.{setting}.interval.seconds": "-1"})))


def test_intervals_come_from_the_flow_keys():
    schedule = job_schedule(flow_of(**{"refresh.topics.interval.seconds": "2.5",
                                       "a->b.emit.heartbeats.interval.seconds": "0.5",
                                       "sync.topic.configs.interval.seconds": "7",
                                       "emit.checkpoints.interval.seconds": "3"}))
    assert schedule == [("refresh topics", 2.5, 2.5), ("sync topic configs", 7.0, 0.0), ("emit heartbeats", 0.5, 0.0),
                        ("emit checkpoints", 3.0, 0.0)]


def test_everything_off_is_no_job():
    off = {f"{name}.enabled": "false" for name in ("refresh.topics", "sync.topic.configs", "emit.heartbeats",
                                                   "emit.checkpoints")}
    assert job_schedule(flow_of(**off, **{"sync.group.offsets.enabled": "true"})) == []


# --- MirrorFlow._jobs: the schedule bound to the flow's actions ---------------------------------------------------

class FakeEmitter:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def emit(self) -> None:
        self.calls.append("emit")

    def sync_group_offsets(self) -> None:
        self.calls.append("sync")


class FakeTopics:
    def __init__(self) -> None:
        self.synced: list[dict] = []

    def sync_configs(self, mirrored: dict) -> int:
        self.synced.append(mirrored)
        return 0


def bare_flow(flow: FlowConfig) -> tuple[MirrorFlow, list[str]]:
    """A MirrorFlow without clients: its topic refresh and config sync recorded."""
    refreshed: list[str] = []
    mirror = MirrorFlow.__new__(MirrorFlow)
    mirror.flow, mirror.topics, mirror.mirrored = flow, FakeTopics(), {"t": ("a.t", 1)}
    mirror._refresh_topics = lambda: refreshed.append("refresh")
    return mirror, refreshed


def test_jobs_follow_the_schedule_with_first_turns_relative_to_now():
    flow = flow_of(**{"sync.group.offsets.enabled": "true"})
    mirror, refreshed = bare_flow(flow)
    checkpoints, heartbeats = FakeEmitter(), FakeEmitter()
    before = time.monotonic()
    jobs = mirror._jobs(checkpoints, heartbeats)
    after = time.monotonic()
    assert [(j.name, j.interval_s) for j in jobs] == [(name, interval) for name, interval, _ in job_schedule(flow)]
    due = {job.name: job.due for job in jobs}
    assert before + 600 <= due["refresh topics"] <= after + 600
    assert before + 60 <= due["sync group offsets"] <= after + 60
    assert due["sync topic configs"] == due["emit heartbeats"] == due["emit checkpoints"] == 0.0
    for job in jobs:
        job.run()
    assert refreshed == ["refresh"] and mirror.topics.synced == [{"t": ("a.t", 1)}]
    assert heartbeats.calls == ["emit"] and checkpoints.calls == ["emit", "sync"]


def test_first_tick_runs_the_immediate_jobs_only():
    mirror, _ = bare_flow(flow_of(**{"sync.group.offsets.enabled": "true"}))
    jobs = mirror._jobs(FakeEmitter(), FakeEmitter())
    assert [j.name for j in due_jobs(jobs, time.monotonic())] == ["sync topic configs", "emit heartbeats",
                                                                  "emit checkpoints"]


def test_sync_topic_configs_reads_the_mirrored_topics_of_its_turn():
    mirror, _ = bare_flow(flow_of())
    job = next(j for j in mirror._jobs(None, None) if j.name == "sync topic configs")
    mirror.mirrored = {"u": ("a.u", 2)}                        # a refresh after the jobs were made
    job.run()
    assert mirror.topics.synced == [{"u": ("a.u", 2)}]


def test_without_emitters_no_emitter_job():
    mirror, _ = bare_flow(flow_of(**{"emit.checkpoints.enabled": "false", "emit.heartbeats.enabled": "false",
                                     "sync.group.offsets.enabled": "true"}))
    assert [j.name for j in mirror._jobs(None, None)] == ["refresh topics", "sync topic configs"]
