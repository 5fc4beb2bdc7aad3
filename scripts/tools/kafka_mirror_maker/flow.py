"""``MirrorFlow``: one enabled flow ``source->target`` running — MM2's three connectors for that pair in one
place: the source task's thread copies records, and the flow's scheduler thread runs the periodic jobs
(MM2's ``Scheduler``), each at its own interval:

====================================  =====================================================================
job                                   interval (key; ``-1`` or ``*.enabled = false`` turns it off)
====================================  =====================================================================
refresh topics and partitions         ``refresh.topics.interval.seconds`` (the first run before any copy)
sync topic configs                    ``sync.topic.configs.interval.seconds`` (``sync.topic.configs.enabled``)
emit heartbeats                       ``emit.heartbeats.interval.seconds``
emit checkpoints                      ``emit.checkpoints.interval.seconds``
sync group offsets                    ``sync.group.offsets.interval.seconds`` (``sync.group.offsets.enabled``)
====================================  =====================================================================

A job that fails is logged and runs again at its next turn; the flow stops when the process's stop event is
set, the source task committing what the target acknowledged.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Callable

from scripts.tools.kafka_mirror_maker import clients
from scripts.tools.kafka_mirror_maker.checkpoints import CheckpointEmitter, HeartbeatEmitter
from scripts.tools.kafka_mirror_maker.config import ClusterConfig, FlowConfig
from scripts.tools.kafka_mirror_maker.metrics import FlowMetrics
from scripts.tools.kafka_mirror_maker.source_task import MirrorSourceTask
from scripts.tools.kafka_mirror_maker.topic_sync import TopicSync

log = logging.getLogger("kafka_mirror_maker.flow")
TICK_S = 0.1
SCHEDULER_GRACE_S = 1.0


@dataclass
class Job:
    name: str
    interval_s: float
    run: Callable[[], object]
    due: float = 0.0


def job_schedule(flow: FlowConfig) -> list[tuple[str, float, float]]:
    """(name, interval, delay of its first run after the scheduler starts) of the flow's jobs, in the order
    they run when due together: topics are refreshed once before the scheduler starts, and group offsets are
    synced one interval in (after checkpoints were emitted); only with checkpoints, which they come from."""
    jobs = []
    if flow.refresh_topics_enabled:
        jobs.append(("refresh topics", flow.refresh_topics_interval_s, flow.refresh_topics_interval_s))
    if flow.sync_topic_configs_enabled:
        jobs.append(("sync topic configs", flow.sync_topic_configs_interval_s, 0.0))
    if flow.emit_heartbeats_enabled:
        jobs.append(("emit heartbeats", flow.emit_heartbeats_interval_s, 0.0))
    if flow.emit_checkpoints_enabled:
        jobs.append(("emit checkpoints", flow.emit_checkpoints_interval_s, 0.0))
        if flow.sync_group_offsets_enabled:
            jobs.append(("sync group offsets", flow.sync_group_offsets_interval_s, flow.sync_group_offsets_interval_s))
    return jobs


def due_jobs(jobs: list[Job], now: float) -> list[Job]:
    """The jobs whose turn has come, each rescheduled one interval after ``now``."""
    ready = [job for job in jobs if job.due <= now]
    for job in ready:
        job.due = now + job.interval_s
    return ready


class MirrorFlow:
    def __init__(self, flow: FlowConfig, source: ClusterConfig, target: ClusterConfig, stop: threading.Event):
        self.flow, self.source, self.target, self.stop = flow, source, target, stop
        self.metrics = FlowMetrics(flow.source, flow.target)
        self.task = MirrorSourceTask(flow, source, target, self.metrics, stop)
        self.topics = TopicSync(flow, clients.admin(source), clients.admin(target))
        self.mirrored: dict[str, tuple[str, int]] = {}
        self.threads: list[threading.Thread] = []

    def start(self) -> None:
        """Checks every client's settings, creates the internal topics (an error here is the process's: it
        names the setting), then runs."""
        clients.check_settings(self.flow, self.source, self.target)
        self.topics.ensure_internal_topics()
        self._refresh_topics()
        self.threads = [threading.Thread(target=self.task.run, name=f"{self.flow.name}-task", daemon=True),
                        threading.Thread(target=self._schedule, name=f"{self.flow.name}-jobs", daemon=True)]
        for thread in self.threads:
            thread.start()

    def join(self, timeout: float) -> bool:
        """Waits for the source task (its final commit) up to ``timeout``, the scheduler a moment at most: a
        job stuck on a cluster that is gone (a 30 s client timeout) has nothing to save. True if the task ended."""
        if not self.threads:
            return True
        task, scheduler = self.threads
        task.join(timeout)
        scheduler.join(SCHEDULER_GRACE_S)
        return not task.is_alive()

    def _refresh_topics(self) -> None:
        self.mirrored = self.topics.refresh()
        self.task.set_topics(self.mirrored)

    def _jobs(self, checkpoints: CheckpointEmitter | None, heartbeats: HeartbeatEmitter | None) -> list[Job]:
        """``job_schedule``'s jobs (the emitters exist exactly when their jobs are enabled)."""
        runs: dict[str, Callable[[], object] | None] = {
            "refresh topics": self._refresh_topics,
            "sync topic configs": lambda: self.topics.sync_configs(self.mirrored),
            "emit heartbeats": heartbeats.emit if heartbeats is not None else None,
            "emit checkpoints": checkpoints.emit if checkpoints is not None else None,
            "sync group offsets": checkpoints.sync_group_offsets if checkpoints is not None else None}
        now = time.monotonic()
        return [Job(name, interval, run, now + delay if delay else 0.0)
                for name, interval, delay in job_schedule(self.flow) if (run := runs[name]) is not None]

    def _schedule(self) -> None:
        flow = self.flow
        checkpoints = CheckpointEmitter(flow, self.source, self.target, self.metrics) \
            if flow.emit_checkpoints_enabled else None
        heartbeats = HeartbeatEmitter(flow, self.target, self.metrics) if flow.emit_heartbeats_enabled else None
        jobs = self._jobs(checkpoints, heartbeats)
        try:
            while not self.stop.wait(TICK_S):
                for job in due_jobs(jobs, time.monotonic()):
                    self._run_job(job)
        finally:
            for emitter in (checkpoints, heartbeats):
                if emitter is not None:
                    emitter.close()

    def _run_job(self, job: Job) -> None:
        try:
            job.run()
        except Exception as exc:  # noqa: BLE001 - a job's failure must not end the scheduler
            log.warning("%s: %s failed (again in %.0f s): %s", self.flow.name, job.name, job.interval_s, exc)
