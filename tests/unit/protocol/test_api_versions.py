"""The supported-versions table and the pre-encoded ApiVersions responses, checked against kio."""
from __future__ import annotations

import datetime
import io
import json
import re
import struct
import sys
from pathlib import Path

import pytest
from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

from brokers.protocol import api_versions as av
from brokers.protocol.api_versions import (
    ApiKey,
    api_name,
    api_versions_response,
    flexible_from,
    is_flexible,
    is_supported,
    known_api,
    request_header_version,
    response_header_version,
)

SUPPORTED = {key: (key.min_version, key.max_version) for key in ApiKey}
KAFKA_2_8 = json.loads((Path(__file__).resolve().parents[2] / "golden" / "kafka-2.8.2-api-versions.json").read_text())["apis"]
BEYOND_2_8 = {29: (0, 3), 30: (0, 3), 31: (0, 3)}  # the ACL APIs' v3 (flexible, Kafka 3.x clients send it)
# APIs Kafka 2.8 does not have at all (KIP-664, Kafka 3.0: what kafka-transactions asks): name, range, flexible from
NOT_IN_2_8 = {65: ("DescribeTransactions", (0, 0), 0), 66: ("ListTransactions", (0, 0), 0)}
LEGACY = {(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (1, 3), (2, 0), (8, 0), (8, 1), (9, 0), (19, 0), (19, 1), (20, 0),
          (23, 0), (23, 1), (27, 0), (29, 0), (30, 0), (31, 0), (32, 0), (34, 0), (35, 0)}  # Kafka 2.8's versions kio has no classes for


def kafka_2_8_range(key: int) -> tuple[int, int]:
    low, _, high = KAFKA_2_8[str(key)]["validVersions"].partition("-")
    return int(low), int(high or low)


def kafka_2_8_flexible_from(key: int) -> int:
    flexible = KAFKA_2_8[str(key)]["flexibleVersions"]
    return av.NEVER_FLEXIBLE if flexible == "none" else int(flexible.rstrip("+"))


def split(framed: bytes) -> tuple[int, int, bytes]:
    size, correlation_id = struct.unpack_from(">ii", framed)
    assert size == len(framed) - 4
    return size, correlation_id, framed[8:]


def kio_body(version: int, error: ErrorCode) -> bytes:
    cls = load_response_schema(18, version)
    module = sys.modules[cls.__module__]
    keys = tuple(module.ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, (lo, hi) in sorted(SUPPORTED.items()))
    kwargs = {"error_code": error, "api_keys": keys}
    if version >= 1:
        kwargs["throttle_time"] = datetime.timedelta(0)
    buffer = io.BytesIO()
    entity_writer(cls)(buffer, cls(**kwargs))
    return buffer.getvalue()


@pytest.mark.parametrize("key", list(ApiKey), ids=lambda key: key.api_name)
def test_the_window_is_kafka_2_8s(key):
    """Every API this broker implements is advertised with Kafka 2.8.2's validVersions (a narrowed range fails
    here), its name and its first flexible version; wider only where BEYOND_2_8 says, and only the APIs of
    NOT_IN_2_8 are not 2.8's at all."""
    if int(key) in NOT_IN_2_8:
        assert (key.api_name, (key.min_version, key.max_version), key.flexible_from) == NOT_IN_2_8[int(key)]
        assert str(int(key)) not in KAFKA_2_8
        return
    assert KAFKA_2_8[str(int(key))]["name"] == key.api_name
    assert "zkBroker" in KAFKA_2_8[str(int(key))]["listeners"]
    assert (key.min_version, key.max_version) == BEYOND_2_8.get(int(key), kafka_2_8_range(key))
    assert key.flexible_from == kafka_2_8_flexible_from(key)


def test_names_and_lookups():
    assert ApiKey.DESCRIBE_CONFIGS.api_name == api_name(32) == "DescribeConfigs" and api_name(99) == "ApiKey(99)"
    assert known_api(32) is ApiKey.DESCRIBE_CONFIGS and known_api(4) is None and known_api(99) is None


@pytest.mark.parametrize("version", range(4))
def test_pre_encoded_response_decodes_to_the_table(version):
    framed = api_versions_response(1234, version)
    _size, correlation_id, body = split(framed)
    assert correlation_id == 1234  # response header v0: no tagged-field byte, even for flexible v3
    cls = load_response_schema(18, version)
    decoded, used = entity_reader(cls)(body, 0)
    assert used == len(body)
    assert decoded.error_code is ErrorCode.none
    assert {k.api_key: (k.min_version, k.max_version) for k in decoded.api_keys} == SUPPORTED
    assert [k.api_key for k in decoded.api_keys] == sorted(SUPPORTED)


@pytest.mark.parametrize("version", range(4))
def test_pre_encoded_body_is_byte_identical_to_kio(version):
    assert split(api_versions_response(0, version))[2] == kio_body(version, ErrorCode.none)
    assert load_response_schema(18, version).__header_schema__.__version__ == 0


@pytest.mark.parametrize("correlation_id", [0, 1, -1, 2**31 - 1, -(2**31), 0x01020304])
def test_only_the_correlation_id_is_patched(correlation_id):
    for version in range(4):
        framed = api_versions_response(correlation_id, version)
        reference = api_versions_response(7, version)
        assert framed[:4] == reference[:4] and framed[8:] == reference[8:]
        assert struct.unpack_from(">i", framed, 4)[0] == correlation_id


@pytest.mark.parametrize("version", [4, 5, 127, -1])
def test_a_version_above_3_gets_a_v0_body_with_unsupported_version(version):
    _size, correlation_id, body = split(api_versions_response(99, version))
    assert correlation_id == 99
    assert body == kio_body(0, ErrorCode.unsupported_version)
    decoded, _ = entity_reader(load_response_schema(18, 0))(body, 0)
    assert decoded.error_code is ErrorCode.unsupported_version
    assert {k.api_key: (k.min_version, k.max_version) for k in decoded.api_keys} == SUPPORTED


def test_is_supported():
    assert is_supported(0, 0) and is_supported(0, 9) and not is_supported(0, 10) and not is_supported(0, -1)
    assert is_supported(3, 0) and is_supported(3, 11) and not is_supported(3, 12)
    assert is_supported(32, 0) and is_supported(32, 4) and not is_supported(32, 5)
    assert is_supported(11, 7) and not is_supported(11, 8) and is_supported(8, 0)
    assert not is_supported(999, 0) and not is_supported(4, 0)  # LeaderAndIsr rides the control plane


def kio_versions(key: int) -> list[int]:
    versions = []
    for version in range(20):
        try:
            load_request_schema(key, version)
        except Exception:
            continue
        versions.append(version)
    return versions


@pytest.mark.parametrize("key", sorted(SUPPORTED))
def test_flexible_rules_match_kio(key):
    for version in kio_versions(key):
        request, response = load_request_schema(key, version), load_response_schema(key, version)
        assert is_flexible(key, version) == request.__flexible__ == (version >= flexible_from(key))
        assert request_header_version(key, version) == request.__header_schema__.__version__
        assert response_header_version(key, version) == response.__header_schema__.__version__


def test_flexible_rules_for_unknown_keys():
    with pytest.raises(KeyError):
        flexible_from(99)
    assert not is_flexible(99, 9) and is_flexible(11, 9) and not is_flexible(47, 0) and request_header_version(999, 3) == 1 and response_header_version(999, 3) == 0
    assert response_header_version(18, 3) == 0 and request_header_version(18, 3) == 2


def test_every_advertised_version_has_a_kio_schema_or_a_legacy_layout():
    missing = {(k, v) for k, (lo, hi) in SUPPORTED.items() for v in range(lo, hi + 1) if v not in kio_versions(k)}
    assert missing == LEGACY - {(1, 0), (1, 1), (1, 2), (1, 3)} or missing == LEGACY
    assert av.MAX_API_VERSIONS_VERSION == 3


# -- the wire behaviour, frozen: bytes and per-key facts of today's window (an intended change of the window
# rewrites these files, and the diff shows what a client now sees) ------------------------------------------------
GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "api_versions"


@pytest.mark.parametrize("version", range(4))
def test_the_api_versions_response_is_the_captured_one(version):
    assert api_versions_response(0x01020304, version) == (GOLDEN / f"response-v{version}.bin").read_bytes()


@pytest.mark.parametrize("version", [4, 5, 127, -1])
def test_the_unsupported_version_answer_is_the_captured_one(version):
    assert api_versions_response(0x01020304, version) == (GOLDEN / "response-unsupported-version.bin").read_bytes()


def test_names_and_accepted_versions_are_the_captured_ones():
    captured = json.loads((GOLDEN / "api_key_facts.json").read_text())["keys"]
    for key in range(-1, 70):
        codes = " ".join("%d%d%d%d" % (is_supported(key, v), is_flexible(key, v), request_header_version(key, v),
                                       response_header_version(key, v)) for v in range(-1, 20))
        assert [api_name(key), codes] == captured[str(key)], key


@pytest.mark.parametrize("key", list(ApiKey))
def test_each_api_key_carries_kafkas_names(key):
    """Kafka 2.8's ApiKeys constant name (PRODUCE, OFFSET_FOR_LEADER_EPOCH) and message name (kio's schema)."""
    assert re.sub(r"(?<!^)(?=[A-Z])", "_", key.api_name).upper() == key.name
    assert load_request_schema(key, key.max_version).__name__ == f"{key.api_name}Request"
    assert key.min_version <= key.max_version
