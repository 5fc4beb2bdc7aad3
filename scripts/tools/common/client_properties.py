"""Kafka's client properties for zkafka's tools: the ``--command-config`` / ``--admin.config`` file of
Kafka's tools (Java client names) turned into librdkafka's settings (confluent-kafka's AdminClient) and
into the TLS context and SASL credentials of the broker's own protocol client (``ClusterAdmin``'s
``brokers.client.KafkaConnection``), so every request a tool sends reaches a SSL / SASL cluster.

Java name -> librdkafka:

- ``sasl.jaas.config``: its ``username=``/``password=`` options -> ``sasl.username``/``sasl.password``
- ``ssl.truststore.location`` (``ssl.truststore.type=PEM``) -> ``ssl.ca.location``
- ``ssl.keystore.location`` (``ssl.keystore.type=PEM``, KIP-651: private key and certificate chain in one
  file) -> ``ssl.certificate.location`` and ``ssl.key.location``; ``ssl.key.password`` as it is
- ``ssl.endpoint.identification.algorithm`` ``https`` | empty -> ``https`` | ``none``

Every tool reads its file with ``from_flag(flag, path)`` (or ``parse_flag`` for argparse): read, every
setting resolved once (a bad file or key fails before any connection), errors ``argument <flag>: ...``:

- ``--command-config``: kafka-topics, kafka-consumer-groups, kafka-reassign-partitions, kafka-configs, kafka-acls,
  kafka-transactions
- ``--admin.config``: kafka-leader-election
- ``--producer.config`` / ``--consumer.config``: the console producer / consumer (``--producer-property`` /
  ``--consumer-property`` override the file's keys, as in Kafka)

Every other key passes as it is (``security.protocol``, ``sasl.mechanism``, ``client.id``, librdkafka's
own names such as ``sasl.username`` or ``ssl.ca.location``); librdkafka refuses one it does not know.
A JKS or PKCS12 store (Kafka's default type) is an error naming the key: zkafka reads PEM.
"""
from __future__ import annotations

import argparse
import asyncio
import ssl
import sys
from pathlib import Path

from brokers.client.connection import KafkaConnection, SaslAuthenticationError
from brokers.config import ConfigError, parse_properties
from brokers.protocol.sasl import SaslClientConfig, parse_jaas

SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
TLS_PROTOCOLS = ("SSL", "SASL_SSL")
_JAVA_ONLY = ("sasl.jaas.config", "ssl.truststore.", "ssl.keystore.", "ssl.endpoint.identification.algorithm")


class ClientPropertiesError(ValueError):
    """A client properties file that cannot be used; the message names the file or the key."""


class LoginError(RuntimeError):
    """The brokers refused the SASL credentials of a tool's client properties."""


def read(path: str) -> dict[str, str]:
    try:
        return parse_properties(Path(path).read_text(encoding="utf-8"), path)
    except OSError as exc:
        raise ClientPropertiesError(f"cannot read {path}: {exc.strerror}") from None
    except ConfigError as exc:
        raise ClientPropertiesError(str(exc)) from None


def from_flag(flag: str, path: str | None) -> dict[str, str]:
    """The client properties of the file a tool's ``flag`` names ({} without one), checked: both
    translations are made once, so a bad file, key or TLS file is a ClientPropertiesError
    ``argument <flag>: <problem>`` here, before any connection."""
    if not path:
        return {}
    try:
        props = read(path)
        librdkafka_config(props)
        connection_settings(props)
        return props
    except ClientPropertiesError as exc:
        raise ClientPropertiesError(f"argument {flag}: {exc}") from None


def parse_flag(parser: argparse.ArgumentParser, flag: str, path: str | None) -> dict[str, str]:
    """``from_flag`` for an argparse tool: a bad file exits 2 with the message naming ``flag``."""
    try:
        return from_flag(flag, path)
    except ClientPropertiesError as exc:
        parser.error(str(exc))


def _credentials(props: dict[str, str]) -> tuple[str | None, str | None]:
    """``sasl.username``/``sasl.password``, else the ``username``/``password`` of ``sasl.jaas.config``."""
    username, password = props.get("sasl.username"), props.get("sasl.password")
    if "sasl.jaas.config" in props:
        try:
            _module, options = parse_jaas(props["sasl.jaas.config"])
        except ValueError as exc:
            raise ClientPropertiesError(f"sasl.jaas.config: {exc}") from None
        username = username if username is not None else options.get("username")
        password = password if password is not None else options.get("password")
    return username, password


def _pem(props: dict[str, str], store: str) -> str | None:
    location = props.get(f"ssl.{store}.location")
    kind = props.get(f"ssl.{store}.type", "PEM").upper()
    if location and kind != "PEM":
        raise ClientPropertiesError(f"ssl.{store}.type: {kind} is not supported for {location}: zkafka's tools read "
                                    f"PEM {store}s (ssl.{store}.type=PEM)")
    return location or None


def librdkafka_config(props: dict[str, str]) -> dict[str, str]:
    """confluent-kafka's settings for Kafka's client ``props`` (no ``bootstrap.servers``)."""
    config = {k: v for k, v in props.items() if not k.startswith(_JAVA_ONLY)}
    username, password = _credentials(props)
    for key, value in (("sasl.username", username), ("sasl.password", password),
                       ("ssl.ca.location", _pem(props, "truststore"))):
        if value is not None:
            config.setdefault(key, value)
    if keystore := _pem(props, "keystore"):
        config.setdefault("ssl.certificate.location", keystore)
        config.setdefault("ssl.key.location", keystore)
    if "ssl.endpoint.identification.algorithm" in props:
        algorithm = props["ssl.endpoint.identification.algorithm"].strip().lower()
        config["ssl.endpoint.identification.algorithm"] = algorithm or "none"
    return config


def connection_settings(props: dict[str, str]) -> tuple[ssl.SSLContext | None, SaslClientConfig | None]:
    """The TLS context (SSL / SASL_SSL) and SASL credentials (SASL_*) for ``KafkaConnection``."""
    protocol = props.get("security.protocol", "PLAINTEXT").upper()
    if protocol not in ("PLAINTEXT", *TLS_PROTOCOLS, *SASL_PROTOCOLS):
        raise ClientPropertiesError(f"security.protocol: {protocol!r} is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, "
                                    f"SASL_SSL")
    context = _tls_context(props) if protocol in TLS_PROTOCOLS else None
    sasl = None
    if protocol in SASL_PROTOCOLS:
        username, password = _credentials(props)
        if username is None or password is None:
            raise ClientPropertiesError(f"security.protocol={protocol} needs sasl.jaas.config with username and "
                                        f"password (or sasl.username and sasl.password)")
        sasl = SaslClientConfig(props.get("sasl.mechanism", "GSSAPI").upper(), username, password)
    return context, sasl


def _tls_context(props: dict[str, str]) -> ssl.SSLContext:
    config = librdkafka_config(props)
    try:
        context = ssl.create_default_context(cafile=config.get("ssl.ca.location"))
        context.check_hostname = config.get("ssl.endpoint.identification.algorithm", "https") == "https"
        if "ssl.certificate.location" in config:
            context.load_cert_chain(config["ssl.certificate.location"], config.get("ssl.key.location"),
                                    password=config.get("ssl.key.password"))
    except (OSError, ValueError) as exc:
        raise ClientPropertiesError(f"ssl.*: cannot load the truststore or keystore: {exc}") from None
    return context


# Kafka's tools log at WARN (config/tools-log4j.properties: log4j.rootLogger=WARN, stderr): their clients'
# INFO lines never reach the user. librdkafka logs at INFO (6) by default, and prints one on stderr when a
# client is destroyed while its background thread still holds an event (BGQUEUE "Purging 1 unserved
# events"), a race at exit that has nothing to say to the user. A tool's properties may set log_level.
TOOLS_LOG_LEVEL = {"log_level": "4"}


def client_config(bootstrap: str, props: dict[str, str]) -> dict[str, str]:
    """confluent-kafka's settings for a tool's client of ``bootstrap``: Kafka's ``props`` translated, over the
    tools' log level."""
    return {**TOOLS_LOG_LEVEL, **librdkafka_config(props), "bootstrap.servers": bootstrap}


def tool_config(bootstrap: str, props: dict[str, str]) -> dict[str, str]:
    """confluent-kafka's settings for a tool's client, once ``check_login`` passed (LoginError)."""
    check_login(bootstrap, props)
    return client_config(bootstrap, props)


def check_login(bootstrap: str, props: dict[str, str], timeout: float = 15.0) -> None:
    """With SASL in ``props``, authenticate once to the first bootstrap broker that answers (the broker's
    own protocol client), so refused credentials are one clear LoginError naming the broker and Kafka's
    error: librdkafka retries them until its request times out and then only says "Broker transport
    failure". A broker that cannot be reached is left to the tool's own client to report."""
    context, sasl = connection_settings(props)
    if sasl is not None:
        asyncio.run(_login(bootstrap, context, sasl, timeout))


async def _login(bootstrap: str, context: ssl.SSLContext | None, sasl: SaslClientConfig, timeout: float) -> None:
    for item in bootstrap.split(","):
        host, _, port = item.strip().rpartition(":")
        if not host or not port.isdigit():
            continue
        connection = KafkaConnection(host, int(port), "zkafka-login-check", context, sasl)
        try:
            await connection.connect(timeout)
            return
        except SaslAuthenticationError as exc:  # the broker refused the mechanism or the credentials
            raise LoginError(str(exc)) from None
        except (OSError, asyncio.TimeoutError):
            pass  # not reachable, TLS failed, no answer: the next one, else the tool's client reports it
        finally:
            connection.close()


def admin_client(factory, bootstrap: str, props: dict[str, str], *, error: str = "Error: ",
                 flag: str = "--command-config"):
    """``factory(config)`` (the tool's confluent-kafka AdminClient) for a tool run with ``flag``'s ``props``;
    None after printing the one-line error (refused credentials, a key librdkafka does not know), after the
    tool's ``error`` prefix, to stderr: the tool exits 1."""
    from confluent_kafka import KafkaException
    try:
        return factory(tool_config(bootstrap, props))
    except LoginError as exc:
        print(f"{error}{exc}", file=sys.stderr)
    except KafkaException as exc:
        print(f"{error}argument {flag}: {exc.args[0].str() if exc.args else exc}", file=sys.stderr)
    return None


def checked_login(parser: argparse.ArgumentParser, bootstrap: str, config: dict[str, str], what: str) -> int | None:
    """A console tool's ``check_login`` over its merged settings: a bad setting is a usage error (exit 2),
    refused credentials one line on stderr and the exit code 1 to return; None when the login passed."""
    try:
        check_login(bootstrap, config)
    except ClientPropertiesError as exc:
        parser.error(f"invalid {what} config: {exc}")
    except LoginError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    return None


def console_client(parser: argparse.ArgumentParser, factory, bootstrap: str, config: dict[str, str], what: str):
    """A console tool's librdkafka ``factory(config)`` (Producer, Consumer) over its merged settings, after
    ``checked_login``: None after refused credentials (one line on stderr, the tool exits 1); a setting
    librdkafka refuses is a usage error (exit 2)."""
    from confluent_kafka import KafkaException
    if checked_login(parser, bootstrap, config, what) is not None:
        return None
    try:
        return factory(config)  # librdkafka checks every property here
    except KafkaException as exc:
        parser.error(f"invalid {what} config: {exc.args[0].str() if exc.args else exc}")

