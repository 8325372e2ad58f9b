"""Watch streams: replay from a resourceVersion, then follow the change log.

Selector semantics follow kube-apiserver's watch cache: an object that starts matching
arrives as ADDED, one that stops matching as DELETED. A start version older than the
retained log yields one ``ERROR`` event carrying a 410 ``Expired`` Status. A watch-list
(:mod:`devcluster.watchlist`) starts with the current state instead, then its bookmark.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from lockwright.devcluster.cluster import Cluster
from lockwright.devcluster.errors import gone
from lockwright.devcluster.selectors import Matcher
from lockwright.devcluster.store import Event, Store
from lockwright.devcluster.types import ResourceType
from lockwright.devcluster.watchlist import end_bookmark

Obj = dict[str, Any]
# Seconds between a watch's periodic BOOKMARK events: about a minute, as kube-apiserver's
# watch cache sends them. Every open watch pays for each one, on both ends: at 1 s, a test
# stack holding 114 packages (about 150 watches) idled at 20 CPU-seconds a minute, at 60 s
# at 10.6 (docs/testing.md, "What a session stack carries").
BOOKMARK_INTERVAL_S = 60.0


@dataclass
class WatchRequest:
    """What one watch asks for."""

    rt: ResourceType
    namespace: str | None
    since: str | None
    match: Matcher
    bookmarks: bool = False
    timeout: float | None = None
    bookmark_interval: float = BOOKMARK_INTERVAL_S
    tick: float = 1.0
    initial_events: bool = False


def _in_scope(req: WatchRequest, event: Event) -> bool:
    g, plural, ns, _ = event.key
    return (g, plural) == (req.rt.group, req.rt.plural) and (
        req.namespace is None or ns == req.namespace)


def translate(req: WatchRequest, event: Event) -> tuple[str, Obj] | None:
    """The (type, object) a watcher with this selector sees for ``event``, if any."""
    if not _in_scope(req, event):
        return None
    now_matches = req.match(event.obj)
    was = event.old is not None and req.match(event.old)
    if event.type == "DELETED":
        return ("DELETED", event.obj) if now_matches or was else None
    if event.type == "ADDED" or not was:
        return ("ADDED", event.obj) if now_matches else None
    return ("MODIFIED", event.obj) if now_matches else ("DELETED", event.obj)


def stream(cluster: Cluster, req: WatchRequest) -> Iterator[tuple[str, Obj] | None]:
    """Yield watch events; ``None`` is an idle tick that lets the caller check the client."""
    store = cluster.store
    deadline = time.monotonic() + req.timeout if req.timeout else None
    with store.lock:
        if req.initial_events or req.since in (None, "", "0"):
            start = store.rv
            initial = [o for _, o in store.items(req.rt.group, req.rt.plural, req.namespace)
                       if req.match(o)] if req.initial_events else []
        else:
            start = _parse_rv(req.since)
            if store.too_old(start):
                yield "ERROR", gone(f"too old resource version: {start} ({store._floor})").status()
                return
            initial = []
    for obj in initial:
        yield "ADDED", obj
    if req.initial_events and req.bookmarks:
        yield "BOOKMARK", end_bookmark(req.rt.kind, req.rt.group_version, max(start, 1))
    yield from _follow(store, req, start, deadline)


def _follow(store: Store, req: WatchRequest, start: int, deadline: float | None
            ) -> Iterator[tuple[str, Obj] | None]:
    """The events after ``start``: read when the resource's flag is set or a bookmark is
    due; a wait that ends with the flag unset is an idle tick (the store's lock untaken)."""
    last_bookmark = time.monotonic()
    resource = (req.rt.group, req.rt.plural)
    with store.subscribe(*resource) as fresh:
        while deadline is None or time.monotonic() < deadline:
            due = req.bookmarks and time.monotonic() - last_bookmark >= req.bookmark_interval
            if fresh.is_set() or due:
                pending, start = _read(store, resource, fresh, start)
                yield from filter(None, (translate(req, event) for event in pending))
            if due:
                last_bookmark = time.monotonic()
                yield "BOOKMARK", {"kind": req.rt.kind, "apiVersion": req.rt.group_version,
                                   "metadata": {"resourceVersion": str(max(start, 1))}}
            elif not fresh.wait(_wait_time(req, deadline, last_bookmark)):
                yield None


def _read(store: Store, resource: tuple[str, str], fresh: threading.Event, start: int
          ) -> tuple[list[Event], int]:
    """The resource's events after ``start``, and the log's head: every event up to it read."""
    with store.lock:
        fresh.clear()
        return store.events_after(start, resource), max(start, store.rv)


def _wait_time(req: WatchRequest, deadline: float | None, last_bookmark: float) -> float:
    wait = req.tick
    if req.bookmarks:
        wait = min(wait, max(0.0, req.bookmark_interval - (time.monotonic() - last_bookmark)))
    if deadline is not None:
        wait = min(wait, max(0.0, deadline - time.monotonic()))
    return wait


def _parse_rv(text: str) -> int:
    try:
        return int(text)
    except ValueError as exc:
        from lockwright.devcluster.errors import bad_request

        raise bad_request(f'resourceVersion: Invalid value: "{text}": strconv.ParseUint: parsing'
                          f' "{text}": invalid syntax') from exc
