"""``kafka-configs --entity-type users``: SCRAM credentials in ``/config/users/<user>`` (Kafka 2.x's
``--zookeeper`` mode of ConfigCommand).

    kafka-configs --zookeeper H:P --alter --entity-type users --entity-name alice \\
        --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-secret]'
    kafka-configs --zookeeper H:P --alter --entity-type users --entity-name alice --delete-config SCRAM-SHA-512
    kafka-configs --zookeeper H:P --describe --entity-type users --entity-name alice

A ``SCRAM-SHA-*`` value is ``[iterations=N,password=P]`` (iterations default 4096, 4096-16384); what is
stored is Kafka's credential string (``salt=..,stored_key=..,server_key=..,iterations=N``), never the
password. ``--describe`` prints ``SCRAM credential configs for user-principal 'alice' are
SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096`` (no salts or keys), and the quota
overrides (``producer_byte_rate``, ``consumer_byte_rate``, ``request_percentage``) on a line of their own.
The entity name is the URL-encoded user name, as Kafka's Sanitizer writes it.
"""
from __future__ import annotations

from brokers.protocol.scram import DEFAULT_ITERATIONS, HASHES, ScramCredential, ScramError, make_credential, sanitize

QUOTA_KEYS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage")


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


def apply_changes(current: dict[str, str], added: dict[str, str], deleted: list[str]) -> dict[str, str]:
    """The user's new config; UserConfigError naming the bad key."""
    missing = [key for key in deleted if key not in current]
    if missing:
        raise UserConfigError(f"Invalid config(s): {','.join(missing)}")
    config = {key: value for key, value in current.items() if key not in deleted}
    for key, value in added.items():
        if key in HASHES:
            config[key] = scram_credential(key, value)
        elif key in QUOTA_KEYS:
            try:
                float(value)
            except ValueError:
                raise UserConfigError(f"Invalid value {value!r} for {key}: expected a number") from None
            config[key] = value
        else:
            raise UserConfigError(f"Invalid config(s): {key} (a user takes {', '.join([*HASHES, *QUOTA_KEYS])})")
    return config


def describe_lines(user: str, config: dict[str, str]) -> list[str]:
    """What ``--describe`` prints: the quotas, then the SCRAM mechanisms with their iterations only."""
    label = f"user-principal '{user}'"
    quotas = {k: v for k, v in sorted(config.items()) if k not in HASHES}
    scram = []
    for mechanism in HASHES:
        if mechanism in config:
            try:
                scram.append(f"{mechanism}=iterations={ScramCredential.parse(config[mechanism]).iterations}")
            except ScramError:
                scram.append(f"{mechanism}=<unreadable>")
    lines = [f"Quota configs for {label} are {', '.join(f'{k}={v}' for k, v in quotas.items())}"] if quotas else []
    if scram:
        lines.append(f"SCRAM credential configs for {label} are {', '.join(scram)}")
    return lines or [f"Configs for {label} are "]


def entity_name(user: str) -> str:
    return sanitize(user)
