"""Broker registration: the broker id, ``meta.properties`` and ``/brokers/ids/<id>`` (Kafka 2.8's
``KafkaServer.getOrGenerateBrokerId`` and ``checkpointBrokerMetadata``, ``KafkaZkClient.registerBroker``,
and the re-registration after a session expiry that Kafka's ``KafkaHealthcheck`` did).

Every log dir belongs to one broker id and one cluster: ``meta.properties`` records both, and a log dir
naming another stops start-up. ``broker.id=-1`` takes the id the log dirs record, else a generated one.
Registration creates the ephemeral ``/brokers/ids/<id>``; its creation zxid is the broker epoch
(KIP-380). An expired session takes the ephemeral with it: once a new session is up, registration is
retried until it succeeds (a broker that is not registered is invisible to the cluster), then the
watches that died with the old session are armed again.

At start-up a registration left by this broker's own previous incarnation (killed before its session
expired) is waited out rather than refused: ``prepare`` reads ``/brokers/ids/<id>`` before any socket of
this broker is bound, probes the stale endpoints and applies ``brokers.app.previous_incarnation.decide``
(the rule is in that module's docstring); the wait (a watch on the znode's deletion, bounded) runs
while the logs load, and ``register`` awaits it.
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from brokers.app.previous_incarnation import (
    Action,
    StaleRegistration,
    anyone_answering,
    decide,
    expiry_bound_s,
    probe_addresses,
)
from brokers.config import BrokerConfig, ConfigError
from brokers.model import BrokerInfo
from brokers.storage.checkpoints import read_meta_properties, write_meta_properties
from brokers.zk.client import DuplicateBrokerIdError, KafkaZkClient
from brokers.zk.errors import ZkError
from brokers.zk.gateway import SessionState

if TYPE_CHECKING:
    from brokers.app.broker_server import BrokerServer

log = logging.getLogger(__name__)

FIRST_RETRY_S, MAX_RETRY_S = 0.1, 5.0  # re-registration backs off exponentially between these


async def resolve_broker_id(config: BrokerConfig, kzc: KafkaZkClient) -> int:
    """``broker.id=-1``: the id in meta.properties if a log dir has one, else a generated one."""
    stored = {read_meta_properties(d).get("broker.id") for d in config.log_dirs} - {None}
    if len(stored) > 1:
        raise ConfigError(f"log.dirs disagree on broker.id in meta.properties: {sorted(stored)}")
    if stored:
        return int(stored.pop())
    if not config["broker.id.generation.enable"]:
        raise ConfigError(f"{config.source}: broker.id=-1 needs broker.id.generation.enable=true")
    return await kzc.generate_broker_id(config["reserved.broker.max.id"])


def check_meta_properties(config: BrokerConfig, broker_id: int, cluster_id: str | None) -> None:
    """Every log dir belongs to this broker id and this cluster, or start-up stops (Kafka's rule); a log
    dir without ``meta.properties`` gets one. A dir that cannot be read or written is skipped: it starts
    offline (KIP-112, the log manager's ``createAndValidateLogDirs``)."""
    for log_dir in config.log_dirs:
        try:
            log_dir.mkdir(parents=True, exist_ok=True)
            meta = read_meta_properties(log_dir)
        except OSError as exc:
            log.error("log dir %s is unusable (%s): it starts offline", log_dir, exc)
            continue
        if meta.get("cluster.id") not in (None, cluster_id):
            raise ConfigError(f"{log_dir}/meta.properties belongs to cluster {meta['cluster.id']}, but "
                              f"ZooKeeper's /cluster/id is {cluster_id}: wrong zookeeper.connect or log.dirs?")
        if meta.get("broker.id") not in (None, str(broker_id)):
            raise ConfigError(f"{log_dir}/meta.properties belongs to broker {meta['broker.id']}, "
                              f"not broker.id={broker_id}")
        if not meta:
            try:
                write_meta_properties(log_dir, broker_id, cluster_id or "")
            except OSError as exc:
                log.error("cannot write %s/meta.properties (%s): the dir starts offline", log_dir, exc)


class BrokerRegistration:
    """``/brokers/ids/<id>`` for one broker, kept across ZooKeeper sessions (``add_listener`` on the gateway)."""

    def __init__(self, broker: BrokerServer):
        self.broker = broker
        self._session_lost = False
        self._expiry: asyncio.Task[bool] | None = None  # waiting out our previous incarnation's session

    def broker_info(self) -> BrokerInfo:
        b = self.broker
        return BrokerInfo(b.broker_id, tuple(b.config.advertised_listeners), b.config["broker.rack"],
                          b.broker_epoch, b.http.port, b.http.scheme)

    async def prepare(self) -> None:
        """Before any listener binds: a registration in the way is waited out if it is this broker's
        previous incarnation, else start-up stops (``DuplicateBrokerIdError``)."""
        b = self.broker
        found = await b.kzc.get_broker_registration(b.broker_id)
        stale = StaleRegistration(*found) if found is not None else None
        if stale is None or stale.owner_session == b.zk.session_id:
            return
        answering = await anyone_answering(probe_addresses(stale.info))
        decision = decide(stale, b.zk.session_id, self.broker_info(), answering)
        if decision.action is Action.REFUSE:
            raise DuplicateBrokerIdError(
                f"broker id {b.broker_id} is already registered by another live broker (session "
                f"{stale.owner_session:#x}, endpoints {', '.join(map(str, stale.info.endpoints))}): "
                f"{decision.reason}; each broker needs its own broker.id")
        if decision.action is Action.WAIT:
            bound = expiry_bound_s(b.zk.session_timeout_ms)
            log.warning("broker %d: /brokers/ids/%d is this broker's previous incarnation (session %#x; %s); "
                        "waiting at most %.1f s for that session to expire before registering",
                        b.broker_id, b.broker_id, stale.owner_session, decision.reason, bound)
            self._expiry = asyncio.get_running_loop().create_task(
                b.kzc.wait_broker_deregistered(b.broker_id, stale.owner_session, bound))

    def cancel(self) -> None:
        """Shutdown before registration: stop waiting."""
        if self._expiry is not None:
            self._expiry.cancel()

    async def register(self) -> None:
        b = self.broker
        if self._expiry is not None:  # a registration that outlives the bound is refused just below
            expiry, self._expiry = self._expiry, None
            await expiry
        b.broker_epoch = await b.kzc.register_broker(self.broker_info())
        log.info("broker %d registered with epoch %d (cluster %s)", b.broker_id, b.broker_epoch, b.cluster_id)

    def on_session_state(self, state: SessionState) -> None:
        controller = self.broker.controller
        if state is SessionState.LOST:
            self._session_lost = True
            if controller is not None:
                controller.on_session_expired()  # queued now, ahead of anything a watch adds
        elif state is SessionState.CONNECTED and self._session_lost:
            self._session_lost = False
            self.broker.spawn(self._reregister())

    async def _reregister(self) -> None:
        """A new session: the old ephemerals are gone; register again (new epoch) and re-elect."""
        b = self.broker
        delay = FIRST_RETRY_S
        while not self._session_lost:
            try:
                b.broker_epoch = await b.kzc.register_broker(self.broker_info())
                break
            except ZkError as exc:
                log.error("broker %d: re-registration failed (%s); retrying in %.1f s", b.broker_id, exc, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, MAX_RETRY_S)
        else:
            return
        log.info("broker %d re-registered with epoch %d", b.broker_id, b.broker_epoch)
        self._rearm_watches()

    def _rearm_watches(self) -> None:
        b = self.broker
        b.credentials.clear()  # user changes may have been missed while the watch was gone
        b.config_listener.on_new_session()  # the /config/changes watch died with the old session
        if b.authorizer is not None:
            b.authorizer.on_new_session()  # so did the ACL change watches
        if b.controller is not None:
            b.controller.on_new_session()
