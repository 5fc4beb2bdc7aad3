"""ControllerMutations: KIP-599's controller mutation quota for one CreateTopics, CreatePartitions or DeleteTopics
request (Kafka's ``StrictControllerMutationQuota`` / ``PermissiveControllerMutationQuota``).

A mutation is one partition created or deleted. From CreateTopics v6, CreatePartitions v3 and DeleteTopics v5
the quota is *strict*: while the client's token bucket is below zero, a topic is refused with
THROTTLING_QUOTA_EXCEEDED (89) and the response carries the time until the bucket is back at zero; a topic that
finds credits is taken whole, however many partitions it has. Older versions cannot say THROTTLING_QUOTA_EXCEEDED,
so their quota is *permissive*: every topic goes ahead and the response carries the throttle time (the
connection is muted for it, as for any quota). Credits are taken before the ZooKeeper write, with no await
between the check and the take, and given back if the write fails (Kafka records right before its write).
"""
from __future__ import annotations

from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.protocol.framing import RequestHeader
from brokers.server.context import REQUEST_THROTTLE, ServerContext

THROTTLED_MESSAGE = "The throttling quota has been exceeded."


class ControllerMutations:
    def __init__(self, context: ServerContext, header: RequestHeader, first_strict_version: int):
        self.manager = context.quotas.controller_mutation
        self.throttle = REQUEST_THROTTLE.get()
        self.strict = header.api_version >= first_strict_version
        self.active = self.throttle is not None and self.manager.enabled

    def take(self, permits: int) -> None:
        """Take ``permits`` mutations now; KafkaError THROTTLING_QUOTA_EXCEEDED if a strict quota refuses them."""
        if not self.active or permits <= 0:
            return
        throttle = self.throttle
        assert throttle is not None
        throttle_ms = self.manager.record_mutations(throttle.user, throttle.client_id, permits, self.strict)
        throttle.charge(self.manager, throttle_ms)
        if self.strict and throttle_ms:
            raise KafkaError(THROTTLED_MESSAGE, code=ErrorCode.THROTTLING_QUOTA_EXCEEDED)

    def give_back(self, permits: int) -> None:
        """The mutations taken did not happen (the write failed): their credits return."""
        if self.active and permits > 0:
            throttle = self.throttle
            assert throttle is not None
            self.manager.record_mutations(throttle.user, throttle.client_id, -permits, strict=False)
