"""ClusterReader: the whole cluster's state as any one broker can assemble it.

The metadata cache gives topics, partitions, leaders, ISRs and live brokers; ZooKeeper gives the
controller epoch and topic configs; every live broker is asked (concurrently, ``LOCAL_TIMEOUT_S`` each)
for its local facts over ``GET /api/v1/local/partitions``, ``/groups``, ``/transactions`` and ``/quotas``
(msgpack). A broker that does not answer in time leaves its facts unknown (None), it does not fail the view.
"""
from __future__ import annotations

import asyncio
import logging
import ssl
import time
from typing import Any, Callable, NamedTuple

import aiohttp

from brokers.control import control_base_url, unpack
from brokers.http import quota_views, views
from brokers.http.ports import BrokerState
from brokers.model import BrokerInfo
from brokers.security.control_auth import signed_headers

log = logging.getLogger(__name__)

LOCAL_TIMEOUT_S = 2.0
MSGPACK = "application/x-msgpack"
FORWARDED = "X-Zkafka-Forwarded-By"  # set on requests one broker sends another for a client


def local_groups(broker: BrokerState) -> list[dict]:
    return broker.group_views()


def local_transactions(broker: BrokerState) -> list[dict]:
    return views.local_transactions(broker.transaction_view(), broker.broker_id)


def local_partitions(broker: BrokerState) -> list[dict]:
    manager = broker.replica_manager
    return views.local_partitions(manager.partitions) if manager is not None else []


def local_quotas(broker: BrokerState) -> dict:
    return quota_views.local_quotas(broker.quotas, broker.broker_id)


class Visibility(NamedTuple):
    """What a caller may describe (``brokers.http.auth``): the views leave out everything else."""

    topic: Callable[[str], bool]
    group: Callable[[str], bool]
    transactional_id: Callable[[str], bool] = lambda name: True


LOCAL_VIEWS: dict[str, Callable[[BrokerState], Any]] = {"partitions": local_partitions,
                                                        "groups": local_groups,
                                                        "transactions": local_transactions,
                                                        "quotas": local_quotas}


class ClusterReader:
    def __init__(self, broker: BrokerState, secret: bytes | None = None, ssl_context: ssl.SSLContext | None = None):
        self.broker = broker
        self.secret = secret  # the control-plane secret: the fan-out is broker-to-broker
        self.ssl_context = ssl_context  # verifies other brokers' https ports (http.ssl.enabled)
        self._session: aiohttp.ClientSession | None = None

    def session(self) -> aiohttp.ClientSession:
        """The fan-out's (and the REST proxy's forwarding) session to other brokers."""
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(ssl=self.ssl_context) if self.ssl_context is not None else None
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=LOCAL_TIMEOUT_S),
                                                  connector=connector)
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    # -- fan-out -------------------------------------------------------------------------------
    async def _ask(self, info: BrokerInfo, what: str) -> Any:
        try:
            path = f"/api/v1/local/{what}"
            headers = {"Accept": MSGPACK, **signed_headers(self.secret, "GET", path)}
            async with self.session().get(control_base_url(info) + path, headers=headers) as response:
                if response.status != 200:
                    log.info("broker %d answered %s with HTTP %d", info.id, path, response.status)
                    return None
                return unpack(await response.read())
        except (aiohttp.ClientError, asyncio.TimeoutError, ValueError) as exc:
            log.info("broker %d did not answer /api/v1/local/%s: %r", info.id, what, exc)
            return None

    async def gather(self, what: str) -> dict[int, Any]:
        """``what`` (a ``LOCAL_VIEWS`` name: a list of rows, or for "quotas" one dict) of every live broker; None
        for one that did not answer."""
        own = self.broker.broker_id
        others = [info for broker_id, info in sorted(self.broker.metadata_cache.live_brokers.items())
                  if broker_id != own]
        answers = await asyncio.gather(*(self._ask(info, what) for info in others))
        out = {info.id: answer for info, answer in zip(others, answers)}
        out[own] = LOCAL_VIEWS[what](self.broker)
        return out

    # -- views ---------------------------------------------------------------------------------
    async def cluster(self) -> dict:
        broker = self.broker
        try:
            epoch, _ = await broker.kzc.get_controller_epoch()
        except Exception as exc:  # noqa: BLE001 - ZooKeeper unreachable: show what the cache knows
            log.info("controller epoch unreadable: %r", exc)
            epoch = broker.replica_manager.controller_epoch if broker.replica_manager else None
        cache = broker.metadata_cache
        return {"cluster_id": broker.cluster_id, "controller_id": cache.controller_id, "controller_epoch": epoch,
                "brokers": sorted(cache.live_brokers), "answered_by": broker.broker_id,
                "time_ms": int(time.time() * 1000)}

    async def partitions(self, topic: str | None = None) -> list[dict]:
        cache = self.broker.metadata_cache
        facts = views.leaders_facts(await self.gather("partitions"))
        return views.partition_rows(cache.partitions, cache.live_brokers, facts, topic)

    async def topic_configs(self, topics: list[str]) -> dict[str, dict[str, str]]:
        async def one(topic: str) -> dict[str, str]:
            try:
                return await self.broker.kzc.get_topic_config(topic)
            except Exception as exc:  # noqa: BLE001 - ZooKeeper trouble: the topic shows no overrides
                log.info("config of topic %s unreadable: %r", topic, exc)
                return {}
        configs = await asyncio.gather(*(one(t) for t in topics))
        return dict(zip(topics, configs))

    async def topics(self, partitions: list[dict] | None = None) -> list[dict]:
        partitions = await self.partitions() if partitions is None else partitions
        names = sorted({row["topic"] for row in partitions})
        return views.topic_rows(partitions, await self.topic_configs(names))

    def brokers(self) -> list[dict]:
        """From the metadata cache alone: no broker needs asking."""
        cache = self.broker.metadata_cache
        return views.broker_rows(cache.live_brokers, cache.controller_id, cache.partitions.values())

    async def groups(self, partitions: list[dict] | None = None, visible: Visibility | None = None) -> list[dict]:
        partitions, by_broker = await asyncio.gather(
            self.partitions() if partitions is None else _done(partitions), self.gather("groups"))
        merged = [group for rows in by_broker.values() for group in rows or ()]
        if visible is not None:
            merged = views.only_groups(merged, visible.group, visible.topic)
        return views.with_lag(merged, partitions)

    async def transactions(self, visible: Visibility | None = None) -> list[dict]:
        rows = views.transaction_rows(await self.gather("transactions"))
        if visible is not None:
            rows = views.only_topics(rows, visible.transactional_id, key="transactional_id")
        return rows

    async def quotas(self) -> dict:
        """Every broker's client quotas (``quota_views.cluster_quotas``). While this broker has no quota
        configured nobody is asked: the configuration is the cluster's (every broker reads the same znodes), and
        a broker with none measures nothing."""
        if not self.broker.quotas.enabled:
            return quota_views.cluster_quotas({self.broker.broker_id: local_quotas(self.broker)})
        return quota_views.cluster_quotas(await self.gather("quotas"))

    async def overview(self, visible: Visibility | None = None, quotas: bool = True) -> dict:
        """Everything in one answer; with ``visible``, only the topics and groups the caller may describe; the
        client quotas only with ``quotas`` (else None: the caller may not describe the cluster's configs)."""
        partitions = await self.partitions()
        if visible is not None:
            partitions = views.only_topics(partitions, visible.topic)
        cluster, topics, groups, transactions, quota_view = await asyncio.gather(
            self.cluster(), self.topics(partitions), self.groups(partitions, visible), self.transactions(visible),
            self.quotas() if quotas else _done(None))
        return {"cluster": cluster, "brokers": self.brokers(), "topics": topics,
                "partitions": partitions, "groups": groups, "transactions": transactions, "quotas": quota_view}


async def _done(value: Any) -> Any:
    return value
