"""ConfigChangeListener: every broker's watch on ``/config/changes`` (Kafka's
ZkNodeChangeNotificationListener, ``brokers.zk.change_notifications``, with DynamicConfigManager's handlers).

``start()`` records the highest notification sequence number present and arms a child watch: older
notifications are not replayed (the broker read every config it needs while starting). Each child
change runs one pass, serialized: read the children again (re-arming the one-shot watch), and for each
``config_change_<seq>`` above the last processed, in order, decode the entity and call its handler
(``handlers["topics"](name)``, ``handlers["brokers"](name)``), which re-reads ``/config/<type>/<name>``
itself, so a notification for a config that changed again since only applies the latest. A handler
that fails is logged and the pass goes on, except on a ZooKeeper error, which stops the pass before
that notification (the next change or session retries it). After a new ZooKeeper session, ``on_new_session()`` runs a pass
(watches die with the session). Entity types without a handler are skipped (clients, ips); ``users`` drops
the user from the broker's ``CredentialCache``.

"""
from __future__ import annotations

import logging
from typing import Awaitable, Callable

from brokers.zk import change_notifications
from brokers.zk.change_notifications import ChangeNotificationListener
from brokers.zk.client import KafkaZkClient
from brokers.zk.paths import ConfigChangeNotificationZNode

log = logging.getLogger(__name__)

Handler = Callable[[str], Awaitable[None] | None]


def unprocessed(children: list[str], last_sequence: int) -> list[tuple[int, str]]:
    """(sequence, child) of the notifications above ``last_sequence``, in order; foreign children skipped."""
    return change_notifications.unprocessed(children, last_sequence, ConfigChangeNotificationZNode.sequence)


class ConfigChangeListener(ChangeNotificationListener):
    def __init__(self, kzc: KafkaZkClient, handlers: dict[str, Handler]):
        super().__init__("config change", kzc.get_config_change_notifications, ConfigChangeNotificationZNode.sequence,
                         kzc.read_config_change_notification, self._dispatch)
        self.handlers = handlers

    def _dispatch(self, child: str, entity: tuple[str, str]) -> Awaitable[None] | None:
        entity_type, name = entity
        handler = self.handlers.get(entity_type)
        if handler is None:
            return None
        log.info("config change %s: %s/%s", child, entity_type, name)
        return handler(name)
