"""The ACL APIs: DescribeAcls (29), CreateAcls (30), DeleteAcls (31), v0-v3 (v2+ flexible; v3 is Kafka 3.x's
and means what v2 means), as Kafka 2.8's ``KafkaApis`` with the AclAuthorizer (``brokers.security.authorizer``).

v0 predates pattern types (KIP-290): its creations are LITERAL and its filters carry pattern type LITERAL
(the schema's default, which the codec supplies), which matches literal patterns only. So a v0 DescribeAcls
or DeleteAcls never sees, nor removes, a PREFIXED binding — as in Kafka 2.8, whose v0 responses cannot
express one.

* Without an authorizer (``authorizer.class.name`` unset) every answer is SECURITY_DISABLED (54).
* CreateAcls and DeleteAcls need Alter on the cluster, DescribeAcls Describe on the cluster, else
  CLUSTER_AUTHORIZATION_FAILED (31) (per creation / per filter / for the whole describe).
* CreateAcls: a binding with an unknown or ANY/MATCH resource type, pattern type, operation or
  permission, an empty name, a malformed principal, or a cluster name other than ``kafka-cluster`` is
  INVALID_REQUEST (42) with the reason, and is not written; the others are.
* DescribeAcls / DeleteAcls filters: ANY (1) or null matches every value, pattern type MATCH (2)
  matches the literal name, the literal ``*`` and the prefixed patterns the name starts with; an
  UNKNOWN (0) field is INVALID_REQUEST. DeleteAcls answers, per filter, the ACLs it removed.
"""
from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any

from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.protocol.framing import RequestHeader
from brokers.security import acls as acl
from brokers.security.acls import AclEntry, AclFilter, ResourcePattern
from brokers.server.context import AclAdmin, ServerContext
from brokers.server.handlers import response

log = logging.getLogger(__name__)
UNKNOWN = 0



def _gate(context: ServerContext, operation: int) -> tuple[AclAdmin | None, int, str | None]:
    """The ACL store when the principal may do ``operation`` on the cluster; else None and the error."""
    try:
        store = context.acl_admin()
    except KafkaError as exc:
        return None, exc.code, exc.args[0]
    if not context.authorized_on_cluster(operation):
        return None, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."
    return store, ErrorCode.NONE, None


def _filter(f: Any) -> AclFilter:
    if UNKNOWN in (f.resource_type_filter, f.pattern_type_filter, f.operation, f.permission_type):
        raise ValueError("The filter has an UNKNOWN resource type, pattern type, operation or permission type")
    return AclFilter(f.resource_type_filter, f.resource_name_filter, f.pattern_type_filter, f.principal_filter,
                     f.host_filter, f.operation, f.permission_type)


# -- CreateAcls -----------------------------------------------------------------------------------
async def handle_create_acls(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    store, error, message = _gate(context, acl.ALTER)
    if store is None:
        return response(header, results=[dict(error_code=error, error_message=message) for _ in request.creations])
    results: list[dict[str, Any]] = []
    valid: dict[ResourcePattern, set[AclEntry]] = defaultdict(set)
    for creation in request.creations:
        pattern = ResourcePattern(creation.resource_type, creation.resource_name, creation.resource_pattern_type)
        entry = AclEntry(creation.principal, creation.host, creation.operation, creation.permission_type)
        invalid = acl.binding_error(pattern, entry)
        results.append(dict(error_code=ErrorCode.INVALID_REQUEST if invalid else ErrorCode.NONE, error_message=invalid))
        if not invalid:
            valid[pattern].add(entry)
    failed: dict[ResourcePattern, str] = {}
    for pattern, entries in valid.items():
        try:
            await store.update(pattern, add=frozenset(entries))
        except Exception as exc:  # noqa: BLE001 - reported per binding, as Kafka's ApiError
            log.warning("creating ACLs for %s failed: %s", pattern, exc)
            failed[pattern] = str(exc)
    for creation, result in zip(request.creations, results):
        pattern = ResourcePattern(creation.resource_type, creation.resource_name, creation.resource_pattern_type)
        if result["error_code"] == ErrorCode.NONE and pattern in failed:
            result.update(error_code=ErrorCode.UNKNOWN_SERVER_ERROR, error_message=failed[pattern])
    return response(header, results=results)


# -- DescribeAcls ---------------------------------------------------------------------------------
async def handle_describe_acls(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    store, error, message = _gate(context, acl.DESCRIBE)
    if store is None:
        return response(header, error_code=error, error_message=message, resources=[])
    try:
        flt = _filter(request)
    except ValueError as exc:
        return response(header, error_code=ErrorCode.INVALID_REQUEST, error_message=str(exc), resources=[])
    await store.sync()  # what another broker wrote a moment ago is listed too
    grouped: dict[ResourcePattern, list[AclEntry]] = defaultdict(list)
    for pattern, entry in store.describe(flt):
        grouped[pattern].append(entry)
    resources = [dict(resource_type=p.resource_type, resource_name=p.name, pattern_type=p.pattern_type,
                      acls=[dict(principal=e.principal, host=e.host, operation=e.operation,
                                 permission_type=e.permission) for e in entries])
                 for p, entries in grouped.items()]
    return response(header, error_code=ErrorCode.NONE, error_message=None, resources=resources)


# -- DeleteAcls -----------------------------------------------------------------------------------
async def _delete(store: AclAdmin, flt: AclFilter) -> dict[str, Any]:
    by_pattern: dict[ResourcePattern, set[AclEntry]] = defaultdict(set)
    for pattern, entry in store.describe(flt):
        by_pattern[pattern].add(entry)
    matching = []
    for pattern, entries in by_pattern.items():
        removed = await store.update(pattern, remove=frozenset(entries))
        matching.extend(dict(error_code=ErrorCode.NONE, error_message=None, resource_type=pattern.resource_type,
                             resource_name=pattern.name, pattern_type=pattern.pattern_type, principal=e.principal,
                             host=e.host, operation=e.operation, permission_type=e.permission)
                        for e in sorted(removed))
    return dict(error_code=ErrorCode.NONE, error_message=None, matching_acls=matching)


async def handle_delete_acls(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    store, error, message = _gate(context, acl.ALTER)
    if store is None:
        return response(header, filter_results=[dict(error_code=error, error_message=message, matching_acls=[])
                                                 for _ in request.filters])
    await store.sync()  # what another broker wrote a moment ago can be deleted too
    results = []
    for f in request.filters:
        try:
            results.append(await _delete(store, _filter(f)))
        except ValueError as exc:
            results.append(dict(error_code=ErrorCode.INVALID_REQUEST, error_message=str(exc), matching_acls=[]))
        except Exception as exc:  # noqa: BLE001 - a ZooKeeper failure answers this filter
            log.warning("deleting ACLs failed: %s", exc)
            results.append(dict(error_code=ErrorCode.UNKNOWN_SERVER_ERROR, error_message=str(exc), matching_acls=[]))
    return response(header, filter_results=results)
