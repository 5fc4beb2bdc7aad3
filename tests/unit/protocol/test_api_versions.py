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
EXPECTED_WINDOW = {
    0: (0, 7), 1: (4, 11), 2: (1, 2), 3: (4, 4), 10: (0, 1), 18: (0, 3), 19: (2, 4), 20: (3, 3), 22: (0, 0), 23: (2, 3), 32: (1, 3),
    8: (2, 7), 9: (1, 5), 11: (0, 5), 12: (0, 3), 13: (0, 3), 14: (0, 3), 15: (0, 4), 16: (0, 2), 42: (0, 1), 47: (0, 0),
    33: (0, 2), 44: (0, 1),  # AlterConfigs, IncrementalAlterConfigs
    37: (0, 3),  # CreatePartitions
    45: (0, 0), 46: (0, 0),  # Alter/ListPartitionReassignments (flexible from v0)
    29: (1, 3), 30: (1, 3), 31: (1, 3),  # Describe/Create/DeleteAcls (kio has v1-v3; v2+ flexible)
    17: (1, 1), 36: (0, 2),  # SaslHandshake v1 only, SaslAuthenticate (v2 flexible)
    50: (0, 0), 51: (0, 0),  # Describe/AlterUserScramCredentials (flexible)
    43: (0, 2),  # ElectLeaders
}


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


def test_the_window_is_the_recommended_one_with_find_coordinator_only_from_the_group_apis():
    assert SUPPORTED == EXPECTED_WINDOW
    assert all(lo <= 5 for key, (lo, _) in SUPPORTED.items() if key in range(8, 17))  # old librdkafka's group probes
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
    assert is_supported(0, 0) and is_supported(0, 7) and not is_supported(0, 8)
    assert is_supported(1, 4) and not is_supported(1, 3) and not is_supported(1, 12)
    assert is_supported(3, 4) and not is_supported(3, 5) and not is_supported(3, 3)
    assert is_supported(32, 1) and is_supported(32, 3) and not is_supported(32, 4) and not is_supported(32, 0)
    assert is_supported(11, 5) and not is_supported(11, 6) and not is_supported(8, 1)  # JoinGroup v6 is flexible
    assert not is_supported(999, 0)


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


def test_every_advertised_version_but_produce_0_to_2_has_a_kio_schema():
    missing = {(k, v) for k, (lo, hi) in SUPPORTED.items() for v in range(lo, hi + 1) if v not in kio_versions(k)}
    assert missing == {(0, 0), (0, 1), (0, 2)}


def test_only_api_versions_3_the_admin_acl_and_scram_apis_and_sasl_authenticate_2_are_flexible_in_the_window():
    flexible = {(k, v) for k, (lo, hi) in SUPPORTED.items() for v in range(lo, hi + 1) if is_flexible(k, v)}
    # ApiVersions 3; CreatePartitions 2-3 (librdkafka sends 2, kafka-python 3); ElectLeaders 2; the config and
    # reassignment APIs' flexible versions; SaslAuthenticate 2 (kafka-python 3.0 sends it); the ACL APIs' v2-v3;
    # the SCRAM credential APIs (flexible from v0)
    assert flexible == {(18, 3), (33, 2), (37, 2), (37, 3), (43, 2), (44, 1), (45, 0), (46, 0), (36, 2), (50, 0), (51, 0),
                        (29, 2), (29, 3), (30, 2), (30, 3), (31, 2), (31, 3)}
    assert av.MAX_API_VERSIONS_VERSION == 3


# -- the wire behaviour, frozen: bytes and per-key facts captured from the table before ApiKey existed -------------
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
