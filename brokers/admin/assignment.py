"""Replica assignment and topic-name rules (pure: data in, data out).

Kafka's placement (``AdminUtils.assignReplicasToBrokers``: rack-unaware, reference §3.1, and rack-aware when
every broker has a ``broker.rack``), its continuation for CreatePartitions (``AdminZkClient.addPartitions``, reference §2.5 "Partition
addition") with the checks of explicitly given new replica lists (``partitions_to_add``), and its
topic-name rules (``org.apache.kafka.common.internals.Topic``).

The algorithm, with ``B`` the broker ids sorted ascending and ``n = len(B)``:

- ``startIndex`` and the initial ``shift`` are two independent random numbers in ``[0, n)``; when a
  fixed start index ``>= 0`` is given both are that value (Kafka's ``fixedStartIndex``).
- for partition ``p`` (from ``startPartitionId``): if ``p > 0 and p % n == 0`` then ``shift += 1``;
  ``first = (p + startIndex) % n``; replica 0 is ``B[first]`` and replica ``j + 1`` is
  ``B[(first + 1 + (shift + j) % (n - 1)) % n]``.

Leaders (first replicas) therefore go round-robin over the brokers, and followers are shifted after
each full round so the same replica lists do not repeat.

Rack-aware (Kafka's ``assignReplicasToBrokersRackAware``), when the brokers come with racks (a mapping
``{broker id: rack}``) and every rack is set (some set, some not -> ``UNKNOWN_SERVER_ERROR``, Kafka's
``AdminOperationException``): ``B`` is the *rack-alternated* list (racks sorted by name, each rack's brokers
sorted by id, one broker from each rack in turn: racks ``r1: 0, 5; r2: 3, 4; r3: 1, 2`` give ``0, 3, 1, 5, 4,
2``) and the draws are the same. Replica 0 is ``B[first]`` as above; the followers walk
``B[_replica_index(first, shift * racks, k, n)]`` for ``k = 0, 1, ...``, skipping a broker whose rack already
holds a replica while some rack holds none, and a broker that already holds one while some broker holds none.
So with at least as many replicas as racks every rack gets one, and with fewer no rack gets two.
"""
from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping

from brokers.protocol.errors import ErrorCode, KafkaError

MAX_TOPIC_NAME_LENGTH = 249
"""Kafka's ``Topic.MAX_NAME_LENGTH``: 255 (file name limit) minus room for ``-<partition>`` and suffixes."""

_LEGAL_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")

_RNG = random.Random()


# -- topic names -----------------------------------------------------------------------------------

def validate_topic_name(name: str) -> None:
    """Raise ``KafkaError(INVALID_TOPIC_EXCEPTION)`` unless ``name`` is a legal Kafka topic name.

    Rules (Kafka's ``Topic.validate``): not empty; not ``.`` or ``..`` (they are directory names);
    at most 249 characters; only ASCII letters, digits, ``.``, ``_`` and ``-``.
    """
    if not name:
        _invalid_topic("topic name is illegal, it can't be empty")
    if name in (".", ".."):
        _invalid_topic('topic name cannot be "." or ".."')
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        _invalid_topic(f"topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters, "
                       f"topic name: {name!r}")
    if _LEGAL_TOPIC_NAME.fullmatch(name) is None:
        _invalid_topic(f"topic name {name!r} is illegal, it contains a character other than "
                       "ASCII alphanumerics, '.', '_' and '-'")


def _invalid_topic(message: str) -> None:
    raise KafkaError(message, ErrorCode.INVALID_TOPIC_EXCEPTION)


def topics_collide(a: str, b: str) -> bool:
    """True when ``a`` and ``b`` are equal once ``.`` and ``_`` are treated as the same character.

    Kafka's ``Topic.hasCollision``: metric names replace ``.`` with ``_``, so ``my.topic`` and
    ``my_topic`` would share metrics. Identical names collide too (callers check for an existing
    topic first, to answer ``TOPIC_ALREADY_EXISTS`` rather than a collision).
    """
    return a.replace(".", "_") == b.replace(".", "_")


# -- replica assignment ----------------------------------------------------------------------------

def assign_replicas_to_brokers(broker_ids: Iterable[int] | Mapping[int, str | None], num_partitions: int,
                               replication_factor: int, *, start_index: int = -1, start_partition_id: int = 0,
                               rng: random.Random | None = None) -> dict[int, list[int]]:
    """Kafka's assignment: ``{partition id: [replica broker ids]}``.

    ``broker_ids`` are ids, or Kafka's broker metadata as ``{id: rack or None}``: rack-aware when every rack
    is set (module docstring), rack-unaware when none is. Ids are sorted ascending (Kafka's admin path sorts
    broker metadata by id); duplicates are ignored. With ``start_index < 0`` the start index and the initial follower shift are drawn
    from ``rng`` (a fresh module-level ``random.Random`` when None), in that order; with
    ``start_index >= 0`` both are ``start_index``. Partition ids start at
    ``max(0, start_partition_id)``.

    Errors (Kafka's codes): ``num_partitions <= 0`` -> ``INVALID_PARTITIONS`` (37);
    ``replication_factor <= 0`` or greater than the number of brokers -> ``INVALID_REPLICATION_FACTOR`` (38).
    """
    racks = _racks(broker_ids)
    brokers = sorted(set(broker_ids)) if racks is None else rack_alternated_broker_list(racks)
    _validate(len(brokers), num_partitions, replication_factor)
    n = len(brokers)
    if start_index >= 0:
        first_index, shift = start_index, start_index
    else:
        rand = rng if rng is not None else _RNG
        first_index = rand.randrange(n)
        shift = rand.randrange(n)
    assignment: dict[int, list[int]] = {}
    partition = max(0, start_partition_id)
    for _ in range(num_partitions):
        if partition > 0 and partition % n == 0:
            shift += 1
        first = (partition + first_index) % n
        if racks is None:
            replicas = [brokers[first]]
            replicas.extend(brokers[_replica_index(first, shift, j, n)] for j in range(replication_factor - 1))
        else:
            replicas = _rack_aware_replicas(brokers, racks, first, shift, replication_factor)
        assignment[partition] = replicas
        partition += 1
    return assignment


def _racks(brokers: Iterable[int] | Mapping[int, str | None]) -> dict[int, str] | None:
    """``{id: rack}`` when every broker has a rack, None when none has (or only ids were given)."""
    if not isinstance(brokers, Mapping) or all(rack is None for rack in brokers.values()):
        return None
    if any(rack is None for rack in brokers.values()):
        raise KafkaError("Not all brokers have rack information for replica rack aware assignment.",
                         ErrorCode.UNKNOWN_SERVER_ERROR)
    return {int(b): str(rack) for b, rack in brokers.items()}


def rack_alternated_broker_list(racks: Mapping[int, str]) -> list[int]:
    """Kafka's ``getRackAlternatedBrokerList``: one broker of each rack in turn (racks by name, ids ascending)."""
    by_rack: dict[str, list[int]] = {}
    for broker in sorted(racks):
        by_rack.setdefault(racks[broker], []).append(broker)
    columns = [by_rack[rack] for rack in sorted(by_rack)]
    depth = max(len(column) for column in columns)
    return [column[i] for i in range(depth) for column in columns if i < len(column)]


def _rack_aware_replicas(brokers: list[int], racks: Mapping[int, str], first: int, shift: int,
                         replication_factor: int) -> list[int]:
    """One partition's replicas: the leader ``brokers[first]``, then followers biased to racks (and brokers)
    that hold no replica yet, until every rack (broker) has one."""
    n, n_racks = len(brokers), len(set(racks.values()))
    replicas = [brokers[first]]
    racks_used, k = {racks[brokers[first]]}, 0
    while len(replicas) < replication_factor:
        broker = brokers[_replica_index(first, shift * n_racks, k, n)]
        k += 1
        if racks[broker] in racks_used and len(racks_used) < n_racks:
            continue
        if broker in replicas and len(replicas) < n:
            continue
        replicas.append(broker)
        racks_used.add(racks[broker])
    return replicas


def _replica_index(first_replica_index: int, shift: int, replica_index: int, n_brokers: int) -> int:
    """Kafka's ``AdminUtils.replicaIndex``: the broker index of follower ``replica_index``.

    The offset from the first replica is in ``[1, n - 1]``, so a follower never lands on the leader (one
    broker: offset 0, the replication factor is 1 then and no follower is asked for).
    """
    if n_brokers == 1:
        return first_replica_index
    offset = 1 + (shift + replica_index) % (n_brokers - 1)
    return (first_replica_index + offset) % n_brokers


def _validate(n_brokers: int, num_partitions: int, replication_factor: int) -> None:
    if num_partitions <= 0:
        raise KafkaError("number of partitions must be larger than 0", ErrorCode.INVALID_PARTITIONS)
    if replication_factor <= 0:
        raise KafkaError("replication factor must be larger than 0", ErrorCode.INVALID_REPLICATION_FACTOR)
    if replication_factor > n_brokers:
        raise KafkaError(f"replication factor: {replication_factor} larger than available brokers: {n_brokers}",
                         ErrorCode.INVALID_REPLICATION_FACTOR)


def assign_new_partitions(existing: Mapping[int, list[int]], broker_ids: Iterable[int] | Mapping[int, str | None],
                          new_total: int) -> dict[int, list[int]]:
    """Replica lists for the partitions CreatePartitions adds: ``{partition id: replicas}``, new ones only.

    Kafka's ``AdminZkClient.addPartitions``: the replication factor is partition 0's; partition ids
    continue from the current count; the fixed start index is the position in the sorted broker list
    of the first broker whose id is ``>=`` partition 0's first replica (0 when there is none), so the
    round-robin carries on where topic creation left it. ``broker_ids`` with racks: rack-aware as at creation
    (the start index is still the sorted list's, as in Kafka).

    Errors: ``existing`` empty or without partition 0 -> ``UNKNOWN_TOPIC_OR_PARTITION``;
    ``new_total <= len(existing)`` -> ``INVALID_PARTITIONS`` (partitions can only be added); plus the
    errors of :func:`assign_replicas_to_brokers` (e.g. fewer live brokers than the replication factor).
    """
    if 0 not in existing or not existing[0]:
        raise KafkaError("the topic has no partition 0 assignment", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    current = len(existing)
    if new_total <= current:
        raise KafkaError(f"the number of partitions for a topic can only be increased; it currently has "
                         f"{current} partitions, {new_total} would not be an increase", ErrorCode.INVALID_PARTITIONS)
    brokers = sorted(set(broker_ids))
    partition0 = existing[0]
    start_index = next((i for i, b in enumerate(brokers) if b >= partition0[0]), 0)
    return assign_replicas_to_brokers(broker_ids if isinstance(broker_ids, Mapping) else brokers,
                                      new_total - current, len(partition0),
                                      start_index=start_index, start_partition_id=current)


def partitions_to_add(existing: Mapping[int, list[int]], live_brokers: Iterable[int] | Mapping[int, str | None],
                      new_total: int,
                      assignments: list[list[int]] | None = None) -> dict[int, list[int]]:
    """The replica lists of the partitions a CreatePartitions adds: ``{partition id: replicas}``, new ones only.

    Kafka 2.8's ``ZkAdminManager.createPartitions`` + ``AdminZkClient.addPartitions``, with Kafka's
    messages: ``new_total`` below the current count or equal to it -> ``INVALID_PARTITIONS``. Without
    ``assignments`` the round robin continues (:func:`assign_new_partitions`). With them, one replica
    list per new partition in order (ids continue from the current count), each of distinct live
    brokers, as many as partition 0 has -> else ``INVALID_REPLICA_ASSIGNMENT``.
    """
    current = len(existing)
    if new_total < current:
        raise KafkaError(f"Topic currently has {current} partitions, which is higher than the requested {new_total}.",
                         ErrorCode.INVALID_PARTITIONS)
    if new_total == current:
        raise KafkaError(f"Topic already has {current} partitions.", ErrorCode.INVALID_PARTITIONS)
    if assignments is None:
        return assign_new_partitions(existing, live_brokers, new_total)
    unknown = sorted({b for replicas in assignments for b in replicas} - set(live_brokers))
    if unknown:
        raise KafkaError(f"Unknown broker(s) in replica assignment: {', '.join(map(str, unknown))}.",
                         ErrorCode.INVALID_REPLICA_ASSIGNMENT)
    if len(assignments) != new_total - current:
        raise KafkaError(f"Increasing the number of partitions by {new_total - current} but {len(assignments)} "
                         "assignments provided.", ErrorCode.INVALID_REPLICA_ASSIGNMENT)
    added = {current + i: list(replicas) for i, replicas in enumerate(assignments)}
    _check_added_replicas(added, len(existing.get(0) or ()))
    return added


def _check_added_replicas(added: Mapping[int, list[int]], replication_factor: int) -> None:
    """Kafka's ``AdminZkClient.validateReplicaAssignment`` for the added partitions."""
    for partition, replicas in added.items():
        if not replicas:
            raise KafkaError(f"Cannot have replication factor of 0 for partition id {partition}.",
                             ErrorCode.INVALID_REPLICA_ASSIGNMENT)
        if len(set(replicas)) != len(replicas):
            raise KafkaError(f"Duplicate brokers not allowed in replica assignment: "
                             f"{', '.join(map(str, replicas))} for partition id {partition}.",
                             ErrorCode.INVALID_REPLICA_ASSIGNMENT)
    bad = sorted((p, len(r)) for p, r in added.items() if len(r) != replication_factor)
    if bad:
        raise KafkaError(f"Inconsistent replication factor between partitions, partition 0 has {replication_factor} "
                         f"while partitions [{', '.join(str(p) for p, _ in bad)}] have replication factors "
                         f"[{', '.join(str(n) for _, n in bad)}], respectively.", ErrorCode.INVALID_REPLICA_ASSIGNMENT)


__all__ = [
    "MAX_TOPIC_NAME_LENGTH",
    "assign_new_partitions",
    "assign_replicas_to_brokers",
    "partitions_to_add",
    "rack_alternated_broker_list",
    "topics_collide",
    "validate_topic_name",
]
