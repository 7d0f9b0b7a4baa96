"""Ports for the servers the tests start (redis-server, the rummy processes, a browser's page).

A port is chosen below the kernel's ephemeral range: a port the kernel handed out (bind to 0)
and the test then released could be taken by any process's next outgoing connection before the
server binds it (seen in CI: a referee's health port, taken between choice and bind). Outgoing
connections never get a port below that range, so only another test's choice could collide,
and the choice is random."""

from __future__ import annotations

import os
import random
import socket
from pathlib import Path

BUS_OFFSET = 10_000  # a Redis Cluster node's bus port is its port + 10000


def _ephemeral_start() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def spare_port(bus: bool = False) -> int:
    """A free port below the ephemeral range (with ``bus``: its cluster bus port free and
    below the range too), or in ``RUMMY_TEST_PORTS`` (``LOW-HIGH``) when it is set: a machine
    shared by several benches gives each a range."""
    low, top = 10_000, _ephemeral_start() - 1 - (BUS_OFFSET if bus else 0)
    if chosen := os.environ.get("RUMMY_TEST_PORTS"):  # "LOW-HIGH": a range of one's own
        low, top = (int(end) for end in chosen.split("-", 1))
    for _ in range(500):
        port = random.randint(low, top)
        if _free(port) and (not bus or _free(port + BUS_OFFSET)):
            return port
    raise RuntimeError("no spare port below the ephemeral range")
