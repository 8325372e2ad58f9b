"""Free loopback ports below the kernel's ephemeral range."""

from __future__ import annotations

import random
import socket
from pathlib import Path


def _ephemeral_low() -> int:
    """The lowest port the kernel hands out to outgoing connections and ``bind(0)``."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def port_free(port: int) -> bool:
    """True when nothing listens on 127.0.0.1:``port``."""
    with socket.socket() as s:
        # As the servers do: a port held only by TIME_WAIT connections of a previous run is free.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port(gap: int = 0) -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (and ``port + gap`` too, if given).

    Chosen below the kernel's ephemeral range, so no outgoing connection takes it between
    this call and the server's bind (Temporal's UI failed on such a port once in CI).
    """
    top = _ephemeral_low() - 1 - gap
    for _ in range(200):
        port = random.randint(10000, top)
        if port_free(port) and port_free(port + gap):
            return port
    raise OSError(f"no free loopback port (pair {gap} apart) below {top + gap}")


def free_ports(count: int) -> list[int]:
    """``count`` distinct free ports (two draws of :func:`free_port` may coincide)."""
    ports: list[int] = []
    while len(ports) < count:
        port = free_port()
        if port not in ports:
            ports.append(port)
    return ports
