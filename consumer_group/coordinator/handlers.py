"""The group APIs on the wire: kio requests in, ``GroupCoordinator`` calls, kio responses out.

``HANDLERS`` is handed to ``KafkaApis`` by the composition root; each handler reaches the coordinator as
``context.group_coordinator`` and the client's address as ``context.client_host()`` (``GroupApiContext``).
One handler serves every advertised version of its API (``codec.build`` drops fields a version does not
have); what each version means is decided in ``versions`` (pure), the handlers apply it.

* Kafka 2.8's authorization (the context decides; everything is allowed without an authorizer): Read on
  the group for JoinGroup, SyncGroup, Heartbeat, LeaveGroup and OffsetCommit, Describe for OffsetFetch
  and DescribeGroups (GROUP_AUTHORIZATION_FAILED), plus Read on each committed topic / Describe on each
  fetched topic (TOPIC_AUTHORIZATION_FAILED per partition); Delete on the group for DeleteGroups and
  OffsetDelete; ListGroups lists everything with Describe on the cluster, else only the groups the
  principal may Describe.
* OffsetCommit and OffsetDelete answer UNKNOWN_TOPIC_OR_PARTITION for partitions the metadata does not
  know, and ask the coordinator only about the partitions left.
* TxnOffsetCommit (KIP-98): Write on the TransactionalId (else every partition is
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED), Read on the group (GROUP_AUTHORIZATION_FAILED), then Read on each
  topic and the partition's existence as OffsetCommit; v0-1 are answered COORDINATOR_NOT_AVAILABLE where
  the coordinator is still loading (KAFKA-7296). With ``transaction.partition.verification.enable`` (KIP-890,
  ``context.verify_transaction``) the group's offsets partition must be in the producer's Ongoing transaction
  at that epoch (else INVALID_PRODUCER_EPOCH, INVALID_TXN_STATE, ...; COORDINATOR_LOAD_IN_PROGRESS while the
  transaction coordinator cannot answer). The offsets stay pending until the transaction's marker.
* OffsetFetch v7 with ``require_stable`` (KIP-447) answers UNSTABLE_OFFSET_COMMIT (offset -1) for each
  partition with transactional offsets pending; without it the last committed offset is answered.
"""
from __future__ import annotations

from typing import Any, Iterable, Protocol

from brokers.model import OFFSETS_TOPIC, TopicPartition
from brokers.protocol import codec
from brokers.protocol.api_versions import ApiKey
from brokers.protocol.errors import ErrorCode
from brokers.protocol.framing import RequestHeader
from brokers.security.acls import DELETE, DESCRIBE, GROUP, READ, TRANSACTIONAL_ID, WRITE
from consumer_group.coordinator import versions
from consumer_group.coordinator.coordinator import GroupCoordinator, JoinRequest
from consumer_group.coordinator.group import GroupMetadata, JoinResult
from consumer_group.coordinator.state import GroupState
from consumer_group.coordinator.txn_offsets import NO_GENERATION, UNKNOWN_MEMBER_ID, verification_error


class PartitionMetadata(Protocol):
    """What OffsetCommit, OffsetDelete and OffsetFetch v0 ask of the broker's metadata cache: which partitions
    exist."""

    def partitions_of(self, topic: str) -> dict[int, Any]: ...


class GroupApiContext(Protocol):
    """What the group handlers use of the request's context (``brokers.server.context.ServerContext``
    provides it): the coordinator, the client's address and the authorization decisions."""

    group_coordinator: GroupCoordinator
    metadata_cache: PartitionMetadata

    def authorized(self, operation: int, resource_type: int, name: str) -> bool: ...

    def authorized_on_cluster(self, operation: int) -> bool: ...

    def filter_authorized(self, operation: int, resource_type: int, names: Iterable[str]) -> set[str]: ...

    def authorized_topics(self, operation: int, names: Iterable[str]) -> set[str]: ...

    def client_host(self) -> str: ...


def _group_denied(context: GroupApiContext, group_id: str, operation: int = READ) -> bool:
    """True when the principal may not do ``operation`` on the group."""
    return not context.authorized(operation, GROUP, group_id)


async def handle_join_group(context: GroupApiContext, header: RequestHeader, request: Any) -> Any:
    coordinator: GroupCoordinator = context.group_coordinator
    if _group_denied(context, request.group_id):
        result = JoinResult(ErrorCode.GROUP_AUTHORIZATION_FAILED, "")
    else:
        session_timeout_ms = codec.duration_ms(request.session_timeout)
        rebalance_timeout = getattr(request, "rebalance_timeout", None)
        result = await coordinator.join_group(JoinRequest(
            group_id=request.group_id, member_id=request.member_id,
            group_instance_id=getattr(request, "group_instance_id", None),
            require_known_member_id=versions.requires_known_member_id(header.api_version),
            client_id=header.client_id or "", client_host=context.client_host(), session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=session_timeout_ms if rebalance_timeout is None else codec.duration_ms(rebalance_timeout),
            protocol_type=request.protocol_type,
            protocols=[(p.name, bytes(p.metadata)) for p in request.protocols]))
    return codec.build_response(header, **versions.join_response(header.api_version, result))


async def handle_sync_group(context: GroupApiContext, header: RequestHeader, request: Any) -> Any:
    protocol_type, protocol_name = getattr(request, "protocol_type", None), getattr(request, "protocol_name", None)
    if versions.sync_protocol_missing(header.api_version, protocol_type, protocol_name):
        error = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    elif _group_denied(context, request.group_id):
        error = ErrorCode.GROUP_AUTHORIZATION_FAILED
    else:
        assignments = {a.member_id: bytes(a.assignment) for a in request.assignments}
        result = await context.group_coordinator.sync_group(
            request.group_id, request.generation_id, request.member_id, getattr(request, "group_instance_id", None),
            assignments, protocol_type, protocol_name)
        return codec.build_response(header, error_code=result.error, protocol_type=result.protocol_type,
                         protocol_name=result.protocol_name, assignment=result.assignment)
    return codec.build_response(header, error_code=error, protocol_type=None, protocol_name=None, assignment=b"")


async def handle_heartbeat(context: GroupApiContext, header: RequestHeader, request: Any) -> Any:
    if _group_denied(context, request.group_id):
        return codec.build_response(header, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    error = context.group_coordinator.heartbeat(request.group_id, request.generation_id, request.member_id,
                                                getattr(request, "group_instance_id", None))
    return codec.build_response(header, error_code=error)


async def handle_leave_group(context: GroupApiContext, header: RequestHeader, request: Any) -> Any:
    if _group_denied(context, request.group_id):
        return codec.build_response(header, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, members=[])
    if header.api_version < 3:
        error, errors = context.group_coordinator.leave_group(request.group_id, [(request.member_id, None)])
        return codec.build_response(header, error_code=errors[0] if error == ErrorCode.NONE and errors else error)
    leaving = [(m.member_id, m.group_instance_id) for m in request.members]
    error, errors = context.group_coordinator.leave_group(request.group_id, leaving)
    members = [{"member_id": m, "group_instance_id": i, "error_code": e} for (m, i), e in zip(leaving, errors)]
    return codec.build_response(header, error_code=error, members=members)


def _by_topic(results: dict[TopicPartition, Any], entry) -> list[dict]:
    topics: dict[str, list] = {}
    for tp, value in results.items():
        topics.setdefault(tp.topic, []).append(entry(tp.partition, value))
    return [{"name": name, "partitions": partitions} for name, partitions in topics.items()]


def _partitions_rejected(context: GroupApiContext, partitions: Any) -> dict[TopicPartition, ErrorCode]:
    """Kafka 2.8's OffsetCommit and OffsetDelete: Read on each topic (TOPIC_AUTHORIZATION_FAILED), then the
    partition must exist (UNKNOWN_TOPIC_OR_PARTITION)."""
    readable = context.authorized_topics(READ, {tp.topic for tp in partitions})
    existing = {topic: context.metadata_cache.partitions_of(topic) for topic in readable}
    return {tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED if tp.topic not in readable
            else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION for tp in partitions
            if tp.topic not in readable or tp.partition not in existing[tp.topic]}


def _commit_rejected(context: GroupApiContext, group_id: str, partitions: Any) -> dict[TopicPartition, ErrorCode]:
    """Read on the group first (else every partition is GROUP_AUTHORIZATION_FAILED)."""
    if _group_denied(context, group_id):
        return dict.fromkeys(partitions, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    return _partitions_rejected(context, partitions)


def _commit_timestamps(header: RequestHeader) -> dict[TopicPartition, int]:
    """OffsetCommit v1's explicit commit timestamps (-1: the time of the commit), as the request carried them:
    kio's base version (v2) has no such field (``RequestHeader.legacy_fields``)."""
    if header.api_version != 1 or not header.legacy_fields:
        return {}
    return {TopicPartition(topic["name"], partition["partition_index"]): partition["commit_timestamp"]
            for topic in header.legacy_fields["topics"] for partition in topic["partitions"]
            if partition["commit_timestamp"] != -1}


async def handle_offset_commit(context: GroupApiContext, header: RequestHeader, request: Any) -> Any:
    offsets = {TopicPartition(t.name, p.partition_index): (p.committed_offset, p.committed_metadata)
               for t in request.topics for p in t.partitions}
    epochs = {TopicPartition(t.name, p.partition_index): p.committed_leader_epoch for t in request.topics
              for p in t.partitions if getattr(p, "committed_leader_epoch", -1) >= 0}  # v6+
    results: dict[TopicPartition, Any] = _commit_rejected(context, request.group_id, offsets)
    allowed = {tp: v for tp, v in offsets.items() if tp not in results}
    coordinator = context.group_coordinator
    if allowed and header.api_version == 0:
        results.update(await coordinator.commit_offsets_v0(request.group_id, allowed))
    elif allowed:
        retention = getattr(request, "retention_time", None)
        results.update(await coordinator.commit_offsets(
            request.group_id, request.generation_id_or_member_epoch, request.member_id,
            getattr(request, "group_instance_id", None), allowed,
            versions.retention_ms(header.api_version, None if retention is None else codec.duration_ms(retention)), epochs,
            _commit_timestamps(header)))
    return codec.build_response(header, topics=_by_topic(results, lambda p, e: {"partition_index": p, "error_code": e}))


async def handle_txn_offset_commit(context: GroupApiContext, header: RequestHeader, request: Any) -> Any:
    offsets = {TopicPartition(t.name, p.partition_index): (
        p.committed_offset, p.committed_metadata, getattr(p, "committed_leader_epoch", -1))  # v2+
        for t in request.topics for p in t.partitions}
    if not context.authorized(WRITE, TRANSACTIONAL_ID, request.transactional_id):
        results: dict[TopicPartition, Any] = dict.fromkeys(offsets, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    else:
        results = _commit_rejected(context, request.group_id, offsets)
        allowed = {tp: v for tp, v in offsets.items() if tp not in results}
        refused = await _txn_unverified(context, request) if allowed else None
        if refused is not None:
            results.update(dict.fromkeys(allowed, refused))
        elif allowed:
            results.update(await context.group_coordinator.commit_txn_offsets(
                request.group_id, request.producer_id, request.producer_epoch,
                getattr(request, "member_id", UNKNOWN_MEMBER_ID), getattr(request, "group_instance_id", None),
                getattr(request, "generation_id", NO_GENERATION), allowed))  # v3 (KIP-447)
    results = {tp: versions.txn_offset_commit_error(header.api_version, e) for tp, e in results.items()}
    return codec.build_response(header, topics=_by_topic(results, lambda p, e: {"partition_index": p, "error_code": e}))


async def _txn_unverified(context: GroupApiContext, request: Any) -> ErrorCode | None:
    """KIP-890 for TxnOffsetCommit (with ``transaction.partition.verification.enable``, as Kafka 3.6's group
    coordinator): the group's offsets partition must be in the producer's Ongoing transaction at that epoch,
    else the offsets would stay pending for ever. A TxnOffsetCommit retried after its transaction was aborted
    (timed out, or fenced by a new instance) and after the abort's marker found nothing to complete here
    (its epoch was then recorded in memory only, lost with a failover) is refused instead. None: verified
    (or verification is off)."""
    verify = getattr(context, "verify_transaction", None)
    if verify is None:
        return None
    offsets_tp = TopicPartition(OFFSETS_TOPIC, context.group_coordinator.partition_for(request.group_id))
    return verification_error(await verify(request.transactional_id, request.producer_id, request.producer_epoch,
                                           offsets_tp))


_DENIED = object()  # an OffsetFetch partition of a topic the principal may not describe
_UNSTABLE = object()  # an OffsetFetch v7 ``require_stable`` partition with transactional offsets pending


def _fetch_visible(context: GroupApiContext, offsets: dict, all_offsets: bool) -> dict:
    """Kafka 2.8: Describe on each topic; for "all offsets" the others are left out, for named partitions
    they answer TOPIC_AUTHORIZATION_FAILED (marked ``_DENIED``)."""
    topics = {tp.topic for tp in offsets}
    denied = topics - context.authorized_topics(DESCRIBE, topics)
    if all_offsets:
        return {tp: v for tp, v in offsets.items() if tp.topic not in denied}
    return {tp: _DENIED if tp.topic in denied else v for tp, v in offsets.items()}


async def handle_offset_fetch(context: GroupApiContext, header: RequestHeader, request: Any) -> Any:
    """OffsetFetch; with v7's ``require_stable`` a partition with transactional offsets pending answers
    UNSTABLE_OFFSET_COMMIT (Kafka 2.8's ``GroupMetadataManager.getOffsets``)."""
    version = header.api_version
    partitions = None if request.topics is None else [
        TopicPartition(t.name, p) for t in request.topics for p in t.partition_indexes]
    if _group_denied(context, request.group_id, DESCRIBE):
        error, offsets = ErrorCode.GROUP_AUTHORIZATION_FAILED, {}
    elif version == 0:
        return codec.build_response(header, topics=await _fetch_v0(context, request.group_id, partitions or []))
    else:
        error, offsets = context.group_coordinator.fetch_offsets(request.group_id, partitions)
    if error != ErrorCode.NONE:
        listed = versions.offset_fetch_error_lists_partitions(version)
        offsets = dict.fromkeys(partitions or []) if listed else {}
    else:
        offsets = _fetch_visible(context, offsets, partitions is None)
        if getattr(request, "require_stable", False):
            unstable = context.group_coordinator.unstable_offsets(request.group_id)
            offsets = {tp: _UNSTABLE if tp in unstable and v is not _DENIED else v for tp, v in offsets.items()}
    partition_error = versions.offset_fetch_partition_error(version, error)

    def entry(partition: int, committed: Any) -> dict:
        if committed is _DENIED:
            return _fetched(partition, -1, "", ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        if committed is _UNSTABLE:
            return _fetched(partition, -1, "", ErrorCode.UNSTABLE_OFFSET_COMMIT)
        if committed is None:
            return _fetched(partition, -1, "", partition_error)
        return _fetched(partition, committed.offset, committed.metadata, partition_error, committed.leader_epoch)
    return codec.build_response(header, error_code=error, topics=_by_topic(offsets, entry))


def _fetched(partition: int, offset: int, metadata: str, error: ErrorCode, leader_epoch: int = -1) -> dict:
    return {"partition_index": partition, "committed_offset": offset, "committed_leader_epoch": leader_epoch,
            "metadata": metadata, "error_code": error}


async def _fetch_v0(context: GroupApiContext, group_id: str, partitions: list[TopicPartition]) -> list[dict]:
    """OffsetFetch v0, Kafka's ZooKeeper read on any broker: Describe on each topic, then the stored offset
    (no metadata); a partition the metadata does not know, or without an offset, is UNKNOWN_TOPIC_OR_PARTITION."""
    visible = context.authorized_topics(DESCRIBE, {tp.topic for tp in partitions})
    stored = await context.group_coordinator.fetch_offsets_v0(group_id) if group_id else {}
    existing = {topic: context.metadata_cache.partitions_of(topic) for topic in visible}

    def answer(tp: TopicPartition) -> Any:
        if tp.topic not in visible:
            return _DENIED
        return stored.get(tp) if tp.partition in existing[tp.topic] else None

    def entry(partition: int, offset: Any) -> dict:
        if offset is _DENIED:
            return _fetched(partition, -1, "", ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        if offset is None:
            return _fetched(partition, -1, "", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return _fetched(partition, offset, "", ErrorCode.NONE)
    return _by_topic({tp: answer(tp) for tp in partitions}, entry)


def _describe(group_id: str, error: ErrorCode, group: GroupMetadata | None, operations: int) -> dict:
    if group is None:
        return {"error_code": error, "group_id": group_id, "group_state": "Dead" if error == ErrorCode.NONE else "",
                "authorized_operations": operations}
    stable = group.is_(GroupState.STABLE)  # as Kafka's summary: metadata and assignments only when Stable
    members = [{"member_id": m.member_id, "group_instance_id": m.group_instance_id, "client_id": m.client_id,
                "client_host": m.client_host, "member_assignment": m.assignment if stable else b"",
                "member_metadata": m.metadata(group.protocol_name) if stable else b""}
               for m in group.members.values()]
    return {"error_code": error, "group_id": group_id, "group_state": str(group.state),
            "protocol_type": group.protocol_type or "", "protocol_data": (group.protocol_name or "") if stable else "",
            "members": members, "authorized_operations": operations}


def _describe_group(context: GroupApiContext, header: RequestHeader, group_id: str, requested: bool) -> dict:
    if _group_denied(context, group_id, DESCRIBE):
        return _describe(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED, None, versions.AUTHORIZED_OPERATIONS_OMITTED)
    error, group = context.group_coordinator.describe_group(group_id)
    operations = versions.described_operations(
        header.api_version, requested, error,
        (op for op in versions.GROUP_OPERATIONS if context.authorized(op, GROUP, group_id)))
    return _describe(group_id, error, group, operations)


async def handle_describe_groups(context: GroupApiContext, header: RequestHeader, request: Any) -> Any:
    requested = bool(getattr(request, "include_authorized_operations", False))
    return codec.build_response(header, groups=[_describe_group(context, header, g, requested) for g in request.groups])


async def handle_list_groups(context: GroupApiContext, header: RequestHeader, request: Any) -> Any:
    states = versions.states_filter(header.api_version, getattr(request, "states_filter", None))
    error, groups = context.group_coordinator.list_groups(states)
    if not context.authorized_on_cluster(DESCRIBE):
        visible = context.filter_authorized(DESCRIBE, GROUP, {g.group_id for g in groups})  # per-group Describe
        groups = [g for g in groups if g.group_id in visible]
    return codec.build_response(header, error_code=error, groups=[
        {"group_id": g.group_id, "protocol_type": g.protocol_type or "", "group_state": str(g.state)}
        for g in groups])


async def handle_delete_groups(context: GroupApiContext, header: RequestHeader, request: Any) -> Any:
    names = list(request.groups_names)
    deletable = context.filter_authorized(DELETE, GROUP, names)
    results = await context.group_coordinator.delete_groups([g for g in names if g in deletable])
    results.update({g: ErrorCode.GROUP_AUTHORIZATION_FAILED for g in names if g not in deletable})
    return codec.build_response(header, results=[{"group_id": g, "error_code": e} for g, e in results.items()])


async def handle_offset_delete(context: GroupApiContext, header: RequestHeader, request: Any) -> Any:
    partitions = [TopicPartition(t.name, p.partition_index) for t in request.topics for p in t.partitions]
    if _group_denied(context, request.group_id, DELETE):
        return codec.build_response(header, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, topics=[])
    denied = _partitions_rejected(context, partitions)
    partitions = [tp for tp in partitions if tp not in denied]
    error, results = await context.group_coordinator.delete_offsets(request.group_id, partitions)
    if error == ErrorCode.NONE:
        results = {**results, **denied}
    return codec.build_response(header, error_code=error,
                     topics=_by_topic(results, lambda p, e: {"partition_index": p, "error_code": e}))


HANDLERS = {
    ApiKey.OFFSET_COMMIT: handle_offset_commit,
    ApiKey.OFFSET_FETCH: handle_offset_fetch,
    ApiKey.JOIN_GROUP: handle_join_group,
    ApiKey.HEARTBEAT: handle_heartbeat,
    ApiKey.LEAVE_GROUP: handle_leave_group,
    ApiKey.SYNC_GROUP: handle_sync_group,
    ApiKey.DESCRIBE_GROUPS: handle_describe_groups,
    ApiKey.LIST_GROUPS: handle_list_groups,
    ApiKey.DELETE_GROUPS: handle_delete_groups,
    ApiKey.OFFSET_DELETE: handle_offset_delete,
    ApiKey.TXN_OFFSET_COMMIT: handle_txn_offset_commit,
}
