"""Free ports for tests and benchmarks come from below the kernel's ephemeral range, where no outgoing
connection can take them between the choice and the bind."""
from __future__ import annotations

import socket

from scripts.local.zookeeper import FIRST_PORT, ensemble_ports, find_free_base_port
from zkafka.testing.ports import ephemeral_low, free_ports


def test_free_ports_are_below_the_ephemeral_range_and_bindable():
    for size in (1, 3):
        base = find_free_base_port(size)
        ports = [p for block in ensemble_ports(base, size) for p in block]
        assert FIRST_PORT <= min(ports) and max(ports) < ephemeral_low()
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", base))


def test_zkafka_testing_free_ports_are_distinct_below_the_ephemeral_range_and_bindable():
    ports = free_ports(8)
    assert len(set(ports)) == 8 and max(ports) < ephemeral_low()
    for port in ports:
        with socket.socket() as sock:
            sock.bind(("0.0.0.0", port))
