"""Partition: this broker's replica of one partition and the leadership the controller gave it.

Issue 3 scope: the role (leader or follower), leader epoch, ISR, replicas and zk version from the
latest accepted LeaderAndIsr, and the local Log. Follower fetching, ISR maintenance and the high
watermark arrive with replication (issue 5).
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from brokers.model import TopicPartition
from brokers.storage.log import Log


@dataclass
class Partition:
    topic_partition: TopicPartition
    broker_id: int
    log: Log
    leader: int = -1
    leader_epoch: int = -1
    isr: tuple[int, ...] = ()
    replicas: tuple[int, ...] = ()
    zk_version: int = -1
    controller_epoch: int = -1
    history: list[str] = field(default_factory=list)
    _appended: asyncio.Event | None = None

    def appended_event(self) -> asyncio.Event:
        """Set (and replaced) whenever records are appended: what a parked Fetch waits on."""
        if self._appended is None:
            self._appended = asyncio.Event()
        return self._appended

    def notify_appended(self) -> None:
        if self._appended is not None:
            self._appended.set()
            self._appended = None

    @property
    def is_leader(self) -> bool:
        return self.leader == self.broker_id

    def make_leader(self, leader_epoch: int, isr: tuple[int, ...], replicas: tuple[int, ...], zk_version: int,
                    controller_epoch: int) -> None:
        """Become leader: a new leader epoch starts at the log end offset (KIP-101)."""
        self._apply(self.broker_id, leader_epoch, isr, replicas, zk_version, controller_epoch)
        self.log.leader_epoch_cache.assign(leader_epoch, self.log.log_end_offset)
        self.history.append(f"leader@{leader_epoch}")

    def make_follower(self, leader: int, leader_epoch: int, isr: tuple[int, ...], replicas: tuple[int, ...],
                      zk_version: int, controller_epoch: int) -> None:
        self._apply(leader, leader_epoch, isr, replicas, zk_version, controller_epoch)
        self.history.append(f"follower-of-{leader}@{leader_epoch}")

    def _apply(self, leader: int, leader_epoch: int, isr: tuple[int, ...], replicas: tuple[int, ...],
               zk_version: int, controller_epoch: int) -> None:
        self.leader, self.leader_epoch, self.isr = leader, leader_epoch, tuple(isr)
        self.replicas, self.zk_version, self.controller_epoch = tuple(replicas), zk_version, controller_epoch

    def describe(self) -> dict:
        return {"leader": self.leader, "leader_epoch": self.leader_epoch, "isr": list(self.isr),
                "replicas": list(self.replicas), "is_leader": self.is_leader,
                "log_end_offset": self.log.log_end_offset}
