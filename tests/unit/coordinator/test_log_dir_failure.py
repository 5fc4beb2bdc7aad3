"""The controller's side of KIP-112: which replicas a LeaderAndIsr response takes offline (pure), and what
follows for them (``LogDirFailures``) over the in-memory ZooKeeper stand-in of test_leadership: a led
partition gets another leader, the replica leaves the ISR, UpdateMetadata names it offline; a
notification makes the controller ask the broker about every replica it hosts."""
from __future__ import annotations

import pytest

from brokers.control import LeaderAndIsrRequest, UpdateMetadataRequest
from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode
from coordinator import events as ev
from coordinator.log_dir_failure import LogDirFailures, offline_replica_changes, wants_response
from coordinator.partition_state_machine import PartitionState
from tests.unit.coordinator.test_leadership import TP, run, setup

STORAGE, NONE, STALE = int(ErrorCode.KAFKA_STORAGE_ERROR), int(ErrorCode.NONE), int(ErrorCode.STALE_CONTROLLER_EPOCH)
T0, T1, T2 = (TopicPartition("t", p) for p in range(3))


@pytest.mark.parametrize("previous, errors, current, new", [
    (set(), [("t", 0, STORAGE)], {T0}, {T0}),
    ({T0}, [("t", 0, STORAGE)], {T0}, set()),  # already known: nothing new to do
    ({T0}, [("t", 0, NONE)], set(), set()),  # answered fine: back online
    ({T0}, [("t", 0, STALE)], {T0}, set()),  # any other error changes nothing
    ({T0}, [("t", 1, STORAGE), ("t", 2, NONE)], {T0, T1}, {T1}),
    (set(), [("t", 0, NONE), ("t", 1, STALE)], set(), set()),
])
def test_offline_replica_changes(previous, errors, current, new):
    assert offline_replica_changes(previous, errors) == (current, new)


def test_only_responses_that_can_change_something_become_events():
    _, ctx, *_ = setup(leader=1, isr=(1, 2, 3))
    assert not wants_response(ctx, 2, [("t", 0, NONE), ("t", 1, STALE)])
    assert wants_response(ctx, 2, [("t", 0, STORAGE)])
    ctx.replicas_on_offline_dirs[2] = {T0}
    assert wants_response(ctx, 2, [("t", 0, NONE)])  # it may be back


def failures(leader: int, isr: tuple[int, ...]):
    zk, ctx, states, batch, leadership = setup(leader=leader, isr=isr)
    return LogDirFailures(zk, ctx, batch, states, leadership, watch=lambda event: None), zk, ctx, states, batch


def requests(batch):
    out = []
    batch.send(lambda b, request, callback: out.append((b, request)))
    return out


def test_the_leaders_replica_on_an_offline_dir_loses_leadership_and_leaves_the_isr():
    failures_, zk, ctx, states, batch = failures(leader=1, isr=(1, 2, 3))
    run(failures_.process_leader_and_isr_response(ev.LeaderAndIsrResponseReceived(1, (("t", 0, STORAGE),), NONE)))
    lai = ctx.leadership[TP].leader_and_isr
    assert lai.leader in (2, 3) and 1 not in lai.isr and states.get(TP) is PartitionState.Online
    assert ctx.replicas_on_offline_dirs == {1: {TP}} and not ctx.is_replica_online(1, TP)
    metadata = [r for b, r in requests(batch) if isinstance(r, UpdateMetadataRequest)]
    assert metadata and all(s.offline_replicas == (1,) for r in metadata for s in r.partition_states)


def test_a_followers_replica_on_an_offline_dir_leaves_the_isr_and_the_leader_stays():
    failures_, zk, ctx, states, batch = failures(leader=1, isr=(1, 2, 3))
    run(failures_.process_leader_and_isr_response(ev.LeaderAndIsrResponseReceived(3, (("t", 0, STORAGE),), NONE)))
    lai = ctx.leadership[TP].leader_and_isr
    assert (lai.leader, lai.isr) == (1, (1, 2))


def test_the_offline_replica_is_never_elected():
    failures_, zk, ctx, states, batch = failures(leader=1, isr=(1, 2))
    ctx.replicas_on_offline_dirs[2] = {TP}
    run(failures_.process_leader_and_isr_response(ev.LeaderAndIsrResponseReceived(1, (("t", 0, STORAGE),), NONE)))
    assert ctx.leadership[TP].leader_and_isr.leader not in (1, 2)  # 3: unclean is off -> no leader
    assert states.get(TP) is PartitionState.Offline


def test_a_known_offline_replica_answering_again_changes_nothing():
    failures_, zk, ctx, states, batch = failures(leader=2, isr=(2, 3))
    ctx.replicas_on_offline_dirs[1] = {TP}
    run(failures_.process_leader_and_isr_response(ev.LeaderAndIsrResponseReceived(1, (("t", 0, STORAGE),), NONE)))
    assert zk.writes == [] and requests(batch) == []


def test_a_rejected_request_or_a_dead_broker_is_ignored():
    failures_, zk, ctx, states, batch = failures(leader=1, isr=(1, 2, 3))
    run(failures_.process_leader_and_isr_response(ev.LeaderAndIsrResponseReceived(1, (), STALE)))
    del ctx.live_brokers[2]
    run(failures_.process_leader_and_isr_response(ev.LeaderAndIsrResponseReceived(2, (("t", 0, STORAGE),), NONE)))
    assert ctx.replicas_on_offline_dirs == {} and zk.writes == []


class NotifyingZk:
    def __init__(self, inner, notifications: dict[str, int | None]):
        self.inner, self.notifications, self.deleted = inner, notifications, []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    async def get_log_dir_event_notifications(self, watch=None):
        return list(self.notifications)

    async def read_log_dir_event_notification(self, name):
        return self.notifications[name]

    async def delete_log_dir_event_notifications(self, epoch_zk_version, names):
        self.deleted.append((epoch_zk_version, sorted(names)))


def test_a_notification_asks_the_named_live_broker_about_every_replica_it_hosts():
    failures_, zk, ctx, states, batch = failures(leader=1, isr=(1, 2, 3))
    ctx.assignments[T1] = [2, 3]
    ctx.leadership[T1] = ctx.leadership[TP]
    failures_.kzc = NotifyingZk(zk, {"log_dir_event_0000000001": 2, "log_dir_event_0000000002": 9,
                                     "log_dir_event_0000000003": None})
    run(failures_.process_log_dir_event_notification())
    assert failures_.kzc.deleted == [(ctx.epoch_zk_version, ["log_dir_event_0000000001", "log_dir_event_0000000002",
                                                             "log_dir_event_0000000003"])]
    leader_and_isr = [(b, r) for b, r in requests(batch) if isinstance(r, LeaderAndIsrRequest)]
    assert [(b, sorted(s.partition for s in r.partition_states)) for b, r in leader_and_isr] == [(2, [0, 1])]
