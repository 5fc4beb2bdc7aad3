"""Control plane over real sockets: brokers.http.HttpServer with a fake handler, and the controller's
ControllerChannelManager sending to it (ordering, retry until a late server is up, removal, 4xx/5xx,
signing, https verified against the truststore).

Sync tests driving ``asyncio.run``; servers bind 127.0.0.1 port 0; waits are events with deadlines.
"""
from __future__ import annotations

import asyncio
import socket
from typing import Any, Callable

import aiohttp
import msgpack
import pytest
from aiohttp import web

from brokers.config import BrokerConfig
from brokers.control import (ControlledShutdownRequest, ControlledShutdownResponse, LeaderAndIsrRequest,
                              LeaderAndIsrResponse, PartitionState, StopReplicaPartition, StopReplicaRequest,
                              StopReplicaResponse, UpdateMetadataRequest, UpdateMetadataResponse, decode, encode)
from brokers.http.server import HttpServer
from brokers.http.auth import HttpSecurity
from brokers.http.client import post_control
from brokers.server.tls import http_contexts
from brokers.stats import BrokerStats
from brokers.model import BrokerInfo, EndPoint
from brokers.control import control_base_url
from coordinator.channel import ControllerChannelManager
from tests.certs import make_pki

DEADLINE = 10.0
STATE = PartitionState("orders", 0, 1, 1, 0, (1,), 0, (1,))
FAST = dict(backoff_initial=0.01, backoff_max=0.02)


def lai(epoch: int) -> LeaderAndIsrRequest:
    return LeaderAndIsrRequest(0, epoch, 10, (STATE,), ())


def um(epoch: int) -> UpdateMetadataRequest:
    return UpdateMetadataRequest(0, epoch, 10, (STATE,), (broker(1, 1),))


def stop(epoch: int) -> StopReplicaRequest:
    return StopReplicaRequest(0, epoch, 10, (StopReplicaPartition("orders", 0, 3, True),))


def broker(broker_id: int, http_port: int, host: str = "0.0.0.0") -> BrokerInfo:
    return BrokerInfo(broker_id, (EndPoint("PLAINTEXT", host, 9092),), None, 10, http_port)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def eventually(condition: Callable[[], bool], what: str, timeout: float = DEADLINE) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)


class FakeHandler:
    """Records every call in order; answers with the request's controller epoch as the error code."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.called = asyncio.Event()
        self.stats = BrokerStats()  # the HTTP server's event-loop probe writes here

    async def _record(self, name: str, request: Any) -> None:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            for _ in range(3):  # give a second concurrent request the chance to overlap, if one were sent
                await asyncio.sleep(0)
            self.calls.append((name, request))
            self.called.set()
        finally:
            self.in_flight -= 1

    async def leader_and_isr(self, request: LeaderAndIsrRequest) -> LeaderAndIsrResponse:
        await self._record("leader_and_isr", request)
        return LeaderAndIsrResponse(request.controller_epoch, (("orders", 0, request.controller_epoch),))

    async def update_metadata(self, request: UpdateMetadataRequest) -> UpdateMetadataResponse:
        await self._record("update_metadata", request)
        return UpdateMetadataResponse(request.controller_epoch)

    async def stop_replica(self, request: StopReplicaRequest) -> StopReplicaResponse:
        await self._record("stop_replica", request)
        return StopReplicaResponse(request.controller_epoch, (("orders", 0, 74),))

    async def controlled_shutdown(self, request: ControlledShutdownRequest) -> ControlledShutdownResponse:
        await self._record("controlled_shutdown", request)
        if request.broker_id < 0:
            raise RuntimeError("boom")
        return ControlledShutdownResponse(0, (("orders", request.broker_id),))

    def health(self) -> dict:
        return {"broker_id": 1, "calls": len(self.calls), "ok": True, "nested": {"partitions": [0, 1]}}


async def post(session: aiohttp.ClientSession, port: int, path: str, body: bytes) -> tuple[int, str, bytes]:
    async with session.post(f"http://127.0.0.1:{port}{path}", data=body) as response:
        return response.status, response.content_type, await response.read()


# -- HttpServer ------------------------------------------------------------------------------------
def test_each_route_reaches_its_handler_method_and_answers_msgpack():
    cases = [
        ("/control/v1/leader-and-isr", lai(4), "leader_and_isr", LeaderAndIsrResponse(4, (("orders", 0, 4),))),
        ("/control/v1/update-metadata", um(5), "update_metadata", UpdateMetadataResponse(5)),
        ("/control/v1/stop-replica", stop(6), "stop_replica", StopReplicaResponse(6, (("orders", 0, 74),))),
        ("/control/v1/controlled-shutdown", ControlledShutdownRequest(3, 77), "controlled_shutdown",
         ControlledShutdownResponse(0, (("orders", 3),))),
    ]

    async def main() -> None:
        handler = FakeHandler()
        server = HttpServer(handler, "127.0.0.1", 0)
        await server.start()
        try:
            assert server.port > 0
            async with aiohttp.ClientSession() as session:
                for i, (path, request, method, expected) in enumerate(cases):
                    status, content_type, body = await post(session, server.port, path, encode(request))
                    assert status == 200, body
                    assert content_type == "application/msgpack"
                    assert decode(type(expected), body) == expected
                    assert handler.calls[i] == (method, request)
                assert len(handler.calls) == len(cases)
                async with session.get(f"http://127.0.0.1:{server.port}/control/v1/leader-and-isr") as response:
                    assert response.status == 405  # control endpoints are POST only
        finally:
            await server.stop()

    asyncio.run(main())


def test_malformed_bodies_get_400_and_the_server_keeps_serving():
    async def main() -> None:
        handler = FakeHandler()
        server = HttpServer(handler, port=0)
        await server.start()
        try:
            async with aiohttp.ClientSession() as session:
                status, _, body = await post(session, server.port, "/control/v1/update-metadata", b"\xc1garbage")
                assert status == 400 and b"UpdateMetadataRequest" in body
                missing = msgpack.packb({"controller_id": 0, "controller_epoch": 1, "partition_states": [],
                                         "live_brokers": []})
                status, _, body = await post(session, server.port, "/control/v1/update-metadata", missing)
                assert status == 400 and b"broker_epoch" in body
                # a well-formed message of the wrong kind is malformed for this route
                status, _, body = await post(session, server.port, "/control/v1/leader-and-isr",
                                             encode(ControlledShutdownRequest(1, 2)))
                assert status == 400 and b"controller_id" in body
                assert handler.calls == []
                status, _, body = await post(session, server.port, "/control/v1/update-metadata", encode(um(9)))
                assert status == 200 and decode(UpdateMetadataResponse, body) == UpdateMetadataResponse(9)
                assert handler.calls == [("update_metadata", um(9))]
        finally:
            await server.stop()

    asyncio.run(main())


def test_handler_exception_is_a_500_and_the_server_keeps_serving():
    async def main() -> None:
        handler = FakeHandler()
        server = HttpServer(handler)
        await server.start()
        try:
            async with aiohttp.ClientSession() as session:
                path = "/control/v1/controlled-shutdown"
                status, _, body = await post(session, server.port, path, encode(ControlledShutdownRequest(-5, 1)))
                assert status == 500 and b"boom" in body
                status, _, body = await post(session, server.port, path, encode(ControlledShutdownRequest(2, 1)))
                assert status == 200
                assert decode(ControlledShutdownResponse, body).remaining_partitions == (("orders", 2),)
        finally:
            await server.stop()

    asyncio.run(main())


def test_healthz_is_the_handlers_health_as_json_and_stop_releases_the_port():
    async def main() -> None:
        handler = FakeHandler()
        server = HttpServer(handler, "127.0.0.1", 0)
        await server.start()
        port = server.port
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port}/healthz") as response:
                assert response.status == 200 and response.content_type == "application/json"
                assert await response.json() == {"status": "up", **handler.health()}
        await server.stop()
        assert not server.running
        again = HttpServer(handler, "127.0.0.1", port)  # the port is free again
        await again.start()
        assert again.port == port
        await again.stop()

    asyncio.run(main())


# -- ControllerChannelManager ----------------------------------------------------------------------
class Responses:
    """Callbacks that record (broker, response) and wake waiters."""

    def __init__(self) -> None:
        self.got: list[tuple[int, Any]] = []
        self.changed = asyncio.Event()

    def callback(self, broker_id: int) -> Callable[[Any], None]:
        def record(response: Any) -> None:
            self.got.append((broker_id, response))
            self.changed.set()
        return record

    async def wait_for(self, count: int) -> None:
        await eventually(lambda: len(self.got) >= count, f"{count} responses (have {len(self.got)})")


def test_control_base_url_uses_first_endpoint_and_maps_wildcards_to_loopback():
    assert control_base_url(broker(1, 8080, "0.0.0.0")) == "http://127.0.0.1:8080"
    assert control_base_url(broker(1, 8080, "")) == "http://127.0.0.1:8080"
    assert control_base_url(broker(1, 8080, "broker-1.internal")) == "http://broker-1.internal:8080"
    assert control_base_url(broker(1, 8080, "::1")) == "http://[::1]:8080"


def test_requests_to_one_broker_arrive_in_order_one_at_a_time_with_decoded_callbacks():
    async def main() -> None:
        handlers = {1: FakeHandler(), 2: FakeHandler()}
        servers = {b: HttpServer(h, "127.0.0.1", 0) for b, h in handlers.items()}
        for server in servers.values():
            await server.start()
        channel = ControllerChannelManager(0, **FAST)
        responses = Responses()
        try:
            for b, server in servers.items():
                channel.add_broker(broker(b, server.port))
            makers = [lai, um, stop]
            sent: dict[int, list[Any]] = {1: [], 2: []}
            for epoch in range(30):
                for b in (1, 2):
                    request = makers[(epoch + b) % 3](epoch)
                    sent[b].append(request)
                    channel.send(b, request, responses.callback(b))
            channel.send(1, um(99))  # no callback: delivered all the same
            await responses.wait_for(60)
            await eventually(lambda: len(handlers[1].calls) == 31, "the callback-less request")
            for b in (1, 2):
                assert [request for _, request in handlers[b].calls[:30]] == sent[b]
                assert handlers[b].max_in_flight == 1
                got = [response for broker_id, response in responses.got if broker_id == b]
                assert [r.error_code for r in got] == list(range(30))  # callbacks in send order
                for request, response in zip(sent[b], got):
                    expected_type = {LeaderAndIsrRequest: LeaderAndIsrResponse, UpdateMetadataRequest:
                                     UpdateMetadataResponse, StopReplicaRequest: StopReplicaResponse}[type(request)]
                    assert type(response) is expected_type
            assert handlers[1].calls[30] == ("update_metadata", um(99))
            assert channel.describe()[1]["sent"] == 31 and channel.describe()[2]["failures"] == 0
        finally:
            await channel.close()
            for server in servers.values():
                await server.stop()

    asyncio.run(main())


def test_a_broker_whose_server_starts_late_still_gets_its_requests():
    async def main() -> None:
        port = free_port()
        handler = FakeHandler()
        channel = ControllerChannelManager(0, **FAST)
        responses = Responses()
        server = HttpServer(handler, "127.0.0.1", port)
        try:
            channel.add_broker(broker(3, port))
            channel.send(3, lai(1), responses.callback(3))
            channel.send(3, um(2), responses.callback(3))
            await eventually(lambda: channel.describe()[3]["failures"] >= 3, "failed attempts against a dead port")
            assert responses.got == []
            await server.start()
            await responses.wait_for(2)
            assert responses.got == [(3, LeaderAndIsrResponse(1, (("orders", 0, 1),))), (3, UpdateMetadataResponse(2))]
            assert handler.calls == [("leader_and_isr", lai(1)), ("update_metadata", um(2))]  # each exactly once
            assert channel.describe()[3]["last_error"] is None
        finally:
            await channel.close()
            await server.stop()

    asyncio.run(main())


def test_remove_broker_stops_retries_and_abandons_its_queue():
    async def main() -> None:
        port = free_port()
        handler = FakeHandler()
        live_handler = FakeHandler()
        live = HttpServer(live_handler)
        await live.start()
        late = HttpServer(handler, "127.0.0.1", port)
        channel = ControllerChannelManager(0, **FAST)
        responses = Responses()
        try:
            channel.add_broker(broker(4, port))
            channel.add_broker(broker(5, live.port))
            channel.send(4, lai(1), responses.callback(4))
            channel.send(4, um(2), responses.callback(4))
            await eventually(lambda: channel.describe()[4]["failures"] >= 2, "retries to the dead broker")
            channel.remove_broker(4)
            assert channel.brokers() == [5]
            channel.send(4, stop(3), responses.callback(4))  # not in the channel any more: dropped
            await late.start()
            # The worker retried every <= 20 ms; give it ten times that to (wrongly) reach the late server.
            try:
                await asyncio.wait_for(handler.called.wait(), timeout=0.25)
            except TimeoutError:
                pass
            assert handler.calls == []
            channel.send(5, um(7), responses.callback(5))  # the rest of the channel still works
            await responses.wait_for(1)
            assert responses.got == [(5, UpdateMetadataResponse(7))]
            # re-adding the broker (it came back) starts a fresh, empty queue
            channel.add_broker(broker(4, port))
            channel.send(4, stop(8), responses.callback(4))
            await responses.wait_for(2)
            assert handler.calls == [("stop_replica", stop(8))]
        finally:
            await channel.close()
            await late.stop()
            await live.stop()

    asyncio.run(main())


class ScriptedBroker:
    """A bare aiohttp app standing in for a broker: per path, a script of statuses to answer with."""

    def __init__(self, script: dict[str, list[int]]):
        self.script = script
        self.hits: list[str] = []
        self.release = asyncio.Event()
        self.runner: web.AppRunner | None = None
        self.port = 0

    async def handle(self, request: web.Request) -> web.Response:
        self.hits.append(request.path)
        body = await request.read()
        plan = self.script.get(request.path, [])
        status = plan.pop(0) if plan else 200
        if status == 0:  # hang until released (the client's timeout fires first)
            await asyncio.wait_for(self.release.wait(), DEADLINE)
            return web.Response(status=503)
        if status != 200:
            return web.Response(status=status, text=f"scripted {status}")
        request_epoch = msgpack.unpackb(body)["controller_epoch"]
        return web.Response(body=encode(UpdateMetadataResponse(request_epoch)), content_type="application/msgpack")

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/control/v1/{name}", self.handle)
        self.runner = web.AppRunner(app, shutdown_timeout=1.0)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", 0).start()
        self.port = self.runner.addresses[0][1]

    async def stop(self) -> None:
        self.release.set()
        if self.runner is not None:
            await self.runner.cleanup()


def test_5xx_and_timeouts_are_retried_4xx_is_dropped_and_the_queue_moves_on():
    async def main() -> None:
        scripted = ScriptedBroker({"/control/v1/update-metadata": [503, 500, 200, 0, 200, 400, 200]})
        await scripted.start()
        channel = ControllerChannelManager(0, request_timeout=0.3, **FAST)
        responses = Responses()
        try:
            channel.add_broker(broker(6, scripted.port))
            channel.send(6, um(1), responses.callback(6))  # 503, 500, then 200
            channel.send(6, um(2), responses.callback(6))  # hangs past the timeout, then 200
            channel.send(6, um(3), responses.callback(6))  # 400: dropped, never retried
            channel.send(6, um(4), responses.callback(6))  # 200
            await responses.wait_for(3)
            assert responses.got == [(6, UpdateMetadataResponse(1)), (6, UpdateMetadataResponse(2)),
                                     (6, UpdateMetadataResponse(4))]
            assert scripted.hits == ["/control/v1/update-metadata"] * 7
            stats = channel.describe()[6]
            assert stats["failures"] == 3 and stats["dropped"] == 1 and stats["sent"] == 3
        finally:
            await channel.close()
            await scripted.stop()

    asyncio.run(main())


def test_a_failing_callback_does_not_stop_the_worker_and_close_cancels_everything():
    async def main() -> None:
        handler = FakeHandler()
        server = HttpServer(handler)
        await server.start()
        channel = ControllerChannelManager(0, **FAST)
        responses = Responses()

        def explode(response: Any) -> None:
            raise RuntimeError("callback bug")

        try:
            channel.add_broker(broker(7, server.port))
            channel.add_broker(broker(8, free_port()))  # dead: its worker is retrying when we close
            channel.send(7, um(1), explode)
            channel.send(7, um(2), responses.callback(7))
            channel.send(8, um(3), responses.callback(8))
            await responses.wait_for(1)
            assert responses.got == [(7, UpdateMetadataResponse(2))]
            await eventually(lambda: channel.describe()[8]["failures"] >= 1, "a retry to the dead broker")
            tasks = [t for t in asyncio.all_tasks() if t.get_name().startswith("controller-0-to-broker-")]
            assert len(tasks) == 2
        finally:
            await channel.close()
            await server.stop()
        assert all(t.done() for t in tasks)
        assert channel.describe() == {} and channel.brokers() == []
        channel.send(7, um(9))  # after close: dropped with a warning, no error
        assert len(handler.calls) == 2

    asyncio.run(main())


# -- a closed control plane (brokers.security.control_auth) -------------------------------------------------
SECRET = b"the cluster's control-plane secret"


def test_with_a_secret_only_signed_requests_reach_the_handler():
    async def main() -> None:
        handler = FakeHandler()
        server = HttpServer(handler, "127.0.0.1", 0, security=HttpSecurity(control_secret=SECRET))
        await server.start()
        good = ControllerChannelManager(0, secret=SECRET, **FAST)
        wrong = ControllerChannelManager(0, secret=b"another cluster's secret!", **FAST)
        try:
            async with aiohttp.ClientSession() as session:
                status, _, body = await post(session, server.port, "/control/v1/update-metadata", encode(um(3)))
                assert (status, b"only brokers" in body) == (401, True)
            wrong.add_broker(broker(1, server.port))
            wrong.send(1, um(4))
            await eventually(lambda: wrong.describe()[1]["dropped"] == 1, "the refused request to be dropped")
            responses = Responses()
            good.add_broker(broker(1, server.port))
            good.send(1, um(5), responses.callback(1))
            await responses.wait_for(1)
            assert handler.calls == [("update_metadata", um(5))]  # nothing unsigned or missigned got through
            answer = await post_control(broker(1, server.port), ControlledShutdownRequest(1, 10), secret=SECRET)
            assert answer == ControlledShutdownResponse(0, (("orders", 1),))
            with pytest.raises(ConnectionError, match="401"):
                await post_control(broker(1, server.port), ControlledShutdownRequest(1, 10))
        finally:
            await good.close()
            await wrong.close()
            await server.stop()

    asyncio.run(main())


# -- an https port (http.ssl.enabled) ---------------------------------------------------------------
def test_over_https_the_channel_and_post_control_verify_the_broker_against_the_truststore(tmp_path):
    pki = make_pki(tmp_path)
    server_tls, client_tls = http_contexts(BrokerConfig.from_properties({
        "zookeeper.connect": "127.0.0.1:2181", "http.ssl.enabled": "true", "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki.server_keystore), "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.ca)}))

    async def main() -> None:
        handler = FakeHandler()
        server = HttpServer(handler, "127.0.0.1", 0, security=HttpSecurity(control_secret=SECRET), ssl_context=server_tls)
        await server.start()
        assert server.scheme == "https"
        trusting = ControllerChannelManager(0, secret=SECRET, ssl_context=client_tls, **FAST)
        untrusting = ControllerChannelManager(0, secret=SECRET, **FAST)  # the system's CAs: not the test CA
        https = BrokerInfo(1, (EndPoint("PLAINTEXT", "127.0.0.1", 9092),), None, 10, server.port, "https")
        try:
            untrusting.add_broker(https)
            untrusting.send(1, um(4))
            await eventually(lambda: "certificate verify failed" in (untrusting.describe()[1]["last_error"] or ""),
                             "the untrusting channel to fail verification")
            responses = Responses()
            trusting.add_broker(https)
            trusting.send(1, um(5), responses.callback(1))
            await responses.wait_for(1)
            assert handler.calls == [("update_metadata", um(5))]
            answer = await post_control(https, ControlledShutdownRequest(1, 10), secret=SECRET, ssl_context=client_tls)
            assert answer == ControlledShutdownResponse(0, (("orders", 1),))
            with pytest.raises(ConnectionError):  # plain http to the https port
                await post_control(broker(1, server.port), ControlledShutdownRequest(1, 10), secret=SECRET)
        finally:
            await trusting.close()
            await untrusting.close()
            await server.stop()

    asyncio.run(main())


def test_a_broker_refusing_the_fan_out_counts_as_not_answering(caplog):
    """The admin API's fan-out (ClusterReader) to a broker that answers 401 (another secret): that broker
    did not answer (None) and one INFO line names it and the path; the overview goes on without it."""
    from brokers.http.cluster_reader import ClusterReader

    async def main():
        async def refuse(request):
            return web.Response(status=401)

        app = web.Application()
        app.router.add_get("/api/v1/local/{what}", refuse)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        reader = ClusterReader(broker=None, secret=b"another")
        try:
            return await reader._ask(BrokerInfo(2, (EndPoint("PLAINTEXT", "127.0.0.1", 9092),), None, 10, port),
                                     "partitions")
        finally:
            await reader.close()
            await runner.cleanup()

    caplog.set_level("INFO", logger="brokers.http.cluster_reader")
    assert asyncio.run(main()) is None
    assert "broker 2 answered /api/v1/local/partitions with HTTP 401" in caplog.text
