"""``ZkafkaContainer``: one zkafka broker and its own ZooKeeper in one container, the shape of
testcontainers' ``KafkaContainer``."""
from __future__ import annotations

from collections.abc import Mapping

from zkafka.engine import DockerContainer, docker_host_address

from zkafka.images import broker_image, require_image
from zkafka.testing.defaults import LABELS
from zkafka.testing.logs import container_logs
from zkafka.testing.ports import free_ports
from zkafka.testing.properties import property_env
from zkafka.testing.readiness import wait_for_acknowledged_produce

# A single broker's cluster: internal topics of one replica, and no wait before a new group's first rebalance.
SINGLE_BROKER_PROPERTIES = {
    "broker.id": "1",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
}


class ContainerNotReady(RuntimeError):
    """The container started but no produce was acknowledged in time; the message carries its logs."""


class ZkafkaContainer(DockerContainer):
    """A zkafka broker with its own ZooKeeper in one container (the image's ``standalone`` command).

    ::

        with ZkafkaContainer() as kafka:
            producer = Producer({"bootstrap.servers": kafka.get_bootstrap_server()})

    ``start()`` returns once a produce with ``acks=all`` was acknowledged (a probe topic, deleted again), not
    when a log line appears. The Kafka listener is published on ``port`` (a free one by default) and bound
    inside the container on the same number, so the address it advertises works from the host.

    ``properties`` / ``with_property(key, value)`` override broker properties (Kafka's names, e.g.
    ``"num.partitions"``); ``with_env`` sets any environment variable (``KAFKA_*`` ones are broker
    properties the way Confluent's images read them). ``image`` defaults to ``zkafka:<version>``
    (``ZKAFKA_IMAGE``); a missing image raises ``zkafka.images.ImageNotFound``, which names
    ``zkafka images build``.
    """

    def __init__(self, image: str | None = None, port: int | None = None,
                 properties: Mapping[str, object] | None = None, **kwargs) -> None:
        super().__init__(image or broker_image(), **kwargs)
        self.port = port
        self.properties: dict[str, object] = {**SINGLE_BROKER_PROPERTIES, **(properties or {})}
        self.ready_seconds: float | None = None
        self.with_command("standalone")

    def with_property(self, key: str, value: object) -> "ZkafkaContainer":
        """Override one broker property (``server.properties`` name)."""
        self.properties[key] = value
        return self

    def get_bootstrap_server(self) -> str:
        """``host:port`` of the Kafka listener, for ``bootstrap.servers``."""
        if self.port is None:
            raise RuntimeError("the container is not started: no port yet")
        return f"{docker_host_address(self.get_docker_client())}:{self.port}"

    def start(self, timeout: float = 60) -> "ZkafkaContainer":
        require_image(self.image)
        self.port = self.port or free_ports(1)[0]
        host = docker_host_address(self.get_docker_client())
        env = {"KAFKA_LISTENERS": f"PLAINTEXT://0.0.0.0:{self.port}",
               "KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://{host}:{self.port}", **property_env(self.properties)}
        for name, value in env.items():
            self.env.setdefault(name, value)
        self._kwargs["labels"] = {**self._kwargs.get("labels", {}), **LABELS}
        self.with_bind_ports(self.port, self.port)
        try:
            super().start()
            self.ready_seconds = wait_for_acknowledged_produce(self.get_bootstrap_server(), timeout)
        except Exception as exc:
            logs = self.logs() if self._container is not None else "(the container did not start)"
            self.stop()
            self._container = None  # a context manager's __exit__ stops it again: nothing left to remove
            raise ContainerNotReady(f"zkafka container not ready: {exc}\n{logs}") from exc
        return self

    def logs(self, tail: int = 200) -> str:
        """The container's last ``tail`` lines (broker and ZooKeeper, ZooKeeper's prefixed ``zookeeper|``),
        after its notable lines (warnings, errors)."""
        return container_logs({"zkafka": self.get_wrapped_container()}, tail)
