"""The composition root: the only package that wires every other together (the broker's own packages,
the controller from ``coordinator``, the group coordinator from ``consumer_group`` and the transaction
coordinator from ``transactions``).

``BrokerServer`` (``broker_server``, Kafka's KafkaServer) runs one broker's start-up and shutdown;
``registration`` keeps its broker id, ``meta.properties`` and ``/brokers/ids/<id>``; ``config_handlers``
applies configs changed live (DynamicConfigManager's handlers); ``control_plane`` applies the
controller's requests and serves ``/healthz``; ``data_plane`` opens the Kafka-protocol listeners;
``transaction_wiring`` builds the transaction coordinator over ``transaction_log`` (``__transaction_state``
through the replica manager) and answers KIP-890's verifications.
"""
from brokers.app.broker_server import BrokerServer

__all__ = ["BrokerServer"]
