"""The admin API: ``/healthz``, ``/readyz`` and ``/api/v1/...`` (JSON, or msgpack on request).

===================================== ============================================================
GET /healthz                          the process is up: 200 always, with this broker's details
GET /readyz                           200 when registered in ZooKeeper, metadata loaded (a controller
                                      known and this broker among the live ones) and not shutting
                                      down; 503 naming what is missing otherwise
GET /api/v1/cluster                   cluster id, controller id and epoch, live broker ids
GET /api/v1/brokers                   every broker: alive or down (named as a replica, unregistered)
GET /api/v1/topics                    every topic: partitions, RF, under-replicated / offline counts,
                                      messages, size on disk, config overrides
GET /api/v1/topics/{topic}            one topic, with its partitions
GET /api/v1/partitions[?topic=T]      leader, replicas, ISR, HW, LEO, log start, size, segments
GET /api/v1/groups                    state, protocol, members with assignments, offsets with lag
GET /api/v1/groups/{group}            one group
GET /api/v1/transactions              every coordinator's transactions: id, producer id and epoch, state,
                                      start time, timeout, partitions
GET /api/v1/quotas                    this broker's client quotas: the configured entities and the
                                      sensors it measures clients by (rate, limit, throttle totals,
                                      throttled now); ``?scope=cluster``: every broker's, merged
GET /api/v1/overview                  all of the above in one answer (what the dashboard polls; the
                                      quotas cluster-wide)
GET /api/v1/local/{partitions,groups,transactions,quotas}
                                      this broker only (what the others fan out to)
===================================== ============================================================

Any broker answers for the whole cluster (``ClusterReader``). The answer is msgpack when the request's
``Accept`` names ``application/x-msgpack`` (or ``application/msgpack``), JSON otherwise. Errors are
``{"error_code": <HTTP status>, "message": ...}``.

Who may see what (``brokers.http.auth``): with an authorizer, lists and the overview leave out the topics,
groups and transactional ids the caller may not Describe (and a group's offsets for such topics), as Kafka's
Metadata, ListGroups and ListTransactions do; asking for one by name is 403 with ``kafka_error``
TOPIC_/GROUP_AUTHORIZATION_FAILED. The cluster and its brokers are shown to anyone authenticated (Metadata
shows them too). ``/api/v1/local/*``
needs Describe on the cluster (the brokers' own fan-out is signed and always allowed). Client quotas name users
and client ids: ``/api/v1/quotas`` and ``/api/v1/local/quotas`` need DescribeConfigs on the cluster (Kafka's rule
for DescribeClientQuotas), and the overview shows ``"quotas": null`` to a caller without it.
"""
from __future__ import annotations

import functools
import json
from typing import Any

from aiohttp import web

from brokers.control import pack
from brokers.http import auth, quota_views, views
from brokers.http.auth import SECURITY_KEY
from brokers.http.cluster_reader import LOCAL_VIEWS, ClusterReader, Visibility
from brokers.http.ports import BrokerState, HttpBroker
from brokers.protocol.errors import ErrorCode
from brokers.security import acls as acl

MSGPACK_TYPES = ("application/x-msgpack", "application/msgpack", "application/vnd.msgpack")
BROKER_KEY: web.AppKey[HttpBroker] = web.AppKey("broker", HttpBroker)
READER_KEY: web.AppKey[ClusterReader] = web.AppKey("cluster_reader", ClusterReader)


def wants_msgpack(request: web.Request) -> bool:
    accept = request.headers.get("Accept", "").lower()
    return any(t in accept for t in MSGPACK_TYPES)


def respond(request: web.Request, data: Any, status: int = 200) -> web.Response:
    """``data`` as msgpack or JSON, as the request's Accept asks."""
    if wants_msgpack(request):
        return web.Response(body=pack(data), status=status,
                            content_type="application/x-msgpack")
    return web.Response(text=json.dumps(data, separators=(",", ":")), status=status, content_type="application/json")


def error(request: web.Request, status: int, message: str, **extra: Any) -> web.Response:
    return respond(request, {"error_code": status, "message": message, **extra}, status)


def readiness(broker: BrokerState) -> list[str]:
    """What keeps the broker from being ready (empty: ready)."""
    missing = []
    if broker.shutting_down:
        missing.append("shutting down")
    if broker.broker_epoch <= 0:
        missing.append("not registered in ZooKeeper")
    if not broker.zk.connected:
        missing.append("no ZooKeeper session")
    cache = broker.metadata_cache
    if cache.controller_id is None or broker.broker_id not in cache.live_brokers:
        missing.append("metadata not loaded (no UpdateMetadata naming this broker yet)")
    return missing


async def healthz(request: web.Request) -> web.Response:
    broker = request.app[BROKER_KEY]
    try:
        health = broker.health()
    except Exception as exc:  # noqa: BLE001 - the process is up even if describing it failed
        return web.json_response({"status": "up", "error": f"{type(exc).__name__}: {exc}"})
    return web.json_response({"status": "up", **health})


async def readyz(request: web.Request) -> web.Response:
    missing = readiness(request.app[BROKER_KEY])
    status = 200 if not missing else 503
    return respond(request, {"ready": not missing, "missing": missing}, status)


async def cluster(request: web.Request) -> web.Response:
    return respond(request, await request.app[READER_KEY].cluster())


async def brokers(request: web.Request) -> web.Response:
    return respond(request, {"brokers": request.app[READER_KEY].brokers()})


def visibility(request: web.Request) -> Visibility | None:
    """The caller's Describe rights on topics and groups; None when it may describe everything. Each name is
    decided once per request (a topic has a row per partition and per group that committed on it)."""
    if not request.app[SECURITY_KEY].restricts(auth.identity(request)):
        return None
    return Visibility(functools.cache(lambda name: auth.allowed(request, acl.DESCRIBE, acl.TOPIC, name)),
                      functools.cache(lambda name: auth.allowed(request, acl.DESCRIBE, acl.GROUP, name)),
                      functools.cache(lambda name: auth.allowed(request, acl.DESCRIBE, acl.TRANSACTIONAL_ID, name)))


def forbidden(request: web.Request, resource_type: int, name: str) -> web.Response:
    """403 with Kafka's TOPIC_/GROUP_/CLUSTER_AUTHORIZATION_FAILED."""
    kind = acl.RESOURCE_TYPE_NAMES[resource_type]
    code = {acl.TOPIC: ErrorCode.TOPIC_AUTHORIZATION_FAILED, acl.GROUP: ErrorCode.GROUP_AUTHORIZATION_FAILED}.get(
        resource_type, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    return error(request, 403, f"{auth.identity(request).principal} is not authorized to access {kind} {name!r}",
                 kafka_error=code.name)


async def _partitions(request: web.Request, topic: str | None) -> list[dict]:
    visible = visibility(request)
    rows = await request.app[READER_KEY].partitions(topic)
    return rows if visible is None else views.only_topics(rows, visible.topic)


async def topics(request: web.Request) -> web.Response:
    return respond(request, {"topics": await request.app[READER_KEY].topics(await _partitions(request, None))})


async def topic(request: web.Request) -> web.Response:
    name = request.match_info["topic"]
    if not auth.allowed(request, acl.DESCRIBE, acl.TOPIC, name):
        return forbidden(request, acl.TOPIC, name)
    reader = request.app[READER_KEY]
    partitions = await reader.partitions(name)
    if not partitions:
        return error(request, 404, f"topic {name!r} does not exist")
    (row,) = await reader.topics(partitions)
    return respond(request, {**row, "partition_details": partitions})


async def partitions(request: web.Request) -> web.Response:
    name = request.query.get("topic")
    if name is not None and not auth.allowed(request, acl.DESCRIBE, acl.TOPIC, name):
        return forbidden(request, acl.TOPIC, name)
    rows = await _partitions(request, name)
    if name is not None and not rows:
        return error(request, 404, f"topic {name!r} does not exist")
    return respond(request, {"partitions": rows})


async def groups(request: web.Request) -> web.Response:
    reader = request.app[READER_KEY]
    return respond(request, {"groups": await reader.groups(visible=visibility(request))})


async def group(request: web.Request) -> web.Response:
    group_id = request.match_info["group"]
    if not auth.allowed(request, acl.DESCRIBE, acl.GROUP, group_id):
        return forbidden(request, acl.GROUP, group_id)
    reader = request.app[READER_KEY]
    for row in await reader.groups(visible=visibility(request)):
        if row["group_id"] == group_id:
            return respond(request, row)
    return error(request, 404, f"group {group_id!r} is not known to any coordinator")


async def transactions(request: web.Request) -> web.Response:
    reader = request.app[READER_KEY]
    return respond(request, {"transactions": await reader.transactions(visible=visibility(request))})


def may_see_quotas(request: web.Request) -> bool:
    """DescribeConfigs on the cluster: what Kafka asks of DescribeClientQuotas."""
    return auth.allowed(request, acl.DESCRIBE_CONFIGS, acl.CLUSTER, acl.CLUSTER_NAME)


async def quotas(request: web.Request) -> web.Response:
    if not may_see_quotas(request):
        return forbidden(request, acl.CLUSTER, acl.CLUSTER_NAME)
    scope = request.query.get("scope", "broker")
    if scope == "cluster":
        return respond(request, await request.app[READER_KEY].quotas())
    if scope != "broker":
        return error(request, 400, f"scope {scope!r}: one of 'broker' (the default) or 'cluster'")
    broker = request.app[BROKER_KEY]
    return respond(request, quota_views.local_quotas(broker.quotas, broker.broker_id))


async def overview(request: web.Request) -> web.Response:
    reader = request.app[READER_KEY]
    return respond(request, await reader.overview(visibility(request), quotas=may_see_quotas(request)))


async def local(request: web.Request) -> web.Response:
    """One broker's own facts, for the others' fan-out: brokers, or principals that may describe the cluster."""
    if not auth.allowed(request, acl.DESCRIBE, acl.CLUSTER, acl.CLUSTER_NAME):
        return forbidden(request, acl.CLUSTER, acl.CLUSTER_NAME)
    what = request.match_info["what"]
    if what == "quotas" and not may_see_quotas(request):
        return forbidden(request, acl.CLUSTER, acl.CLUSTER_NAME)
    view = LOCAL_VIEWS.get(what)
    if view is None:
        return error(request, 404, f"no local view {what!r}: one of {sorted(LOCAL_VIEWS)}")
    return respond(request, view(request.app[BROKER_KEY]))


def add_admin_routes(app: web.Application, broker: HttpBroker) -> None:
    app[BROKER_KEY] = broker
    security = app[SECURITY_KEY]
    reader = app[READER_KEY] = ClusterReader(broker, security.control_secret, security.peer_tls)

    async def close_reader(_: web.Application) -> None:
        await reader.close()

    app.on_cleanup.append(close_reader)
    router = app.router
    router.add_get("/healthz", healthz)
    router.add_get("/readyz", readyz)
    for path, handler in (("cluster", cluster), ("brokers", brokers), ("topics", topics),
                          ("topics/{topic}", topic), ("partitions", partitions), ("groups", groups),
                          ("groups/{group}", group), ("transactions", transactions), ("quotas", quotas),
                          ("overview", overview),
                          ("local/{what}", local)):
        router.add_get(f"/api/v1/{path}", handler)
