"""ZkClientBase: what KafkaZkClient's parts share (the gateway, the watch type, Kafka's uuid ids).

Kafka's ``KafkaZkClient`` is one class over ``ZooKeeperClient``; here its operations are grouped by concern
into mixins over this base (``client_brokers``, ``client_topics``, ``client_configs``, ``client_offsets``) and
``brokers.zk.client.KafkaZkClient`` composes them. The fencing rules every write follows are in
``brokers.zk.client``'s docstring.
"""
from __future__ import annotations

import logging
import uuid
from typing import Any, Callable

from brokers.model import topic_id_text
from brokers.zk.errors import NoNodeError
from brokers.zk.gateway import WatchEvent, ZkGateway

log = logging.getLogger("brokers.zk.client")  # one logger for the facade, whichever part writes
Watch = Callable[[WatchEvent], Any] | None


def new_uuid_base64() -> str:
    """Kafka's cluster and topic ids: 22 characters of URL-safe base64 of a random UUID."""
    return topic_id_text(uuid.uuid4())


class ZkClientBase:
    """The state KafkaZkClient's parts share: the ZooKeeper session (Kafka's ``ZooKeeperClient``)."""

    def __init__(self, gateway: ZkGateway):
        self.zk = gateway

    async def _children_or_empty(self, path: str) -> list[str]:
        try:
            return await self.zk.get_children(path)
        except NoNodeError:
            return []
