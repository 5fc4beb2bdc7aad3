"""``kafka-topics --replica-assignment``: Kafka's format, parsed (pure; both modes of kafka-topics use it).

``1:2,2:3,3:1``: comma-separated partitions in partition order, each a colon-separated list of broker
ids. Kafka's ``TopicCommand.parseReplicaAssignment`` rules: no broker twice in one list, every list as
long as the first. With ``--alter`` the list covers every partition of the topic and the entries of the
existing partitions are skipped.
"""
from __future__ import annotations


def parse_replica_assignment(text: str) -> list[list[int]]:
    """Kafka's ``--replica-assignment``: ``1:2,2:3`` -> ``[[1, 2], [2, 3]]``. ValueError names the problem."""
    lists = []
    for index, item in enumerate(text.split(",")):
        try:
            replicas = [int(b.strip()) for b in item.split(":")]
        except ValueError:
            raise ValueError(f"partition {index}: {item!r} is not a colon-separated list of broker ids") from None
        duplicates = sorted({b for b in replicas if replicas.count(b) > 1})
        if duplicates:
            raise ValueError(f"Partition replica lists may not contain duplicate entries: "
                             f"{','.join(map(str, duplicates))}")
        if lists and len(replicas) != len(lists[0]):
            raise ValueError(f"Partition {index} has different replication factor: {item}")
        lists.append(replicas)
    return lists


def new_replica_lists(replica_assignment: str | None, existing: int) -> list[list[int]] | None:
    """The new partitions' replica lists from ``--replica-assignment`` (its first ``existing`` entries
    are the current partitions' and are skipped, as Kafka's TopicCommand does); None without the flag."""
    if replica_assignment is None:
        return None
    return parse_replica_assignment(replica_assignment)[existing:]
