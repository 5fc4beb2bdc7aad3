"""MirrorMaker 2's replication policies (pure): how a mirrored ("remote") topic is named, and what a name says.

* ``DefaultReplicationPolicy`` (Kafka 2.8): topic ``t`` of cluster ``us-west`` is ``us-west.t`` downstream;
  mirrored again from ``us-east`` it is ``us-east.us-west.t``. The separator (``replication.policy.separator``,
  default ``.``) may be any non-empty string. A name's source is the text before the first separator,
  provided some non-empty text follows (Java's ``String.split``, which drops trailing empty pieces: ``a.``
  and ``a..`` are not remote, ``a..b`` comes from ``a`` as ``.b``). ``upstream_topic`` removes one hop,
  ``original_topic`` all of them.
* ``IdentityReplicationPolicy`` (Kafka 3.0+, KAFKA-9726): topics keep their names, so their source cannot
  be known (``topic_source`` is None, ``upstream_topic`` the topic itself, as in Kafka) and cycles cannot be
  detected: the topology must be acyclic. Heartbeats topics are the exception: named and parsed as the
  default policy does, so heartbeats still trace every hop. zkafka's deviation: a heartbeats topic is
  ``heartbeats`` or a name ending with separator + ``heartbeats``; Kafka's bare ``endsWith("heartbeats")``
  would also rename a topic called ``my-heartbeats`` to ``us-west.my-heartbeats``.

Both policies share Kafka's rules for MM2's own topics: ``heartbeats`` (replicated, so every
``*.heartbeats`` is one too), ``mm2-offset-syncs.<target>.internal`` on the source cluster and
``<source>.checkpoints.internal`` on the target (Kafka 2.8's names: always with ``.``, whatever the
separator; KIP-690's ``replication.policy.internal.topic.separator.enabled`` of 3.1 is not supported).
Internal topics are never mirrored: names starting with ``__`` or ``.`` or ending with ``.internal`` or
``-internal`` (Kafka 2.8), or with separator + ``internal`` (Kafka 3.1+ with a custom separator).
A topic is a cycle toward a target when it, or any topic upstream of it, came from that target.
"""
from __future__ import annotations

from abc import ABC, abstractmethod

HEARTBEATS_TOPIC = "heartbeats"
CHECKPOINTS_TOPIC_SUFFIX = ".checkpoints.internal"
OFFSET_SYNCS_TOPIC_PREFIX = "mm2-offset-syncs."
INTERNAL_SUFFIX = ".internal"
SEPARATOR_DEFAULT = "."

_PACKAGE = "org.apache.kafka.connect.mirror."


class ReplicationPolicy(ABC):
    """Kafka's ``ReplicationPolicy``: three naming rules, and the decisions derived from them."""

    def __init__(self, separator: str = SEPARATOR_DEFAULT) -> None:
        if not isinstance(separator, str) or not separator:
            raise ValueError(f"replication.policy.separator must be a non-empty string, got {separator!r}")
        self.separator = separator

    def __repr__(self) -> str:
        return f"{type(self).__name__}(separator={self.separator!r})"

    @abstractmethod
    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        """The name of ``topic`` of cluster ``source_alias`` once mirrored, e.g. ``us-west.topic1``."""

    @abstractmethod
    def topic_source(self, topic: str) -> str | None:
        """The alias of the cluster a remote topic was mirrored from; None if it is not (known to be) remote."""

    @abstractmethod
    def upstream_topic(self, topic: str) -> str | None:
        """The topic's name one hop upstream (itself maybe remote); None if it is not a remote topic."""

    def original_topic(self, topic: str) -> str:
        """The topic's name on the cluster it was first produced to, however many hops away."""
        while True:
            upstream = self.upstream_topic(topic)
            if upstream is None or upstream == topic:
                return topic
            topic = upstream

    def heartbeats_topic(self) -> str:
        return HEARTBEATS_TOPIC

    def offset_syncs_topic(self, target_alias: str) -> str:
        """On the source cluster: where the mirror to ``target_alias`` writes its offset syncs."""
        return f"{OFFSET_SYNCS_TOPIC_PREFIX}{target_alias}{INTERNAL_SUFFIX}"

    def checkpoints_topic(self, source_alias: str) -> str:
        """On the target cluster: where the mirror from ``source_alias`` writes its checkpoints."""
        return f"{source_alias}{CHECKPOINTS_TOPIC_SUFFIX}"

    def is_heartbeats_topic(self, topic: str) -> bool:
        """``heartbeats`` and its remote copies: ``us-west.heartbeats``, ``us-east.us-west.heartbeats``."""
        return self.original_topic(topic) == HEARTBEATS_TOPIC

    def is_checkpoints_topic(self, topic: str) -> bool:
        return topic.endswith(CHECKPOINTS_TOPIC_SUFFIX)

    def is_internal_topic(self, topic: str) -> bool:
        """Kafka's, Connect's and MM2's own topics, which are never mirrored."""
        return (topic.startswith(("__", "."))
                or topic.endswith((INTERNAL_SUFFIX, "-internal", self.separator + "internal")))

    def is_cycle(self, topic: str, target_alias: str) -> bool:
        """True if ``topic``, or a topic upstream of it, came from ``target_alias``: never mirror it there."""
        while True:
            source = self.topic_source(topic)
            if source is None:
                return False
            if source == target_alias:
                return True
            upstream = self.upstream_topic(topic)
            if upstream is None or upstream == topic:
                return False
            topic = upstream


class DefaultReplicationPolicy(ReplicationPolicy):
    """Remote topics are ``<source><separator><topic>``."""

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        return f"{source_alias}{self.separator}{topic}"

    def topic_source(self, topic: str) -> str | None:
        parts = topic.split(self.separator)
        while parts and not parts[-1]:
            parts.pop()  # Java's String.split drops trailing empty strings
        return parts[0] if len(parts) >= 2 else None

    def upstream_topic(self, topic: str) -> str | None:
        source = self.topic_source(topic)
        return None if source is None else topic[len(source) + len(self.separator):]


class IdentityReplicationPolicy(DefaultReplicationPolicy):
    """Remote topics keep their names; heartbeats topics are named as by ``DefaultReplicationPolicy``."""

    def _looks_like_heartbeats(self, topic: str) -> bool:
        return topic == HEARTBEATS_TOPIC or topic.endswith(self.separator + HEARTBEATS_TOPIC)

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        if self._looks_like_heartbeats(topic):
            return super().format_remote_topic(source_alias, topic)
        return topic

    def topic_source(self, topic: str) -> str | None:
        return super().topic_source(topic) if self._looks_like_heartbeats(topic) else None

    def upstream_topic(self, topic: str) -> str | None:
        return super().upstream_topic(topic) if self._looks_like_heartbeats(topic) else topic


POLICIES: dict[str, type[ReplicationPolicy]] = {
    _PACKAGE + "DefaultReplicationPolicy": DefaultReplicationPolicy,
    _PACKAGE + "IdentityReplicationPolicy": IdentityReplicationPolicy,
    "DefaultReplicationPolicy": DefaultReplicationPolicy,
    "IdentityReplicationPolicy": IdentityReplicationPolicy,
}


def policy_for(class_name: str, separator: str = SEPARATOR_DEFAULT) -> ReplicationPolicy:
    """The policy ``replication.policy.class`` names (full or short class name, surrounding blanks ignored)."""
    policy = POLICIES.get(class_name.strip()) if isinstance(class_name, str) else None
    if policy is None:
        accepted = ", ".join(POLICIES)
        raise ValueError(f"replication.policy.class {class_name!r} is not supported; accepted: {accepted}")
    return policy(separator)
