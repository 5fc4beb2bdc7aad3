"""brokers.app.previous_incarnation: the rule that tells this broker's own stale registration (wait for
its session to expire) from another live broker with the same id (refuse), the probe, and the bounded
wait on the znode's deletion (KafkaZkClient.wait_broker_deregistered) over a fake gateway."""
from __future__ import annotations

import asyncio

import pytest

from brokers.app.previous_incarnation import (
    EXPIRY_MARGIN_S,
    Action,
    StaleRegistration,
    anyone_answering,
    decide,
    endpoint_mismatch,
    expiry_bound_s,
    probe_addresses,
)
from brokers.model import BrokerInfo, EndPoint
from brokers.zk.client import KafkaZkClient
from brokers.zk.gateway import WatchEvent, ZnodeStat

PLAIN = EndPoint("PLAINTEXT", "127.0.0.1", 9092)
SSL = EndPoint("SSL", "127.0.0.1", 9093, "SSL")
OURS = BrokerInfo(1, (PLAIN, SSL), http_port=8080)
OUR_SESSION, OLD_SESSION = 0x200, 0x100


def stale(**changes) -> StaleRegistration:
    fields = {"id": 1, "endpoints": (SSL, PLAIN), "http_port": 8080, "http_scheme": "http", "epoch": 77, **changes}
    return StaleRegistration(BrokerInfo(**fields), OLD_SESSION)


def test_nothing_in_the_way_or_our_own_session_registers():
    assert decide(None, OUR_SESSION, OURS, answering=False).action is Action.REGISTER
    own = StaleRegistration(OURS, OUR_SESSION)
    assert decide(own, OUR_SESSION, OURS, answering=True).action is Action.REGISTER


def test_our_previous_incarnation_with_nobody_answering_is_waited_out():
    decision = decide(stale(), OUR_SESSION, OURS, answering=False)  # endpoint order and epoch do not matter
    assert decision.action is Action.WAIT and "nobody answering" in decision.reason


def test_same_endpoints_but_something_answers_is_refused():
    decision = decide(stale(), OUR_SESSION, OURS, answering=True)
    assert decision.action is Action.REFUSE and "answers" in decision.reason


@pytest.mark.parametrize("changes, words", [
    ({"endpoints": (PLAIN,)}, "endpoints"),  # one listener fewer
    ({"endpoints": (EndPoint("PLAINTEXT", "127.0.0.1", 9094), SSL)}, "endpoints"),  # another port
    ({"endpoints": (EndPoint("PLAINTEXT", "10.0.0.2", 9092), SSL)}, "endpoints"),  # another host
    ({"endpoints": (EndPoint("PLAINTEXT", "127.0.0.1", 9092, "SASL_PLAINTEXT"), SSL)}, "endpoints"),
    ({"http_port": 8081}, "HTTP endpoint"),
    ({"http_scheme": "https"}, "HTTP endpoint"),
    ({"id": 2}, "broker 2"),
])
def test_different_endpoints_are_another_broker_whatever_the_probe_says(changes, words):
    for answering in (False, True):
        decision = decide(stale(**changes), OUR_SESSION, OURS, answering)
        assert decision.action is Action.REFUSE and words in decision.reason


def test_http_ports_compare_only_when_both_sides_know_one():
    assert endpoint_mismatch(stale(http_port=None).info, OURS) == ""  # registered without an HTTP port
    for ours_http in (0, None):  # ours ephemeral (http.port=0) or unknown
        ours = BrokerInfo(1, (PLAIN, SSL), http_port=ours_http)
        assert endpoint_mismatch(stale(http_port=9999).info, ours) == ""
        assert decide(stale(http_port=9999), OUR_SESSION, ours, answering=False).action is Action.WAIT


def test_probe_addresses_are_the_listeners_then_the_http_port():
    info = BrokerInfo(1, (PLAIN, EndPoint("SSL", "", 9093, "SSL"), EndPoint("EXT", "127.0.0.1", 9092)),
                      http_port=8080)
    assert probe_addresses(info) == [("127.0.0.1", 9092), ("127.0.0.1", 9093), ("127.0.0.1", 8080)]
    assert probe_addresses(BrokerInfo(1, (PLAIN,))) == [("127.0.0.1", 9092)]


def test_the_probe_sees_a_listening_socket_and_nothing_on_a_closed_port():
    async def scenario():
        server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        assert await anyone_answering([("127.0.0.1", port)])
        server.close()
        await server.wait_closed()
        assert not await anyone_answering([("127.0.0.1", port), ("no-such-host.invalid", 1)], timeout_s=0.5)

    asyncio.run(scenario())


def test_the_bound_is_the_session_timeout_plus_the_margin():
    assert expiry_bound_s(6000) == 6.0 + EXPIRY_MARGIN_S


class ExpiringGateway:
    """``exists`` with a watch: the node (owned by ``owner``) is deleted ``expire_after`` s after the first
    call (a watch armed then fires DELETED); ``None`` never."""

    def __init__(self, owner: int, expire_after: float | None):
        self.owner, self.expire_after, self.gone, self.calls = owner, expire_after, False, 0

    async def exists(self, path, watch=None):
        self.calls += 1
        if self.calls == 1 and self.expire_after is not None:
            asyncio.get_running_loop().call_later(self.expire_after, self._expire, path, watch)
        return None if self.gone else ZnodeStat(0, 5, 5, self.owner, 0)

    def _expire(self, path, watch):
        self.gone = True
        watch(WatchEvent("DELETED", path))


def test_the_wait_ends_on_the_deletion_watch():
    async def scenario():
        gateway = ExpiringGateway(OLD_SESSION, expire_after=0.2)
        loop = asyncio.get_running_loop()
        started = loop.time()
        assert await KafkaZkClient(gateway).wait_broker_deregistered(1, OLD_SESSION, 5.0)
        assert loop.time() - started < 2.0 and gateway.calls == 2  # woken by the watch, not the bound

    asyncio.run(scenario())


def test_the_wait_gives_up_at_the_bound_and_ends_at_once_when_another_session_owns_it():
    async def scenario():
        assert not await KafkaZkClient(ExpiringGateway(OLD_SESSION, None)).wait_broker_deregistered(1, OLD_SESSION, 0.2)
        assert await KafkaZkClient(ExpiringGateway(0x999, None)).wait_broker_deregistered(1, OLD_SESSION, 5.0)

    asyncio.run(scenario())


class FakeKzc:
    def __init__(self, found, gone: bool = True):
        self.found, self.gone, self.waited, self.registered = found, gone, [], []

    async def get_broker_registration(self, broker_id):
        return self.found

    async def wait_broker_deregistered(self, broker_id, owner, timeout_s):
        self.waited.append((broker_id, owner, timeout_s))
        return self.gone

    async def register_broker(self, info):
        self.registered.append(info)
        return 99


def fake_broker(found):
    from types import SimpleNamespace

    from brokers.config import BrokerConfig
    config = BrokerConfig.from_properties({"zookeeper.connect": "zk:2181", "broker.id": "1",
                                           "listeners": "PLAINTEXT://127.0.0.1:1"})
    return SimpleNamespace(broker_id=1, config=config, broker_epoch=-1, cluster_id="c", kzc=FakeKzc(found),
                           zk=SimpleNamespace(session_id=OUR_SESSION, session_timeout_ms=6000),
                           http=SimpleNamespace(port=8080, scheme="http"))


def test_prepare_waits_out_our_previous_incarnation_then_registers(caplog):
    from brokers.app.registration import BrokerRegistration
    ours = BrokerInfo(1, (EndPoint("PLAINTEXT", "127.0.0.1", 1),), http_port=8080)  # port 1: nobody answers
    broker = fake_broker((ours, OLD_SESSION))

    async def scenario():
        registration = BrokerRegistration(broker)
        await registration.prepare()
        await registration.register()

    with caplog.at_level("WARNING", logger="brokers.app.registration"):
        asyncio.run(scenario())
    assert broker.kzc.waited == [(1, OLD_SESSION, 6.0 + EXPIRY_MARGIN_S)] and broker.broker_epoch == 99
    (line,) = [r.getMessage() for r in caplog.records if "previous incarnation" in r.getMessage()]
    assert f"session {OLD_SESSION:#x}" in line and "at most 11.0 s" in line


def test_prepare_refuses_another_broker_naming_it():
    from brokers.app.registration import BrokerRegistration
    from brokers.zk.client import DuplicateBrokerIdError
    other = BrokerInfo(1, (EndPoint("PLAINTEXT", "10.0.0.9", 9092),), http_port=8080)
    broker = fake_broker((other, OLD_SESSION))
    with pytest.raises(DuplicateBrokerIdError, match=r"already registered by another live broker \(session 0x100, "
                                                     r"endpoints PLAINTEXT://10.0.0.9:9092\): its endpoints"):
        asyncio.run(BrokerRegistration(broker).prepare())
    assert broker.kzc.waited == [] and broker.kzc.registered == []
