"""The partition caps on real brokers (KIP-578's ``max.partitions`` and ``max.broker.partitions``): a
CreateTopics or CreatePartitions that would pass a cap is refused whole with POLICY_VIOLATION and a message
naming the cap, validate-only too, and nothing is written; within the caps creation goes on as usual."""
from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from scripts.local.cluster import running_cluster
from tests.integration.conditions import wait_for

PROPERTIES = {"max.partitions": "12", "max.broker.partitions": "10", "offsets.topic.num.partitions": "1"}


@pytest.fixture(scope="module")
def admin(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("limits") / "cluster", 2, tick_time=500, session_timeout_ms=6000,
                         properties=PROPERTIES) as cluster:
        yield AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def refused(future) -> KafkaError:
    with pytest.raises(KafkaException) as caught:
        future.result(30)
    return caught.value.args[0]


def topics(admin: AdminClient) -> dict:
    return admin.list_topics(timeout=10).topics


def test_creation_past_a_cap_is_refused_whole_and_writes_nothing(admin):
    admin.create_topics([NewTopic("within", 6, 2)])["within"].result(30)  # 12 replicas: 6 on each broker
    wait_for(lambda: "within" in topics(admin), 30, "the first topic")
    error = refused(admin.create_topics([NewTopic("over", 7, 1)])["over"])
    assert error.code() == KafkaError.POLICY_VIOLATION and "max.partitions=12" in error.str()
    error = refused(admin.create_topics([NewTopic("over", 7, 1)], validate_only=True)["over"])
    assert error.code() == KafkaError.POLICY_VIOLATION
    error = refused(admin.create_topics([NewTopic("wide", 5, 2)])["wide"])  # 11 partitions, but 11 replicas a broker
    assert error.code() == KafkaError.POLICY_VIOLATION and "max.broker.partitions=10" in error.str()
    assert "over" not in topics(admin) and "wide" not in topics(admin)


def test_adding_partitions_past_a_cap_is_refused(admin):
    admin.create_topics([NewTopic("grow", 2, 1)])["grow"].result(30)
    wait_for(lambda: "grow" in topics(admin), 30, "the topic to grow")
    error = refused(admin.create_partitions([NewPartitions("grow", 9)])["grow"])
    assert error.code() == KafkaError.POLICY_VIOLATION and "max.partitions=12" in error.str()
    assert len(topics(admin)["grow"].partitions) == 2
