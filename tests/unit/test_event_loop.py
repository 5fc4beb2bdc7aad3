"""Which event loop the broker runs on (``ZKAFKA_EVENT_LOOP``)."""
from __future__ import annotations

import asyncio

import pytest

from brokers import event_loop


def test_uvloop_is_the_default_when_installed():
    assert event_loop.loop_name({}) == "uvloop"
    assert event_loop.loop_name({"ZKAFKA_EVENT_LOOP": " UVLOOP "}) == "uvloop"


def test_asyncio_can_be_chosen():
    assert event_loop.loop_name({"ZKAFKA_EVENT_LOOP": "asyncio"}) == "asyncio"


def test_an_unknown_loop_is_an_error_naming_the_variable():
    with pytest.raises(ValueError, match="ZKAFKA_EVENT_LOOP='trio': expected one of uvloop, asyncio"):
        event_loop.loop_name({"ZKAFKA_EVENT_LOOP": "trio"})


@pytest.mark.parametrize("name", ["uvloop", "asyncio"])
def test_run_runs_the_coroutine_on_the_chosen_loop(monkeypatch, name):
    monkeypatch.setenv("ZKAFKA_EVENT_LOOP", name)

    async def which() -> str:
        return type(asyncio.get_running_loop()).__module__

    assert event_loop.run(which()).startswith(name)
