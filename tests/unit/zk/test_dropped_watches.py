"""What ``ZkGateway`` does with a watch kazoo dropped (a type-NONE event): while the session lives (the
connection is being re-established) it fires as WATCH_LOST once the connection is back; when the
session ended it is a NONE at once. The kazoo client is never started: its callbacks are driven by hand."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from brokers.zk.gateway import WATCH_LOST, SessionState, WatchEvent, ZkGateway, dropped_watch_type


@pytest.mark.parametrize("kazoo_state, expected", [
    ("CONNECTING", WATCH_LOST), ("CONNECTED", WATCH_LOST),
    ("EXPIRED_SESSION", "NONE"), ("CLOSED", "NONE"), ("AUTH_FAILED", "NONE"),
])
def test_a_dropped_watch_is_lost_while_the_session_lives(kazoo_state, expected):
    assert dropped_watch_type(kazoo_state) == expected


def kazoo_event(type_: str, state: str = "CONNECTED", path: str | None = None):
    return SimpleNamespace(type=type_, state=state, path=path)


async def drive(steps) -> list[WatchEvent]:
    """Run ``steps(gateway, kazoo_watch)`` on a loop; return what the watch callback received."""
    gateway = ZkGateway("127.0.0.1:1", loop=asyncio.get_running_loop())
    seen: list[WatchEvent] = []
    watch = gateway._hop(seen.append, "/brokers/ids")
    for step in steps:
        step(gateway, watch)
        for _ in range(3):
            await asyncio.sleep(0)  # let call_soon_threadsafe callbacks run
    return seen


def state(s: SessionState):
    return lambda gateway, watch: gateway._on_state({SessionState.CONNECTED: "CONNECTED",
                                                     SessionState.SUSPENDED: "SUSPENDED",
                                                     SessionState.LOST: "LOST"}[s])


def fire(type_: str, kazoo_state: str = "CONNECTED", path: str | None = None):
    return lambda gateway, watch: watch(kazoo_event(type_, kazoo_state, path))


def test_a_watch_dropped_by_a_connection_loss_fires_once_reconnected():
    seen = asyncio.run(drive([state(SessionState.CONNECTED), state(SessionState.SUSPENDED),
                              fire("NONE", "CONNECTING")]))
    assert seen == []  # not while the connection is down: the re-read would only fail
    seen = asyncio.run(drive([state(SessionState.CONNECTED), state(SessionState.SUSPENDED),
                              fire("NONE", "CONNECTING"), state(SessionState.CONNECTED)]))
    assert seen == [WatchEvent(WATCH_LOST, "/brokers/ids")]


def test_a_drop_noticed_after_the_reconnect_fires_at_once():
    seen = asyncio.run(drive([state(SessionState.CONNECTED), state(SessionState.SUSPENDED),
                              state(SessionState.CONNECTED), fire("NONE", "CONNECTING")]))
    assert seen == [WatchEvent(WATCH_LOST, "/brokers/ids")]


def test_a_lost_session_turns_the_parked_watches_into_none():
    seen = asyncio.run(drive([state(SessionState.CONNECTED), state(SessionState.SUSPENDED),
                              fire("NONE", "CONNECTING"), state(SessionState.LOST), state(SessionState.CONNECTED)]))
    assert seen == [WatchEvent("NONE", "/brokers/ids")]


def test_an_expired_session_drop_and_an_ordinary_fire_pass_straight_through():
    seen = asyncio.run(drive([state(SessionState.CONNECTED), fire("CHILD", path="/brokers/ids"),
                              fire("NONE", "EXPIRED_SESSION")]))
    assert seen == [WatchEvent("CHILD", "/brokers/ids"), WatchEvent("NONE", "/brokers/ids")]
