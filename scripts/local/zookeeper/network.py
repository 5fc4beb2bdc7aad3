"""ZooKeeper's ``srvr`` four-letter word (readiness and mode) and free client-port blocks for tests and benches."""
from __future__ import annotations

import random
import re
import socket

from zkafka.testing.ports import ephemeral_low, port_free
from scripts.local.zookeeper.config import FIRST_PORT, SERVING_MODES, ZooKeeperError, ensemble_ports

def parse_srvr(text: str) -> dict:
    """The ``srvr`` four-letter-word response as a dict with snake_case keys.

    ``{"serving": True, "mode": "leader", "zxid": "0x100000002", "zookeeper_version": "3.9.5-...", ...}``;
    a node without quorum answers "This ZooKeeper instance is not currently serving requests", giving
    ``{"serving": False, "mode": None, "message": ...}``.
    """
    result: dict = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip():
            result[re.sub(r"\s+", "_", key.strip().lower())] = value.strip()
    mode = result.get("mode")
    result["mode"] = mode
    result["serving"] = mode in SERVING_MODES
    if not result["serving"]:
        result["message"] = text.strip()
    for key in ("received", "sent", "connections", "outstanding", "node_count"):
        if key in result and result[key].isdigit():
            result[key] = int(result[key])
    return result


def srvr(host: str, port: int, timeout: float = 2.0) -> dict:
    """Send ``srvr`` and parse the answer. Raises OSError if nothing answers (refused, reset, timeout)."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(b"srvr")
        chunks = []
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                break
            chunks.append(chunk)
    text = b"".join(chunks).decode("utf-8", "replace")
    if not text:
        raise ConnectionResetError(f"{host}:{port} closed the connection without answering srvr")
    return parse_srvr(text)


def try_srvr(port: int, timeout: float = 1.0) -> dict | None:
    try:
        return srvr("127.0.0.1", port, timeout)
    except OSError:
        return None


def find_free_base_port(size: int = 1, attempts: int = 200) -> int:
    """A client port P such that every port ``ensemble_ports(P, size)`` uses is free now. P is drawn below
    the kernel's ephemeral range: a port found free inside it (binding port 0) can be taken by any outgoing
    connection before the server that was meant to get it binds (a broker's ``address already
    in use`` seconds after its port was chosen)."""
    low, high = FIRST_PORT, ephemeral_low() - 1
    for _ in range(attempts):
        base = random.randint(low, high)
        try:
            wanted = [p for ports in ensemble_ports(base, size) for p in ports]
        except ValueError:
            continue
        if max(wanted) <= high and all(port_free(p) for p in set(wanted)):
            return base
    raise ZooKeeperError(f"no free block of ports for a {size}-node ensemble after {attempts} attempts")





