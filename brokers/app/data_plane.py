"""The data plane: one Kafka-protocol socket per listener, each answering with KafkaApis over a
ServerContext (Kafka's ``SocketServer`` data-plane acceptors and ``KafkaApis``, wired as
``KafkaServer.startup`` does).

Each ``listeners`` endpoint gets its own context: Metadata answers with that listener's advertised
endpoints, and its security protocol decides TLS (``ssl.*``, per-listener overrides), the principal
mapping rules and SASL (``listener.name.<l>.<mechanism>.sasl.jaas.config``). The group coordinator's
handlers (consumer_group) and the transaction coordinator's (transactions) join the broker's here, in the
composition root, with the coordinators and KIP-890's verification in the context.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from brokers.config import ConfigError
from brokers.model import EndPoint
from brokers.server import sasl
from brokers.server.apis import KafkaApis
from brokers.server.context import ServerContext
from brokers.server.listener import KafkaListener
from consumer_group.coordinator.handlers import HANDLERS as GROUP_HANDLERS
from transactions.coordinator.handlers import HANDLERS as TRANSACTION_HANDLERS

COORDINATOR_HANDLERS = {**GROUP_HANDLERS, **TRANSACTION_HANDLERS}  # InitProducerId: the transaction coordinator's

if TYPE_CHECKING:
    from brokers.app.broker_server import BrokerServer


def kafka_listener(broker: BrokerServer, endpoint: EndPoint) -> KafkaListener:
    """The KafkaListener of one ``listeners`` endpoint, not started yet."""
    b = broker
    txn = b.transactions
    context = ServerContext(b.broker_id, b.config, b.metadata_cache, b.replica_manager,
                            lambda: b.cluster_id, b.admin, endpoint.listener,
                            coordinator_partition=b.group_coordinator.partition_for,
                            group_coordinator=b.group_coordinator,
                            transaction_partition=txn.coordinator.partition_for if txn else None,
                            transaction_coordinator=txn.coordinator if txn else None,
                            verify_transaction=txn.verify_transaction if txn else None, stats=b.stats,
                            reassignments=b.control_plane,
                            elect_leaders=b.control_plane.elect_leaders, authorizer=b.authorizer,
                            sasl=_sasl_listener_config(b, endpoint), user_configs=b,
                            fetch_sessions=b.fetch_sessions, quota_configs=b, quotas=b.quotas)
    return KafkaListener(KafkaApis(context, COORDINATOR_HANDLERS).handle, endpoint.host, endpoint.port,
                         b.config["socket.request.max.bytes"], listener_name=endpoint.listener,
                         security_protocol=endpoint.security_protocol,
                         ssl_context=b.tls_contexts.get(endpoint.listener),
                         principal_mapper=b.principal_mappers.get(endpoint.listener))


def _sasl_listener_config(broker: BrokerServer, endpoint: EndPoint):
    try:
        return sasl.listener_config(broker.config, endpoint.listener, endpoint.security_protocol,
                                    broker.credentials.fresh)  # each login reads ZooKeeper
    except ValueError as exc:
        raise ConfigError(f"{broker.config.source}: {exc}") from None
