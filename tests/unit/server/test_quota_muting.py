"""KIP-219 in the listener and KafkaApis: a throttled connection reads nothing for the throttle time (and the
in-flight pause and the throttle never undo each other); a throttled answer carries its time."""
from __future__ import annotations

import asyncio
import datetime
from types import SimpleNamespace

from brokers.protocol import codec
from brokers.protocol.api_versions import ApiKey
from brokers.quotas.entities import QuotaEntity
from brokers.quotas.manager import QuotaManagers
from brokers.server import listener
from brokers.server.apis import KafkaApis
from brokers.server.context import REQUEST_THROTTLE
from brokers.server.listener import Connection
from brokers.stats import BrokerStats


class Transport:
    def __init__(self) -> None:
        self.paused = False
        self.moves: list[str] = []

    def pause_reading(self) -> None:
        self.paused = True
        self.moves.append("pause")

    def resume_reading(self) -> None:
        self.paused = False
        self.moves.append("resume")

    def get_extra_info(self, name: str, default=None):
        return ("127.0.0.1", 5000) if name == "peername" else default

    def writelines(self, data) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0

    def close(self) -> None:
        pass


def connection() -> tuple[Connection, Transport]:
    async def handle(frame, conn):
        await asyncio.Event().wait()

    conn = Connection(handle, 1 << 20, set())
    transport = Transport()
    conn.connection_made(transport)
    return conn, transport


def test_a_throttled_connection_reads_again_after_the_throttle_time():
    async def main() -> list[str]:
        conn, transport = connection()
        conn.throttle(30)
        conn.throttle(10)  # a shorter throttle inside a longer one changes nothing
        assert transport.paused
        await asyncio.sleep(0.015)
        assert transport.paused
        await asyncio.sleep(0.05)
        assert not transport.paused
        return transport.moves

    assert asyncio.run(main()) == ["pause", "resume"]


def test_the_end_of_a_throttle_does_not_resume_a_connection_paused_for_its_requests_in_flight():
    async def main() -> Transport:
        conn, transport = connection()
        conn.throttle(10)
        conn._paused = True  # beyond MAX_IN_FLIGHT requests (data_received sets it)
        conn._set_reading()
        await asyncio.sleep(0.03)
        assert transport.paused
        conn._paused = False
        conn._set_reading()
        return transport

    transport = asyncio.run(main())
    assert not transport.paused and transport.moves == ["pause", "resume"]
    assert listener.MAX_IN_FLIGHT > 0


def test_kafka_apis_puts_the_throttle_time_in_an_answer_and_mutes_the_connection():
    quotas = QuotaManagers()
    quotas.update_entity(QuotaEntity(None, "noisy"), {"producer_byte_rate": "1"})
    seen = []

    async def find_coordinator(context, header, request):
        throttle = REQUEST_THROTTLE.get()
        throttle.bandwidth(quotas.produce, 1000)  # as Produce or Fetch charge their bytes
        seen.append(throttle.user)
        return codec.build_response(header, throttle_time=0, error_code=0, error_message=None, node_id=1,
                                    host="h", port=1, coordinators=[])

    muted = []
    conn = SimpleNamespace(security_protocol="PLAINTEXT", principal="User:alice", peer="127.0.0.1:1",
                           throttle=muted.append)
    apis = KafkaApis(SimpleNamespace(sasl=None, stats=BrokerStats(), quotas=quotas),
                     {ApiKey.FIND_COORDINATOR: find_coordinator})
    body = codec.build(codec.request_class(10, 2), key="g", key_type=0)
    frame = codec.encode_request(10, 2, 7, "noisy", body)[4:]
    (answer,) = asyncio.run(apis.handle(frame, conn))
    correlation_id, decoded = codec.decode_response(10, 2, answer[4:])
    assert seen == ["alice"] and len(muted) == 1 and muted[0] > 0
    assert correlation_id == 7 and decoded.throttle_time == datetime.timedelta(milliseconds=muted[0])
