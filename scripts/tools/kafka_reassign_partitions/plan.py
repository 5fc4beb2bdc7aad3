"""The pure half of ``kafka-reassign-partitions``: Kafka's JSON files, the balanced plan of ``--generate``,
the statuses of ``--verify`` and the throttle configs of ``--execute --throttle``.

Formats (Kafka's ``ReassignPartitionsCommand``):

- topics to move: ``{"topics":[{"topic":"foo"}],"version":1}``;
- a reassignment: ``{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2],
  "log_dirs":["any","/data/b"]}]}`` (``log_dirs`` optional: per replica ``any``, or the absolute log dir
  of ``log.dirs`` that replica's broker is to hold it in: KIP-113's moves between a broker's dirs).

Every malformed file raises ``PlanError`` naming the file's problem (the tool prints it and exits 1).
"""
from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping

from brokers.admin.assignment import assign_replicas_to_brokers
from brokers.model import TopicPartition

Assignment = dict[TopicPartition, list[int]]
Replica = tuple[TopicPartition, int]  # Kafka's TopicPartitionReplica: a partition's replica on one broker
ANY_LOG_DIR = "any"


class PlanError(ValueError):
    pass


def _load(text: str, what: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PlanError(f"{what} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise PlanError(f"{what} must be a JSON object")
    return value


def parse_topics_to_move(text: str) -> list[str]:
    value = _load(text, "the topics-to-move file")
    topics = value.get("topics")
    if not isinstance(topics, list) or not topics:
        raise PlanError('the topics-to-move file needs a non-empty "topics" list')
    names = []
    for i, entry in enumerate(topics):
        if not isinstance(entry, dict) or not isinstance(entry.get("topic"), str):
            raise PlanError(f'topics[{i}] needs a "topic" string')
        names.append(entry["topic"])
    if len(set(names)) != len(names):
        raise PlanError(f"duplicate topics in the topics-to-move file: {sorted(names)}")
    return names


def parse_reassignment(text: str) -> Assignment:
    value = _load(text, "the reassignment file")
    partitions = value.get("partitions")
    if not isinstance(partitions, list) or not partitions:
        raise PlanError('the reassignment file needs a non-empty "partitions" list')
    plan: Assignment = {}
    for i, entry in enumerate(partitions):
        if not isinstance(entry, dict):
            raise PlanError(f"partitions[{i}] must be an object")
        topic, partition, replicas = entry.get("topic"), entry.get("partition"), entry.get("replicas")
        if not isinstance(topic, str) or not isinstance(partition, int) or isinstance(partition, bool):
            raise PlanError(f'partitions[{i}] needs a "topic" string and a "partition" integer')
        if not isinstance(replicas, list) or not replicas or not all(isinstance(r, int) for r in replicas):
            raise PlanError(f'partitions[{i}] ({topic}-{partition}) needs a non-empty "replicas" list of broker ids')
        if len(set(replicas)) != len(replicas):
            raise PlanError(f"partitions[{i}] ({topic}-{partition}) has duplicate replicas {replicas}")
        log_dirs = entry.get("log_dirs", ["any"] * len(replicas))
        if not isinstance(log_dirs, list) or len(log_dirs) != len(replicas):
            raise PlanError(f"partitions[{i}] ({topic}-{partition}): log_dirs must list one entry per replica")
        if any(not isinstance(d, str) or (d != ANY_LOG_DIR and not d.startswith("/")) for d in log_dirs):
            raise PlanError(f"partitions[{i}] ({topic}-{partition}): each log_dirs entry is \"any\" or an "
                            f"absolute path, not {log_dirs}")
        tp = TopicPartition(topic, partition)
        if tp in plan:
            raise PlanError(f"{topic}-{partition} appears more than once in the reassignment file")
        plan[tp] = list(replicas)
    return plan


def parse_replica_log_dirs(text: str) -> dict[Replica, str]:
    """The replicas a reassignment file places in a given log dir (its ``log_dirs`` entries other than
    ``any``); the file is checked by ``parse_reassignment`` first."""
    parse_reassignment(text)
    moves: dict[Replica, str] = {}
    for entry in json.loads(text)["partitions"]:
        tp = TopicPartition(entry["topic"], entry["partition"])
        for broker, log_dir in zip(entry["replicas"], entry.get("log_dirs", [])):
            if log_dir != ANY_LOG_DIR:
                moves[(tp, broker)] = log_dir
    return moves


def replica_name(replica: Replica) -> str:
    """Kafka's ``TopicPartitionReplica.toString``: ``topic-partition-broker``."""
    return f"{replica[0].topic}-{replica[0].partition}-{replica[1]}"


def move_state_lines(targets: dict[Replica, str], found: dict[Replica, tuple[str | None, str | None]]
                     ) -> tuple[list[str], bool]:
    """``--verify`` of replica moves (Kafka's ``replicaMoveStatesToString``): a line per replica from
    ``found`` (its current dir, its future dir; a replica the broker does not report is missing), and
    whether every move is done."""
    lines, done = [], True
    for replica, target in sorted(targets.items(), key=lambda item: (item[0][0], item[0][1])):
        (tp, broker), name = replica, replica_name(replica)
        current, future = found.get(replica, (None, None))
        if replica not in found:
            lines.append(f"Partition {tp.topic}-{tp.partition} cannot be found in any live log directory on "
                         f"broker {broker}.")
            done = False
        elif current is None:  # only its future replica is listed: the current one is in an offline dir
            lines.append(f"Partition {tp.topic}-{tp.partition} is not found in any live log dir on broker {broker}. "
                         f"There is likely an offline log directory on the broker.")
            done = False
        elif future is not None:
            lines.append(f"Reassignment of replica {name} is still in progress." if future == target else
                         f"Partition {tp.topic}-{tp.partition} on broker {broker} is being moved to log dir "
                         f"{future} instead of {target}.")
            done = False
        elif current == target:
            lines.append(f"Reassignment of replica {name} completed successfully.")
        else:
            lines.append(f"Partition {tp.topic}-{tp.partition} on broker {broker} is not being moved from log dir "
                         f"{current} to {target}.")
    return lines, done


def format_assignment(assignment: Mapping[TopicPartition, Iterable[int]]) -> str:
    """Kafka's one-line JSON, partitions sorted, ``log_dirs`` all ``any``."""
    return json.dumps({"version": 1, "partitions": [
        {"topic": tp.topic, "partition": tp.partition, "replicas": list(replicas),
         "log_dirs": ["any"] * len(list(replicas))}
        for tp, replicas in sorted(assignment.items())]}, separators=(",", ":"))


def generate(current: Assignment, brokers: list[int] | Mapping[int, str | None],
             rng: random.Random | None = None) -> Assignment:
    """``--generate``: each topic's partitions spread over ``brokers`` with Kafka's assignment (rack-aware when
    ``brokers`` maps ids to racks and every rack is set, as ``--generate`` does unless ``--disable-rack-aware``),
    keeping each topic's replication factor (that of its partition 0)."""
    by_topic: dict[str, list[TopicPartition]] = {}
    for tp in sorted(current):
        by_topic.setdefault(tp.topic, []).append(tp)
    plan: Assignment = {}
    for topic, tps in by_topic.items():
        factor = len(current[tps[0]])
        if factor > len(set(brokers)):
            raise PlanError(f"topic {topic} has replication factor {factor}, more than the {len(set(brokers))} "
                            f"brokers in --broker-list")
        spread = assign_replicas_to_brokers(brokers, len(tps), factor, rng=rng)
        plan.update({TopicPartition(topic, p): replicas for p, replicas in spread.items()})
    return plan


def verify_lines(plan: Assignment, current: Assignment, moving: set[TopicPartition]) -> tuple[list[str], bool]:
    """``--verify``: one status line per partition (Kafka's wording) and whether all are complete."""
    lines, done = [], True
    for tp, target in sorted(plan.items()):
        name = f"{tp.topic}-{tp.partition}"
        if tp in moving:
            lines.append(f"Reassignment of partition {name} is still in progress.")
            done = False
        elif current.get(tp) == target:
            lines.append(f"Reassignment of partition {name} is completed.")
        else:
            lines.append(f"There is no active reassignment of partition {name}, but replica set is "
                         f"{current.get(tp)} rather than {target}.")
            done = False
    return lines, done


def throttled_replicas(plan: Assignment, current: Assignment) -> dict[str, dict[str, str]]:
    """The topic configs ``--throttle`` sets (Kafka's): the leader side throttles the replicas that serve the
    move (the current ones), the follower side the replicas being added. ``{topic: {key: "p:b,..."}}``."""
    configs: dict[str, dict[str, list[str]]] = {}
    for tp, target in sorted(plan.items()):
        existing = current.get(tp, [])
        adding = [b for b in target if b not in existing]
        if not adding:
            continue
        entry = configs.setdefault(tp.topic, {"leader.replication.throttled.replicas": [],
                                              "follower.replication.throttled.replicas": []})
        entry["leader.replication.throttled.replicas"] += [f"{tp.partition}:{b}" for b in existing]
        entry["follower.replication.throttled.replicas"] += [f"{tp.partition}:{b}" for b in adding]
    return {topic: {key: ",".join(values) for key, values in entry.items()} for topic, entry in configs.items()}


def brokers_involved(plan: Assignment, current: Assignment) -> list[int]:
    return sorted({b for tp, target in plan.items() for b in (*target, *current.get(tp, []))})
