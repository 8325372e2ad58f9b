"""Helpers shared by tests: waiting on conditions with deadlines, free ports, names."""

from __future__ import annotations

import asyncio
import random
import time
import tracemalloc
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from worker.stack import port_free

T = TypeVar("T")


def _ephemeral_low() -> int:
    """The lowest port the kernel hands out to outgoing connections and ``bind(0)``."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port(gap: int = 0) -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (and ``port + gap`` too, if given).

    Chosen below the kernel's ephemeral range, so no outgoing connection of this or a
    parallel test takes it between this call and the server's bind (Temporal's UI failed
    on such a port once in CI).
    """
    top = _ephemeral_low() - 1 - gap
    for _ in range(200):
        port = random.randint(10000, top)
        if port_free(port) and port_free(port + gap):
            return port
    raise AssertionError(f"no free loopback port (pair {gap} apart) below {top + gap}")


def unique(prefix: str = "t") -> str:
    """A DNS-1123 name unique to this call, so parallel tests never collide."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def wait_for(predicate: Callable[[], T], timeout: float = 10.0, interval: float = 0.02,
             what: str = "condition") -> T:
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout`` seconds.

    Exceptions raised by the predicate count as "not yet" and the last one is reported.
    """
    deadline = time.monotonic() + timeout
    last_exc: BaseException | None = None
    while True:
        try:
            value = predicate()
            if value:
                return value
        except Exception as exc:  # noqa: BLE001 - "not yet", reported on timeout
            last_exc = exc
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}"
                                 + (f"; last error: {last_exc!r}" if last_exc else ""))
        time.sleep(interval)


async def wait_for_async(predicate: Callable[[], Awaitable[T]], timeout: float = 10.0,
                         interval: float = 0.05, what: str = "condition") -> T:
    """Async twin of :func:`wait_for` for coroutine predicates."""
    deadline = time.monotonic() + timeout
    last_exc: BaseException | None = None
    while True:
        try:
            value = await predicate()
            if value:
                return value
        except Exception as exc:  # noqa: BLE001
            last_exc = exc
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}"
                                 + (f"; last error: {last_exc!r}" if last_exc else ""))
        await asyncio.sleep(interval)


def traced_peak(call: Callable[[], T]) -> tuple[T, int]:
    """``call()``'s result and the peak bytes Python allocated while it ran."""
    tracemalloc.start()
    try:
        result = call()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
