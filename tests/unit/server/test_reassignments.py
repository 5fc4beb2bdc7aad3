"""The AlterPartitionReassignments / ListPartitionReassignments handlers (api 45, 46, v0) over real wire
bytes (kio-encoded requests decoded as the listener does, responses encoded and decoded again), with a
stand-in for the controller's reassignment calls."""
from __future__ import annotations

import asyncio

from brokers.model import ReplicaAssignment, TopicPartition
from brokers.protocol import codec
from brokers.protocol.api_versions import is_flexible
from brokers.protocol.errors import ErrorCode
from brokers.protocol.framing import parse_request_header
from brokers.server.context import ServerContext
from brokers.server.handlers.reassignments import (
    handle_alter_partition_reassignments,
    handle_list_partition_reassignments,
)

ALTER, LIST = 45, 46
T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


class Controller:
    def __init__(self, active: bool = True):
        self.active, self.altered, self.listed = active, [], []
        self.moving = {T1: ReplicaAssignment((3, 4, 1), (3, 4), (1,))}

    async def alter_partition_reassignments(self, targets):
        self.altered.append(targets)
        if not self.active:
            return ErrorCode.NOT_CONTROLLER
        return {tp: (ErrorCode.NONE, None) if replicas != [9] else
                (ErrorCode.INVALID_REPLICA_ASSIGNMENT, "not alive") for tp, replicas in targets.items()}

    async def list_partition_reassignments(self, partitions):
        self.listed.append(partitions)
        if not self.active:
            return ErrorCode.NOT_CONTROLLER
        return {tp: a for tp, a in self.moving.items() if partitions is None or tp in partitions}


def roundtrip(handler, key: int, controller, **fields):
    body = codec.build(codec.request_class(key, 0), **fields)
    frame = codec.encode_request(key, 0, 7, "test", body)[4:]
    header = parse_request_header(frame, is_flexible(key, 0))
    ctx = ServerContext(1, None, None, None, lambda: "cluster", None, reassignments=controller)
    response = asyncio.run(handler(ctx, header, codec.decode_request(header, frame)))
    encoded = codec.encode_response(key, 0, 7, response)
    return codec.decode_response(key, 0, encoded[4:])[1]


def alter(controller, topics):
    response = roundtrip(handle_alter_partition_reassignments, ALTER, controller, timeout=30000, topics=topics)
    return int(response.error_code), {(t.name, p.partition_index): (int(p.error_code), p.error_message)
                                      for t in response.responses for p in t.partitions}


def test_alter_passes_targets_and_cancellations_and_answers_per_partition():
    controller = Controller()
    code, results = alter(controller, [dict(name="t", partitions=[
        dict(partition_index=0, replicas=[3, 4]), dict(partition_index=1, replicas=None),
        dict(partition_index=2, replicas=[9])])])
    assert code == 0
    assert controller.altered == [{T0: [3, 4], T1: None, TopicPartition("t", 2): [9]}]
    assert results == {("t", 0): (0, None), ("t", 1): (0, None), ("t", 2): (39, "not alive")}


def test_a_partition_named_twice_is_invalid_request_and_never_reaches_the_controller():
    controller = Controller()
    code, results = alter(controller, [dict(name="t", partitions=[
        dict(partition_index=0, replicas=[3, 4]), dict(partition_index=0, replicas=[2]),
        dict(partition_index=1, replicas=[2, 3])])])
    assert code == 0 and controller.altered == [{T1: [2, 3]}]
    assert results[("t", 0)][0] == ErrorCode.INVALID_REQUEST and results[("t", 1)] == (0, None)


def test_not_the_controller_is_a_top_level_error():
    code, results = alter(Controller(active=False), [dict(name="t", partitions=[dict(partition_index=0, replicas=[3])])])
    assert code == ErrorCode.NOT_CONTROLLER and results == {}
    code, _ = alter(None, [dict(name="t", partitions=[dict(partition_index=0, replicas=[3])])])
    assert code == ErrorCode.NOT_CONTROLLER


def test_list_returns_the_moving_partitions_with_adding_and_removing():
    controller = Controller()
    response = roundtrip(handle_list_partition_reassignments, LIST, controller, timeout=30000, topics=None)
    assert int(response.error_code) == 0 and controller.listed == [None]
    ((topic,),) = [response.topics]
    assert topic.name == "t"
    (p,) = topic.partitions
    assert (p.partition_index, list(p.replicas), list(p.adding_replicas), list(p.removing_replicas)) == (1, [3, 4, 1], [3, 4], [1])
    response = roundtrip(handle_list_partition_reassignments, LIST, controller, timeout=30000,
                         topics=[dict(name="t", partition_indexes=[0])])
    assert controller.listed[-1] == [T0] and list(response.topics) == []
    response = roundtrip(handle_list_partition_reassignments, LIST, Controller(active=False), timeout=30000, topics=None)
    assert int(response.error_code) == ErrorCode.NOT_CONTROLLER
