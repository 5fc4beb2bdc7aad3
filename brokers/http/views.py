"""What the admin API shows, as plain data: one broker's local facts, and the whole cluster merged.

Two halves:

* ``local_partitions`` / ``local_groups`` read only this broker (its logs and the groups it
  coordinates); other brokers ask for them over ``/api/v1/local/...`` (``brokers.http.fanout``).
* ``partition_rows``, ``topic_rows``, ``broker_rows`` and ``with_lag`` are pure: they merge the
  metadata cache (which every broker holds whole, fed by the controller) with the local facts of the
  brokers that answered. A partition's high watermark, log end, log start, size and segment count are
  its *leader's*; when the leader did not answer they are None, never a guess.

Under-replicated: the ISR is smaller than the replica set (Kafka's UnderReplicatedPartitions, seen from
the controller's metadata rather than one leader). Offline: no leader, or a leader that is not alive.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from brokers.model import INTERNAL_TOPICS, TopicPartition

LOCAL_FIELDS = ("high_watermark", "last_stable_offset", "log_end_offset", "log_start_offset", "size_bytes",
                "segments")
ONGOING_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence")  # Kafka's TransactionState
TRANSACTION_FIELDS = ("transactional_id", "producer_id", "producer_epoch", "state", "timeout_ms")


def local_partitions(partitions: Mapping[TopicPartition, Any]) -> list[dict]:
    """Every replica this broker hosts, from its ``ReplicaManager.partitions``."""
    rows = []
    for tp, partition in sorted(partitions.items()):
        log = partition.log
        rows.append({"topic": tp.topic, "partition": tp.partition, "is_leader": partition.is_leader,
                     "high_watermark": log.high_watermark, "last_stable_offset": partition.last_stable_offset,
                     "log_end_offset": log.log_end_offset,
                     "log_start_offset": log.log_start_offset, "size_bytes": log.size,
                     "segments": len(log.segments)})
    return rows


def leaders_facts(replicas_by_broker: Mapping[int, list[dict] | None]) -> dict[TopicPartition, dict]:
    """The facts each partition's leader reported, keyed by partition (followers' rows are dropped)."""
    out = {}
    for rows in replicas_by_broker.values():
        for row in rows or ():
            if row.get("is_leader"):
                out[TopicPartition(row["topic"], row["partition"])] = row
    return out


def partition_rows(states: Mapping[TopicPartition, Any], live: Iterable[int],
                   facts: Mapping[TopicPartition, dict], topic: str | None = None) -> list[dict]:
    """One row per partition in the metadata cache (``states``: TopicPartition -> PartitionState)."""
    live = set(live)
    rows = []
    for tp, state in sorted(states.items()):
        if topic is not None and tp.topic != topic:
            continue
        fact = facts.get(tp, {})
        offline = state.leader < 0 or state.leader not in live
        row = {"topic": tp.topic, "partition": tp.partition, "leader": state.leader if not offline else -1,
               "leader_epoch": state.leader_epoch, "replicas": list(state.replicas), "isr": list(state.isr),
               "under_replicated": len(state.isr) < len(state.replicas), "offline": offline}
        row.update({name: fact.get(name) for name in LOCAL_FIELDS})
        rows.append(row)
    return rows


def topic_rows(partitions: list[dict], configs: Mapping[str, dict[str, str]]) -> list[dict]:
    """One row per topic, summing its partition rows (``messages``: records below the high watermarks;
    ``messages`` and ``size_bytes`` are None while a partition's leader has not answered)."""
    by_topic: dict[str, list[dict]] = {}
    for row in partitions:
        by_topic.setdefault(row["topic"], []).append(row)
    out = []
    for name, rows in sorted(by_topic.items()):
        known = [r for r in rows if r["high_watermark"] is not None]
        complete = len(known) == len(rows)  # a partial sum would read as records gone
        out.append({
            "name": name, "internal": name in INTERNAL_TOPICS, "partitions": len(rows),
            "replication_factor": max(len(r["replicas"]) for r in rows),
            "under_replicated_partitions": sum(r["under_replicated"] for r in rows),
            "offline_partitions": sum(r["offline"] for r in rows),
            "messages": sum(r["high_watermark"] - r["log_start_offset"] for r in known) if complete else None,
            "size_bytes": sum(r["size_bytes"] for r in known) if complete else None,
            "configs": dict(sorted(configs.get(name, {}).items())),
        })
    return out


def broker_rows(live: Mapping[int, Any], controller_id: int | None, states: Iterable[Any]) -> list[dict]:
    """Live brokers from the metadata cache, plus every broker named as a replica in ``states`` (the
    cache's PartitionStates) that is not alive (it is down: ZooKeeper no longer holds its registration)."""
    known = set(live)
    for state in states:
        known.update(state.replicas)
    out = []
    for broker_id in sorted(known):
        info = live.get(broker_id)
        endpoint = info.endpoints[0] if info is not None and info.endpoints else None
        out.append({"id": broker_id, "alive": info is not None, "controller": broker_id == controller_id,
                    "host": endpoint.host if endpoint else None, "port": endpoint.port if endpoint else None,
                    "http_port": info.http_port if info is not None else None,
                    "rack": info.rack if info is not None else None,
                    "endpoints": [{"listener": e.listener, "host": e.host, "port": e.port}
                                  for e in (info.endpoints if info is not None else ())]})
    return out


def with_lag(groups: Iterable[dict], partitions: list[dict]) -> list[dict]:
    """Each group's offsets with ``high_watermark`` and ``lag`` (HW - committed, at least 0; None when the
    partition's leader did not answer), and ``total_lag``: None while any lag is unknown, never a partial
    sum (a chart of it would show progress that did not happen)."""
    hw = {(r["topic"], r["partition"]): r["high_watermark"] for r in partitions}
    out = []
    for group in groups:
        offsets, total = [], 0
        for entry in group["offsets"]:
            high_watermark = hw.get((entry["topic"], entry["partition"]))
            lag = None if high_watermark is None else max(0, high_watermark - entry["committed_offset"])
            total = None if lag is None or total is None else total + lag
            offsets.append({**entry, "high_watermark": high_watermark, "lag": lag})
        out.append({**group, "offsets": offsets, "total_lag": total})
    return sorted(out, key=lambda g: g["group_id"])


def only_topics(rows: Iterable[dict], may_describe: Callable[[str], bool], key: str = "topic") -> list[dict]:
    """The rows of topics the caller may describe (Metadata's rule: the others are not there at all)."""
    return [row for row in rows if may_describe(row[key])]


def only_groups(groups: Iterable[dict], may_describe_group: Callable[[str], bool],
                may_describe_topic: Callable[[str], bool]) -> list[dict]:
    """The groups the caller may describe, each with the offsets of topics it may describe (OffsetFetch's
    rule: a group's offsets for other topics are left out, not shown as errors)."""
    return [{**group, "offsets": only_topics(group["offsets"], may_describe_topic)}
            for group in groups if may_describe_group(group["group_id"])]


def local_transactions(described: Mapping[str, Any], broker_id: int) -> list[dict]:
    """The transactions in progress this broker coordinates, one row each, from the coordinator's ``describe()``:
    ``{"partitions": {p: {"coordinator_epoch", "transactional_ids", "ongoing": [transaction, ...]}}, ...}``."""
    rows = []
    for partition, entry in (described.get("partitions") or {}).items():
        for txn in entry.get("ongoing", ()):
            row = {name: txn.get(name) for name in TRANSACTION_FIELDS}
            row.update(coordinator=broker_id, coordinator_partition=int(partition),
                       coordinator_epoch=entry.get("coordinator_epoch"), start_time_ms=txn.get("start_ms"),
                       pending_state=txn.get("pending_state"), partitions=sorted(txn.get("partitions") or ()))
            rows.append(row)
    return sorted(rows, key=lambda r: str(r["transactional_id"]))


COUNTERS = ("markers_written", "aborts_by_timeout", "transactions_committed", "transactions_aborted",
            "expired_transactional_ids")


def transaction_counters(described: Mapping[str, Any]) -> dict[str, int]:
    """The coordinator's counters (0 for those it lacks), and ``transactional_ids``: the ids it holds now."""
    counters = described.get("counters") or {}
    out = {name: int(counters.get(name, 0)) for name in COUNTERS}
    out["transactional_ids"] = sum(int(e.get("transactional_ids", 0))
                                   for e in (described.get("partitions") or {}).values())
    return out


def transaction_rows(by_broker: Mapping[int, list[dict] | None]) -> list[dict]:
    """Every coordinator's transactions, merged (a broker that did not answer adds none)."""
    return sorted((row for rows in by_broker.values() for row in rows or ()),
                  key=lambda r: (str(r["transactional_id"]), r["coordinator"]))


def lso_lag(row: Mapping[str, Any]) -> int | None:
    """Kafka's LastStableOffsetLag: high watermark minus last stable offset (None when either is unknown)."""
    hw, lso = row.get("high_watermark"), row.get("last_stable_offset")
    return None if hw is None or lso is None else max(0, hw - lso)
