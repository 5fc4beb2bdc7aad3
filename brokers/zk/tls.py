"""How a ZooKeeper client proves who it is: digest credentials and TLS, in the terms of the one library that
talks to ZooKeeper (kazoo, behind ``brokers.zk``).

``ZkTls`` is what Kafka's ``zookeeper.ssl.*`` client keys come to once read (``scripts.tools.common.zk_security``
reads a tool's ``--zk-tls-config-file``): the CA bundle that verifies the server (PEM; None: the system's CAs),
the client's own key and certificate chain in one PEM file (ZooKeeper's x509 authentication), the key's
password, and whether the server's name is checked against its certificate
(``zookeeper.ssl.endpoint.identification.algorithm=HTTPS``, Kafka's default). Certificates are always verified.

``kazoo_security(digest, tls)`` turns them into the client's keyword arguments, so ``ZkGateway`` and
``ShellClient`` build their sessions the same way.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ZkTls:
    ca: str | None = None
    keystore: str | None = None  # PEM: private key + certificate chain in one file
    key_password: str | None = None
    check_hostname: bool = True

    @property
    def client_auth(self) -> bool:
        """The client presents a certificate: its identity (``x509``) owns the znodes it creates."""
        return self.keystore is not None


def kazoo_security(digest: str | None, tls: ZkTls | None) -> dict[str, Any]:
    """kazoo's ``KazooClient`` keyword arguments for ``digest`` (``user:password``) and ``tls``."""
    kwargs: dict[str, Any] = {"auth_data": [("digest", digest)] if digest else None}
    if tls is not None:
        kwargs.update(use_ssl=True, verify_certs=True, check_hostname=tls.check_hostname, ca=tls.ca,
                      certfile=tls.keystore, keyfile=tls.keystore, keyfile_password=tls.key_password)
    return kwargs
