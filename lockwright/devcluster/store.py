"""Persistent object storage with one cluster-wide, ever-increasing resourceVersion.

Objects live in memory (for speed) and are written through to SQLite (for restarts).
Every write appends an event to a bounded in-memory log; watches replay from it, and a
watch that asks for a version older than the log answers 410 Gone, as kube-apiserver's
watch cache does. After a restart the log starts empty at the persisted version, so an
old version is "too old" exactly as after an etcd compaction.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from lockwright.devcluster.types import dump_json

Key = tuple[str, str, str, str]  # (group, plural, namespace, name)


@dataclass(frozen=True)
class Event:
    """One change: ``type`` is ADDED, MODIFIED or DELETED; ``old`` is the prior state."""

    rv: int
    type: str
    key: Key
    obj: dict[str, Any]
    old: dict[str, Any] | None


class Store:
    """Objects keyed by (group, plural, namespace, name) plus the change log.

    All mutation happens under ``self.lock`` (re-entrant): the caller holds it across a
    read-modify-write so compare-and-swap on resourceVersion is exact.
    """

    def __init__(self, data_dir: str, history: int = 10_000) -> None:
        os.makedirs(data_dir, exist_ok=True)
        self.lock = threading.RLock()
        # Each watch has a flag of its own, filed by resource (group, plural): a write sets
        # only its resource's flags, and a watch waits on its flag without the lock. With
        # one condition for all, each write woke every watch (a 2,000-CRD Provider's
        # protection streams are 2,000 of them); with a condition on the lock, every idle
        # tick took the lock back. Either way the writes queued behind the watches.
        self._waiting: dict[tuple[str, str], set[threading.Event]] = {}
        self._db = sqlite3.connect(os.path.join(data_dir, "state.db"), check_same_thread=False,
                                   isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS objects (g TEXT, r TEXT, ns TEXT, name TEXT,"
                         " body TEXT, PRIMARY KEY (g, r, ns, name))")
        self._db.execute("CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT)")
        self._objects: dict[Key, dict[str, Any]] = {}
        self._by_uid: dict[str, Key] = {}
        self._events: deque[Event] = deque(maxlen=max(history, 1))
        # The same events by resource (group, plural), the retained ones only: a watch
        # reads its own resource's, not every write's (a 2,000-CRD install's writes are
        # not for the 2,000 protection streams of its Provider's types).
        self._by_resource: dict[tuple[str, str], deque[Event]] = {}
        self.rv = self._load()
        self._floor = self.rv  # the oldest version a watch may start from

    def _load(self) -> int:
        for g, r, ns, name, body in self._db.execute("SELECT g, r, ns, name, body FROM objects"):
            obj = json.loads(body)
            self._objects[(g, r, ns, name)] = obj
            self._by_uid[obj["metadata"]["uid"]] = (g, r, ns, name)
        row = self._db.execute("SELECT v FROM meta WHERE k = 'rv'").fetchone()
        return int(row[0]) if row else 1

    def close(self) -> None:
        with self.lock:
            self._db.close()

    # -- reads -------------------------------------------------------------------------

    def get(self, key: Key) -> dict[str, Any] | None:
        return self._objects.get(key)

    def by_uid(self, uid: str) -> dict[str, Any] | None:
        key = self._by_uid.get(uid)
        return self._objects.get(key) if key else None

    def items(self, group: str, plural: str, namespace: str | None = None
              ) -> list[tuple[Key, dict[str, Any]]]:
        """Objects of one resource, sorted by namespace then name (the list order kube uses)."""
        with self.lock:
            found = [(k, o) for k, o in self._objects.items()
                     if k[0] == group and k[1] == plural and (namespace is None or k[2] == namespace)]
        found.sort(key=lambda kv: (kv[0][2], kv[0][3]))
        return found

    def all_objects(self) -> list[tuple[Key, dict[str, Any]]]:
        with self.lock:
            return list(self._objects.items())

    # -- writes ------------------------------------------------------------------------

    def next_rv(self) -> int:
        """Reserve the next resourceVersion (caller holds the lock)."""
        self.rv += 1
        return self.rv

    def put(self, key: Key, obj: dict[str, Any], event_type: str) -> None:
        """Store ``obj`` (its resourceVersion already set from :meth:`next_rv`) and log it."""
        old = self._objects.get(key)
        self._objects[key] = obj
        self._by_uid[obj["metadata"]["uid"]] = key
        self._persist("INSERT OR REPLACE INTO objects VALUES (?, ?, ?, ?, ?)",
                      (*key, dump_json(obj).decode()))
        self._record(Event(self.rv, event_type, key, obj, old))

    def remove(self, key: Key, final: dict[str, Any]) -> None:
        """Delete the object at ``key``; ``final`` (with a fresh resourceVersion) is what watchers see."""
        old = self._objects.pop(key, None)
        if old is not None:
            self._by_uid.pop(old["metadata"]["uid"], None)
        self._persist("DELETE FROM objects WHERE g = ? AND r = ? AND ns = ? AND name = ?", key)
        self._record(Event(self.rv, "DELETED", key, final, old))

    def _persist(self, sql: str, params: tuple[Any, ...]) -> None:
        # One transaction per write: the object and the version counter move together.
        self._db.execute("BEGIN")
        self._db.execute(sql, params)
        self._db.execute("INSERT OR REPLACE INTO meta VALUES ('rv', ?)", (str(self.rv),))
        self._db.execute("COMMIT")

    def _record(self, event: Event) -> None:
        if len(self._events) == self._events.maxlen:
            oldest = self._events[0]
            self._floor = oldest.rv
            # The logs by resource split the retained log between them: the oldest event
            # leaves its resource's log with it (it is that log's first).
            self._by_resource[(oldest.key[0], oldest.key[1])].popleft()
        self._events.append(event)
        resource = (event.key[0], event.key[1])
        self._by_resource.setdefault(resource, deque()).append(event)
        for fresh in self._waiting.get(resource, ()):
            fresh.set()

    @contextmanager
    def subscribe(self, group: str, plural: str) -> Iterator[threading.Event]:
        """A flag set on each change of resource ``plural.group`` while the block runs (and
        set at its start). Clear it under :attr:`lock` before reading the events."""
        fresh, resource = threading.Event(), (group, plural)
        fresh.set()
        with self.lock:
            self._waiting.setdefault(resource, set()).add(fresh)
        try:
            yield fresh
        finally:
            with self.lock:
                self._waiting[resource].discard(fresh)

    # -- the change log ----------------------------------------------------------------

    def compact(self) -> int:
        """Forget the change log up to now, as an etcd compaction at the current revision
        does: a watch from an older version then answers 410 Gone. The new floor."""
        with self.lock:
            self._events.clear()
            self._by_resource.clear()
            self._floor = self.rv
            return self._floor

    def too_old(self, rv: int) -> bool:
        """True when events after ``rv`` are no longer all retained."""
        return rv < self._floor

    def events_after(self, rv: int, resource: tuple[str, str]) -> list[Event]:
        """Retained events of ``resource`` (group, plural) with a version above ``rv``
        (caller holds the lock).

        Scans from the newest end: a watcher that keeps up needs only the last few events,
        and copying the whole log on every wake made each write cost O(watchers x log).
        """
        newer: list[Event] = []
        for event in reversed(self._by_resource.get(resource, ())):
            if event.rv <= rv:
                break
            newer.append(event)
        newer.reverse()
        return newer
