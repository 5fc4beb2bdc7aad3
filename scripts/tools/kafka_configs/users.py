"""``kafka-configs --entity-type users``: SCRAM credentials in ``/config/users/<user>`` (Kafka 2.x's
``--zookeeper`` mode of ConfigCommand; the rest of a user's znode, its quotas, is ``kafka_configs.quotas``'s).

    kafka-configs --zookeeper H:P --alter --entity-type users --entity-name alice \\
        --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-secret]'
    kafka-configs --zookeeper H:P --alter --entity-type users --entity-name alice --delete-config SCRAM-SHA-512
    kafka-configs --zookeeper H:P --describe --entity-type users --entity-name alice

A ``SCRAM-SHA-*`` value is ``[iterations=N,password=P]`` (iterations default 4096, 4096-16384); what is
stored is Kafka's credential string (``salt=..,stored_key=..,server_key=..,iterations=N``), never the
password. ``--describe`` prints ``SCRAM credential configs for user-principal 'alice' are
SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096`` (no salts or keys).
"""
from __future__ import annotations

from brokers.protocol.scram import DEFAULT_ITERATIONS, HASHES, ScramCredential, ScramError, make_credential


class UserConfigError(ValueError):
    """A bad user config; the message is what kafka-configs prints (exit 1)."""


def scram_credential(mechanism: str, value: str) -> str:
    """``iterations=8192,password=secret`` -> the credential string to store."""
    fields: dict[str, str] = {}
    for item in value.split(","):
        key, sep, text = item.partition("=")
        if not sep or key.strip() not in ("iterations", "password"):
            raise UserConfigError(f"Invalid {mechanism} value: expected [iterations=N,password=P], got {item!r}")
        fields[key.strip()] = text
    if not fields.get("password"):
        raise UserConfigError(f"Invalid {mechanism} value: password is required")
    try:
        iterations = int(fields.get("iterations", DEFAULT_ITERATIONS))
        return make_credential(mechanism, fields["password"], iterations).format()
    except ValueError as exc:
        raise UserConfigError(f"Invalid {mechanism} value: {exc}") from None


def describe_lines(user: str, config: dict[str, str]) -> list[str]:
    """The SCRAM line ``--describe`` prints for a user: each mechanism with its iterations only."""
    scram = []
    for mechanism in HASHES:
        if mechanism in config:
            try:
                scram.append(f"{mechanism}=iterations={ScramCredential.parse(config[mechanism]).iterations}")
            except ScramError:
                scram.append(f"{mechanism}=<unreadable>")
    return [f"SCRAM credential configs for user-principal '{user}' are {', '.join(scram)}"] if scram else []
