"""A watch of every watched Provider's runtime Deployments that survives API-server outages.

A gap is an interval in which a Provider had no Available runtime as the watch saw it. While
the API server cannot be reached nothing can be seen: the watch is *blind*, and on its return
the fresh list is the first thing it sees, so a gap it finds then is measured from there.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from kubernetes import client, watch

NS = "crossplane-system"
PROVIDER_LABEL = "pkg.crossplane.io/provider"
# Between attempts to reach an API server that refused the list (a reconnect loop's pause).
RECONNECT_S = 0.2


def _available(dep: Any) -> bool:
    conditions = (dep.status.conditions if dep.status else None) or []
    return any(x.type == "Available" and x.status == "True" for x in conditions)


def _provider(dep: Any) -> str:
    selector = dep.spec.selector if dep.spec else None
    return str(((selector.match_labels if selector else None) or {}).get(PROVIDER_LABEL, ""))


class RuntimeWatch:
    """Availability of ``providers``' runtimes, from a list then a watch, reconnecting."""

    def __init__(self, api: client.ApiClient, providers: list[str]) -> None:
        self.apps = client.AppsV1Api(api)
        self.providers = set(providers)
        self.available: dict[str, dict[str, bool]] = {p: {} for p in providers}
        self.down_since: dict[str, float] = {}
        self.gaps: dict[str, float] = {p: 0.0 for p in providers}
        self.blind_s = 0.0
        self.reconnects = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._rv = self._list()
        missing = [p for p in providers if p in self.down_since]
        if missing:
            raise AssertionError(f"no Available runtime before the kill: {missing}")
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _list(self) -> str:
        listed = self.apps.list_namespaced_deployment(NS)
        with self._lock:
            self.available = {p: {} for p in self.providers}
            for dep in listed.items:
                if _provider(dep) in self.providers:
                    self.available[_provider(dep)][dep.metadata.name] = _available(dep)
            for p in self.providers:
                self._settle(p)
        return str(listed.metadata.resource_version)

    def _settle(self, provider: str) -> None:
        """Open or close ``provider``'s gap by its availability now (lock held)."""
        now, up = time.monotonic(), any(self.available[provider].values())
        if not up and provider not in self.down_since:
            self.down_since[provider] = now
        elif up and provider in self.down_since:
            self.gaps[provider] += now - self.down_since.pop(provider)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._stream()
            except Exception:  # noqa: BLE001 - the API server is down or the watch expired
                self._reconnect()

    def _stream(self) -> None:
        for event in watch.Watch().stream(self.apps.list_namespaced_deployment, NS,
                                          resource_version=self._rv, timeout_seconds=2):
            dep = event["object"]
            self._rv = dep.metadata.resource_version
            if _provider(dep) not in self.providers:
                continue
            with self._lock:
                deps = self.available[_provider(dep)]
                deps[dep.metadata.name] = _available(dep) and event["type"] != "DELETED"
                if event["type"] == "DELETED":
                    del deps[dep.metadata.name]
                self._settle(_provider(dep))
            if self._stop.is_set():
                return

    def _reconnect(self) -> None:
        """List again until the API server answers; the time without an answer is blind,
        and no gap is counted in it (nothing can be seen)."""
        self.reconnects += 1
        blind_from = time.monotonic()
        with self._lock:
            open_gaps = dict(self.down_since)
            self.down_since.clear()
            for p, since in open_gaps.items():
                self.gaps[p] += blind_from - since
        while not self._stop.is_set():
            try:
                self._rv = self._list()
                break
            except Exception:  # noqa: BLE001 - still down
                time.sleep(RECONNECT_S)  # reconnect pause, not a synchronisation
        self.blind_s += time.monotonic() - blind_from

    def stop(self) -> dict[str, float]:
        """Stop watching; every Provider's total seconds without an Available runtime."""
        self._stop.set()
        self._thread.join(timeout=10)
        with self._lock:
            for p in list(self.down_since):
                self._settle_closed(p)
            return dict(self.gaps)

    def _settle_closed(self, provider: str) -> None:
        self.gaps[provider] += time.monotonic() - self.down_since.pop(provider)
