"""brokers.control: msgpack round trips, field-naming errors on malformed input, epoch fencing helpers."""
from __future__ import annotations

import itertools

import msgpack
import pytest

from brokers.control import (
    CONTROL_APIS,
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    ControlMessageError,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    PartitionState,
    StopReplicaPartition,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
    VerifyTransactionRequest,
    VerifyTransactionResponse,
    api_for,
    check_broker_epoch,
    check_controller_epoch,
    decode,
    encode,
)
from brokers.model import BrokerInfo, EndPoint
from brokers.protocol.errors import ErrorCode

BROKER_1 = BrokerInfo(1, (EndPoint("PLAINTEXT", "host-1", 9092), EndPoint("INTERNAL", "10.0.0.1", 9093, "SSL")),
                      "rack-a", 4711, 8081)
BROKER_2 = BrokerInfo(2, (EndPoint("PLAINTEXT", "", 9094),), None, -1, None)
STATE_NEW = PartitionState("orders", 0, 3, 1, 0, (1, 2), 0, (1, 2, 3), is_new=True, offline_replicas=(3,))
STATE_DELETE = PartitionState("old.topic-x", 7, 2, -2, 12, (), 9, (2,))

MESSAGES = [
    LeaderAndIsrRequest(1, 3, 4711, (STATE_NEW, STATE_DELETE), (BROKER_1, BROKER_2)),
    LeaderAndIsrRequest(0, 0, -1, (), ()),
    LeaderAndIsrResponse(int(ErrorCode.NONE), (("orders", 0, 0), ("orders", 1, int(ErrorCode.STALE_CONTROLLER_EPOCH)))),
    LeaderAndIsrResponse(int(ErrorCode.STALE_BROKER_EPOCH)),
    UpdateMetadataRequest(2, 5, 99, (STATE_NEW,), (BROKER_1, BROKER_2)),
    UpdateMetadataResponse(int(ErrorCode.STALE_CONTROLLER_EPOCH)),
    StopReplicaRequest(1, 3, 4711, (StopReplicaPartition("orders", 0, 4, False),
                                    StopReplicaPartition("old.topic-x", 7, -2, True))),
    StopReplicaResponse(0, (("orders", 0, int(ErrorCode.FENCED_LEADER_EPOCH)),)),
    ControlledShutdownRequest(2, 12345678901234),
    ControlledShutdownResponse(int(ErrorCode.NOT_CONTROLLER)),
    ControlledShutdownResponse(0, (("orders", 0), ("orders", 3))),
    VerifyTransactionRequest("copier-1", 4000, 7, "orders", 3),
    VerifyTransactionResponse(int(ErrorCode.INVALID_TXN_STATE)),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_round_trip(message):
    data = encode(message)
    assert isinstance(data, bytes)
    back = decode(type(message), data)
    assert back == message
    assert type(back) is type(message)


def test_nested_types_are_rebuilt_not_left_as_lists_or_dicts():
    back = decode(LeaderAndIsrRequest, encode(MESSAGES[0]))
    assert isinstance(back.partition_states, tuple) and isinstance(back.partition_states[0], PartitionState)
    assert back.partition_states[0].isr == (1, 2) and isinstance(back.partition_states[0].isr, tuple)
    broker = back.live_leaders[0]
    assert isinstance(broker, BrokerInfo) and isinstance(broker.endpoints[1], EndPoint)
    assert broker.endpoints[1].security_protocol == "SSL" and broker.rack == "rack-a" and broker.http_port == 8081
    assert back.live_leaders[1].rack is None and back.live_leaders[1].http_port is None
    errors = decode(LeaderAndIsrResponse, encode(MESSAGES[2])).partition_errors
    assert errors[1] == ("orders", 1, 11) and isinstance(errors[1], tuple)


def test_wire_form_is_a_msgpack_map_with_python_field_names():
    wire = msgpack.unpackb(encode(MESSAGES[0]), raw=False)
    assert set(wire) == {"controller_id", "controller_epoch", "broker_epoch", "partition_states", "live_leaders"}
    assert wire["partition_states"][0]["offline_replicas"] == [3]
    assert wire["live_leaders"][0]["endpoints"][0] == {"listener": "PLAINTEXT", "host": "host-1", "port": 9092,
                                                       "security_protocol": "PLAINTEXT"}


def test_error_code_enum_encodes_as_plain_int():
    message = UpdateMetadataResponse(ErrorCode.STALE_BROKER_EPOCH)
    assert msgpack.unpackb(encode(message)) == {"error_code": 77}
    assert decode(UpdateMetadataResponse, encode(message)).error_code == 77


def test_defaulted_fields_may_be_absent_and_unknown_fields_are_ignored():
    state = {"topic": "t", "partition": 1, "controller_epoch": 2, "leader": 3, "leader_epoch": 4, "isr": [3],
             "zk_version": 5, "replicas": [3, 4], "future_field": "x"}
    data = msgpack.packb({"controller_id": 1, "controller_epoch": 2, "broker_epoch": 3, "partition_states": [state],
                          "live_brokers": [], "topic_ids": {}})
    request = decode(UpdateMetadataRequest, data)
    assert request.partition_states == (PartitionState("t", 1, 2, 3, 4, (3,), 5, (3, 4), False, ()),)
    assert decode(StopReplicaResponse, msgpack.packb({"error_code": 0})) == StopReplicaResponse(0, ())


def _wire(message) -> dict:
    return msgpack.unpackb(encode(message), raw=False)


def _expect_error(cls, wire, field: str) -> ControlMessageError:
    with pytest.raises(ValueError) as info:
        decode(cls, msgpack.packb(wire))
    assert isinstance(info.value, ControlMessageError)
    assert info.value.field == field
    assert field in str(info.value)
    return info.value


@pytest.mark.parametrize("name", ["controller_id", "controller_epoch", "broker_epoch", "partition_states",
                                  "live_leaders"])
def test_missing_top_level_field_is_named(name):
    wire = _wire(MESSAGES[0])
    del wire[name]
    error = _expect_error(LeaderAndIsrRequest, wire, f"LeaderAndIsrRequest.{name}")
    assert "missing" in str(error)


def test_missing_nested_fields_are_named_with_their_path():
    wire = _wire(MESSAGES[0])
    del wire["partition_states"][1]["leader_epoch"]
    _expect_error(LeaderAndIsrRequest, wire, "LeaderAndIsrRequest.partition_states[1].leader_epoch")
    wire = _wire(MESSAGES[0])
    del wire["live_leaders"][0]["endpoints"][1]["port"]
    _expect_error(LeaderAndIsrRequest, wire, "LeaderAndIsrRequest.live_leaders[0].endpoints[1].port")
    wire = _wire(MESSAGES[6])
    del wire["partitions"][1]["delete"]
    _expect_error(StopReplicaRequest, wire, "StopReplicaRequest.partitions[1].delete")


@pytest.mark.parametrize("path, bad, field", [
    (("controller_epoch",), "3", "LeaderAndIsrRequest.controller_epoch"),
    (("controller_epoch",), True, "LeaderAndIsrRequest.controller_epoch"),  # a bool is not an int
    (("controller_epoch",), None, "LeaderAndIsrRequest.controller_epoch"),
    (("controller_epoch",), 1.5, "LeaderAndIsrRequest.controller_epoch"),
    (("partition_states",), {"a": 1}, "LeaderAndIsrRequest.partition_states"),
    (("partition_states", 0), [1, 2], "LeaderAndIsrRequest.partition_states[0]"),
    (("partition_states", 0, "isr"), "12", "LeaderAndIsrRequest.partition_states[0].isr"),
    (("partition_states", 0, "isr", 1), "2", "LeaderAndIsrRequest.partition_states[0].isr[1]"),
    (("partition_states", 0, "is_new"), 1, "LeaderAndIsrRequest.partition_states[0].is_new"),
    (("partition_states", 0, "topic"), 5, "LeaderAndIsrRequest.partition_states[0].topic"),
    (("live_leaders", 0, "rack"), 7, "LeaderAndIsrRequest.live_leaders[0].rack"),
    (("live_leaders", 0, "endpoints"), None, "LeaderAndIsrRequest.live_leaders[0].endpoints"),
])
def test_wrong_types_are_named(path, bad, field):
    wire = _wire(MESSAGES[0])
    target = wire
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = bad
    _expect_error(LeaderAndIsrRequest, wire, field)


def test_fixed_size_tuples_check_their_length():
    _expect_error(LeaderAndIsrResponse, {"error_code": 0, "partition_errors": [["t", 0]]},
                  "LeaderAndIsrResponse.partition_errors[0]")
    _expect_error(ControlledShutdownResponse, {"error_code": 0, "remaining_partitions": [["t", 0, 1]]},
                  "ControlledShutdownResponse.remaining_partitions[0]")
    _expect_error(StopReplicaResponse, {"error_code": 0, "partition_errors": [["t", "0", 1]]},
                  "StopReplicaResponse.partition_errors[0][1]")


@pytest.mark.parametrize("data", [b"", b"\xc1", b"\x81\x01", msgpack.packb({"broker_id": 1}) + b"\x00"],
                         ids=["empty", "reserved-byte", "truncated", "trailing-bytes"])
def test_bytes_that_are_not_one_msgpack_document(data):
    with pytest.raises(ValueError, match="ControlledShutdownRequest") as info:
        decode(ControlledShutdownRequest, data)
    assert isinstance(info.value, ControlMessageError)


@pytest.mark.parametrize("document", [[1, 2], 5, "text", None, {1: 2}])
def test_documents_that_are_not_a_map_with_string_keys(document):
    with pytest.raises(ValueError, match="ControlledShutdownRequest"):
        decode(ControlledShutdownRequest, msgpack.packb(document))


def test_decode_rejects_non_bytes_and_encode_rejects_non_messages():
    with pytest.raises(ValueError, match="expected bytes"):
        decode(ControlledShutdownRequest, "text")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        encode({"broker_id": 1})
    with pytest.raises(TypeError):
        encode(ControlledShutdownRequest)


def test_control_api_table_covers_every_request_once():
    assert [api.path for api in CONTROL_APIS] == ["/control/v1/leader-and-isr", "/control/v1/update-metadata",
                                                  "/control/v1/stop-replica", "/control/v1/controlled-shutdown",
                                                  "/control/v1/verify-txn"]
    for message in MESSAGES:
        if type(message).__name__.endswith("Request"):
            api = api_for(message)
            assert api.request is type(message) and api_for(type(message)) is api
            assert api.response.__name__ == type(message).__name__.replace("Request", "Response")
    with pytest.raises(TypeError):
        api_for(UpdateMetadataResponse(0))


EPOCHS = range(-1, 6)


def test_check_controller_epoch_exhaustive():
    # §2.2 layer 1: lower than remembered -> reject; equal or higher -> accept. No sentinel: -1 is just low.
    for remembered, requested in itertools.product(EPOCHS, EPOCHS):
        expected = not (requested < remembered)
        assert check_controller_epoch(remembered, requested) is expected, (remembered, requested)
    assert check_controller_epoch(0, -1) is False
    assert check_controller_epoch(3, 3) is True
    assert check_controller_epoch(3, 2) is False
    assert check_controller_epoch(3, 4) is True


def test_check_broker_epoch_exhaustive():
    # §2.2 layer 4: a request meant for an older registration is rejected; -1 means "not set" -> accepted.
    for own, requested in itertools.product(EPOCHS, EPOCHS):
        expected = requested == -1 or not (requested < own)
        assert check_broker_epoch(own, requested) is expected, (own, requested)
    assert check_broker_epoch(5, -1) is True
    assert check_broker_epoch(5, 4) is False
    assert check_broker_epoch(5, 5) is True
    assert check_broker_epoch(5, 6) is True
    assert check_broker_epoch(2 ** 40, 2 ** 40 - 1) is False  # czxids are 64-bit
