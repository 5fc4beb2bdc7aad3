"""TLS for SSL and SASL_SSL listeners: Kafka's ``ssl.*`` broker configs -> ``ssl.SSLContext``, and the
principal a client certificate stands for.

Settings (Kafka's names; ``listener.name.<listener lower case>.ssl.*`` overrides the global key for
that listener, ``BrokerConfig.listener_value``):

- ``ssl.keystore.type`` must be ``PEM`` (Kafka's default ``JKS`` is Java's own format);
  ``ssl.keystore.location`` is a KIP-651 PEM keystore: one file holding the private key and the
  certificate chain; ``ssl.key.password`` decrypts an encrypted key.
- ``ssl.truststore.type`` ``PEM``; ``ssl.truststore.location`` a PEM CA bundle (the system's CAs when
  unset, as Java falls back to its default truststore).
- ``ssl.client.auth``: ``none`` (no client certificate asked for), ``requested`` (verified if sent),
  ``required`` (a client without a trusted certificate fails the handshake).
- ``ssl.enabled.protocols`` (``TLSv1.2,TLSv1.3``) bound the versions; ``ssl.protocol`` caps them.
- ``ssl.endpoint.identification.algorithm`` (``https``): the inter-broker client checks the server
  certificate's name; empty turns that off.

Principal (Kafka's default principal builder): ``User:`` and the name ``ssl.principal.mapping.rules``
(brokers/security/principal_mapping.py) gives the certificate's subject DN in RFC 2253 form, most specific
RDN first; with the default rules (``DEFAULT``) the DN itself (``User:CN=alice,OU=eng,O=zkafka``).
``User:ANONYMOUS`` when the client presented no (verified) certificate. A DN no rule applies to is
``NoMatchingRule``: the listener refuses that connection. Rules apply to SSL listeners only (on SASL_SSL
the SASL identity is the principal, as in Kafka).
Any unreadable or wrong file raises ``ConfigError`` naming the key and the file.

The HTTP port (``http.ssl.enabled=true``) takes the same keys, each overridable as ``http.<key>``
(``http.ssl.keystore.location``, ...; ``BrokerConfig.http_value``); it never asks for a client
certificate. Its client side (the controller's requests, ControlledShutdown, the admin API's fan-out)
verifies the other brokers' certificates against the truststore, and their names unless
``ssl.endpoint.identification.algorithm`` is empty: every broker must trust the CA that signed the others'.

A failed handshake is the operator's to see (Kafka's "Failed authentication with /<ip> (SSL handshake
failed)"): ``handshake_failure`` turns the exception into the reason the listener logs with the peer
(OpenSSL's reason, never key material), or None for a peer that merely went away mid-handshake.
"""
from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Any

from brokers.config import BrokerConfig, ConfigError
from brokers.security.acls import ANONYMOUS
from brokers.security.principal_mapping import InvalidRule, SslPrincipalMapper

TLS_PROTOCOLS = frozenset({"SSL", "SASL_SSL"})
CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
PROTOCOLS = {"TLS": ssl.TLSVersion.TLSv1_3, "TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
# OpenSSL's attribute names (getpeercert) -> RFC 2253 keywords (Java's X500Principal.getName())
RDN_KEYWORDS = {"commonName": "CN", "countryName": "C", "localityName": "L", "stateOrProvinceName": "ST",
                "organizationName": "O", "organizationalUnitName": "OU", "streetAddress": "STREET",
                "domainComponent": "DC", "userId": "UID"}
EMAIL_OID = "1.2.840.113549.1.9.1"


@dataclass(frozen=True)
class TlsSettings:
    listener: str
    keystore_type: str = "JKS"
    keystore_location: str | None = None
    key_password: str | None = None
    truststore_type: str = "JKS"
    truststore_location: str | None = None
    client_auth: str = "none"
    enabled_protocols: tuple[str, ...] = ("TLSv1.2", "TLSv1.3")
    protocol: str = "TLSv1.3"
    endpoint_identification: str = "https"
    http: bool = False  # the HTTP port's settings (errors name http.<key> and <key>)

    @classmethod
    def for_listener(cls, config: BrokerConfig, listener: str) -> "TlsSettings":
        def get(key: str) -> Any:
            return config.listener_value(listener, key)

        return cls(listener, get("ssl.keystore.type").upper(), get("ssl.keystore.location"), get("ssl.key.password"),
                   get("ssl.truststore.type").upper(), get("ssl.truststore.location"),
                   get("ssl.client.auth").lower(), tuple(get("ssl.enabled.protocols")), get("ssl.protocol"),
                   get("ssl.endpoint.identification.algorithm").lower())

    @classmethod
    def for_http(cls, config: BrokerConfig) -> "TlsSettings":
        """The HTTP port's settings: ``http.ssl.*`` else ``ssl.*``; no client certificates asked for."""
        get = config.http_value
        return cls("HTTP", get("ssl.keystore.type").upper(), get("ssl.keystore.location"), get("ssl.key.password"),
                   get("ssl.truststore.type").upper(), get("ssl.truststore.location"), "none",
                   tuple(get("ssl.enabled.protocols")), get("ssl.protocol"),
                   get("ssl.endpoint.identification.algorithm").lower(), http=True)

    def key(self, name: str) -> str:
        """The config key to name in an error: the per-listener one, as the user may have set either."""
        if self.http:
            return f"http.{name} or {name} (http.ssl.enabled=true)"
        return f"{name} (listener {self.listener})"


def _versions(settings: TlsSettings) -> tuple[ssl.TLSVersion, ssl.TLSVersion]:
    unknown = [p for p in settings.enabled_protocols if p not in VERSIONS]
    if unknown or not settings.enabled_protocols:
        raise ConfigError(f"{settings.key('ssl.enabled.protocols')}: {', '.join(unknown) or 'empty'} not supported "
                          f"(expected some of {', '.join(VERSIONS)})")
    if settings.protocol not in PROTOCOLS:
        raise ConfigError(f"{settings.key('ssl.protocol')}: {settings.protocol!r} not supported "
                          f"(expected one of {', '.join(PROTOCOLS)})")
    versions = sorted(VERSIONS[p] for p in settings.enabled_protocols)
    highest = min(versions[-1], PROTOCOLS[settings.protocol])
    if highest < versions[0]:
        raise ConfigError(f"{settings.key('ssl.protocol')}: {settings.protocol} excludes every protocol of "
                          f"ssl.enabled.protocols ({', '.join(settings.enabled_protocols)})")
    return versions[0], highest


def _load_keystore(context: ssl.SSLContext, settings: TlsSettings, required: bool) -> None:
    location = settings.keystore_location
    if not location:
        if required:
            raise ConfigError(f"{settings.key('ssl.keystore.location')} is required: a PEM file with the broker's "
                              f"private key and certificate chain")
        return
    _load_pem(settings, "keystore", settings.keystore_type, location,
              lambda: context.load_cert_chain(location, password=settings.key_password),
              "is not a PEM keystore with a private key and certificate chain (or ssl.key.password is wrong)")


def _load_truststore(context: ssl.SSLContext, settings: TlsSettings, purpose: ssl.Purpose) -> None:
    location = settings.truststore_location
    if not location:
        context.load_default_certs(purpose)
        return
    _load_pem(settings, "truststore", settings.truststore_type, location,
              lambda: context.load_verify_locations(cafile=location), "holds no PEM certificate")


def _load_pem(settings: TlsSettings, store: str, store_type: str, location: str, load, not_pem: str) -> None:
    """Load ``ssl.<store>.location`` (PEM only); a missing or unreadable file or bad content is a
    ConfigError naming the key, the listener and the file."""
    if store_type != "PEM":
        raise ConfigError(f"{settings.key(f'ssl.{store}.type')}: {store_type} is not supported for "
                          f"{location}: zkafka reads PEM {store}s (ssl.{store}.type=PEM"
                          f"{', KIP-651' if store == 'keystore' else ''})")
    key = settings.key(f"ssl.{store}.location")
    try:
        load()
    except OSError as exc:  # before SSLError: ssl.SSLError is an OSError too
        if isinstance(exc, ssl.SSLError):
            raise ConfigError(f"{key}: {location} {not_pem}: {exc}") from None
        raise ConfigError(f"{key}: cannot read {location}: {exc.strerror}") from None
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{key}: {location} {not_pem}: {exc}") from None


def server_context(settings: TlsSettings) -> ssl.SSLContext:
    """The listener's context: its keystore, and client certificates verified against the truststore
    as ``ssl.client.auth`` says."""
    if settings.client_auth not in CLIENT_AUTH:
        raise ConfigError(f"{settings.key('ssl.client.auth')}: {settings.client_auth!r} is not one of "
                          f"{', '.join(CLIENT_AUTH)}")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version, context.maximum_version = _versions(settings)
    _load_keystore(context, settings, required=True)
    context.verify_mode = CLIENT_AUTH[settings.client_auth]
    if context.verify_mode != ssl.CERT_NONE:
        _load_truststore(context, settings, ssl.Purpose.CLIENT_AUTH)
    return context


def client_context(settings: TlsSettings) -> ssl.SSLContext:
    """The inter-broker client's context: trusts the truststore, checks the server's name unless
    ``ssl.endpoint.identification.algorithm`` is empty, presents the keystore's certificate if any."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version, context.maximum_version = _versions(settings)
    context.check_hostname = settings.endpoint_identification == "https"
    if settings.endpoint_identification not in ("", "https"):
        raise ConfigError(f"{settings.key('ssl.endpoint.identification.algorithm')}: "
                          f"{settings.endpoint_identification!r} is not https or empty")
    _load_truststore(context, settings, ssl.Purpose.SERVER_AUTH)
    _load_keystore(context, settings, required=False)
    return context


def principal(peercert: dict | None, mapper: SslPrincipalMapper | None = None) -> str:
    """``User:<name>`` of a verified peer certificate (``SSLObject.getpeercert()``): its subject DN (RFC
    2253) through ``mapper`` (the DN itself without one); ``User:ANONYMOUS`` without a certificate.
    Raises ``NoMatchingRule`` when no mapping rule applies to the DN."""
    subject = (peercert or {}).get("subject")
    if not subject:
        return ANONYMOUS
    dn = rfc2253(subject)
    return f"User:{mapper.name(dn) if mapper is not None else dn}"


def rfc2253(subject: tuple) -> str:
    """The DN as Java's ``X500Principal.getName()`` writes it: RDNs most specific first (the reverse of
    the certificate's order), ``+`` inside a multi-valued RDN, RFC 2253 escaping."""
    return ",".join("+".join(_attribute(name, value) for name, value in rdn) for rdn in reversed(subject))


def _attribute(name: str, value: str) -> str:
    if name == "emailAddress":  # no RFC 2253 keyword: the OID and the value's DER (IA5String), in hex
        data = value.encode("ascii")
        return f"{EMAIL_OID}=#16{len(data):02x}{data.hex()}" if len(data) < 128 else f"{EMAIL_OID}={_escape(value)}"
    return f"{RDN_KEYWORDS.get(name, name)}={_escape(value)}"


def _escape(value: str) -> str:
    out = "".join("\\" + c if c in ',+"\\<>;' else c for c in value)
    if out.startswith(("#", " ")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def peer_principal(transport: Any, mapper: SslPrincipalMapper | None = None) -> str:
    """The principal of a TLS transport's client, after the handshake (``connection_made``)."""
    ssl_object = transport.get_extra_info("ssl_object")
    return principal(ssl_object.getpeercert(), mapper) if ssl_object is not None else ANONYMOUS


def handshake_failure(exc: BaseException) -> str | None:
    """Why a server-side handshake failed, for one log line: ``PEER_DID_NOT_RETURN_A_CERTIFICATE``,
    ``CERTIFICATE_VERIFY_FAILED: certificate has expired``, ``WRONG_VERSION_NUMBER`` (plain bytes on a TLS
    port), the handshake timeout; None when the peer closed or reset the connection (a port probe, or a
    client that dropped the connection itself, which it reports on its side)."""
    if isinstance(exc, (ssl.SSLEOFError, ssl.SSLZeroReturnError)):
        return None
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"{exc.reason}: {exc.verify_message}" if exc.verify_message else str(exc.reason or exc)
    if isinstance(exc, ssl.SSLError):
        return str(exc.reason or exc.strerror or exc)
    if isinstance(exc, ConnectionAbortedError):  # asyncio's and uvloop's ssl_handshake_timeout
        return str(exc) or "handshake aborted"
    if isinstance(exc, TimeoutError):
        return "handshake timed out"
    if isinstance(exc, (ConnectionResetError, BrokenPipeError, EOFError)):
        return None
    return repr(exc)


def listener_contexts(config: BrokerConfig) -> dict[str, ssl.SSLContext]:
    """A server context per SSL / SASL_SSL listener, built at start-up (a bad file stops it there)."""
    return {e.listener: server_context(TlsSettings.for_listener(config, e.listener))
            for e in config.listeners if e.security_protocol in TLS_PROTOCOLS}


def http_contexts(config: BrokerConfig) -> tuple[ssl.SSLContext, ssl.SSLContext] | None:
    """(server, client) contexts of the HTTP port when ``http.ssl.enabled``, built at start-up (a bad
    file stops it there); None for plain HTTP."""
    if not config["http.ssl.enabled"]:
        return None
    settings = TlsSettings.for_http(config)
    return server_context(settings), client_context(settings)


def inter_broker_context(config: BrokerConfig) -> ssl.SSLContext | None:
    """The replica fetchers' client context when the inter-broker listener (``inter.broker.listener.name``,
    else the first advertised one, as the fetchers pick) is SSL / SASL_SSL; its ``ssl.*`` settings."""
    endpoint = config.inter_broker_endpoint
    if endpoint is None or endpoint.security_protocol not in TLS_PROTOCOLS:
        return None
    return client_context(TlsSettings.for_listener(config, endpoint.listener))


def listener_principal_mappers(config: BrokerConfig) -> dict[str, SslPrincipalMapper]:
    """Each SSL listener's ``ssl.principal.mapping.rules``, parsed at start-up: a bad rule stops it there,
    naming the key and the rule."""
    mappers = {}
    for endpoint in config.listeners:
        if endpoint.security_protocol == "SSL":
            try:
                mappers[endpoint.listener] = SslPrincipalMapper.from_rules(
                    config.listener_value(endpoint.listener, "ssl.principal.mapping.rules"))
            except InvalidRule as exc:
                raise ConfigError(f"ssl.principal.mapping.rules (listener {endpoint.listener}): {exc}") from None
    return mappers
