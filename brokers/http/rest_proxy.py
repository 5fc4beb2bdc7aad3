"""A REST proxy in the style of Confluent's, on every broker's HTTP port.

===================================================== ==============================================
POST /api/v1/topics/{topic}/records                   records to a topic: each goes to its
                                                      ``partition``, else the key's murmur2 partition
                                                      (Kafka's default partitioner), else round robin
POST /api/v1/topics/{topic}/partitions/{p}/records    records to one partition
GET  /api/v1/topics/{topic}/partitions/{p}/records    records from ``?offset=`` (default: log start),
     ?offset=&max_bytes=&encoding=auto|base64&         at most ``max_bytes`` of log (default 1 MiB,
     timeout_ms=                                       first batch whole); ``timeout_ms`` > 0 waits
                                                      that long for records when there are none yet
===================================================== ==============================================

Bodies and record formats are ``brokers.http.records_body``'s (JSON or msgpack by ``Content-Type``;
answers JSON or msgpack by ``Accept``). A produce answers ``{"offsets": [{"partition", "offset",
"error_code", "error"}...]}`` in request order, appended with acks=all; a read answers ``{"topic",
"partition", "records", "next_offset", "high_watermark", "log_start_offset"}``.

Not the leader: the request is forwarded to the partition's leader (its HTTP port, from the metadata
cache) and its answer passed back, once: a forwarded request that meets a non-leader answers 503.
The caller (``brokers.http.auth``) needs Write on the topic to produce and Read to consume, else 403 with
``kafka_error`` TOPIC_AUTHORIZATION_FAILED and nothing written or read; a forwarded request carries the
caller's ``Authorization`` to the leader, which checks again.
Errors: a bad body or parameter is 400 naming the field; an unknown topic or partition 404; an
internal topic 403; an offset out of range 416; not enough replicas 503; an ISR that does not
acknowledge in ``request.timeout.ms`` 504.
"""
from __future__ import annotations

import asyncio
import itertools
from typing import Any

import aiohttp
from aiohttp import web

from brokers.control import control_base_url, pack, unpack
from brokers.http import auth, partition_io, records_body
from brokers.http.admin_api import BROKER_KEY, READER_KEY, error, respond, wants_msgpack
from brokers.http.cluster_reader import FORWARDED, MSGPACK
from brokers.http.partition_io import ProxyError
from brokers.model import INTERNAL_TOPICS, TopicPartition
from brokers.protocol.errors import ErrorCode
from brokers.security import acls as acl

DEFAULT_MAX_BYTES = 1024 * 1024
MAX_MAX_BYTES = 64 * 1024 * 1024
MAX_WAIT_MS = 30_000
PRODUCE_TIMEOUT_S = 30.0
ROUND_ROBIN_KEY: web.AppKey[itertools.count] = web.AppKey("round_robin", itertools.count)


def _int_param(request: web.Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise records_body.BodyError(name, f"must be an integer, got {raw!r}") from None
    if not low <= value <= high:
        raise records_body.BodyError(name, f"must be in [{low}, {high}], got {value}")
    return value


def _partitions_of(request: web.Request, topic: str, operation: int) -> int:
    """The topic's partition count; raises ProxyError when the caller may not do ``operation`` on it (Write to
    produce, Read to consume), or for an unknown or internal topic."""
    if not auth.allowed(request, operation, acl.TOPIC, topic):
        raise ProxyError(ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                         f"{auth.identity(request).principal} is not authorized to access Topic {topic!r}")
    if topic in INTERNAL_TOPICS:
        raise ProxyError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"topic {topic!r} is internal")
    count = len(request.app[BROKER_KEY].metadata_cache.partitions_of(topic))
    if not count:
        raise ProxyError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic!r} does not exist")
    return count


def _partition_param(request: web.Request, count: int) -> int:
    raw = request.match_info["partition"]
    if not raw.isdigit() or int(raw) >= count:
        raise ProxyError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                         f"partition {raw!r} does not exist (the topic has {count})")
    return int(raw)


def _proxy_error(request: web.Request, exc: Exception) -> web.Response:
    if isinstance(exc, records_body.BodyError):
        return respond(request, exc.to_dict(), 400)
    assert isinstance(exc, ProxyError)
    return error(request, exc.status, str(exc), kafka_error=exc.code.name)


# -- forwarding to the leader ------------------------------------------------------------------
def _leader_url(request: web.Request, tp: TopicPartition) -> str | None:
    """The leader's URL for this request, or None when this broker is the leader (or was forwarded to)."""
    broker = request.app[BROKER_KEY]
    state = broker.metadata_cache.partitions.get(tp)
    if state is None or state.leader == broker.broker_id or FORWARDED in request.headers:
        return None
    info = broker.metadata_cache.live_brokers.get(state.leader)
    if info is None or info.http_port is None:
        raise ProxyError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"{tp} has no live leader")
    return f"{control_base_url(info)}/api/v1/topics/{tp.topic}/partitions/{tp.partition}/records"


async def _forward(request: web.Request, method: str, url: str, **kwargs: Any) -> aiohttp.ClientResponse:
    broker = request.app[BROKER_KEY]
    headers = {FORWARDED: str(broker.broker_id), **kwargs.pop("headers", {})}
    if "Authorization" in request.headers:  # the leader authenticates and authorizes the caller again
        headers["Authorization"] = request.headers["Authorization"]
    session = request.app[READER_KEY].session()
    timeout = aiohttp.ClientTimeout(total=PRODUCE_TIMEOUT_S + MAX_WAIT_MS / 1000 + 5)
    try:
        return await session.request(method, url, headers=headers, timeout=timeout, **kwargs)
    except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
        raise ProxyError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"the leader at {url} did not answer: {exc!r}") from None


# -- produce -----------------------------------------------------------------------------------
def _assign_partitions(request: web.Request, topic: str, records: list, count: int, fixed: int | None) -> list[int]:
    counter = request.app[ROUND_ROBIN_KEY]
    out = []
    for i, record in enumerate(records):
        if fixed is not None:
            out.append(fixed)
        elif record.partition is not None:
            if record.partition >= count:
                raise records_body.BodyError(f"records[{i}].partition",
                                             f"topic {topic!r} has {count} partitions, not {record.partition + 1}")
            out.append(record.partition)
        else:
            out.append(records_body.choose_partition(record.key, count, next(counter)))
    return out


async def _produce_to(request: web.Request, tp: TopicPartition, records: list) -> list[dict]:
    """Append to one partition (here, or at its leader): one offsets entry per record."""
    url = _leader_url(request, tp)
    if url is None:
        broker = request.app[BROKER_KEY]
        first = await partition_io.append(broker.replica_manager, broker.stats, tp, records, PRODUCE_TIMEOUT_S)
        return [{"partition": tp.partition, "offset": first + i, "error_code": None, "error": None}
                for i in range(len(records))]
    body = pack({"records": [{"key": r.key, "value": r.value, "timestamp": r.timestamp_ms,
                                       "headers": [{"key": k, "value": v} for k, v in r.headers]}
                                      for r in records]})
    async with await _forward(request, "POST", url, data=body,
                              headers={"Content-Type": MSGPACK, "Accept": MSGPACK}) as response:
        raw = await response.read()
    try:
        answer = unpack(raw)
        if response.status == 200:
            return answer["offsets"]
        code = ErrorCode.__members__.get(answer.get("kafka_error", ""), ErrorCode.UNKNOWN_SERVER_ERROR)
        message = answer.get("message", "")
    except (ValueError, KeyError, AttributeError):
        code, message = ErrorCode.UNKNOWN_SERVER_ERROR, raw[:200].decode(errors="replace")
    raise ProxyError(code, f"the leader answered HTTP {response.status}: {message}")


async def _produce(request: web.Request, fixed_partition: bool) -> web.Response:
    topic = request.match_info["topic"]
    try:
        count = _partitions_of(request, topic, acl.WRITE)
        fixed = _partition_param(request, count) if fixed_partition else None
        url = _leader_url(request, TopicPartition(topic, fixed)) if fixed is not None else None
        if url is not None:  # one partition led elsewhere: its leader parses the body, as it is
            return await _pass_through(request, url)
        records = records_body.parse_produce_body(await request.read(), request.headers.get("Content-Type"))
        partitions = _assign_partitions(request, topic, records, count, fixed)
    except (records_body.BodyError, ProxyError) as exc:
        return _proxy_error(request, exc)
    groups: dict[int, list[int]] = {}
    for index, partition in enumerate(partitions):
        groups.setdefault(partition, []).append(index)
    outcomes = await asyncio.gather(*(_produce_to(request, TopicPartition(topic, p), [records[i] for i in idx])
                                      for p, idx in groups.items()), return_exceptions=True)
    offsets: list[dict | None] = [None] * len(records)
    failures = []
    for (partition, indexes), outcome in zip(groups.items(), outcomes):
        if isinstance(outcome, BaseException):
            if not isinstance(outcome, ProxyError):
                raise outcome
            failures.append(outcome)
            outcome = [{"partition": partition, "offset": -1, "error_code": int(outcome.code), "error": str(outcome)}
                       for _ in indexes]
        for i, entry in zip(indexes, outcome):
            offsets[i] = entry
    if failures and len(failures) == len(groups):
        return respond(request, {"error_code": failures[0].status, "message": str(failures[0]),
                                 "kafka_error": failures[0].code.name, "offsets": offsets}, failures[0].status)
    return respond(request, {"offsets": offsets})


async def produce_topic(request: web.Request) -> web.Response:
    return await _produce(request, fixed_partition=False)


async def produce_partition(request: web.Request) -> web.Response:
    return await _produce(request, fixed_partition=True)


# -- consume -----------------------------------------------------------------------------------
async def consume(request: web.Request) -> web.StreamResponse:
    topic = request.match_info["topic"]
    try:
        tp = TopicPartition(topic, _partition_param(request, _partitions_of(request, topic, acl.READ)))
        max_bytes = _int_param(request, "max_bytes", DEFAULT_MAX_BYTES, 1, MAX_MAX_BYTES)
        wait_ms = _int_param(request, "timeout_ms", 0, 0, MAX_WAIT_MS)
        encoding = request.query.get("encoding", "auto")
        if encoding not in ("auto", "base64"):
            raise records_body.BodyError("encoding", f"must be auto or base64, got {encoding!r}")
        url = _leader_url(request, tp)
        if url is not None:
            return await _pass_through(request, url)
        return respond(request, await _read(request, tp, max_bytes, wait_ms, encoding))
    except (records_body.BodyError, ProxyError) as exc:
        return _proxy_error(request, exc)


async def _pass_through(request: web.Request, url: str) -> web.Response:
    """The leader's answer to this very request (method, query, body and content type unchanged)."""
    headers = {"Accept": request.headers.get("Accept", "application/json")}
    body = None
    if request.method == "POST":
        body = await request.read()
        headers["Content-Type"] = request.headers.get("Content-Type", "application/json")
    async with await _forward(request, request.method, url, params=request.query, data=body,
                              headers=headers) as response:
        return web.Response(body=await response.read(), status=response.status,
                            content_type=response.content_type)


async def _read(request: web.Request, tp: TopicPartition, max_bytes: int, wait_ms: int, encoding: str) -> dict:
    manager = request.app[BROKER_KEY].replica_manager
    partition = partition_io.led_partition(manager, tp)
    offset = _int_param(request, "offset", partition.log.log_start_offset, 0, 2 ** 63 - 1)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_ms / 1000
    while True:
        moved = loop.create_future()
        partition.watch_high_watermark(moved)  # before reading: records below the HW only
        file_range, high_watermark, log_start = partition_io.read_range(manager, tp, offset, max_bytes)
        remaining = deadline - loop.time()
        if file_range is not None or remaining <= 0:
            break
        try:
            await asyncio.wait_for(moved, remaining)
        except asyncio.TimeoutError:
            pass
    records = []
    if file_range is not None:
        data = await asyncio.to_thread(file_range.read)
        records = await asyncio.to_thread(partition_io.decode_range, data, offset, high_watermark)
    rendered = (records_body.render_records_msgpack(records) if wants_msgpack(request)
                else records_body.render_records(records, encoding=encoding))
    next_offset = records[-1].offset + 1 if records else offset
    return {"topic": tp.topic, "partition": tp.partition, "records": rendered, "next_offset": next_offset,
            "high_watermark": high_watermark, "log_start_offset": log_start}


def add_proxy_routes(app: web.Application) -> None:
    app[ROUND_ROBIN_KEY] = itertools.count()
    app.router.add_post("/api/v1/topics/{topic}/records", produce_topic)
    app.router.add_post("/api/v1/topics/{topic}/partitions/{partition}/records", produce_partition)
    app.router.add_get("/api/v1/topics/{topic}/partitions/{partition}/records", consume)
