"""A registration in the way at start-up: this broker's own previous incarnation, or another live broker?

A broker restarted soon after kill -9 finds ``/brokers/ids/<id>`` still there: the ephemeral belongs to its
previous ZooKeeper session, which lives until ZooKeeper expires it (``zookeeper.session.timeout.ms`` after
the last heartbeat). Kafka 2.8 stops start-up then ("already registered"), and a supervisor restart-loops it
until the session expires. Here the broker waits for that expiry instead, when the registration is its own:

    wait    the registration names this broker id, the same advertised endpoints (listener, host, port,
            security protocol, as a set), the same HTTP endpoint when both sides know it (the stale one
            registered an HTTP port and ours is not ephemeral, ``http.port=0``), and nobody answers a TCP
            connect at any of the stale registration's endpoints (its listeners and its HTTP port);
    refuse  otherwise: another broker runs with this id (different endpoints, or something answers there).
            Start-up stops with "broker id N is already registered by another live broker (...)", naming
            the session, the endpoints and the reason.

The probe runs before this broker binds any socket of its own (start-up calls ``prepare`` right after the
broker id is resolved, before the listeners and the HTTP port are bound), so an answer can never come from
this process. A connect that is refused, unreachable, unresolvable or times out counts as "nobody
answering": a killed process leaves its ports closed, while a live one, even SIGSTOPped, completes the TCP
handshake in the kernel. A mistaken "wait" is harmless: the wait is bounded (the session timeout plus
``EXPIRY_MARGIN_S``), and registration itself still refuses a node owned by another live session, so the
worst case is today's error, later.

``decide`` is the pure rule; ``anyone_answering`` the probe; ``brokers.app.registration`` the I/O shell.
"""
from __future__ import annotations

import asyncio
import enum
import urllib.parse
from dataclasses import dataclass

from brokers.control import control_base_url
from brokers.model import BrokerInfo

PROBE_TIMEOUT_S = 1.0  # one TCP connect to a stale endpoint
EXPIRY_MARGIN_S = 5.0  # beyond the session timeout: ZooKeeper expires sessions on its tick, not to the ms


class Action(enum.Enum):
    REGISTER = "register"  # nothing in the way, or our own session's node (registration replaces it)
    WAIT = "wait"  # our previous incarnation's node: wait for its session to expire
    REFUSE = "refuse"  # another live broker has this id


@dataclass(frozen=True, slots=True)
class StaleRegistration:
    """``/brokers/ids/<id>`` as found at start-up: the broker it describes and the session owning it."""

    info: BrokerInfo
    owner_session: int


@dataclass(frozen=True, slots=True)
class Decision:
    action: Action
    reason: str = ""


def endpoint_mismatch(stale: BrokerInfo, ours: BrokerInfo) -> str:
    """Why ``stale`` is not this broker's own earlier registration ("" when it may be)."""
    if stale.id != ours.id:
        return f"it is broker {stale.id}, not {ours.id}"
    if set(stale.endpoints) != set(ours.endpoints):
        return (f"its endpoints {sorted(map(str, stale.endpoints))} differ from ours "
                f"{sorted(map(str, ours.endpoints))}")
    if stale.http_port is not None and ours.http_port:  # ours 0/None: ephemeral or unknown, nothing to compare
        if (stale.http_port, stale.http_scheme) != (ours.http_port, ours.http_scheme):
            return (f"its HTTP endpoint {stale.http_scheme}:{stale.http_port} differs from ours "
                    f"{ours.http_scheme}:{ours.http_port}")
    return ""


def decide(stale: StaleRegistration | None, our_session: int, ours: BrokerInfo, answering: bool) -> Decision:
    """What start-up does about the registration it found (``answering``: something accepted a TCP
    connection at one of the stale registration's endpoints, probed before we bound any)."""
    if stale is None or stale.owner_session == our_session:
        return Decision(Action.REGISTER)
    mismatch = endpoint_mismatch(stale.info, ours)
    if mismatch:
        return Decision(Action.REFUSE, mismatch)
    if answering:
        return Decision(Action.REFUSE, "something answers at its endpoints")
    return Decision(Action.WAIT, "same endpoints, nobody answering there")


def probe_addresses(stale: BrokerInfo) -> list[tuple[str, int]]:
    """Every (host, port) the stale registration says it serves: its listeners, then its HTTP port."""
    addresses = [(e.host or "127.0.0.1", e.port) for e in stale.endpoints]
    if stale.http_port is not None:
        url = urllib.parse.urlsplit(control_base_url(stale))
        addresses.append((url.hostname or "127.0.0.1", stale.http_port))
    return list(dict.fromkeys(addresses))


async def anyone_answering(addresses: list[tuple[str, int]], timeout_s: float = PROBE_TIMEOUT_S) -> bool:
    """True when a TCP connect to any of ``addresses`` succeeds within ``timeout_s`` (all probed at once)."""
    results = await asyncio.gather(*(_connects(host, port, timeout_s) for host, port in addresses))
    return any(results)


async def _connects(host: str, port: int, timeout_s: float) -> bool:
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout_s)
    except (OSError, asyncio.TimeoutError):
        return False
    writer.close()
    try:
        await writer.wait_closed()
    except OSError:
        pass
    return True


def expiry_bound_s(session_timeout_ms: int) -> float:
    """How long to wait at most for a stale session to expire."""
    return session_timeout_ms / 1000 + EXPIRY_MARGIN_S
