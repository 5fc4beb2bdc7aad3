"""The pure half of AlterConfigs (33) and IncrementalAlterConfigs (44): what an entity's override set
becomes, before anything is validated against LogConfig or written to ZooKeeper.

IncrementalAlterConfigs ops (Kafka's ``AlterConfigOp.OpType``): SET 0 (key = value), DELETE 1 (drop the
override; a key without one is fine), APPEND 2 and SUBTRACT 3 (list-typed keys only: add the values not
yet present / remove every occurrence; the base is the current override, else the key's default list).
A key named twice in one resource, an unknown op, APPEND/SUBTRACT on a non-list key and a null value
for SET/APPEND/SUBTRACT are INVALID_REQUEST (``InvalidRequestError``), as in Kafka's
``ZkAdminManager.prepareIncrementalConfigs``. AlterConfigs replaces the whole override set.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Mapping

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4  # Kafka's ConfigResource.Type codes in the config APIs
OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}

# List-typed keys (Kafka's ConfigDef.Type.LIST) among the topic and dynamic broker keys we accept.
LIST_KEYS = frozenset({"cleanup.policy", "leader.replication.throttled.replicas",
                       "follower.replication.throttled.replicas", "log.cleanup.policy"})


class InvalidRequestError(ValueError):
    """The request itself is wrong (Kafka answers INVALID_REQUEST)."""


@dataclass(frozen=True)
class ConfigOp:
    name: str
    op: int
    value: str | None


def _items(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def _check(ops: Iterable[ConfigOp]) -> list[ConfigOp]:
    ops = list(ops)
    twice = sorted(name for name, count in Counter(op.name for op in ops).items() if count > 1)
    if twice:
        raise InvalidRequestError(f"Error due to duplicate config keys: {', '.join(twice)}")
    for op in ops:
        if op.op not in OP_NAMES:
            raise InvalidRequestError(f"Unknown alter config operation type {op.op} for config key {op.name}")
        if op.op in (APPEND, SUBTRACT) and op.name not in LIST_KEYS:
            raise InvalidRequestError(f"Config value {OP_NAMES[op.op].lower()} is not allowed for config key: "
                                      f"{op.name} (only list-typed keys)")
        if op.op != DELETE and op.value is None:
            raise InvalidRequestError(f"Config value for {op.name} is null; {OP_NAMES[op.op]} needs a value")
    return ops


def apply_incremental(current: Mapping[str, str], ops: Iterable[ConfigOp],
                      defaults: Mapping[str, str] | None = None) -> dict[str, str]:
    """The override set after applying ``ops`` in order to ``current`` (unchanged). ``defaults`` gives
    the base list of APPEND/SUBTRACT for keys that have no override yet."""
    result = dict(current)
    for op in _check(ops):
        if op.op == SET:
            result[op.name] = op.value or ""
        elif op.op == DELETE:
            result.pop(op.name, None)
        else:
            base = result.get(op.name, (defaults or {}).get(op.name, ""))
            items, given = _items(base), _items(op.value or "")
            if op.op == APPEND:
                items += [item for item in dict.fromkeys(given) if item not in items]
            else:
                items = [item for item in items if item not in given]
            result[op.name] = ",".join(items)
    return result


def replace_all(configs: Iterable[tuple[str, str | None]]) -> dict[str, str]:
    """AlterConfigs: the new override set is exactly the request's (a key twice or a null value is
    INVALID_REQUEST)."""
    configs = list(configs)
    twice = sorted(name for name, count in Counter(name for name, _ in configs).items() if count > 1)
    if twice:
        raise InvalidRequestError(f"Error due to duplicate config keys: {', '.join(twice)}")
    nulls = sorted(name for name, value in configs if value is None)
    if nulls:
        raise InvalidRequestError(f"null value not supported for configs: {', '.join(nulls)}")
    return {name: str(value) for name, value in configs}
