"""ConfigChangeListener: which notifications a pass processes, in what order, and what a failure does
(a scripted in-memory KafkaZkClient; the real ZooKeeper path is in tests/integration/test_configs.py)."""
from __future__ import annotations

import asyncio

from brokers.dynamic_config.change_listener import ConfigChangeListener, unprocessed
from brokers.zk.errors import ConnectionLossError
from brokers.zk.gateway import WatchEvent


def test_unprocessed_is_ordered_by_sequence_and_skips_foreign_children():
    children = ["config_change_0000000010", "junk", "config_change_0000000002", "config_change_0000000011"]
    assert unprocessed(children, 2) == [(10, "config_change_0000000010"), (11, "config_change_0000000011")]
    assert unprocessed(children, 11) == []


class ScriptedZk:
    def __init__(self):
        self.notifications: dict[str, tuple[str, str]] = {}
        self.watches = []
        self.fail_reads = False

    def add(self, sequence: int, entity_type: str, name: str) -> None:
        self.notifications[f"config_change_{sequence:010d}"] = (entity_type, name)

    async def get_config_change_notifications(self, watch=None):
        if watch is not None:
            self.watches.append(watch)
        return sorted(self.notifications)

    async def read_config_change_notification(self, child):
        if self.fail_reads:
            raise ConnectionLossError("connection lost")
        return self.notifications.get(child)


def test_start_skips_old_notifications_and_a_watch_processes_new_ones_in_order():
    async def scenario():
        zk = ScriptedZk()
        zk.add(0, "topics", "old")
        seen = []
        listener = ConfigChangeListener(zk, {"topics": seen.append, "brokers": lambda n: seen.append(f"b:{n}")})
        await listener.start()
        zk.add(1, "topics", "a")
        zk.add(2, "clients", "c")  # no handler: skipped, still counted as processed
        zk.add(3, "brokers", "<default>")
        zk.watches[-1](WatchEvent("CHILD", "/config/changes"))
        await asyncio.gather(*listener._tasks)
        assert seen == ["a", "b:<default>"]
        assert listener.last_sequence == 3 and len(zk.watches) == 2  # the one-shot watch was re-armed
        await listener.close()

    asyncio.run(scenario())


def test_a_baseline_replays_what_came_after_it_and_zookeeper_errors_retry():
    async def scenario():
        zk = ScriptedZk()
        zk.add(4, "topics", "t")
        seen = []
        listener = ConfigChangeListener(zk, {"topics": seen.append})
        zk.fail_reads = True
        await listener.start(after=3)
        await asyncio.gather(*listener._tasks)
        assert seen == [] and listener.last_sequence == 3  # not applied: stays pending
        zk.fail_reads = False
        listener.on_new_session()
        await asyncio.gather(*listener._tasks)
        assert seen == ["t"] and listener.last_sequence == 4
        await listener.close()

    asyncio.run(scenario())


def test_a_failing_handler_does_not_stop_the_others():
    async def scenario():
        zk = ScriptedZk()
        seen = []

        async def handler(name):
            if name == "bad":
                raise RuntimeError("boom")
            seen.append(name)

        listener = ConfigChangeListener(zk, {"topics": handler})
        await listener.start()
        zk.add(0, "topics", "bad")
        zk.add(1, "topics", "good")
        listener.on_new_session()
        await asyncio.gather(*listener._tasks)
        assert seen == ["good"] and listener.processed == 2
        await listener.close()

    asyncio.run(scenario())
