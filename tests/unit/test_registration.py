"""brokers.app.registration: the broker id and meta.properties rules (Kafka's getOrGenerateBrokerId and
BrokerMetadataCheckpoint checks), without ZooKeeper."""
from __future__ import annotations

import asyncio

import pytest

from brokers.app.registration import check_meta_properties, resolve_broker_id
from brokers.config import BrokerConfig, ConfigError
from brokers.storage.checkpoints import read_meta_properties, write_meta_properties


class GeneratingZk:
    def __init__(self, next_id: int):
        self.next_id = next_id
        self.calls: list[int] = []

    async def generate_broker_id(self, reserved_max: int) -> int:
        self.calls.append(reserved_max)
        return self.next_id


def config(tmp_path, **props) -> BrokerConfig:
    dirs = ",".join(str(tmp_path / name) for name in ("a", "b"))
    return BrokerConfig.from_properties({"zookeeper.connect": "zk:2181", "log.dirs": dirs, **props})


def test_a_fresh_log_dir_gets_meta_properties(tmp_path):
    check_meta_properties(config(tmp_path), 3, "cluster-x")
    assert read_meta_properties(tmp_path / "a") == {"version": "0", "broker.id": "3", "cluster.id": "cluster-x"}
    assert read_meta_properties(tmp_path / "b")["broker.id"] == "3"


def test_a_log_dir_of_another_cluster_or_broker_stops_start_up(tmp_path):
    (tmp_path / "a").mkdir()
    write_meta_properties(tmp_path / "a", 3, "cluster-x")
    check_meta_properties(config(tmp_path), 3, "cluster-x")  # its own: accepted
    with pytest.raises(ConfigError, match="belongs to cluster cluster-x"):
        check_meta_properties(config(tmp_path), 3, "cluster-y")
    with pytest.raises(ConfigError, match="belongs to broker 3"):
        check_meta_properties(config(tmp_path), 4, "cluster-x")


def test_broker_id_minus_one_takes_the_stored_id_else_a_generated_one(tmp_path):
    zk = GeneratingZk(1001)
    assert asyncio.run(resolve_broker_id(config(tmp_path), zk)) == 1001
    assert zk.calls == [1000]  # reserved.broker.max.id
    (tmp_path / "a").mkdir()
    write_meta_properties(tmp_path / "a", 7, "c")
    assert asyncio.run(resolve_broker_id(config(tmp_path), zk)) == 7 and zk.calls == [1000]


def test_broker_id_resolution_refuses_disagreeing_dirs_and_disabled_generation(tmp_path):
    with pytest.raises(ConfigError, match="broker.id.generation.enable"):
        asyncio.run(resolve_broker_id(config(tmp_path, **{"broker.id.generation.enable": "false"}), GeneratingZk(1)))
    for name, broker_id in (("a", 1), ("b", 2)):
        (tmp_path / name).mkdir()
        write_meta_properties(tmp_path / name, broker_id, "c")
    with pytest.raises(ConfigError, match="disagree"):
        asyncio.run(resolve_broker_id(config(tmp_path), GeneratingZk(1)))
