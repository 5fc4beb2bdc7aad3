"""Adding partitions to a topic (reference §2.5 "Partition addition"): the admin path that
CreatePartitions (``brokers.admin.zk_admin.ZkAdmin``) and ``kafka-topics --alter --zookeeper`` share.

The write is ``/brokers/topics/<t>`` with the new partitions joining ``partitions`` and every other field
(``topic_id``, ``adding_replicas``, ``removing_replicas``) as read, a compare-and-set on the znode version
read: when another writer (an addition, a reassignment) got there first, the znode is read and the
decision taken again once, then the addition fails. The controller's data watch on the znode
(PartitionModifications) brings the new partitions online; nothing here waits for that.

Refused as Kafka 2.8 refuses it (``KafkaApis.handleCreatePartitionsRequest``,
``ZkAdminManager.createPartitions``): a topic queued for deletion (INVALID_TOPIC_EXCEPTION), a topic
that does not exist (UNKNOWN_TOPIC_OR_PARTITION), one a reassignment is moving
(REASSIGNMENT_IN_PROGRESS), and whatever ``assignment.partitions_to_add`` refuses (INVALID_PARTITIONS,
INVALID_REPLICA_ASSIGNMENT, INVALID_REPLICATION_FACTOR).
"""
from __future__ import annotations

import logging
from typing import Callable

from brokers.admin.assignment import partitions_to_add
from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.zk.client import KafkaZkClient
from brokers.zk.errors import BadVersionError, NoNodeError

log = logging.getLogger(__name__)

ATTEMPTS = 2  # the first read, and one more after a conflicting write


async def add_partitions(kzc: KafkaZkClient, topic: str, new_total: int, assignments: list[list[int]] | None = None,
                         *, validate_only: bool = False,
                         check: Callable[[dict[int, list[int]]], None] | None = None) -> dict[int, list[int]]:
    """Add partitions to ``topic`` so that it has ``new_total``; return the added ``{partition: replicas}``.

    ``assignments``: one replica list per new partition, in partition order (None: Kafka's round
    robin continues). With ``validate_only`` every check runs and nothing is written. ``check`` sees the
    added partitions before anything is written (it raises to refuse them: the partition caps).
    """
    for _ in range(ATTEMPTS):
        added, version = await _decide(kzc, topic, new_total, assignments)
        if check is not None:
            check(added)
        if validate_only:
            return added
        try:
            await kzc.add_topic_partitions(topic, added, version)
        except BadVersionError:
            log.info("/brokers/topics/%s changed while partitions were being added: reading it again", topic)
            continue
        except NoNodeError:
            raise _unknown(topic) from None
        log.info("added partitions %s to topic %s", added, topic)
        return added
    raise KafkaError(f"the assignment of topic '{topic}' kept changing while partitions were being added; "
                     "try again", ErrorCode.UNKNOWN_SERVER_ERROR)


async def _decide(kzc: KafkaZkClient, topic: str, new_total: int,
                  assignments: list[list[int]] | None) -> tuple[dict[int, list[int]], int]:
    if topic in await _queued_for_deletion(kzc):
        raise KafkaError("The topic is queued for deletion.", ErrorCode.INVALID_TOPIC_EXCEPTION)
    read = await kzc.get_topic_assignment_for_update(topic)
    if read is None or not read.assignment:
        raise _unknown(topic)
    if read.reassigning:
        raise KafkaError(f"A partition reassignment is in progress for the topic '{topic}'.",
                         ErrorCode.REASSIGNMENT_IN_PROGRESS)
    added = partitions_to_add(read.assignment, await kzc.get_broker_racks(), new_total, assignments)
    return added, read.zk_version


async def _queued_for_deletion(kzc: KafkaZkClient) -> list[str]:
    try:
        return await kzc.get_topic_deletions()
    except NoNodeError:
        return []


def _unknown(topic: str) -> KafkaError:
    return KafkaError(f"The topic '{topic}' does not exist.", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
