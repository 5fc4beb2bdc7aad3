"""The transaction coordinator's settings: a view of the broker config (Kafka's ``TransactionConfig``, which
``TransactionCoordinator.apply`` builds from ``KafkaConfig``). Each field's key and default are the broker
schema's (``brokers.config.SCHEMA``); ``from_broker`` reads them from a broker config."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from brokers.config import from_schema, schema_field

MARKER_RETRY_BACKOFF_MS = 100  # between attempts to write a Complete* record the log refused as unavailable
LOAD_RETRY_BACKOFF_MS = 100  # the first wait before reading a partition again whose load failed; doubles each time
LOAD_RETRY_MAX_BACKOFF_MS = 10_000


@dataclass(frozen=True)
class TransactionConfig:
    transactional_id_expiration_ms: int = schema_field("transactional.id.expiration.ms")
    transaction_max_timeout_ms: int = schema_field("transaction.max.timeout.ms")
    transaction_log_num_partitions: int = schema_field("transaction.state.log.num.partitions")
    transaction_log_replication_factor: int = schema_field("transaction.state.log.replication.factor")
    transaction_log_segment_bytes: int = schema_field("transaction.state.log.segment.bytes")
    transaction_log_load_buffer_size: int = schema_field("transaction.state.log.load.buffer.size")
    transaction_log_min_isr: int = schema_field("transaction.state.log.min.isr")
    abort_timed_out_transactions_interval_ms: int = schema_field(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms")
    remove_expired_transactional_ids_interval_ms: int = schema_field(
        "transaction.remove.expired.transaction.cleanup.interval.ms")
    partition_verification_enable: bool = schema_field("transaction.partition.verification.enable")
    marker_retry_backoff_ms: int = MARKER_RETRY_BACKOFF_MS  # not a broker config in Kafka either
    load_retry_backoff_ms: int = LOAD_RETRY_BACKOFF_MS
    load_retry_max_backoff_ms: int = LOAD_RETRY_MAX_BACKOFF_MS

    @classmethod
    def from_broker(cls, config: Mapping[str, Any] | Any) -> "TransactionConfig":
        """From a broker config (anything indexable by Kafka's keys)."""
        return from_schema(cls, config)

    def valid_timeout(self, transaction_timeout_ms: int) -> bool:
        """Kafka's ``validateTransactionTimeoutMs``: positive and at most ``transaction.max.timeout.ms``."""
        return 0 < transaction_timeout_ms <= self.transaction_max_timeout_ms
