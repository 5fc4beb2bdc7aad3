"""Entity configs and their change notifications: Kafka's ``KafkaZkClient.getEntityConfigs`` /
``setOrCreateEntityConfigs`` / ``createConfigChangeNotification`` (as ``AdminZkClient.changeConfigs`` uses
them) and the expiry of ``ZkNodeChangeNotificationListener`` (``/config/changes``, ``/kafka-acl-changes``...).

Config writes are last-writer-wins (no version, as in Kafka); the notification that follows each write is
what makes every broker re-read the entity.
"""
from __future__ import annotations

from brokers.zk.client_base import Watch, ZkClientBase
from brokers.zk.errors import NodeExistsError, NoNodeError, ZkError
from brokers.zk.paths import ConfigChangeNotificationZNode, ConfigEntityZNode

CONFIG_CHANGE_EXPIRATION_MS = 15 * 60 * 1000  # Kafka's ZkNodeChangeNotificationListener.changeExpirationMs


class ConfigsZkMixin(ZkClientBase):
    """KafkaZkClient's ``/config/<type>/<name>`` overrides and ``/config/changes`` notifications."""

    async def get_topic_config(self, topic: str) -> dict[str, str]:
        try:
            data, _ = await self.zk.get(ConfigEntityZNode.path("topics", topic))
        except NoNodeError:
            return {}
        return ConfigEntityZNode.decode(data)

    async def get_topic_configs(self, topics: list[str]) -> list[dict[str, str]]:
        """``get_topic_config`` of many topics as one pipelined batch."""
        got = await self.zk.get_many([ConfigEntityZNode.path("topics", t) for t in topics])
        return [{} if g is None else ConfigEntityZNode.decode(g[0]) for g in got]

    async def get_all_topic_configs(self) -> dict[str, dict[str, str]]:
        """Every topic's overrides (``/config/topics/*``): what a broker loads its logs with at start-up,
        as Kafka builds its LogManager from ``zkClient.getLogConfigs`` of all topics."""
        try:
            topics = await self.zk.get_children(ConfigEntityZNode.type_path("topics"))
        except NoNodeError:
            return {}
        return {topic: overrides for topic, overrides in zip(topics, await self.get_topic_configs(topics)) if overrides}

    # -- entity configs and their change notifications (Kafka's AdminZkClient.changeConfigs) ----
    async def get_entity_config(self, entity_type: str, name: str) -> dict[str, str]:
        """``/config/<type>/<name>``: the entity's overrides, empty if it has none."""
        try:
            data, _ = await self.zk.get(ConfigEntityZNode.path(entity_type, name))
        except NoNodeError:
            return {}
        return ConfigEntityZNode.decode(data)

    async def get_entity_names(self, entity_type: str) -> list[str]:
        """The entities of a type with a config znode (``/config/<type>`` children), sanitized names."""
        return await self._children_or_empty(ConfigEntityZNode.type_path(entity_type))

    async def get_quota_entity_configs(self) -> dict[tuple[str, str], dict[str, str]]:
        """Every client quota entity's config, keyed by (entity type, sanitized name) as its change notification
        names it: ``/config/clients/<c>``, ``/config/users/<u>`` and ``/config/users/<u>/clients/<c>`` (one
        pipelined batch per level; a user znode that only holds client children has {} of its own)."""
        paths: list[tuple[str, str]] = [("clients", c) for c in await self.get_entity_names("clients")]
        users = await self.get_entity_names("users")
        paths += [("users", u) for u in users]
        children = await self.zk.get_children_many([f"{ConfigEntityZNode.path('users', u)}/clients" for u in users])
        paths += [("users", f"{u}/clients/{c}") for u, names in zip(users, children) for c in names or ()]
        got = await self.zk.get_many([ConfigEntityZNode.path(entity_type, name) for entity_type, name in paths])
        return {path: {} if g is None else ConfigEntityZNode.decode(g[0]) for path, g in zip(paths, got)}

    async def change_entity_config(self, entity_type: str, name: str, config: dict[str, str]) -> None:
        """Write the entity's whole override set (last writer wins), then a ``config_change_`` notification
        so that every broker re-reads it; then purge notifications 15 minutes older than this one."""
        path = ConfigEntityZNode.path(entity_type, name)
        try:
            await self.zk.set(path, ConfigEntityZNode.encode(config))
        except NoNodeError:
            try:
                await self.zk.create(path, ConfigEntityZNode.encode(config), makepath=True)
            except NodeExistsError:
                await self.zk.set(path, ConfigEntityZNode.encode(config))
        created = await self.zk.create(
            f"{ConfigChangeNotificationZNode.PATH}/{ConfigChangeNotificationZNode.PREFIX}",
            ConfigChangeNotificationZNode.encode(entity_type, name), sequential=True, makepath=True)
        stat = await self.zk.exists(created)  # ZooKeeper's clock: the writer purges by the server's ctime
        if stat is not None:
            await self.purge_config_change_notifications(stat.ctime)

    async def purge_config_change_notifications(self, now_ms: int,
                                                max_age_ms: int = CONFIG_CHANGE_EXPIRATION_MS) -> list[str]:
        return await self.purge_change_notifications(ConfigChangeNotificationZNode.PATH, now_ms, max_age_ms)

    async def purge_change_notifications(self, parent: str, now_ms: int,
                                         max_age_ms: int = CONFIG_CHANGE_EXPIRATION_MS) -> list[str]:
        """Delete the notifications under ``parent`` (``/config/changes``, ``/kafka-acl-changes``...) created
        more than ``max_age_ms`` before ``now_ms``, ZooKeeper's clock (Kafka expires them after 15 minutes: by
        then every live broker has applied them). Returns the deleted names."""
        purged = []
        for child in await self.zk.get_children(parent):
            path = f"{parent}/{child}"
            stat = await self.zk.exists(path)
            if stat is None or now_ms - stat.ctime <= max_age_ms:
                continue
            try:
                await self.zk.delete(path, stat.version)
                purged.append(child)
            except ZkError:
                continue  # another writer purged it first
        return purged

    async def get_config_change_notifications(self, watch: Watch = None) -> list[str]:
        """The notification children, in sequence order (the watch fires on the next child change)."""
        children = await self.zk.get_children(ConfigChangeNotificationZNode.PATH, watch)
        return sorted((c for c in children if c.startswith(ConfigChangeNotificationZNode.PREFIX)),
                      key=ConfigChangeNotificationZNode.sequence)

    async def read_config_change_notification(self, child: str) -> tuple[str, str] | None:
        """(entity type, entity name) of one notification; None if it is gone (purged)."""
        try:
            data, _ = await self.zk.get(f"{ConfigChangeNotificationZNode.PATH}/{child}")
        except NoNodeError:
            return None
        return ConfigChangeNotificationZNode.decode(data)
