"""ControllerBrokerRequestBatch: Kafka's order (LeaderAndIsr, UpdateMetadata, StopReplica), epochs, -2 for deletes."""
from __future__ import annotations

from brokers.control import LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest
from brokers.model import BrokerInfo, EndPoint, LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition
from coordinator.context import ControllerContext
from coordinator.request_batch import ControllerBrokerRequestBatch

TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)


def context() -> ControllerContext:
    ctx = ControllerContext(epoch=7, epoch_zk_version=3)
    for b in (1, 2, 3):
        ctx.live_brokers[b] = BrokerInfo(b, (EndPoint("PLAINTEXT", "127.0.0.1", 9090 + b),), epoch=100 + b, http_port=1)
    ctx.assignments = {TP0: [1, 2, 4], TP1: [2, 3, 1]}
    ctx.leadership = {TP0: LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 4, (1, 2), 9), 6),
                      TP1: LeaderIsrAndControllerEpoch(LeaderAndIsr(2, 0, (2, 3, 1), 0), 7)}
    return ctx


def collect(batch, **kwargs):
    sent = []
    batch.send(lambda broker, request, callback: sent.append((broker, request, callback)), **kwargs)
    return sent


def test_order_and_contents():
    ctx = context()
    batch = ControllerBrokerRequestBatch(9, ctx)
    batch.add_leader_and_isr(ctx.assignments[TP0], TP0, is_new=True)
    batch.add_stop_replica(3, TP1, delete=False)
    sent = collect(batch)
    kinds = [type(r).__name__ for _, r, _ in sent]
    assert kinds == ["LeaderAndIsrRequest"] * 2 + ["UpdateMetadataRequest"] * 3 + ["StopReplicaRequest"]
    lai = {b: r for b, r, _ in sent if isinstance(r, LeaderAndIsrRequest)}
    assert sorted(lai) == [1, 2]  # broker 4 is not live
    state = lai[1].partition_states[0]
    assert (state.leader, state.leader_epoch, state.isr, state.zk_version, state.is_new) == (1, 4, (1, 2), 9, True)
    assert state.offline_replicas == (4,) and state.controller_epoch == 6
    assert lai[2].controller_epoch == 7 and lai[2].controller_id == 9 and lai[2].broker_epoch == 102
    assert [b.id for b in lai[1].live_leaders] == [1]
    metadata = [r for _, r, _ in sent if isinstance(r, UpdateMetadataRequest)]
    assert all([s.partition for s in m.partition_states] == [0] and len(m.live_brokers) == 3 for m in metadata)
    stop = sent[-1][1]
    assert isinstance(stop, StopReplicaRequest) and stop.partitions[0].leader_epoch == 0 and not stop.partitions[0].delete
    assert collect(batch) == []  # the batch resets after sending


def test_topics_being_deleted_are_announced_with_leader_minus_two():
    ctx = context()
    ctx.topics_to_delete.add("t")
    batch = ControllerBrokerRequestBatch(9, ctx)
    batch.add_update_metadata(ctx.live_brokers, [TP0])
    batch.add_stop_replica(1, TP0, delete=True)
    responses = []
    sent = collect(batch, on_stop_replica=lambda broker, response: responses.append((broker, response)))
    metadata = [r for _, r, _ in sent if isinstance(r, UpdateMetadataRequest)]
    assert metadata and all(m.partition_states[0].leader == -2 for m in metadata)
    broker, stop, callback = sent[-1]
    assert stop.partitions[0].leader_epoch == -2 and stop.partitions[0].delete
    callback("answer")
    assert responses == [(1, "answer")]


def test_unclean_election_follows_the_topic_override_then_the_broker_setting():
    from coordinator.controller import ControllerConfig, KafkaController

    controller = KafkaController(1, None, ControllerConfig(unclean_leader_election=False))
    controller.context.topic_configs = {"risky": {"unclean.leader.election.enable": "true"},
                                        "safe": {"unclean.leader.election.enable": "false"}, "plain": {}}
    assert [controller.unclean_allowed(t) for t in ("risky", "safe", "plain", "unknown")] == [True, False, False, False]
    permissive = KafkaController(1, None, ControllerConfig(unclean_leader_election=True))
    permissive.context.topic_configs = {"safe": {"unclean.leader.election.enable": "false"}}
    assert [permissive.unclean_allowed(t) for t in ("safe", "plain")] == [False, True]


def test_partition_states_carry_the_topic_id():
    ctx = context()
    ctx.topic_ids["t"] = "IfRaPKG3Q-OqAMISaRtmVg"
    batch = ControllerBrokerRequestBatch(9, ctx)
    batch.add_leader_and_isr(ctx.assignments[TP0], TP0)
    batch.add_update_metadata(ctx.live_brokers, [TP1])
    ids = {s.topic_id for _, r, _ in collect(batch) for s in r.partition_states}
    assert ids == {"IfRaPKG3Q-OqAMISaRtmVg"}
    ctx.topic_ids.clear()  # a topic the controller has no id for yet: "" (the cache keeps whatever it had)
    batch.add_update_metadata(ctx.live_brokers, [TP1])
    assert {s.topic_id for _, r, _ in collect(batch) for s in r.partition_states} == {""}
