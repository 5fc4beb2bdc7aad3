"""KafkaApis' dispatch by the ApiKey table: what is outside the window closes the connection, naming the
client, the API and the version (Kafka 2.8 cannot parse such a request and closes too); legacy versions
reach their handler as kio's base-version entity."""
from __future__ import annotations

import asyncio
import struct
from types import SimpleNamespace

import pytest

from brokers.protocol import codec
from brokers.protocol.api_versions import ApiKey
from brokers.protocol.framing import ProtocolError
from brokers.server.apis import KafkaApis
from brokers.quotas.manager import QuotaManagers
from brokers.stats import BrokerStats

PLAINTEXT = SimpleNamespace(security_protocol="PLAINTEXT", principal="User:ANONYMOUS", peer="127.0.0.1:5555")


def apis(seen: list) -> KafkaApis:
    async def delete_topics(_context, header, request):
        seen.append((header.api_version, request))
        return codec.build(codec.response_class(ApiKey.DELETE_TOPICS, header.api_version),
                           responses=[{"name": name, "error_code": 0} for name in request.topic_names])
    return KafkaApis(SimpleNamespace(sasl=None, stats=BrokerStats(), quotas=QuotaManagers()), {ApiKey.DELETE_TOPICS: delete_topics})


def frame(key: int, version: int, client_id: str = "sarama") -> bytes:
    return struct.pack(">hhih", key, version, 77, len(client_id)) + client_id.encode() + b"\x00" * 8


@pytest.mark.parametrize("key", [ApiKey.PRODUCE, ApiKey.METADATA, ApiKey.DELETE_TOPICS, ApiKey.JOIN_GROUP])
def test_a_version_above_the_window_closes_the_connection_naming_client_api_and_version(key):
    with pytest.raises(ProtocolError) as raised:
        asyncio.run(apis([]).handle(frame(key, key.max_version + 1), PLAINTEXT))
    assert str(raised.value) == (f"client 'sarama' sent {key.api_name} v{key.max_version + 1}, outside this "
                                 f"broker's window {key.min_version}-{key.max_version}")


def test_an_unknown_api_key_closes_the_connection():
    with pytest.raises(ProtocolError, match="unknown API key 4"):
        asyncio.run(apis([]).handle(frame(4, 0), PLAINTEXT))  # LeaderAndIsr: the control plane carries it


def test_a_legacy_version_reaches_its_handler_as_the_base_entity_and_answers_in_the_old_layout():
    seen: list = []
    body = struct.pack(">i", 1) + struct.pack(">h", 1) + b"t" + struct.pack(">i", 5000)
    request = struct.pack(">hhih", ApiKey.DELETE_TOPICS, 0, 9, 1) + b"c" + body
    (answer,) = asyncio.run(apis(seen).handle(request, PLAINTEXT))
    ((version, decoded),) = seen
    assert version == 0 and type(decoded).__version__ == 1 and decoded.topic_names == ("t",)
    # DeleteTopics v0 response: no throttle_time_ms, responses [name, error_code]
    expected = struct.pack(">i", 9) + struct.pack(">i", 1) + struct.pack(">h", 1) + b"t" + struct.pack(">h", 0)
    assert answer == struct.pack(">i", len(expected)) + expected
