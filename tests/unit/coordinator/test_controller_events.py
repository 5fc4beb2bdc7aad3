"""The controller's event plumbing: every declared event has exactly one process method in the table
(those an inactive controller must still answer apart from the active-only ones), an inactive
controller drops the active-only ones, and ``ControllerEventManager.watch`` is what turns a fired
ZooKeeper watch into a queued event."""
from __future__ import annotations

import asyncio
import typing

from brokers.zk.gateway import WATCH_LOST, WatchEvent
from coordinator import events as ev
from coordinator.controller import ControllerConfig, KafkaController
from coordinator.event_manager import ControllerEventManager
from coordinator.reassignment import zk_reassignment_event

ANSWERED_BY_ANY_BROKER = {ev.Startup, ev.Reelect, ev.RegisterBrokerAndReelect, ev.Expire, ev.ControlledShutdown,
                          ev.ApiPartitionReassignment, ev.ListPartitionReassignments, ev.ReplicaLeaderElection}


def test_every_declared_event_has_one_process_method():
    controller = KafkaController(1, kzc=None, config=ControllerConfig())
    declared = set(typing.get_args(ev.ControllerEvent)) - {ev.ShutdownEventThread}  # the event thread's own
    assert set(controller._any_role) == ANSWERED_BY_ANY_BROKER
    assert set(controller._active_only) == declared - ANSWERED_BY_ANY_BROKER


def test_an_inactive_controller_drops_the_events_of_a_term_that_ended():
    controller = KafkaController(1, kzc=None, config=ControllerConfig())  # no ZooKeeper: any read would raise
    for event in (ev.BrokerChange(), ev.TopicChange(), ev.TopicDeletion(), ev.IsrChangeNotification(),
                  ev.PartitionModifications("t"), ev.ZkPartitionReassignment(), ev.PartitionReassignmentIsrChange("t", 0),
                  ev.StopReplicaResponseReceived(2, (), 0), ev.AutoPreferredReplicaLeaderElection(0)):
        asyncio.run(controller._dispatch(event))
    assert not controller.is_active and controller.context.assignments == {}


def queued(manager: ControllerEventManager) -> list:
    return [manager._queue.get_nowait() for _ in range(manager._queue.qsize())]


def test_a_fired_watch_enqueues_its_event_but_a_session_notification_does_not():
    manager = ControllerEventManager(process=None)
    fire = manager.watch(ev.BrokerChange())
    fire(WatchEvent("NONE", ""))
    assert queued(manager) == []
    fire(WatchEvent("CHILD", "/brokers/ids"))
    assert queued(manager) == [ev.BrokerChange()]


def test_a_watch_may_choose_its_event_from_the_fired_type_or_none():
    manager = ControllerEventManager(process=None)
    seen = []

    def event_for(kind: str):
        seen.append(kind)
        return ev.ZkPartitionReassignment(created=True) if kind == "CREATED" else None

    fire = manager.watch(event_for)
    for kind in ("NONE", "DELETED", "CREATED"):
        fire(WatchEvent(kind, "/admin/reassign_partitions"))
    assert seen == ["DELETED", "CREATED"] and queued(manager) == [ev.ZkPartitionReassignment(created=True)]


def test_a_watch_the_connection_loss_dropped_counts_as_fired():
    """kazoo forgets the watches on a connection loss: without this event the controller would never
    hear of /brokers/ids (or any other watched znode) again while its session lives."""
    manager = ControllerEventManager(process=None)
    manager.watch(ev.BrokerChange())(WatchEvent(WATCH_LOST, "/brokers/ids"))
    manager.watch(ev.Reelect())(WatchEvent(WATCH_LOST, "/controller"))
    assert queued(manager) == [ev.BrokerChange(), ev.Reelect()]


def test_a_lost_reassignment_watch_reads_the_znode_as_if_created():
    assert zk_reassignment_event(WATCH_LOST) == ev.ZkPartitionReassignment(created=True)
    assert zk_reassignment_event("CREATED") == ev.ZkPartitionReassignment(created=True)
    assert zk_reassignment_event("DELETED") == ev.ZkPartitionReassignment(created=False)
