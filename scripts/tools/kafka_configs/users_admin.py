"""``kafka-configs --bootstrap-server ... --entity-type users``: SCRAM credentials through the brokers
(Kafka 2.8's way, KIP-554): confluent-kafka's ``alter_user_scram_credentials`` (AlterUserScramCredentials,
the client salts and hashes the password) and ``describe_user_scram_credentials``.

    kafka-configs --bootstrap-server H:P [--command-config client.properties] --entity-type users \\
        --entity-name alice --alter --add-config 'SCRAM-SHA-512=[iterations=8192,password=alice-secret]'

``--command-config`` is Kafka's client properties file; ``security.protocol``, ``sasl.mechanism`` and the
``username``/``password`` of ``sasl.jaas.config`` (or librdkafka's ``sasl.username``/``sasl.password``)
are what a SASL listener needs. Output as ``scripts.tools.kafka_configs.users`` (``--zookeeper``), then
``Completed updating config for user alice.``; only SCRAM-SHA-256/512 entries go this way.
"""
from __future__ import annotations

import argparse
import sys

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from brokers.protocol.scram import DEFAULT_ITERATIONS, HASHES
from scripts.tools.common import client_properties
from scripts.tools.kafka_configs.admin import command_properties
from scripts.tools.kafka_configs.syntax import ConfigCommandError, parse_add_config, parse_delete_config

TIMEOUT_S = 30.0
_MECHANISMS = {"SCRAM-SHA-256": ScramMechanism.SCRAM_SHA_256, "SCRAM-SHA-512": ScramMechanism.SCRAM_SHA_512}


def client_config(bootstrap: str, command_config: str | None) -> dict[str, str]:
    """The AdminClient's settings from Kafka's ``--command-config`` file (Java client property names,
    ``scripts.tools.common.client_properties``)."""
    return client_properties.tool_config(bootstrap, command_properties(command_config))  # LoginError: refused


def alterations(user: str, add: str | None, delete: str | None) -> list:
    """The upsertions and deletions for ``--add-config``/``--delete-config``; ConfigCommandError otherwise."""
    changes: list = []
    for key in parse_delete_config(delete) if delete else []:
        if key not in _MECHANISMS:
            raise ConfigCommandError(f"Invalid config(s): {key} (only {', '.join(HASHES)} with --bootstrap-server)")
        changes.append(UserScramCredentialDeletion(user, _MECHANISMS[key]))
    for key, value in (parse_add_config(add) if add else {}).items():
        if key not in _MECHANISMS:
            raise ConfigCommandError(f"Invalid config(s): {key} (only {', '.join(HASHES)} with --bootstrap-server)")
        fields = dict(item.partition("=")[::2] for item in value.split(","))
        if not fields.get("password") or set(fields) - {"password", "iterations"}:
            raise ConfigCommandError(f"Invalid {key} value: expected [iterations=N,password=P]")
        try:
            iterations = int(fields.get("iterations", DEFAULT_ITERATIONS))
        except ValueError:
            raise ConfigCommandError(f"Invalid {key} value: iterations must be a number") from None
        changes.append(UserScramCredentialUpsertion(user, ScramCredentialInfo(_MECHANISMS[key], iterations),
                                                    fields["password"].encode()))
    return changes


def run(args: argparse.Namespace) -> int:
    admin = client_properties.admin_client(AdminClient, args.bootstrap_server, command_properties(args.command_config),
                                           error="Error while executing config command: ")
    if admin is None:
        return 1
    try:
        if args.alter:
            for future in admin.alter_user_scram_credentials(
                    alterations(args.entity_name, args.add_config, args.delete_config)).values():
                future.result(TIMEOUT_S)
            print(f"Completed updating config for user {args.entity_name}.")
            return 0
        found = admin.describe_user_scram_credentials([args.entity_name] if args.entity_name else None)
        descriptions = found.result(TIMEOUT_S) if not isinstance(found, dict) else {
            user: future.result(TIMEOUT_S) for user, future in found.items()}
        for user, description in sorted(descriptions.items()):
            infos = ", ".join(f"{info.mechanism.name.replace('_', '-')}=iterations={info.iterations}"
                              for info in sorted(description.scram_credential_infos, key=lambda i: i.mechanism.value))
            print(f"SCRAM credential configs for user-principal '{user}' are {infos}")
        return 0
    except KafkaException as exc:
        err = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
        if args.describe and err is not None and err.code() == KafkaError.RESOURCE_NOT_FOUND:
            return 0  # a user without credentials: nothing to describe
        detail = f"{err.name()}: {err.str()}" if err else str(exc)
        print(f"Error while executing config command: {detail}", file=sys.stderr)
        return 1
