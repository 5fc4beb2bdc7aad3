"""PartitionLeadership.elect when the strategy finds nobody: an offline election marks the partition
Offline (and tells the brokers), every other election (preferred, reassignment, controlled shutdown:
``mark_offline_if_none=False``) leaves it exactly as it was -- Online under its leader, nothing written
to ZooKeeper, nothing sent -- and reports it as failed. Also the preferred election's success path
(leader epoch + 1, ISR unchanged, LeaderAndIsr to the replicas, UpdateMetadata to all) and the
ElectLeaders shell's answers, over an in-memory KafkaZkClient stand-in (compare-and-set versions)."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from brokers.model import BrokerInfo, EndPoint, LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition
from brokers.protocol.errors import ErrorCode
from brokers.zk.errors import BadVersionError, MultiOpError
from coordinator.context import ControllerContext
from coordinator.leadership import PartitionLeadership
from coordinator.partition_state_machine import PartitionState, PartitionStates
from coordinator.preferred_election import PREFERRED, UNCLEAN, ReplicaLeaderElections
from coordinator.request_batch import ControllerBrokerRequestBatch

TP = TopicPartition("t", 0)


class FakeZk:
    """The partition-state part of KafkaZkClient: compare-and-set on the stored version."""

    def __init__(self):
        self.states: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        self.writes: list[tuple[TopicPartition, LeaderIsrAndControllerEpoch]] = []

    async def get_partition_state(self, tp):
        return self.states.get(tp)

    async def update_partition_state(self, epoch_zk_version, tp, state):
        stored = self.states[tp]
        if stored.leader_and_isr.zk_version != state.leader_and_isr.zk_version:
            raise MultiOpError(0, BadVersionError("version"))
        lai = state.leader_and_isr
        version = lai.zk_version + 1
        self.states[tp] = LeaderIsrAndControllerEpoch(LeaderAndIsr(lai.leader, lai.leader_epoch, lai.isr, version),
                                                      state.controller_epoch)
        self.writes.append((tp, self.states[tp]))
        return version

    async def get_partition_states(self, tps):
        return {tp: self.states.get(tp) for tp in tps}

    async def update_partition_states(self, epoch_zk_version, states):
        outcomes = {}
        for tp, state in states.items():
            try:
                outcomes[tp] = await self.update_partition_state(epoch_zk_version, tp, state)
            except MultiOpError as exc:
                outcomes[tp] = exc
        return outcomes


def broker(b: int) -> BrokerInfo:
    return BrokerInfo(b, (EndPoint("PLAINTEXT", "127.0.0.1", 9090 + b),), None, 100 + b)


def setup(leader: int, isr: tuple[int, ...], replicas=(1, 2, 3), live=(1, 2, 3), state=PartitionState.Online):
    zk, ctx, states = FakeZk(), ControllerContext(epoch=5, epoch_zk_version=4), PartitionStates()
    ctx.live_brokers = {b: broker(b) for b in live}
    ctx.assignments[TP] = list(replicas)
    current = LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, 7, isr, 3), 4)
    zk.states[TP] = ctx.leadership[TP] = current
    states.set_initial(TP, state)
    batch = ControllerBrokerRequestBatch(1, ctx)
    return zk, ctx, states, batch, PartitionLeadership(zk, ctx, batch, states, lambda topic: False)


def sent(batch: ControllerBrokerRequestBatch) -> list[tuple[int, str]]:
    out = []
    batch.send(lambda b, request, callback: out.append((b, type(request).__name__)))
    return sorted(out)


def run(coro):
    return asyncio.run(coro)


@pytest.mark.parametrize("strategy", ["preferred_strategy", "controlled_shutdown_strategy", "unclean_strategy"])
def test_no_candidate_without_marking_offline_leaves_the_partition_untouched(strategy):
    # preferred replica 1 is out of the ISR; for controlled shutdown everyone else is shutting down;
    # unclean: nobody live but the leader... which is dead -> no live replica at all
    zk, ctx, states, batch, leadership = setup(leader=2, isr=(2, 3))
    if strategy == "controlled_shutdown_strategy":
        ctx.shutting_down = {2, 3}
    if strategy == "unclean_strategy":
        ctx.live_brokers = {}
    before = ctx.leadership[TP]
    failed = run(leadership.elect([TP], getattr(leadership, strategy)(), mark_offline_if_none=False))
    assert failed == [TP]
    assert ctx.leadership[TP] is before and zk.states[TP] is before and zk.writes == []
    assert states.get(TP) is PartitionState.Online
    assert sent(batch) == []


def test_no_candidate_in_an_offline_election_marks_the_partition_offline_and_tells_the_brokers():
    zk, ctx, states, batch, leadership = setup(leader=2, isr=(2,), live=(1, 3))
    failed = run(leadership.elect([TP], leadership.offline_strategy()))
    assert failed == [TP] and zk.writes == []
    assert states.get(TP) is PartitionState.Offline
    assert sent(batch) == [(1, "UpdateMetadataRequest"), (3, "UpdateMetadataRequest")]


def test_preferred_election_bumps_the_leader_epoch_keeps_the_isr_and_notifies():
    zk, ctx, states, batch, leadership = setup(leader=2, isr=(2, 3, 1))
    failed = run(leadership.elect([TP], leadership.preferred_strategy(), mark_offline_if_none=False))
    assert failed == []
    lai = ctx.leadership[TP].leader_and_isr
    assert (lai.leader, lai.leader_epoch, lai.isr, lai.zk_version) == (1, 8, (2, 3, 1), 4)
    assert zk.writes == [(TP, ctx.leadership[TP])] and ctx.leadership[TP].controller_epoch == 5
    assert sent(batch) == [(b, kind) for b in (1, 2, 3) for kind in ("LeaderAndIsrRequest", "UpdateMetadataRequest")]


def test_preferred_replica_shutting_down_is_no_candidate():
    zk, ctx, states, batch, leadership = setup(leader=2, isr=(1, 2, 3))
    ctx.shutting_down = {1}
    assert run(leadership.elect([TP], leadership.preferred_strategy(), mark_offline_if_none=False)) == [TP]
    assert zk.writes == []


def test_version_conflict_rereads_and_decides_again():
    zk, ctx, states, batch, leadership = setup(leader=2, isr=(1, 2, 3))
    # someone (the leader shrinking its ISR) wrote first: the preferred replica left the ISR
    zk.states[TP] = LeaderIsrAndControllerEpoch(LeaderAndIsr(2, 7, (2, 3), 9), 4)
    assert run(leadership.elect([TP], leadership.preferred_strategy(), mark_offline_if_none=False)) == [TP]
    assert ctx.leadership[TP] is zk.states[TP] and zk.writes == []
    assert states.get(TP) is PartitionState.Online


def test_a_batch_of_elections_retries_only_the_conflicting_partition_once():
    zk, ctx, states, batch, leadership = setup(leader=2, isr=(1, 2, 3))
    others = [TopicPartition("t", p) for p in (1, 2)]
    for tp in others:
        ctx.assignments[tp] = [1, 2, 3]
        zk.states[tp] = ctx.leadership[tp] = LeaderIsrAndControllerEpoch(LeaderAndIsr(2, 7, (1, 2, 3), 3), 4)
        states.set_initial(tp, PartitionState.Online)
    # partition 1 was rewritten meanwhile (still electable after the re-read); partition 2 is as cached
    zk.states[others[0]] = LeaderIsrAndControllerEpoch(LeaderAndIsr(2, 8, (1, 2), 6), 4)
    assert run(leadership.elect([TP, *others], leadership.preferred_strategy(), mark_offline_if_none=False)) == []
    assert sorted(tp.partition for tp, _ in zk.writes) == [0, 1, 2]  # one write each: the conflict was retried
    assert ctx.leadership[others[0]].leader_and_isr == LeaderAndIsr(1, 9, (1, 2), 7)
    assert all(ctx.leadership[tp].leader_and_isr.leader == 1 for tp in (TP, *others))
    assert sorted(b for b, kind in sent(batch) if kind == "LeaderAndIsrRequest") == [1, 2, 3]


def test_a_second_conflict_raises():
    zk, ctx, states, batch, leadership = setup(leader=2, isr=(1, 2, 3))
    original = zk.get_partition_states

    async def racing_reads(tps):  # every re-read is overtaken by another writer at once
        read = await original(tps)
        for tp in tps:
            lai = zk.states[tp].leader_and_isr
            zk.states[tp] = LeaderIsrAndControllerEpoch(LeaderAndIsr(lai.leader, lai.leader_epoch, lai.isr,
                                                                     lai.zk_version + 1), 4)
        return read
    zk.get_partition_states = racing_reads
    zk.states[TP] = LeaderIsrAndControllerEpoch(LeaderAndIsr(2, 7, (1, 2, 3), 9), 4)
    with pytest.raises(MultiOpError):
        run(leadership.elect([TP], leadership.preferred_strategy(), mark_offline_if_none=False))


def test_replicas_going_offline_leave_every_isr_in_one_batch_per_broker():
    zk, ctx, states, batch, leadership = setup(leader=3, isr=(1, 2, 3))
    led_by_2 = TopicPartition("t", 1)
    ctx.assignments[led_by_2] = [2, 3, 1]
    zk.states[led_by_2] = ctx.leadership[led_by_2] = LeaderIsrAndControllerEpoch(LeaderAndIsr(2, 1, (2,), 0), 4)
    states.set_initial(led_by_2, PartitionState.Online)
    ctx.live_brokers.pop(2)
    run(leadership.take_replicas_offline({2}))
    assert ctx.leadership[TP].leader_and_isr == LeaderAndIsr(3, 8, (1, 3), 4)
    assert ctx.leadership[led_by_2].leader_and_isr == LeaderAndIsr(-1, 2, (2,), 1)  # never emptied, leader gone
    assert states.get(led_by_2) is PartitionState.Offline


# -- the ElectLeaders shell --------------------------------------------------------------------------------

def elections(leader: int, isr: tuple[int, ...], active: bool = True, config=None, events=None, **kw):
    zk, ctx, states, batch, leadership = setup(leader, isr, **kw)
    config = config or SimpleNamespace(auto_leader_rebalance_enable=False)
    put = events.put if events is not None else None
    return ReplicaLeaderElections(1, zk, ctx, leadership, config, lambda: active, put, watch=None), zk, ctx


def test_elect_for_admin_answers_per_partition():
    other = TopicPartition("t", 9)
    shell, zk, ctx = elections(leader=2, isr=(1, 2, 3))
    outcomes = run(shell.elect_for_admin(PREFERRED, [TP, other]))
    assert outcomes == {TP: (0, None, 1), other: (3, "The partition does not exist.", -1)}
    again = run(shell.elect_for_admin(PREFERRED, [TP]))
    assert again == {TP: (int(ErrorCode.ELECTION_NOT_NEEDED), None, 1)} and len(zk.writes) == 1


def test_elect_for_admin_preferred_not_available_keeps_the_leader():
    shell, zk, ctx = elections(leader=2, isr=(2, 3))
    (code, message, leader), = run(shell.elect_for_admin(PREFERRED, [TP])).values()
    assert (code, leader) == (80, -1) and "t-0" in message
    assert ctx.leadership[TP].leader_and_isr.leader == 2 and zk.writes == []


def test_elect_for_admin_unclean_elects_a_live_replica_outside_the_isr():
    shell, zk, ctx = elections(leader=-1, isr=(3,), live=(1, 2), state=PartitionState.Offline)
    assert run(shell.elect_for_admin(UNCLEAN, [TP])) == {TP: (0, None, 1)}
    assert ctx.leadership[TP].leader_and_isr.isr == (1,)
    assert run(shell.elect_for_admin(UNCLEAN, [TP])) == {TP: (84, None, 1)}  # leader live now


def test_elect_for_admin_unclean_without_live_replicas():
    shell, zk, ctx = elections(leader=-1, isr=(3,), live=(), state=PartitionState.Offline)
    (code, _, _), = run(shell.elect_for_admin(UNCLEAN, [TP])).values()
    assert code == 83 and zk.writes == []


def test_elect_for_admin_on_an_inactive_controller_is_not_controller():
    shell, zk, ctx = elections(leader=2, isr=(1, 2, 3), active=False)
    assert run(shell.elect_for_admin(PREFERRED, [TP])) == {TP: (41, None, -1)}


# -- the auto-rebalance timer ------------------------------------------------------------------------------

class Events:
    def __init__(self):
        self.put_events = []

    def put(self, event):
        self.put_events.append(event)


def timer_shell(enabled: bool = True, interval: float = 0.05):
    events = Events()
    config = SimpleNamespace(auto_leader_rebalance_enable=enabled, leader_imbalance_check_interval_seconds=interval,
                             leader_imbalance_per_broker_percentage=10)
    shell, zk, ctx = elections(leader=1, isr=(1, 2, 3), config=config, events=events)
    return shell, ctx, events


def test_the_timer_only_enqueues_an_event_carrying_the_controller_epoch():
    async def scenario():
        shell, ctx, events = timer_shell()
        shell._schedule(0.01)
        await asyncio.sleep(0.05)
        return events.put_events, ctx.epoch

    events, epoch = run(scenario())
    assert [type(e).__name__ for e in events] == ["AutoPreferredReplicaLeaderElection"] and events[0].epoch == epoch


def test_stop_cancels_the_timer_and_disabled_means_no_timer():
    async def scenario(enabled: bool, stop: bool):
        shell, ctx, events = timer_shell(enabled)
        shell._schedule(0.01)
        if stop:
            shell.stop()
        await asyncio.sleep(0.05)
        return events.put_events

    assert run(scenario(True, True)) == []
    assert run(scenario(False, False)) == []


def test_a_check_reschedules_itself_but_a_stale_epochs_event_does_nothing():
    from coordinator.events import AutoPreferredReplicaLeaderElection

    async def scenario(epoch_offset: int):
        shell, ctx, events = timer_shell(interval=0.01)
        await shell.process_auto_preferred_replica_leader_election(
            AutoPreferredReplicaLeaderElection(ctx.epoch + epoch_offset))
        await asyncio.sleep(0.05)
        shell.stop()
        return events.put_events

    assert len(run(scenario(0))) == 1  # balanced cluster: nothing elected, next check scheduled
    assert run(scenario(-1)) == []


def test_the_auto_check_elects_the_drifted_partition():
    from coordinator.events import AutoPreferredReplicaLeaderElection

    async def scenario():
        config = SimpleNamespace(auto_leader_rebalance_enable=False, leader_imbalance_check_interval_seconds=300,
                                 leader_imbalance_per_broker_percentage=10)
        # the only partition prefers 1: ratio 1.0
        shell, zk, ctx = elections(leader=2, isr=(1, 2, 3), config=config, events=Events())
        await shell.process_auto_preferred_replica_leader_election(AutoPreferredReplicaLeaderElection(ctx.epoch))
        return ctx.leadership[TP].leader_and_isr

    lai = run(scenario())
    assert (lai.leader, lai.leader_epoch, lai.isr) == (1, 8, (1, 2, 3))
