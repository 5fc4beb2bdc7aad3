"""The pytest plugin (entry point ``pytest11``) as a user's suite meets it: a suite of its own, run by
pytester in a subprocess, where nothing but ``pip install zkafka`` brought the fixtures in."""
from __future__ import annotations

import docker

SUITE = '''
import pytest
from confluent_kafka import Producer


def produce_one(bootstrap):
    errors = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    producer.produce("plugin-topic", b"v", on_delivery=lambda err, msg: errors.append(err))
    producer.flush(30)
    return errors


def test_single_broker(zkafka):
    assert produce_one(zkafka.get_bootstrap_server()) == [None]


def test_fails_with_logs(zkafka):
    assert produce_one(zkafka.get_bootstrap_server()) == [None]
    assert False, "failing on purpose"


def test_cluster_from_the_ini(zkafka_cluster):
    assert (zkafka_cluster.broker_ids, zkafka_cluster.zookeeper_ids) == ([1], [1])
    assert produce_one(zkafka_cluster.bootstrap_servers) == [None]


@pytest.mark.zkafka_cluster(brokers=2, properties={"num.partitions": 4})
def test_cluster_from_the_marker(zkafka_cluster):
    assert zkafka_cluster.broker_ids == [1, 2]
    assert produce_one(zkafka_cluster.bootstrap_servers) == [None]
    from confluent_kafka.admin import AdminClient
    topics = AdminClient({"bootstrap.servers": zkafka_cluster.bootstrap_servers}).list_topics(timeout=10).topics
    assert len(topics["plugin-topic"].partitions) == 4
'''


def zkafka_containers() -> set[str]:
    return {c.id for c in docker.from_env().containers.list(all=True, filters={"label": "zkafka.testing=true"})}


def test_the_plugin_provides_the_fixtures_configures_them_attaches_logs_and_cleans_up(pytester):
    before = zkafka_containers()
    pytester.makeini("[pytest]\nzkafka_cluster_brokers = 1\nzkafka_cluster_zookeepers = 1\n")
    pytester.makepyfile(test_user_suite=SUITE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rA", timeout=600)
    result.assert_outcomes(passed=3, failed=1)
    failure = result.stdout.str().split("test_fails_with_logs", 1)[1]
    assert "failing on purpose" in failure
    assert "zkafka logs (zkafka)" in failure and "INFO brokers: broker 1 started" in failure
    assert "zkafka logs" not in result.stdout.str().split("test_fails_with_logs", 1)[0]
    assert zkafka_containers() <= before, "the plugin's containers outlived its session"


def test_a_bad_ini_value_is_a_usage_error_naming_the_option(pytester):
    pytester.makeini("[pytest]\nzkafka_cluster_brokers = three\n")
    pytester.makepyfile(test_bad="def test_cluster(zkafka_cluster):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=120)
    assert "zkafka_cluster_brokers must be an integer, got 'three'" in result.stdout.str() + result.stderr.str()
