"""Host ports for published container ports: free now and below the kernel's ephemeral range.

While a container restarts its published port is unbound; inside the ephemeral range any outgoing
connection of the host (a client's own reconnects among them) could take it, and the container would not
start again. Below the range only a server binding it explicitly can.
"""
from __future__ import annotations

import random
import socket
from pathlib import Path

FIRST_PORT = 10000


def ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (Linux's default 32768 where it cannot be read)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_ports(count: int, attempts: int = 1000) -> list[int]:
    """``count`` distinct ports free on this host now, drawn below the ephemeral range."""
    high = ephemeral_low() - 1
    ports: set[int] = set()
    for _ in range(attempts):
        if len(ports) == count:
            break
        port = random.randint(FIRST_PORT, high)
        if port not in ports and port_free(port) and port_free(port, "0.0.0.0"):
            ports.add(port)
    if len(ports) < count:
        raise RuntimeError(f"found only {len(ports)} of {count} free ports in {FIRST_PORT}-{high}")
    return sorted(ports)
