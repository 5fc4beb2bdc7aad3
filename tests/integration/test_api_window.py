"""Every (API, version) pair the broker advertises, one request/response round trip each, against a real
broker: the request built with the project's codec from the API's recipe (``api_recipes``), sent over a
real socket, its answer decoded with the codec and checked for its correlation id, the error code the
recipe expects and the field its version adds. The pairs come from ``ApiKey``, so a widened row is covered
(and needs its recipe to know the new version) as soon as the table says so.

Beyond the window: a request one version above an API's maximum closes the connection with one broker log
line naming the client, the API and the version; ApiVersions above its maximum is answered with
UNSUPPORTED_VERSION and the table (KIP-511)."""
from __future__ import annotations

import struct

import pytest

pytest.register_assert_rewrite("tests.integration.api_recipes")

from brokers.protocol import codec  # noqa: E402 (after the assertion rewriting of the recipes is registered)
from brokers.protocol.api_versions import ApiKey, is_flexible  # noqa: E402
from brokers.protocol.errors import ErrorCode  # noqa: E402
from tests.integration.api_recipes import RECIPES  # noqa: E402
from tests.integration.conditions import wait_for  # noqa: E402
from tests.integration.window_broker import WindowBroker, start_cluster  # noqa: E402

PAIRS = [(key, version) for key in ApiKey for version in range(key.min_version, key.max_version + 1)]


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    cluster = start_cluster(tmp_path_factory.mktemp("api-window"))
    try:
        window = WindowBroker(cluster)
        window.wait_for_coordinator()
        yield window
    finally:
        cluster.down()


def test_every_api_has_a_recipe():
    assert [key.api_name for key in ApiKey if key not in RECIPES] == []


@pytest.mark.parametrize(("key", "version"), PAIRS, ids=[f"{key.api_name}-v{version}" for key, version in PAIRS])
def test_round_trip(broker, key, version):
    recipe = RECIPES[key](broker, version)
    connection = recipe.connection or broker.connect()
    with connection:
        response = connection.request(key, version, **recipe.fields)  # the correlation id is checked here
        recipe.check(response)


def request_above(key: ApiKey, client_id: str) -> bytes:
    """A request of version max + 1: kio's body where kio has that version, else the header alone (the
    broker refuses the version before it reads a body)."""
    version = key.max_version + 1
    try:
        body = codec.build(codec.request_class(key, version))
        return codec.encode_request(key, version, 1, client_id, body)
    except KeyError:
        encoded = client_id.encode()
        header = struct.pack(">hhih", key, version, 1, len(encoded)) + encoded
        header += b"\x00" if is_flexible(key, version) else b""
        return struct.pack(">i", len(header)) + header


BEYOND = [key for key in ApiKey if key is not ApiKey.API_VERSIONS]


@pytest.mark.parametrize("key", BEYOND, ids=[key.api_name for key in BEYOND])
def test_a_version_above_the_window_closes_the_connection(broker, key):
    client_id = f"beyond-{key.api_name}"
    with broker.connect(client_id=client_id) as connection:
        connection.sock.sendall(request_above(key, client_id))
        assert connection.read_frame() is None
    line = (f"client '{client_id}' sent {key.api_name} v{key.max_version + 1}, outside this broker's window "
            f"{key.min_version}-{key.max_version}")
    wait_for(lambda: line in broker.log_file.read_text(), 10, f"the broker log line {line!r}")
    assert broker.log_file.read_text().count(f"client '{client_id}'") == 1


def test_api_versions_above_the_window_answers_unsupported_version_with_the_table(broker):
    with broker.connect() as connection:
        connection.sock.sendall(request_above(ApiKey.API_VERSIONS, connection.client_id))
        frame = connection.read_frame()
        correlation_id, response = codec.decode_response(ApiKey.API_VERSIONS, 0, frame)  # a v0 body (KIP-511)
        assert correlation_id == 1 and response.error_code == ErrorCode.UNSUPPORTED_VERSION
        assert {(k.api_key, k.min_version, k.max_version) for k in response.api_keys} == {
            (int(key), key.min_version, key.max_version) for key in ApiKey}
        body = connection.request(ApiKey.API_VERSIONS, 3, client_software_name="retry", client_software_version="1")
        assert body.error_code == ErrorCode.NONE  # the connection stays open for the retry at a version it knows
