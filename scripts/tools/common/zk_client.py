"""The ``--zookeeper`` path of every tool: read the tool's ZooKeeper identity (``KAFKA_OPTS``' JAAS file,
``--zk-tls-config-file``; the rules are ``scripts.tools.common.zk_security``'s) and open sessions with it.

    identity = zk_client.identity(args.zk_tls_config_file)        # ZkSecurityError: one line, exit 1
    zk = zk_client.gateway(args.zookeeper, identity)               # brokers.zk.gateway.ZkGateway, not started
    ...
    except ZkError as exc: print(zk_client.error_line(args.zookeeper, exc, identity), file=sys.stderr)

``error_line`` turns a NoAuth refusal into the one line that says how to pass credentials (or whose were
refused); other ZooKeeper errors read ``Error: ZooKeeper at H:P: <error>``.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

from brokers.config import ConfigError, parse_properties
from brokers.zk.errors import NoAuthError, ZkError
from brokers.zk.gateway import ZkGateway
from brokers.zk.shell_client import ShellClient
from scripts.tools.common.zk_security import (LOGIN_CONFIG, ZkClientIdentity, ZkSecurityError, digest_from_jaas,
                                              login_config_path, no_auth_message, sasl_context, system_properties,
                                              tls_from_properties)

SESSION_TIMEOUT_MS = 30000  # Kafka's tools: KafkaZkClient(..., 30000, 30000, ...)


def _read(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ZkSecurityError(f"cannot read {what} {path}: {exc.strerror or exc}") from None


def identity(tls_config_file: str | None = None, environ: Mapping[str, str] | None = None,
             tls_flag: str = "--zk-tls-config-file") -> ZkClientIdentity:
    """The identity ``KAFKA_OPTS`` (from ``environ``, default the process's) and the TLS config file give."""
    environ = os.environ if environ is None else environ
    properties = system_properties(environ.get("KAFKA_OPTS", ""))
    digest, sources = None, []
    jaas = login_config_path(properties)
    if jaas is not None:
        digest = digest_from_jaas(_read(jaas, f"the JAAS file (-D{LOGIN_CONFIG} in KAFKA_OPTS)"), jaas, properties)
        if digest is not None:
            sources.append(f"{sasl_context(properties)[0]} section of {jaas}")
    tls = None
    if tls_config_file is not None:
        try:
            props = parse_properties(_read(tls_config_file, f"{tls_flag}"), tls_config_file)
        except ConfigError as exc:
            raise ZkSecurityError(f"{tls_flag}: {exc}") from None
        tls = tls_from_properties(props, tls_config_file)
        if tls is not None:
            sources.append(tls_config_file)
    return ZkClientIdentity(digest, tls, ", ".join(sources))


def quiet_kazoo() -> None:
    """A tool reports a ZooKeeper failure in one line of its own: kazoo's retry warnings (``Connection dropped``...)
    stay out of stderr, unless the caller configured that logger itself."""
    logger = logging.getLogger("kazoo")
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.CRITICAL + 1)


def gateway(connect: str, who: ZkClientIdentity, timeout_ms: int = SESSION_TIMEOUT_MS) -> ZkGateway:
    """A (not yet started) session as ``who``; znodes it creates get Kafka's secure ACLs when ``who`` is someone."""
    quiet_kazoo()
    return ZkGateway(connect, session_timeout_ms=timeout_ms, connection_timeout_ms=timeout_ms, digest=who.digest,
                     secure_acls=who.secure_acls, tls=who.tls)


def shell_client(connect: str, who: ZkClientIdentity, timeout_ms: int = SESSION_TIMEOUT_MS) -> ShellClient:
    """zookeeper-shell's synchronous session as ``who`` (znodes created with the ACL its commands name)."""
    quiet_kazoo()
    return ShellClient(connect, timeout_ms=timeout_ms, digest=who.digest, tls=who.tls)


def error_line(connect: str, exc: ZkError, who: ZkClientIdentity, tls_flag: str = "--zk-tls-config-file") -> str:
    """What a tool prints for a ZooKeeper failure of its ``--zookeeper`` path (one line)."""
    if isinstance(exc, NoAuthError):
        return no_auth_message(connect, who, tls_flag)
    return f"Error: ZooKeeper at {connect}: {exc}"
