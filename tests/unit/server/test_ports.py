"""The ports are honoured structurally: ``brokers.app.BrokerServer`` has every member of ``HttpBroker`` (and
its parts have those of the narrow views), ``ServerContext`` every member the group handlers use, and the
AclAuthorizer every member of ``AclAdmin``. Nothing here starts a broker: only constructed objects are read."""
from __future__ import annotations

import typing

import pytest

from brokers.app import BrokerServer
from brokers.config import BrokerConfig
from brokers.http.ports import GroupCoordinatorView, HttpBroker, ZkSessionView
from brokers.server.context import AclAdmin, ServerContext
from consumer_group.coordinator.handlers import GroupApiContext


def members(protocol: type) -> set[str]:
    names: set[str] = set()
    for klass in protocol.__mro__:
        if klass not in (typing.Protocol, typing.Generic, object):
            names |= {n for n in vars(klass) if not n.startswith("_")} | set(getattr(klass, "__annotations__", {}))
    return names


@pytest.fixture(scope="module")
def broker(tmp_path_factory) -> BrokerServer:
    config = BrokerConfig.from_properties({"broker.id": "1", "zookeeper.connect": "127.0.0.1:1",
                                           "log.dirs": str(tmp_path_factory.mktemp("logs")),
                                           "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})
    return BrokerServer(config)


def test_the_broker_is_what_the_http_layer_asks_for(broker):
    assert members(HttpBroker) >= {"health", "leader_and_isr", "metadata_cache", "zk", "group_views"}
    assert [m for m in sorted(members(HttpBroker)) if not hasattr(broker, m)] == []
    assert [m for m in sorted(members(ZkSessionView)) if not hasattr(broker.zk, m)] == []
    assert [m for m in sorted(members(GroupCoordinatorView)) if not hasattr(broker.group_coordinator, m)] == []


def test_the_acl_authorizer_is_the_acl_admin_the_acl_apis_ask_for(broker):
    assert [m for m in sorted(members(AclAdmin)) if not hasattr(broker.authorizer, m)] == []


def test_the_server_context_is_what_the_group_handlers_ask_for():
    context = ServerContext(1, None, None, None, lambda: None, None)
    assert [m for m in sorted(members(GroupApiContext)) if not hasattr(context, m)] == []
