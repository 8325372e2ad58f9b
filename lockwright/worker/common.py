"""Pieces shared by the worker and the watcher processes."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time
from typing import TYPE_CHECKING, Any

import structlog
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)

from lockwright.activities.connection import from_settings
from lockwright.contracts import SEARCH_ATTRIBUTES
from lockwright.settings import Settings, SettingsError, from_args

if TYPE_CHECKING:
    from temporalio.client import Client

log = structlog.get_logger("lockwright.worker")


def settings_or_exit(args: argparse.Namespace) -> Settings:
    """Resolve settings from flags and environment; print the fix and exit 2 when invalid."""
    try:
        return from_args(args)
    except SettingsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


class Backoff:
    """Exponential backoff delays for reconnect loops, reset after a success."""

    def __init__(self, initial: float = 0.2, maximum: float = 5.0) -> None:
        self.initial, self.maximum, self._next = initial, maximum, initial

    def next(self) -> float:
        """The delay to wait now; doubles the following one up to the maximum."""
        delay, self._next = self._next, min(self._next * 2, self.maximum)
        return delay

    def reset(self) -> None:
        """Start over from the initial delay."""
        self._next = self.initial


async def connect(settings: Settings, timeout: float = 60.0) -> Client:
    """Connect to Temporal, retrying with backoff until ``timeout`` seconds have passed.

    Raises:
        RuntimeError: the server did not answer in time (the last error is chained).
    """
    deadline, backoff = time.monotonic() + timeout, Backoff()
    while True:
        try:
            client: Client = await from_settings(settings).connect()
            return client
        except RuntimeError as exc:
            if time.monotonic() > deadline:
                raise RuntimeError(f"Temporal at {settings.temporal_address} did not answer "
                                   f"within {timeout:.0f}s; is the server running?") from exc
            log.warning("temporal not reachable yet", address=settings.temporal_address,
                        error=str(exc)[:200])
            await asyncio.sleep(backoff.next())  # reconnect backoff, not synchronisation


async def ensure_search_attributes(client: Any) -> None:
    """Register lockwright's search attributes on the client's namespace if any is missing.

    A dev server's ``--search-attribute`` flags apply only to a new database and a fresh
    server has none, so the worker and ``dev up`` make sure at start-up.
    """
    ns = client.namespace
    have = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=ns))
    missing = {k.name: IndexedValueType.ValueType(k.indexed_value_type) for k in SEARCH_ATTRIBUTES
               if k.name not in have.custom_attributes}
    if missing:
        await client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(namespace=ns, search_attributes=missing))


def stop_on_signals(stop: asyncio.Event) -> None:
    """Set ``stop`` on SIGTERM or SIGINT (graceful shutdown)."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
