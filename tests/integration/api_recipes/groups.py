"""Recipes of the group APIs (JoinGroup, Heartbeat, LeaveGroup, SyncGroup, DescribeGroups, ListGroups,
DeleteGroups, OffsetDelete) and of SASL (SaslHandshake, SaslAuthenticate, on the SASL_PLAINTEXT listener).

Each recipe has its own group (``window-<api>-v<version>``), so no version sees another's members."""
from __future__ import annotations

from brokers.protocol.api_versions import ApiKey
from brokers.protocol.errors import ErrorCode
from tests.integration.api_recipes.base import Recipe, RecipeMaker, expect, only, registry
from tests.integration.raw_client import RawConnection
from tests.integration.window_broker import PLAIN_TOKEN, PROTOCOL, TOPIC, WindowBroker

RECIPES: dict[ApiKey, RecipeMaker] = {}
recipe = registry(RECIPES)

GROUP_OPERATIONS = 328  # READ DELETE DESCRIBE (a super user may do all of them)
METADATA = b"\x00\x01"


def static_from(first_version: int, version: int, name: str) -> str | None:
    """A group.instance.id (static membership, KIP-345) from the version that carries it, else None."""
    return f"{name}-instance" if version >= first_version else None


@recipe(ApiKey.JOIN_GROUP)
def join_group(broker: WindowBroker, version: int) -> Recipe:
    group = f"window-join-v{version}"
    instance = static_from(5, version, group)  # v5: a static member joins in one round trip
    fields = dict(group_id=group, session_timeout=60000, rebalance_timeout=60000, member_id="",
                  group_instance_id=instance, protocol_type="consumer",
                  protocols=[dict(name=PROTOCOL, metadata=METADATA)])
    if version == 4:  # v4: a dynamic member without an id is given one and asked to join again (KIP-394)
        first = broker.call(ApiKey.JOIN_GROUP, version, **fields)
        expect(first.error_code, ErrorCode.MEMBER_ID_REQUIRED, first)
        assert first.member_id.startswith("api-window-"), first  # Kafka's <client id>-<uuid>
        fields["member_id"] = first.member_id

    def check(response) -> None:
        expect(response.error_code, ErrorCode.NONE, response)
        assert response.generation_id == 1 and response.protocol_name == PROTOCOL
        assert response.leader == response.member_id and response.member_id
        member = only(response.members)
        assert (member.member_id, member.metadata) == (response.member_id, METADATA)
        if version == 4:
            assert response.member_id == fields["member_id"]
        if version >= 5:
            assert member.group_instance_id == instance
        if version >= 7:  # v7: the protocol type in the answer
            assert response.protocol_type == "consumer"
    return Recipe(fields, check)


@recipe(ApiKey.SYNC_GROUP)
def sync_group(broker: WindowBroker, version: int) -> Recipe:
    group = f"window-sync-v{version}"
    member = broker.join(group, static_from(3, version, group))  # v3: group.instance.id
    assignment = f"assignment-v{version}".encode()

    def check(response) -> None:
        expect(response.error_code, ErrorCode.NONE, response)
        assert response.assignment == assignment
        if version >= 5:  # v5: the protocol type and name, checked and echoed
            assert (response.protocol_type, response.protocol_name) == ("consumer", PROTOCOL)
        assert broker.group_state(group) == "Stable"
    return Recipe(dict(group_id=group, generation_id=member.generation, member_id=member.member_id,
                       group_instance_id=member.instance_id, protocol_type="consumer", protocol_name=PROTOCOL,
                       assignments=[dict(member_id=member.member_id, assignment=assignment)]), check)


@recipe(ApiKey.HEARTBEAT)
def heartbeat(broker: WindowBroker, version: int) -> Recipe:
    group = f"window-heartbeat-v{version}"
    member = broker.member(group, static_from(3, version, group))  # v3: group.instance.id

    def check(response) -> None:
        expect(response.error_code, ErrorCode.NONE, response)
    return Recipe(dict(group_id=group, generation_id=member.generation, member_id=member.member_id,
                       group_instance_id=member.instance_id), check)


@recipe(ApiKey.LEAVE_GROUP)
def leave_group(broker: WindowBroker, version: int) -> Recipe:
    group = f"window-leave-v{version}"
    member = broker.member(group, static_from(3, version, group))

    def check(response) -> None:
        expect(response.error_code, ErrorCode.NONE, response)
        if version >= 3:  # v3: the batch form, an answer per member
            left = only(response.members)
            assert (left.member_id, left.group_instance_id) == (member.member_id, member.instance_id)
            expect(left.error_code, ErrorCode.NONE, left)
        assert broker.group_state(group) == "Empty"
    # v0-2: one member id; v3+: a batch of members, static ones by instance id
    return Recipe(dict(group_id=group, member_id=member.member_id,
                       members=[dict(member_id=member.member_id, group_instance_id=member.instance_id)]), check)


@recipe(ApiKey.DESCRIBE_GROUPS)
def describe_groups(broker: WindowBroker, version: int) -> Recipe:
    member = broker.stable_group()

    def check(response) -> None:
        described = only(response.groups)
        expect(described.error_code, ErrorCode.NONE, described)
        assert (described.group_id, described.group_state, described.protocol_type, described.protocol_data) == (
            member.group, "Stable", "consumer", PROTOCOL)
        assert only(described.members).member_id == member.member_id
        if version >= 3:  # v3: the caller's authorized operations, asked for
            assert described.authorized_operations == GROUP_OPERATIONS
        if version >= 4:  # v4: the members' group.instance.id
            assert only(described.members).group_instance_id == member.instance_id
    return Recipe(dict(groups=[member.group], include_authorized_operations=True), check)


@recipe(ApiKey.LIST_GROUPS)
def list_groups(broker: WindowBroker, version: int) -> Recipe:
    member = broker.stable_group()
    broker.once("offsets", lambda: broker.commit("window-offsets", 2, "m"))  # an Empty group too

    def check(response) -> None:
        expect(response.error_code, ErrorCode.NONE, response)
        listed = {g.group_id: g for g in response.groups}
        assert listed[member.group].protocol_type == "consumer"
        if version >= 4:  # v4: the states filter (KIP-518), and each group's state
            assert {g.group_state for g in response.groups} == {"Stable"}
        else:
            assert "window-offsets" in listed
    return Recipe(dict(states_filter=["Stable"]), check)


@recipe(ApiKey.DELETE_GROUPS)
def delete_groups(broker: WindowBroker, version: int) -> Recipe:
    group = f"window-delete-group-v{version}"
    broker.commit(group, 1)

    def check(response) -> None:
        result = only(response.results)
        assert result.group_id == group
        expect(result.error_code, ErrorCode.NONE, result)
        assert broker.committed(group)[0] == -1  # its offsets went with it
    return Recipe(dict(groups_names=[group]), check)


@recipe(ApiKey.OFFSET_DELETE)
def offset_delete(broker: WindowBroker, version: int) -> Recipe:
    group = f"window-offset-delete-v{version}"
    broker.commit(group, 1)

    def check(response) -> None:
        expect(response.error_code, ErrorCode.NONE, response)
        expect(only(only(response.topics).partitions).error_code, ErrorCode.NONE, response)
        assert broker.committed(group)[0] == -1
    return Recipe(dict(group_id=group, topics=[dict(name=TOPIC, partitions=[dict(partition_index=0)])]), check)


# --- SASL: the SASL_PLAINTEXT listener with PLAIN --------------------------------------------------------

def assert_authenticated(connection: RawConnection) -> None:
    """A request only an authenticated SASL connection may send is answered."""
    assert connection.request(ApiKey.METADATA, 4, topics=[], allow_auto_topic_creation=False).brokers


@recipe(ApiKey.SASL_HANDSHAKE)
def sasl_handshake(broker: WindowBroker, version: int) -> Recipe:
    with broker.connect() as plaintext:  # no SASL exchange on a PLAINTEXT connection
        refused = plaintext.request(ApiKey.SASL_HANDSHAKE, version, mechanism="PLAIN")
        expect(refused.error_code, ErrorCode.ILLEGAL_SASL_STATE, refused)
    with broker.connect("SASL_PLAINTEXT") as unsupported:  # a mechanism not enabled: answered, then closed
        refused = unsupported.request(ApiKey.SASL_HANDSHAKE, version, mechanism="SCRAM-SHA-256")
        expect(refused.error_code, ErrorCode.UNSUPPORTED_SASL_MECHANISM, refused)
        assert refused.mechanisms == ("PLAIN",) and unsupported.read_frame() is None
    connection = broker.connect("SASL_PLAINTEXT")

    def check(response) -> None:
        expect(response.error_code, ErrorCode.NONE, response)
        assert response.mechanisms == ("PLAIN",)
        if version == 0:  # v0: the PLAIN token follows as a raw frame, its answer an empty one
            connection.send_bytes(PLAIN_TOKEN)
            assert connection.read_frame() == b""
        else:  # v1: the token goes in SaslAuthenticate
            authenticated = connection.request(ApiKey.SASL_AUTHENTICATE, 0, auth_bytes=PLAIN_TOKEN)
            expect(authenticated.error_code, ErrorCode.NONE, authenticated)
        assert_authenticated(connection)
        connection.close()
    return Recipe(dict(mechanism="PLAIN"), check, connection)


@recipe(ApiKey.SASL_AUTHENTICATE)
def sasl_authenticate(broker: WindowBroker, version: int) -> Recipe:
    connection = broker.connect("SASL_PLAINTEXT")
    handshake = connection.request(ApiKey.SASL_HANDSHAKE, 1, mechanism="PLAIN")
    expect(handshake.error_code, ErrorCode.NONE, handshake)

    def check(response) -> None:
        expect(response.error_code, ErrorCode.NONE, response)
        assert response.error_message is None and response.auth_bytes == b""
        if version >= 1:  # v1: the session lifetime, 0 without connections.max.reauth.ms (KIP-368)
            assert response.session_lifetime.total_seconds() == 0
        assert_authenticated(connection)
        connection.close()
    return Recipe(dict(auth_bytes=PLAIN_TOKEN), check, connection)
