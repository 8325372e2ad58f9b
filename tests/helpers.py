"""Helpers shared by tests: waiting on conditions with deadlines, free ports, names."""

from __future__ import annotations

import asyncio
import time
import tracemalloc
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from lockwright.controlplane.ports import free_port as free_port
from lockwright.controlplane.ports import port_free as port_free

T = TypeVar("T")


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


def api_client(kubeconfig: str) -> Any:
    """The official client's ``ApiClient`` for ``kubeconfig``, for tests that read a cluster
    through the typed APIs (lockwright itself connects with ``lockwright.k8s.Kube``)."""
    # Imported here: most tests using these helpers never reach a cluster, and the client
    # is slow to import.
    from kubernetes import client, config

    configuration = client.Configuration()
    config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
    return client.ApiClient(configuration)


def traced_peak(call: Callable[[], T]) -> tuple[T, int]:
    """``call()``'s result and the peak bytes Python allocated while it ran."""
    tracemalloc.start()
    try:
        result = call()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
