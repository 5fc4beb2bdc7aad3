"""brokers.app.config_handlers: topic and broker config changes (DynamicConfigManager's handlers), with a
stub broker instead of ZooKeeper."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

from brokers.app.config_handlers import DynamicConfigHandlers
from brokers.config import BrokerConfig
from brokers.dynamic_config.broker_config import DynamicBrokerConfig


class EntityConfigs:
    def __init__(self, configs: dict[tuple[str, str], dict[str, str]]):
        self.configs = configs

    async def get_entity_config(self, entity_type: str, name: str) -> dict[str, str]:
        return self.configs.get((entity_type, name), {})


def stub_broker(entity_configs: dict[tuple[str, str], dict[str, str]] | None = None) -> SimpleNamespace:
    config = BrokerConfig.from_properties({"zookeeper.connect": "zk:2181", "broker.id": "1",
                                           "log.retention.ms": "1000"})
    spawned = []
    return SimpleNamespace(config=config, broker_id=1, dynamic_config=DynamicBrokerConfig(1, config),
                           kzc=EntityConfigs(entity_configs or {}), admin=SimpleNamespace(defaults=None), log_manager=None,
                           spawned=spawned, spawn=lambda coro: (spawned.append(coro), coro.close()))


def test_a_topic_with_bad_overrides_keeps_the_broker_defaults():
    handlers = DynamicConfigHandlers(stub_broker())
    assert handlers.default_log_config.retention_ms == 1000
    assert handlers.log_config("t", {"retention.ms": "20"}).retention_ms == 20
    assert handlers.log_config("t", {"retention.ms": "soon"}) == handlers.default_log_config


def test_only_the_cluster_default_and_this_brokers_entity_apply():
    broker = stub_broker({("brokers", "2"): {"log.retention.ms": "5"}, ("brokers", "1"): {"log.retention.ms": "7"}})
    handlers = DynamicConfigHandlers(broker)
    asyncio.run(handlers.on_broker_config_change("2"))
    assert broker.dynamic_config.overrides(per_broker=True) == {}
    asyncio.run(handlers.on_broker_config_change("1"))
    assert broker.dynamic_config.overrides(per_broker=True) == {"log.retention.ms": "7"}


def test_new_dynamic_log_defaults_reach_the_admin_and_the_logs_once():
    broker = stub_broker()
    handlers = DynamicConfigHandlers(broker)
    broker.dynamic_config.add_listener(handlers.on_dynamic_broker_config)
    broker.dynamic_config.update("<default>", {"log.retention.ms": "9"})
    assert handlers.default_log_config.retention_ms == 9 and broker.admin.defaults == handlers.default_log_config
    broker.dynamic_config.update("<default>", {"log.retention.ms": "9", "leader.replication.throttled.rate": "10"})
    assert len(broker.spawned) == 1  # the throttle changed, the log defaults did not
