"""Configs changed live: the handlers of ``/config/changes`` (Kafka's DynamicConfigManager with its
TopicConfigHandler and BrokerConfigHandler) and the log configs they rebuild.

A topic's LogConfig is its ``/config/topics/<topic>`` overrides over the broker's log defaults (Kafka's
``LogConfig.fromProps``); the defaults are the static ``log.*`` keys under the dynamic ones of
``/config/brokers/<default>`` and ``/config/brokers/<id>`` (DynamicBrokerConfig). A topic whose overrides
do not parse keeps the broker defaults (logged). When the dynamic defaults change, every topic's config
is rebuilt from its overrides over the new defaults.
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from brokers.config import ConfigError
from brokers.dynamic_config.broker_config import DynamicBrokerConfig
from brokers.dynamic_config.change_listener import Handler
from brokers.quotas.entities import QuotaConfigError, QuotaEntity, entities_from_znodes
from brokers.storage.log_config import InvalidConfigError, LogConfig

if TYPE_CHECKING:
    from brokers.app.broker_server import BrokerServer

log = logging.getLogger(__name__)

CLUSTER_DEFAULT = "<default>"  # /config/brokers/<default>: every broker's dynamic defaults


class DynamicConfigHandlers:
    """The broker's log configs and its reactions to config changes (topics, brokers)."""

    def __init__(self, broker: BrokerServer):
        self.broker = broker
        try:
            self.default_log_config = broker.dynamic_config.default_log_config()  # static only, so far
        except InvalidConfigError as exc:
            raise ConfigError(f"{broker.config.source}: {exc}") from None

    def handlers(self) -> dict[str, Handler]:
        """ConfigChangeListener's handlers, by entity type."""
        return {"users": self.on_user_config_change, "clients": self.on_client_config_change,
                "topics": self.on_topic_config_change, "brokers": self.on_broker_config_change}

    # -- client quotas (Kafka's UserConfigHandler / ClientIdConfigHandler) -------------------------
    async def load_client_quotas(self) -> None:
        """Start-up: every quota entity in ZooKeeper, before the first request is read."""
        for entity, config in entities_from_znodes(await self.broker.kzc.get_quota_entity_configs()).items():
            self.broker.quotas.update_entity(entity, config)

    async def on_user_config_change(self, name: str) -> None:
        """``users/<u>`` (SCRAM credentials and quotas) or ``users/<u>/clients/<c>`` (quotas only)."""
        if "/" not in name:
            self.broker.credentials.invalidate(name)
        await self._quota_entity_changed("users", name)

    async def on_client_config_change(self, name: str) -> None:
        await self._quota_entity_changed("clients", name)

    async def _quota_entity_changed(self, entity_type: str, name: str) -> None:
        try:
            entity = QuotaEntity.from_znode(entity_type, name)
        except QuotaConfigError as exc:
            log.error("ignoring a config change: %s", exc)
            return
        config = await self.broker.kzc.get_entity_config(entity_type, name)
        self.broker.quotas.update_entity(entity, config)

    # -- log configs ---------------------------------------------------------------------------
    async def topic_log_config(self, topic: str) -> LogConfig:
        return self.log_config(topic, await self.broker.kzc.get_topic_config(topic))

    async def all_topic_log_configs(self) -> dict[str, LogConfig]:
        """Every topic's overrides, read before the logs are loaded: recovery, retention and compaction
        of a restarted broker must use them from the start, not the broker defaults."""
        return {topic: self.log_config(topic, overrides)
                for topic, overrides in (await self.broker.kzc.get_all_topic_configs()).items()}

    def log_config(self, topic: str, overrides: dict[str, str]) -> LogConfig:
        try:
            return LogConfig.from_properties(overrides, base=self.default_log_config)
        except (InvalidConfigError, ValueError) as exc:
            log.error("topic %s has a bad config override (%s); using the broker defaults", topic, exc)
            return self.default_log_config

    # -- dynamic broker configs ----------------------------------------------------------------
    async def load_dynamic_broker_configs(self) -> None:
        """Start-up: the cluster default and this broker's dynamic configs, before the logs are loaded."""
        b = self.broker
        b.dynamic_config.broker_id = b.broker_id
        for entity in (CLUSTER_DEFAULT, str(b.broker_id)):
            b.dynamic_config.update(entity, await b.kzc.get_entity_config("brokers", entity))
        try:
            self.default_log_config = b.dynamic_config.default_log_config()
        except InvalidConfigError as exc:
            log.error("dynamic broker log defaults are invalid (%s); keeping the static ones", exc)

    async def on_broker_config_change(self, entity: str) -> None:
        """BrokerConfigHandler: only the cluster default and this broker's own entity apply here."""
        b = self.broker
        if entity in (CLUSTER_DEFAULT, str(b.broker_id)):
            b.dynamic_config.update(entity, await b.kzc.get_entity_config("brokers", entity))

    def on_dynamic_broker_config(self, dynamic: DynamicBrokerConfig) -> None:
        """DynamicBrokerConfig's listener: new log defaults reach the admin and every local log."""
        try:
            default = dynamic.default_log_config()
        except InvalidConfigError as exc:
            log.error("dynamic broker log defaults are invalid (%s); keeping the current ones", exc)
            return
        if default != self.default_log_config:
            self.default_log_config = default
            if self.broker.admin is not None:
                self.broker.admin.defaults = default
            self.broker.spawn(self._reconfigure_logs(default))

    async def _reconfigure_logs(self, default: LogConfig) -> None:
        """New broker log defaults: every topic's config is rebuilt from its overrides over them."""
        configs = await self.all_topic_log_configs()
        log_manager = self.broker.log_manager
        if log_manager is not None and default == self.default_log_config:
            await asyncio.to_thread(log_manager.update_default_config, default, configs)

    # -- topic configs -------------------------------------------------------------------------
    async def on_topic_config_change(self, topic: str) -> None:
        """TopicConfigHandler: the topic's local logs take the new config; the controller hears of it."""
        b = self.broker
        overrides = await b.kzc.get_topic_config(topic)
        config = self.log_config(topic, overrides)
        if b.log_manager is not None:
            count = await asyncio.to_thread(b.log_manager.update_topic_config, topic, config)
            log.info("topic %s config now %s (%d local logs)", topic, overrides, count)
        if b.controller is not None:
            b.controller.on_topic_config_changed(topic, overrides)
