"""A tool's ZooKeeper identity, as Kafka's tools take it: pure parsing, no file or network I/O
(``scripts.tools.common.zk_client`` reads the files and opens the session).

With ``zookeeper.set.acl=true`` the brokers' znodes are writable only by the brokers' ZooKeeper identity
(``zookeeper.digest.credentials=user:password``, zkafka's broker key), and ``/config/users`` is not even
readable by anyone else. Kafka's tools (``kafka-configs --zookeeper``, ``kafka-topics --zookeeper``,
``zookeeper-shell``) get that identity from:

* a JAAS file named by ``-Djava.security.auth.login.config=/path/jaas.conf`` in ``KAFKA_OPTS``, whose
  ``Client`` section (``-Dzookeeper.sasl.clientconfig=Name`` picks another; ``-Dzookeeper.sasl.client=false``
  with a section present is an error, as in Kafka's ``JaasUtils.isZkSaslEnabled``) holds::

      Client {
          org.apache.zookeeper.server.auth.DigestLoginModule required
          username="kafka"
          password="zk-secret";
      };

  zkafka's ZooKeeper speaks the digest scheme, so the section's ``username``/``password`` become the session's
  ``digest`` credentials -- the same identity as brokers with ``zookeeper.digest.credentials=kafka:zk-secret``.
* ``--zk-tls-config-file FILE`` (``-zk-tls-config-file`` for zookeeper-shell): Kafka's ZooKeeper client TLS keys
  (``ZKClientConfig``), others ignored, as Kafka ignores them: ``zookeeper.ssl.client.enable=true`` turns TLS on;
  ``zookeeper.ssl.truststore.location`` (PEM CA bundle; the system's CAs if unset), ``zookeeper.ssl.keystore.location``
  (PEM: key and certificate chain in one file: the client's x509 identity) and ``zookeeper.ssl.keystore.password``,
  ``zookeeper.ssl.endpoint.identification.algorithm`` (``HTTPS``, the default, checks the server's name; empty does
  not). ``zookeeper.clientCnxnSocket`` is Java's and ignored. JKS and PKCS12 stores, cipher suites, CRL and OCSP
  checks, and protocols other than TLSv1.2/TLSv1.3 are errors naming the key.

As in Kafka, a tool with an identity (a JAAS ``Client`` section, or a TLS client certificate) creates znodes
with Kafka's secure ACLs (``ZkClientIdentity.secure_acls``), so the brokers -- the same identity -- may
change them. Every problem is a ``ZkSecurityError`` whose message is one line naming the file or the key.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from brokers.protocol.sasl import parse_jaas
from brokers.zk.tls import ZkTls

LOGIN_CONFIG = "java.security.auth.login.config"
CONTEXT_NAME = "zookeeper.sasl.clientconfig"
SASL_CLIENT = "zookeeper.sasl.client"
DEFAULT_CONTEXT = "Client"
DIGEST_MODULE = "org.apache.zookeeper.server.auth.DigestLoginModule"
TLS_PREFIX = "zookeeper.ssl."
TLS_PROTOCOLS = ("TLSv1.2", "TLSv1.3")  # what Python's client context negotiates


class ZkSecurityError(ValueError):
    """KAFKA_OPTS, a JAAS file or a TLS config file that cannot be used; the message says which and why."""


@dataclass(frozen=True)
class ZkClientIdentity:
    """Who a tool is to ZooKeeper: ``digest`` (``user:password``) and/or ``tls``; ``source`` says where it came from."""

    digest: str | None = None
    tls: ZkTls | None = None
    source: str = ""

    @property
    def secure_acls(self) -> bool:
        """Kafka's ``isZkSaslEnabled || zkTlsClientAuthEnabled``: znodes the tool creates get secure ACLs."""
        return self.digest is not None or (self.tls is not None and self.tls.client_auth)

    @property
    def user(self) -> str | None:
        return self.digest.split(":", 1)[0] if self.digest else None


# -- KAFKA_OPTS ------------------------------------------------------------------------------------
def system_properties(kafka_opts: str) -> dict[str, str]:
    """The ``-Dkey=value`` settings of ``KAFKA_OPTS`` (JVM flags; the last one of a key wins, as in Java)."""
    try:
        words = shlex.split(kafka_opts)
    except ValueError as exc:
        raise ZkSecurityError(f"KAFKA_OPTS: {exc}") from None
    found: dict[str, str] = {}
    for word in words:
        if word.startswith("-D") and len(word) > 2:
            key, _, value = word[2:].partition("=")
            found[key] = value
    return found


def login_config_path(properties: dict[str, str]) -> str | None:
    """``java.security.auth.login.config``'s file (Java's ``==`` form, which replaces other files, too)."""
    path = properties.get(LOGIN_CONFIG)
    if path is None:
        return None
    path = path[1:] if path.startswith("=") else path
    if not path:
        raise ZkSecurityError(f"KAFKA_OPTS: -D{LOGIN_CONFIG}= names no file")
    return path


# -- JAAS files ------------------------------------------------------------------------------------
def _strip_comments(text: str) -> str:
    """The text without ``//`` and ``/* */`` comments (quoted strings kept whole)."""
    out, i, quoted = [], 0, False
    while i < len(text):
        c = text[i]
        if quoted:
            out.append(c)
            if c == "\\" and i + 1 < len(text):
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
            out.append(c)
        elif text.startswith("//", i):
            i = text.find("\n", i)
            i = len(text) if i < 0 else i
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = len(text) if end < 0 else end + 2
            out.append(" ")
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


_SECTION = re.compile(r'\s*([\w.\-$]+)\s*\{((?:[^{}"]|"(?:[^"\\]|\\.)*")*)\}\s*;', re.S)
_ENTRY = re.compile(r'(?:[^;"]|"(?:[^"\\]|\\.)*")+;', re.S)


def jaas_sections(text: str, source: str) -> dict[str, list[tuple[str, dict[str, str]]]]:
    """A JAAS login configuration file: section name -> [(login module, options)]."""
    body = _strip_comments(text)
    sections: dict[str, list[tuple[str, dict[str, str]]]] = {}
    position = 0
    while body[position:].strip():
        match = _SECTION.match(body, position)
        if not match:
            snippet = " ".join(body[position:].split())[:60]
            raise ZkSecurityError(f"{source}: expected 'Name {{ <LoginModule> required key=\"value\" ...; }};' "
                                  f"at {snippet!r}")
        entries = []
        for entry in _ENTRY.findall(match.group(2)):
            try:
                entries.append(parse_jaas(" ".join(entry.split())))
            except ValueError as exc:
                raise ZkSecurityError(f"{source}: section {match.group(1)}: {exc}") from None
        sections[match.group(1)] = entries
        position = match.end()
    return sections


def digest_of(sections: dict[str, list[tuple[str, dict[str, str]]]], context: str, source: str) -> str | None:
    """``user:password`` from the ``context`` section's DigestLoginModule; None without that section."""
    entries = sections.get(context)
    if entries is None:
        return None
    for module, options in entries:
        if module != DIGEST_MODULE:
            raise ZkSecurityError(f"{source}: section {context}: {module} is not supported; zkafka's ZooKeeper "
                                  f"clients authenticate with {DIGEST_MODULE} (the digest scheme)")
        missing = [f'{key}="..."' for key in ("username", "password") if not options.get(key)]
        if missing:
            raise ZkSecurityError(f"{source}: section {context}: {DIGEST_MODULE} needs {' and '.join(missing)}")
        if ":" in options["username"]:
            raise ZkSecurityError(f"{source}: section {context}: a digest username cannot contain ':'")
        return f"{options['username']}:{options['password']}"
    raise ZkSecurityError(f"{source}: section {context} has no login module")


def sasl_context(properties: dict[str, str]) -> tuple[str, bool]:
    """(the JAAS section a ZooKeeper client reads, whether ZooKeeper SASL is enabled) from the -D settings."""
    enabled = properties.get(SASL_CLIENT, "true").strip().lower() != "false"
    return properties.get(CONTEXT_NAME, DEFAULT_CONTEXT), enabled


def digest_from_jaas(text: str, source: str, properties: dict[str, str]) -> str | None:
    """The digest credentials a tool with these -D settings takes from the JAAS file ``text``."""
    context, enabled = sasl_context(properties)
    digest = digest_of(jaas_sections(text, source), context, source)
    if digest is not None and not enabled:
        raise ZkSecurityError(f"{source}: JAAS section {context} is present but -D{SASL_CLIENT}=false disables "
                              "ZooKeeper authentication (Kafka refuses this too)")
    return digest


# -- --zk-tls-config-file --------------------------------------------------------------------------
def _store(props: dict[str, str], kind: str, source: str) -> str | None:
    location = props.get(f"{TLS_PREFIX}{kind}.location", "").strip() or None
    if location is None:
        return None
    declared = props.get(f"{TLS_PREFIX}{kind}.type", "").strip().upper()
    suffix = location.rsplit(".", 1)[-1].lower() if "." in location.rsplit("/", 1)[-1] else ""
    store_type = declared or {"pem": "PEM", "crt": "PEM", "jks": "JKS", "p12": "PKCS12", "pfx": "PKCS12"}.get(suffix)
    if store_type is None:
        raise ZkSecurityError(f"{source}: cannot tell the type of {TLS_PREFIX}{kind}.location {location}: "
                              f"set {TLS_PREFIX}{kind}.type=PEM")
    if store_type != "PEM":
        raise ZkSecurityError(f"{source}: {TLS_PREFIX}{kind}.type {store_type} is not supported: zkafka reads PEM "
                              f"(a {'key and certificate chain in one file' if kind == 'keystore' else 'CA bundle'})")
    return location


def _check_unsupported(props: dict[str, str], source: str) -> None:
    for key in ("protocol", "enabled.protocols"):
        for protocol in filter(None, (p.strip() for p in props.get(TLS_PREFIX + key, "").split(","))):
            if protocol not in TLS_PROTOCOLS:
                raise ZkSecurityError(f"{source}: {TLS_PREFIX}{key} {protocol} is not supported "
                                      f"(zkafka's ZooKeeper client speaks {' and '.join(TLS_PROTOCOLS)})")
    if props.get(TLS_PREFIX + "cipher.suites", "").strip():
        raise ZkSecurityError(f"{source}: {TLS_PREFIX}cipher.suites is not supported (OpenSSL's defaults apply)")
    for key in ("crl.enable", "ocsp.enable"):
        if props.get(TLS_PREFIX + key, "false").strip().lower() == "true":
            raise ZkSecurityError(f"{source}: {TLS_PREFIX}{key}=true is not supported")


def tls_from_properties(props: dict[str, str], source: str) -> ZkTls | None:
    """The TLS settings of a ``--zk-tls-config-file``'s properties; None unless ``zookeeper.ssl.client.enable=true``."""
    if props.get(TLS_PREFIX + "client.enable", "false").strip().lower() != "true":
        return None
    _check_unsupported(props, source)
    algorithm = props.get(TLS_PREFIX + "endpoint.identification.algorithm", "HTTPS").strip().upper()
    if algorithm not in ("HTTPS", ""):
        raise ZkSecurityError(f"{source}: {TLS_PREFIX}endpoint.identification.algorithm must be HTTPS or empty, "
                              f"got {algorithm}")
    return ZkTls(ca=_store(props, "truststore", source), keystore=_store(props, "keystore", source),
                 key_password=props.get(TLS_PREFIX + "keystore.password") or None, check_hostname=algorithm == "HTTPS")


# -- what a tool prints ----------------------------------------------------------------------------
def no_auth_message(connect: str, identity: ZkClientIdentity, tls_flag: str = "--zk-tls-config-file") -> str:
    """One line for a request ZooKeeper refused (NoAuth): how to pass credentials, or whose were refused."""
    if identity.digest is None and not (identity.tls and identity.tls.client_auth):
        return (f"Error: ZooKeeper at {connect} refused the request (NoAuth: its znodes are protected by "
                f"zookeeper.set.acl=true); pass the brokers' ZooKeeper credentials with "
                f"KAFKA_OPTS=\"-D{LOGIN_CONFIG}=/path/jaas.conf\" (a {DEFAULT_CONTEXT} section: {DIGEST_MODULE} "
                f"required username=\"...\" password=\"...\";) or a client certificate with {tls_flag} FILE")
    who = f"user '{identity.user}'" if identity.user else "the TLS client certificate"
    return (f"Error: ZooKeeper at {connect} refused the request (NoAuth) for {who} ({identity.source}): "
            "use the identity the brokers have (zookeeper.digest.credentials)")
