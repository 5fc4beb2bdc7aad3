"""Znode encodings are Kafka 2.8's JSON, byte-compatible with what Kafka's tools read and write."""
from __future__ import annotations

import json

import pytest

from brokers.model import BrokerInfo, EndPoint, LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition
from brokers.zk import paths


def test_broker_registration_v5():
    broker = BrokerInfo(2, (EndPoint("PLAINTEXT", "h1", 9092), EndPoint("INTERNAL", "h1", 9093)), rack="r1",
                        http_port=8082)
    data = json.loads(paths.BrokerIdZNode.encode(broker))
    assert data["version"] == 5 and data["host"] == "h1" and data["port"] == 9092 and data["jmx_port"] == -1
    assert data["endpoints"] == ["PLAINTEXT://h1:9092", "INTERNAL://h1:9093"]
    assert data["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT", "INTERNAL": "PLAINTEXT"}
    assert data["rack"] == "r1" and isinstance(data["timestamp"], str) and data["features"] == {}
    decoded = paths.BrokerIdZNode.decode(2, paths.BrokerIdZNode.encode(broker), czxid=77)
    assert decoded == BrokerInfo(2, broker.endpoints, "r1", 77, 8082)
    assert paths.BrokerIdZNode.path(2) == "/brokers/ids/2"


def test_decodes_a_kafka_written_registration():
    kafka = (b'{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://k1:9092"],'
             b'"jmx_port":-1,"features":{},"host":"k1","timestamp":"1700000000000","port":9092,"version":5}')
    assert paths.BrokerIdZNode.decode(1, kafka, 5) == BrokerInfo(1, (EndPoint("PLAINTEXT", "k1", 9092),), None, 5)


def test_topic_assignment():
    data = paths.TopicZNode.encode({1: [2, 3, 1], 0: [1, 2, 3]}, topic_id="AAAAAAAAAAAAAAAAAAAAAA")
    assert json.loads(data) == {"version": 3, "partitions": {"0": [1, 2, 3], "1": [2, 3, 1]}, "adding_replicas": {},
                                "removing_replicas": {}, "topic_id": "AAAAAAAAAAAAAAAAAAAAAA"}
    assert paths.TopicZNode.decode("t", data) == {0: [1, 2, 3], 1: [2, 3, 1]}
    assert paths.TopicZNode.decode("t", b'{"version":1,"partitions":{"0":[5]}}') == {0: [5]}


def test_partition_state():
    tp = TopicPartition("t", 4)
    state = LeaderIsrAndControllerEpoch(LeaderAndIsr(2, 4, (2, 3, 1), 9), 7)
    assert paths.TopicPartitionStateZNode.path(tp) == "/brokers/topics/t/partitions/4/state"
    assert json.loads(paths.TopicPartitionStateZNode.encode(state)) == {
        "controller_epoch": 7, "leader": 2, "version": 1, "leader_epoch": 4, "isr": [2, 3, 1]}
    assert paths.TopicPartitionStateZNode.decode(paths.TopicPartitionStateZNode.encode(state), 9) == state


def test_controller_and_epoch():
    assert paths.ControllerZNode.decode(paths.ControllerZNode.encode(3)) == 3
    assert json.loads(paths.ControllerZNode.encode(3))["version"] == 1
    assert paths.ControllerEpochZNode.encode(7) == b"7"
    assert paths.ControllerEpochZNode.decode(b"7") == 7
    with pytest.raises(ValueError):
        paths.ControllerEpochZNode.decode(b"seven")


def test_other_znodes():
    assert json.loads(paths.ClusterIdZNode.encode("abc")) == {"version": "1", "id": "abc"}
    assert paths.ClusterIdZNode.decode(paths.ClusterIdZNode.encode("abc")) == "abc"
    assert paths.ConfigEntityZNode.decode(paths.ConfigEntityZNode.encode({"retention.ms": "60000"})) == {"retention.ms": "60000"}
    tps = [TopicPartition("a", 0), TopicPartition("b", 3)]
    assert paths.IsrChangeNotificationZNode.decode(paths.IsrChangeNotificationZNode.encode(tps)) == tps
    assert paths.ConsumerOffsetZNode.path("g", TopicPartition("t", 1)) == "/consumers/g/offsets/t/1"
    assert paths.DeleteTopicsZNode.path("t") == "/admin/delete_topics/t"
    assert "/brokers/ids" in paths.PERSISTENT_ROOTS and "/config/topics" in paths.PERSISTENT_ROOTS


@pytest.mark.parametrize("data", [b"", b"not json", b"[1,2]"])
def test_garbage_znodes_raise_value_error(data):
    with pytest.raises(ValueError):
        paths.TopicZNode.decode("t", data)


def test_topic_znode_full_round_trip_keeps_adding_removing_and_topic_id():
    from brokers.model import ReplicaAssignment
    from brokers.zk.paths import TopicZNode

    assignment = {0: ReplicaAssignment((3, 4, 1, 2), (3, 4), (1, 2)), 1: ReplicaAssignment((2, 3))}
    data = TopicZNode.encode_full(assignment, "abc")
    value = json.loads(data)
    assert value["partitions"] == {"0": [3, 4, 1, 2], "1": [2, 3]}
    assert value["adding_replicas"] == {"0": [3, 4]} and value["removing_replicas"] == {"0": [1, 2]}
    assert TopicZNode.decode_full("t", data) == (assignment, "abc")
    assert TopicZNode.decode("t", data) == {0: [3, 4, 1, 2], 1: [2, 3]}
    assert TopicZNode.decode_full("t", b'{"version":1,"partitions":{"0":[1]}}') == ({0: ReplicaAssignment((1,))}, None)


def test_reassign_partitions_znode_round_trip_and_bad_entries():
    from brokers.model import TopicPartition
    from brokers.zk.paths import ReassignPartitionsZNode

    targets = {TopicPartition("t", 0): [4, 5], TopicPartition("u", 2): [1]}
    assert ReassignPartitionsZNode.decode(ReassignPartitionsZNode.encode(targets)) == targets
    with pytest.raises(ValueError, match="reassign_partitions"):
        ReassignPartitionsZNode.decode(b'{"version":1,"partitions":[{"topic":"t"}]}')


# -- /config/changes notifications ---------------------------------------------------------------------
from brokers.zk.paths import ConfigChangeNotificationZNode as Notification  # noqa: E402


def test_config_change_notification_is_kafkas_version_2():
    data = Notification.encode("topics", "orders")
    assert json.loads(data) == {"version": 2, "entity_path": "topics/orders"}
    assert Notification.decode(data) == ("topics", "orders")
    assert Notification.decode(Notification.encode("brokers", "<default>")) == ("brokers", "<default>")


def test_config_change_notification_reads_version_1_and_rejects_junk():
    assert Notification.decode(b'{"version":1,"entity_type":"topics","entity_name":"t"}') == ("topics", "t")
    for junk in (b'{"version":2,"entity_path":"nope"}', b'{"version":2,"entity_path":"widgets/x"}',
                 b'{"version":3,"entity_path":"topics/t"}', b"", b"[]"):
        with pytest.raises(ValueError):
            Notification.decode(junk)


def test_config_change_sequence_numbers():
    assert Notification.sequence("config_change_0000000042") == 42
    with pytest.raises(ValueError):
        Notification.sequence("isr_change_0000000001")


def test_secure_acls_keep_the_sensitive_roots_unreadable():
    from brokers.zk.paths import world_readable

    assert world_readable("/brokers/topics/t") and world_readable("/controller") and world_readable("/config/topics/t")
    assert not world_readable("/config/users") and not world_readable("/config/users/alice")
    assert not world_readable("/delegation_token/keys") and world_readable("/config/usersx")
    assert not world_readable(paths.ControlPlaneSecretZNode.PATH) and not world_readable("/zkafka")


def test_control_plane_secret_round_trips_and_garbage_is_named():
    secret = bytes(range(32))
    assert paths.ControlPlaneSecretZNode.decode(paths.ControlPlaneSecretZNode.encode(secret)) == secret
    for bad in (b'{"version":1}', b'{"version":1,"secret":"not base64!"}', b"", b"[1]"):
        with pytest.raises(ValueError, match="control_plane_secret"):
            paths.ControlPlaneSecretZNode.decode(bad)


def test_the_gateway_gives_creator_all_and_world_read_only_with_zookeeper_set_acl():
    from kazoo.security import CREATOR_ALL_ACL, READ_ACL_UNSAFE

    from brokers.zk.gateway import ZkGateway

    assert ZkGateway("127.0.0.1:1")._acl("/brokers/topics/t") is None  # ZooKeeper's open default
    secure = ZkGateway("127.0.0.1:1", digest="kafka:secret", secure_acls=True)
    assert secure._acl("/brokers/topics/t") == [CREATOR_ALL_ACL[0], READ_ACL_UNSAFE[0]]
    assert secure._acl("/config/users/alice") == list(CREATOR_ALL_ACL)
    with pytest.raises(ValueError):
        ZkGateway("127.0.0.1:1", secure_acls=True)


def test_a_transactional_producers_epochs_round_trip_through_their_znode():
    ConsumerTxnProducerZNode = paths.ConsumerTxnProducerZNode
    assert ConsumerTxnProducerZNode.path("g", 7000) == "/consumers/g/txn_producers/7000"
    assert ConsumerTxnProducerZNode.group_path("g") == "/consumers/g/txn_producers"
    assert ConsumerTxnProducerZNode.decode(ConsumerTxnProducerZNode.encode(3, 12)) == (3, 12)
    for bad in (b"", b"[]", b'{"version":1,"producer_epoch":1}', b'{"producer_epoch":"x","coordinator_epoch":0}'):
        with pytest.raises(ValueError):
            ConsumerTxnProducerZNode.decode(bad)
