"""BrokerConfig: a Kafka-style ``server.properties`` with Kafka's key names and defaults.

Every key is declared once in ``SCHEMA`` (type, default), in ``schema``. An unknown key or a value of the
wrong type raises ``ConfigError`` naming the key and the file line (``broker_config``: ``BrokerConfig``,
``parse_properties``). The components' own settings (``GroupConfig``, ``LogManagerConfig``,
``FetcherConfig``: Kafka builds each from ``KafkaConfig``) are views of this schema: their fields are
``schema_field(key)``, whose default is the schema's, and ``from_schema(cls, config)`` reads them from a
broker config, so a default lives only in ``SCHEMA``. Broker-level ``log.*`` defaults are translated to
topic-level keys (``log.segment.bytes`` -> ``segment.bytes``) in ``log_defaults`` so that ``brokers.app``
can build the storage layer's LogConfig without this package importing it. Import every name from
``brokers.config``.
"""
from brokers.config.broker_config import BrokerConfig, ConfigError, parse_properties
from brokers.config.schema import (
    HTTP_AUTHENTICATION_METHODS,
    HTTP_SSL_KEYS,
    LOG_KEYS,
    MIN_CONTROL_SECRET_CHARS,
    PER_LISTENER,
    SASL_JAAS_KEY,
    SCHEMA,
    SENSITIVE_KEYS,
    from_schema,
    is_sensitive,
    schema_field,
)

__all__ = ["HTTP_AUTHENTICATION_METHODS", "HTTP_SSL_KEYS", "LOG_KEYS", "MIN_CONTROL_SECRET_CHARS", "PER_LISTENER",
           "SASL_JAAS_KEY", "SCHEMA", "SENSITIVE_KEYS", "BrokerConfig", "ConfigError", "from_schema", "is_sensitive",
           "parse_properties", "schema_field"]
