"""The watcher's part of provider deletion protection: when to signal ``protect:providers``.

The watcher already lists and watches CRDs (metadata only). Each CRD with a Provider owner
(a plain owner reference of kind Provider) gets a stream of its own resources, metadata
only, in any namespace, once its Provider has been Healthy, so the watcher knows when a Provider type gets its first resource
or loses its last: only those moments, a Provider type's CRD coming or going, and every
full list of CRDs (start-up, resync) signal the protection workflow. A burst of resources
costs no signal beyond the first. With protection off no resource is watched; the lists
of CRDs still signal, so the workflow removes what an earlier run left
(docs/design.md, "Provider deletion protection").
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from lockwright.k8s import Kube, deleting
from lockwright.k8s.watch import METADATA_WATCH
from lockwright.managed.protection import provider_of
from lockwright.worker.targets import Obj, Resource

MANAGED = "managed"  # Resource.role of a Provider type's resources
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def type_resource(crd: str) -> Resource:
    """The stream's resource for CRD ``plural.group``; its version is found when listed."""
    plural, group = crd.split(".", 1)
    return Resource(crd, plural, "", MANAGED, group=group, metadata_only=True)


# How long a group's discovery, read for a Provider type's stream, answers the others.
SERVED_FRESH_S = 1.0


class ServedTypes:
    """Which Provider types the API server serves, from discovery, read at most once per
    ``fresh_s`` a group and shared by every type's stream.

    kube-apiserver serves a new CRD's type only once the CRD is named and Established,
    which for 2,000 CRDs of one group took it minutes; each stream trying meanwhile sent a
    discovery read, an access review and a list (answered 404), and every write to its CRD
    (an upgrade takes each) woke it: 16,871 of the watcher's 28,988 requests in one
    benchmark's run, and 7,177 watcher requests in one switch-over's 31 s prepare.
    Checked here first, a try of a type not served sends nothing of its own
    (docs/design.md, "Provider deletion protection")."""

    def __init__(self, connect: Callable[[], Kube], fresh_s: float = SERVED_FRESH_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._connect = connect
        self._kube: Kube | None = None
        self.fresh_s, self._clock = fresh_s, clock
        self._lock = threading.Lock()  # one read at a time, on one connection
        self._groups: dict[str, tuple[float, dict[str, str]]] = {}  # read at, plural: version

    def version(self, group: str, plural: str) -> str:
        """A version ``group`` serves ``plural`` at (its preferred one first), or ""."""
        with self._lock:
            read_at, plurals = self._groups.get(group, (-math.inf, {}))
            if self._clock() - read_at >= self.fresh_s:
                plurals = self._read(group)
                self._groups[group] = (self._clock(), plurals)
            return plurals.get(plural, "")

    def _read(self, group: str) -> dict[str, str]:
        """Each plural ``group`` serves, with the first of its versions serving it."""
        kube = self._kube = self._kube or self._connect()
        doc = kube.read_path(f"/apis/{group}") or {}
        preferred = str((doc.get("preferredVersion") or {}).get("version") or "")
        versions = [preferred] if preferred else []
        versions += [v for v in (str(x.get("version") or "") for x in doc.get("versions") or [])
                     if v and v != preferred]
        plurals: dict[str, str] = {}
        for version in versions:
            for res in (kube.read_path(f"/apis/{group}/{version}") or {}).get("resources") or []:
                plurals.setdefault(str(res.get("name", "")), version)
        return plurals


def served_version(served: ServedTypes, res: Resource) -> Resource:
    """``res`` with a version its group serves it at (discovery), when it has none yet.

    Raises:
        LookupError: not served yet: the stream backs off and asks again.
    """
    if res.role != MANAGED or res.version:
        return res
    version = served.version(res.group, res.plural)
    if not version:
        raise LookupError(f"{res.plural}.{res.group} is not served yet")
    return Resource(res.kind, res.plural, version, res.role, group=res.group,
                    metadata_only=True)


def ensure_readable(kube: Kube, res: Resource, verb: str) -> None:
    """Ask, right before each list and each watch of a Provider type, whether lockwright
    may still ``verb`` it. Its right comes with the Provider's revisions' RBAC, written
    after the CRDs and gone with a revision (deleted by hand, or replaced) while the CRDs
    stay; a watch already open is not ended when the right goes, so only asking before
    each request, a watch resumed after its timeout included, keeps it from being refused.
    The watch after a list is asked for again: a revision deleted while the list runs
    (its Provider just turned Healthy, so its streams just started) takes the right with
    it. A resumed watch costs one review a stream every few minutes.

    Raises:
        LookupError: not readable now: the stream backs off and asks again.
    """
    if res.role == MANAGED and not kube.can_i(verb, res.group, res.plural):
        raise LookupError(f"no right to {verb} {res.plural}.{res.group} now")


def ensure_standing(kube: Kube, res: Resource) -> None:
    """Ask, after a Provider type's watch ended early (or a round of its stream failed),
    whether its CRD still stands before going on. A CRD's deletion ends its watches early, and the garbage collector deletes
    a revision's CRDs and its RBAC together, so a stream that resumed (asked, allowed, then
    watched) would race the rule's removal and could be refused. A CRD being deleted is
    not watched again: the watcher stops its stream when the CRD is gone, and streams the
    CRD anew should a revision create it again. One metadata GET per early end or failure.

    Raises:
        LookupError: the CRD is gone or being deleted: the stream backs off until stopped.
    """
    if res.role != MANAGED:
        return
    crd = kube.read_path(f"{CRDS}/{res.kind}", accept=METADATA_WATCH)
    if crd is None or deleting(crd):
        raise LookupError(f"CRD {res.kind} is being deleted: its watch is not resumed")


def unresolved(res: Resource) -> Resource:
    """A Provider type's stream resource whose served version is to be found again before
    the next list or watch; any other resource as it is."""
    return type_resource(res.kind) if res.role == MANAGED else res


def healthy(provider: Obj) -> bool:
    """Whether a Provider's ``Healthy`` condition is True."""
    return any(c.get("type") == "Healthy" and c.get("status") == "True"
               for c in (provider.get("status") or {}).get("conditions") or [])


def _key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


@dataclass
class Streams:
    """What changes in the set of watched types: CRDs to start and to stop watching."""

    start: list[str] = field(default_factory=list)
    stop: list[str] = field(default_factory=list)
    signal: bool = False


@dataclass
class ProtectionIndex:
    """Which CRDs are a Provider's, and which of them have resources (pure)."""

    enabled: bool = True
    providers: dict[str, str] = field(default_factory=dict)  # CRD name -> Provider
    resources: dict[str, set[str]] = field(default_factory=dict)  # CRD -> namespace/name
    # Providers seen Healthy: only their types are streamed, so installing a Provider of
    # thousands of CRDs is not slowed by a stream per CRD before it is up (its RBAC, which
    # lets lockwright read them, comes after its CRDs anyway).
    healthy: set[str] = field(default_factory=set)
    streaming: set[str] = field(default_factory=set)  # CRDs whose stream runs

    def _startable(self, crds: list[str]) -> list[str]:
        out = sorted(c for c in crds if self.enabled and c not in self.streaming
                     and self.providers.get(c) in self.healthy)
        self.streaming.update(out)
        return out

    def _stopped(self, crds: list[str]) -> list[str]:
        out = sorted(c for c in crds if c in self.streaming)
        self.streaming.difference_update(out)
        return out

    def on_provider(self, name: str, healthy: bool, gone: bool = False) -> Streams:
        """A Provider listed or changed: the first time it is Healthy, its types' streams
        start. They are not stopped for a Provider turning unhealthy, only for one being
        deleted (``gone``: deleted, or its deletion admitted): its revisions' RBAC, which
        lets lockwright read its types, goes with it, and a deletion admitted has nothing
        left to protect. Should it come back, its types stream again once it is Healthy."""
        if gone:
            self.healthy.discard(name)
            return Streams(stop=self._stopped([c for c, p in self.providers.items()
                                               if p == name]))
        if not healthy or name in self.healthy:
            return Streams()
        self.healthy.add(name)
        return Streams(start=self._startable([c for c, p in self.providers.items()
                                              if p == name]))

    def on_crds(self, items: list[Obj], full: bool, signal_all: bool = False) -> Streams:
        """CRDs listed (``full``: ``items`` is every CRD) or one added or written: the
        streams to start and stop, and whether to signal (a list with ``signal_all``, a
        Provider type gone or moved to another Provider). A new type signals only once its
        first list finds resources. A type that moved to another Provider (a hand-off) stops
        streaming until that Provider has been Healthy: the old revision's RBAC, which let
        lockwright read it, goes with the old revision."""
        seen = {str((o.get("metadata") or {}).get("name", "")): provider_of(
            o.get("metadata") or {}) for o in items}
        before = dict(self.providers)
        if full:
            self.providers = {n: p for n, p in seen.items() if p}
        else:
            self.providers.update({n: p for n, p in seen.items() if p})
        stopped = sorted(set(before) - set(self.providers))
        for name in stopped:
            self.resources.pop(name, None)
        moved = sorted(n for n, p in self.providers.items() if before.get(n, p) != p)
        return Streams(stop=self._stopped(stopped + moved),
                       start=self._startable(sorted(set(self.providers) - set(before)) + moved),
                       signal=signal_all or bool(stopped) or bool(moved))

    def crd_deleted(self, name: str) -> Streams:
        """A CRD is gone: stop its stream; signal when it was a Provider type."""
        was = self.providers.pop(name, None) is not None
        self.resources.pop(name, None)
        return Streams(stop=self._stopped([name]), signal=was)

    def listed(self, crd: str, items: list[Obj]) -> bool:
        """A type's resources listed; signal when it had none before and has some now, or
        the reverse (the first list of a type signals when it has any)."""
        before = self.resources.get(crd)
        now = {_key(o) for o in items}
        self.resources[crd] = now
        return bool(now) != bool(before)

    def changed(self, crd: str, event: str, obj: Obj) -> bool:
        """One watch event of a type's resources; signal on the first and the last."""
        names = self.resources.setdefault(crd, set())
        had = bool(names)
        if event == "DELETED":
            names.discard(_key(obj))
        elif event == "ADDED":
            names.add(_key(obj))
        return had != bool(names)

