"""``lockwright watcher``: turn Kubernetes changes into ``look_again`` signals.

Thin by design: one thread per watched resource lists, then watches from the list's
``resourceVersion`` (bookmarks on; :mod:`lockwright.k8s.watch`), resumes from the last
version seen after a dropped stream, relists on ``410 Gone`` (``KubeGone``) and relists
with ``signal_all`` every resync interval.
Secrets are watched in the system namespace only and as metadata only (``as=PartialObject
Metadata``), and whatever a server sends is cut down to a few metadata fields before it
leaves the stream, so no Secret data reaches the index, the signals or the logs. The
threads hand events to the asyncio loop, where :class:`worker.targets.Index` decides which
package workflows to signal and a few tasks do signal-with-start. Pending signals are
coalesced per workflow id. Several watchers at once are harmless: the workflow id is the
dedup key and a signal only says "look again".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, fields, replace
from functools import partial
from typing import Any

import structlog
from temporalio.common import SearchAttributePair, TypedSearchAttributes

from lockwright import contracts as c
from lockwright.contracts import Tuning
from lockwright.errors import KubeGone, KubeNotFound
from lockwright.k8s import Kube, deleting
from lockwright.k8s.watch import BOOKMARK, Watch, list_all, watch
from lockwright.log import configure
from lockwright.settings import Settings
from lockwright.worker.common import Backoff, connect, settings_or_exit, stop_on_signals
from lockwright.worker.protection import (
    MANAGED,
    ProtectionIndex,
    ServedTypes,
    Streams,
    ensure_readable,
    ensure_standing,
    healthy,
    served_version,
    type_resource,
    unresolved,
)
from lockwright.worker.targets import (
    ACTIVATION,
    PROTECTION,
    RESOURCES,
    Index,
    Obj,
    Resource,
    Target,
    in_namespace,
)
from lockwright.workflows import (
    ActivateDefinitions,
    PackageWorkflow,
    ProtectProviders,
    ResolveDependencies,
)

log = structlog.get_logger("lockwright.watcher")

WATCH_TIMEOUT_S = 300
SIGNALLERS = 8
# Provider types' streams between a round's start and its watch at once. Unbounded, a
# 2,000-CRD Provider's streams sent 6,000 requests together as it turned Healthy; on
# kube-apiserver, not yet serving all its new types, they failed (404) and retried: 11,326
# failures in 9.5 minutes, and the API server's other clients timed out behind them.
TYPES_PREPARING = 16
# A Provider type not served yet (404, or not in discovery) waits from UNSERVED_FIRST_S,
# doubling up to UNSERVED_MAX_S, between tries, and again from the first after its CRD's
# next write (the API server's Established status among them), which wakes it at once. A
# try is checked against discovery shared by every type's stream first (ServedTypes), so
# one not served yet costs the API server nothing of its own. Retrying every 5 s, each try
# a discovery read, an access review and a list, a 2,000-CRD Provider whose kinds
# kube-apiserver took six minutes to establish sent 28,301 failed rounds.
UNSERVED_FIRST_S, UNSERVED_MAX_S = 1.0, 60.0
SYNCED_EVENT = "watcher synced"  # logged once every resource was listed; dev up waits on it


@dataclass(frozen=True)
class Synced:
    """A full list of one resource; ``signal_all`` on start-up and resync."""

    res: Resource
    items: list[Obj]
    signal_all: bool
    why: str


@dataclass(frozen=True)
class Changed:
    """One watch event."""

    res: Resource
    type: str
    obj: Obj


Message = Synced | Changed


@dataclass
class Stream:
    """List-then-watch loop of one resource, run in its own thread."""

    res: Resource
    kube: Kube
    emit: Callable[[Message], None]
    stop: threading.Event
    resync_s: float
    rv: str = ""
    _watch: Watch | None = field(default=None, init=False, repr=False)
    _why: str = field(default="start", init=False, repr=False)  # of the next list
    _signal_all: bool = field(default=True, init=False, repr=False)  # next list's
    _resync_at: float = field(default=float("inf"), init=False, repr=False)
    # The last watch ended early, or a round failed after the list: read the CRD first.
    _crd_unsure: bool = field(default=False, init=False, repr=False)
    # Held from a round's start until its watch is sent: Provider types' streams share
    # one, so a 2,000-CRD Provider's streams, started together as it turns Healthy, send
    # their reviews, reads and lists a few at a time (docs/design.md, "Provider deletion
    # protection"); other streams hold nothing.
    gate: AbstractContextManager[Any] = field(default_factory=nullcontext)
    # The delays of a Provider type not served yet (see UNSERVED_MAX_S).
    unserved: Backoff = field(
        default_factory=lambda: Backoff(UNSERVED_FIRST_S, UNSERVED_MAX_S))
    # Which Provider types are served; the watcher's streams share one. None: one of the
    # stream's own, on its own connection.
    served: ServedTypes | None = None
    # Set to end a wait between tries early: by wake() (a Provider type's CRD was
    # written) and by interrupt() (stopping).
    _woken: threading.Event = field(default_factory=threading.Event, init=False, repr=False)
    # The last round failed as not served yet (told once until served: see _failed).
    _waiting: bool = field(default=False, init=False, repr=False)

    def run(self) -> None:
        """Loop until ``stop``: (re)list when needed, otherwise watch from ``rv``."""
        backoff, unserved = Backoff(), self.unserved
        while not self.stop.is_set():
            try:
                if self._round():
                    backoff.reset()
                    unserved.reset()
            except Exception as exc:  # noqa: BLE001 - any failure: back off, resume from rv
                if self.stop.is_set():
                    return
                if self._woken.wait(self._failed(exc, backoff)):  # its CRD written
                    unserved.reset()  # it may be served soon
                self._woken.clear()
            else:
                self._waiting = False

    def _failed(self, exc: Exception, backoff: Backoff) -> float:
        """The wait before the next round after ``exc``, logged. A type not served yet is
        told once until it is (info), its further tries at debug: a new 2,000-CRD
        provider's types were tried 18,311 times before kube-apiserver served them all."""
        waiting = self._unserved(exc)
        delay = (self.unserved if waiting else backoff).next()
        self.res = unresolved(self.res)  # a version gone among the causes: find it again
        # A watch to resume (listed already): its CRD is read first. Before the first list
        # (a new Provider's streams waiting for its RBAC) nothing is resumed, and 2,000
        # streams retrying would each add a GET.
        self._crd_unsure = bool(self.rv)
        say = (log.warning if not waiting else log.debug if self._waiting else log.info)
        say("watch failed", kind=self.res.kind, rv=self.rv, retry_in=delay,
            error=f"{type(exc).__name__}: {str(exc)[:200]}")
        self._waiting = waiting
        return delay

    def _unserved(self, exc: Exception) -> bool:
        """Whether the failure says a Provider type is not served yet: its list was not
        found (404), or its group has no version in discovery."""
        return self.res.role == MANAGED and (
            isinstance(exc, KubeNotFound)
            or isinstance(exc, LookupError) and "not served yet" in str(exc))

    def wake(self) -> None:
        """End a wait between tries now: the type's CRD was written (it may be served)."""
        self._woken.set()

    def _round(self) -> bool:
        """List if needed, then watch; False when the watch's version was gone (relist).
        A Provider type's stream asks for the right to read before each list and each
        watch, and finds its served version again after a watch the server ended early (a
        CRD's storage torn down, an API server going), once its CRD is known to stand."""
        with self.gate:
            if not self._prepare():
                return True
        try:
            if self._follow(self._resync_at):
                self.res, self._crd_unsure = unresolved(self.res), True
        except KubeGone as exc:
            log.info("relist", kind=self.res.kind, reason="410 Gone", detail=str(exc)[:200])
            self.rv, self._why, self._signal_all = "", "relist after 410", False
            return False
        self._signal_all = False
        if time.monotonic() >= self._resync_at:
            self.rv, self._why, self._signal_all = "", "resync", True
        return True

    def _prepare(self) -> bool:
        """Everything a round sends before its watch; False when stopped meanwhile."""
        if self._crd_unsure:
            ensure_standing(self.kube, self.res)
            self._crd_unsure = False
        self.served = self.served or ServedTypes(lambda: self.kube)
        self.res = served_version(self.served, self.res)
        if not self.rv:
            if not self._may("list"):
                return False
            self._list()
        return self._may("watch")

    def _may(self, verb: str) -> bool:
        """Whether to send the next request: a Provider type's stream asks for the right
        to ``verb`` first (:func:`ensure_readable` raises when it is gone); False when
        stopped while asking: a Provider type's stream is stopped as its Provider goes,
        and the right to read goes with it soon after, so nothing more is asked."""
        ensure_readable(self.kube, self.res, verb)
        return not self.stop.is_set()

    def _list(self) -> None:
        listing = list_all(self.kube, self.res.path, metadata_only=self.res.metadata_only,
                           keep=self.res.keep)
        self.rv = listing.resource_version
        self.emit(Synced(self.res, listing.items, self._signal_all, self._why))
        if self._signal_all and self.resync_s:
            self._resync_at = time.monotonic() + self.resync_s

    def _follow(self, until: float) -> bool:
        """Watch from ``rv`` until the server ends it; whether it ended early (a second or
        more before its timeout)."""
        if self.stop.is_set():  # stopped during the list: no watch
            return False
        timeout = int(max(1, min(WATCH_TIMEOUT_S, until - time.monotonic())))
        ends = time.monotonic() + timeout - 1
        self._watch = watch(self.kube, self.res.path, self.rv, timeout,
                            metadata_only=self.res.metadata_only)
        try:
            with self._watch as events:
                for event in events:
                    if self.stop.is_set():
                        return False
                    self.rv = event.resource_version or self.rv
                    if event.type != BOOKMARK:
                        self.emit(Changed(self.res, event.type, self.res.keep(event.obj)))
        finally:
            self._watch = None
        return time.monotonic() < ends

    def interrupt(self) -> None:
        """Unblock a thread waiting on its watch stream (used at shutdown)."""
        self._woken.set()
        stream = self._watch
        if stream is not None:
            try:
                stream.interrupt()
            except Exception as exc:  # noqa: BLE001 - best effort: the thread is a daemon
                log.debug("interrupt failed", kind=self.res.kind, error=str(exc)[:200])


def workflow_tuning(raw: str) -> Any:
    """The workflows' ``Tuning`` from the ``LOCKWRIGHT_TUNING`` setting (JSON overrides)."""
    if not raw:
        return Tuning()
    try:
        return Tuning(**json.loads(raw))
    except TypeError as exc:
        known = ", ".join(f.name for f in fields(Tuning))
        raise SystemExit(f"LOCKWRIGHT_TUNING / --tuning: {exc}; known keys: {known}") from None


def run_in_thread(stream: Stream) -> None:
    """Run ``stream`` in a daemon thread of its own, named after its resource."""
    threading.Thread(target=stream.run, name=f"watch-{stream.res.plural}", daemon=True).start()


class TypeStream:
    """A Provider type's stream as the watcher holds it: made, its connection and then its
    thread, by the watcher's starter thread rather than on the event loop. Made on the
    loop, a 2,000-CRD provider's 2,000 streams (a kubeconfig read and a thread start each,
    the starts waiting on threads busy with their first requests) held the loop 12-18 s as
    the provider turned Healthy, and with it the signal for the Provider's own change."""

    def __init__(self, make: Callable[[], Stream]) -> None:
        self._make = make
        self._lock = threading.Lock()
        self._stream: Stream | None = None
        self._stopped = False

    def start(self) -> None:
        """Make the stream and start its thread, unless stopped meanwhile."""
        with self._lock:
            if self._stopped:
                return
            self._stream = stream = self._make()
        run_in_thread(stream)

    def wake(self) -> None:
        """As :meth:`Stream.wake`, once started."""
        with self._lock:
            stream = self._stream
        if stream is not None:
            stream.wake()

    def interrupt(self) -> None:
        """As :meth:`Stream.interrupt`; a stream not started yet never starts."""
        with self._lock:
            self._stopped, stream = True, self._stream
        if stream is not None:
            stream.interrupt()


class Watcher:
    """Streams plus the signal-with-start side; run with :meth:`run`."""

    def __init__(self, settings: Settings, client: Any,
                 kube_factory: Callable[[], Kube] | None = None,
                 resources: tuple[Resource, ...] = RESOURCES) -> None:
        self.settings, self.client = settings, client
        # One connection per stream: each holds a watch open for minutes at a time.
        self._factory = kube_factory or partial(Kube.connect, settings.kubeconfig)
        self.resources = in_namespace(resources, settings.system_namespace)
        self.index = Index(task_queue=settings.task_queue)
        self.stats: Counter[str] = Counter()
        self.synced = asyncio.Event()
        self._listed: set[str] = set()
        self._pending: dict[str, Target] = {}
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        # A full list's signals wait here, let out at settings.resync_rate a second.
        self._held: dict[str, Target] = {}
        self._held_queue: asyncio.Queue[str] = asyncio.Queue()
        self._stop = threading.Event()
        self._streams: list[Stream] = []
        self._tuning = workflow_tuning(settings.tuning)
        self.protection = ProtectionIndex(enabled=settings.provider_deletion_protection)
        # The streams of Provider types' resources, by CRD name, each with its own stop.
        self._types: dict[str, tuple[TypeStream, threading.Event]] = {}
        self._starting: queue.SimpleQueue[TypeStream | None] = queue.SimpleQueue()
        self._types_gate = threading.BoundedSemaphore(TYPES_PREPARING)
        self._served = ServedTypes(self._factory)  # connects on its first read
        self._emit: Callable[[Message], None] = lambda msg: None

    async def run(self, stop: asyncio.Event) -> None:
        """Watch and signal until ``stop`` is set."""
        loop = asyncio.get_running_loop()

        def emit(msg: Message) -> None:
            if not self._stop.is_set() and not loop.is_closed():
                loop.call_soon_threadsafe(self._handle, msg)

        self._emit = emit
        tasks = [asyncio.create_task(self._signaller()) for _ in range(SIGNALLERS)]
        tasks.append(asyncio.create_task(self._pacer()))
        threading.Thread(target=self._starter, name="watch-starter", daemon=True).start()
        for res in self.resources:
            self._streams.append(self._start(res, self._stop))
        log.info("watching", resources=len(self.resources),
                 task_queue=self.settings.task_queue, resync_s=self.settings.resync_seconds)
        try:
            await stop.wait()
        finally:
            self._stop.set()
            self._starting.put(None)
            for _, own in self._types.values():
                own.set()
            for stream in self._streams + [t for t, _ in self._types.values()]:
                stream.interrupt()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def _start(self, res: Resource, stop: threading.Event) -> Stream:
        """A list-then-watch stream of ``res`` in a thread of its own (one connection)."""
        stream = self._stream(res, stop)
        run_in_thread(stream)
        return stream

    def _stream(self, res: Resource, stop: threading.Event) -> Stream:
        """The stream of ``res``, with a connection of its own, not started."""
        managed = res.role == MANAGED
        return Stream(res, self._factory(), self._emit, stop, self.settings.resync_seconds,
                      gate=self._types_gate if managed else nullcontext(),
                      served=self._served if managed else None)

    def _starter(self) -> None:
        """Start the Provider types' streams queued by :meth:`_restream`, one after
        another, until None comes."""
        while (pending := self._starting.get()) is not None:
            try:
                pending.start()
            except Exception as exc:  # noqa: BLE001 - one type's connection: the rest go on
                log.warning("type stream not started", error=f"{type(exc).__name__}: {exc}")

    def _protect(self, msg: Message) -> list[Target]:
        """Provider deletion protection: streams of Provider types started and stopped;
        the protection workflow as a target when it should look again."""
        if msg.res.role == MANAGED:
            signal = (self.protection.listed(msg.res.kind, msg.items) if isinstance(msg, Synced)
                      else self.protection.changed(msg.res.kind, msg.type, msg.obj))
            if self._stop.is_set() or msg.res.kind not in self._types:
                return []  # a stream stopped since: its last events mean nothing
        elif isinstance(msg, Synced):
            signal = self._restream(self.protection.on_crds(msg.items, True, msg.signal_all))
        elif msg.type == "DELETED":
            signal = self._restream(self.protection.crd_deleted(
                str(msg.obj["metadata"].get("name", ""))))
        else:
            signal = self._restream(self.protection.on_crds([msg.obj], False))
            self._wake_type(str(msg.obj["metadata"].get("name", "")))
        reason = (f"resources of {msg.res.kind} changed" if msg.res.role == MANAGED
                  else "CustomResourceDefinitions changed")
        return [Target(PROTECTION, self.settings.task_queue, reason)] if signal else []

    def _wake_type(self, crd: str) -> None:
        """A Provider type's CRD was written: its stream, if waiting to be served, tries
        now."""
        entry = self._types.get(crd)
        if entry is not None:
            entry[0].wake()

    def _restream(self, streams: Streams) -> bool:
        """Stop, then start, the streams of Provider types (a type moved to another
        Provider may be in both); whether to signal."""
        for crd in streams.stop:
            entry = self._types.pop(crd, None)
            if entry is not None:
                entry[1].set()
                entry[0].interrupt()
        for crd in streams.start:
            own = threading.Event()
            pending = TypeStream(partial(self._stream, type_resource(crd), own))
            self._types[crd] = (pending, own)
            self._starting.put(pending)
        return streams.signal

    def _provider_health(self, msg: Message) -> None:
        """Providers' health, for which types protection streams (their first Healthy)."""
        if isinstance(msg, Synced):
            for obj in msg.items:
                self._restream(self.protection.on_provider(
                    str(obj["metadata"].get("name", "")), healthy(obj), deleting(obj)))
        else:
            self._restream(self.protection.on_provider(
                str(msg.obj["metadata"].get("name", "")), healthy(msg.obj),
                gone=msg.type == "DELETED" or deleting(msg.obj)))

    def _handle(self, msg: Message) -> None:
        if msg.res.role in (MANAGED, "crd"):
            self._queue_targets(self._protect(msg))
            if msg.res.role == MANAGED:
                return
        if msg.res.role == "package" and msg.res.kind == "Provider":
            self._provider_health(msg)
        paced = False
        if isinstance(msg, Synced):
            targets = self.index.on_sync(msg.res, msg.items, msg.signal_all, msg.why)
            paced = msg.signal_all
            self.stats[f"list:{msg.why}"] += 1
            self._listed.add(msg.res.kind)
            if len(self._listed) == len(self.resources) and not self.synced.is_set():
                self.synced.set()
                log.info(SYNCED_EVENT, resources=len(self.resources))
        else:
            targets = self.index.on_event(msg.res, msg.type, msg.obj)
            self.stats["events"] += 1
        self._queue_targets(targets, paced)

    def _queue_targets(self, targets: list[Target], paced: bool = False) -> None:
        """Queue signals; a full list's (``paced``) to packages wait their turn in the
        held lane unless already queued or unanswered (a spec no pass has read: changed
        while no watcher ran), and a change to a held workflow signals it at once."""
        pace = paced and self.settings.resync_rate > 0
        for target in targets:
            wid = target.workflow_id
            if pace and target.package and not target.unanswered and wid not in self._pending:
                if wid not in self._held:
                    self._held_queue.put_nowait(wid)
                self._held[wid] = target
                continue
            self._held.pop(wid, None)
            if wid not in self._pending:
                self._queue.put_nowait(wid)
            elif not self._pending[wid].deferrable:
                target = replace(target, deferrable=False)  # one not to defer stays so
            self._pending[wid] = target

    async def _pacer(self) -> None:
        """Let held signals out at ``resync_rate`` a second (docs/design.md, "Resync,
        paced"): a resync or a watcher's start-up signals every package at once, and
        every one of them runs a pass."""
        while True:
            wid = await self._held_queue.get()
            target = self._held.pop(wid, None)
            if target is None:
                continue  # signalled meanwhile by a change
            self._queue_targets([target])
            self.stats["paced"] += 1
            await asyncio.sleep(1 / self.settings.resync_rate)  # the rate, not a wait for state

    async def _signaller(self) -> None:
        backoff = Backoff(0.5, 10.0)
        while True:
            wid = await self._queue.get()
            target = self._pending.pop(wid, None)
            if target is None:
                continue
            try:
                await self.signal(target)
                backoff.reset()
            except Exception as exc:  # noqa: BLE001 - Temporal unreachable: retry later
                self.stats["signal_errors"] += 1
                delay = backoff.next()
                log.warning("signal failed", workflow_id=wid, retry_in=delay,
                            error=f"{type(exc).__name__}: {str(exc)[:200]}")
                await asyncio.sleep(delay)  # retry backoff, not synchronisation
                if wid not in self._pending:
                    self._queue.put_nowait(wid)
                    self._pending[wid] = target

    async def signal(self, target: Target) -> None:
        """Signal-with-start the target's workflow."""
        if target.resolver:
            await self.signal_resolver(target)
            return
        if target.kind == ACTIVATION:
            await self.signal_activation(target)
            return
        if target.kind == PROTECTION:
            await self._signal_singleton(target, ProtectProviders.run, c.ProtectionInput(
                tuning=self._tuning), "provider deletion protection")
            return

        pairs = [SearchAttributePair(c.SA_PACKAGE_KIND, target.kind),
                 SearchAttributePair(c.SA_PACKAGE_NAME, target.name)]
        if target.source:
            pairs.append(SearchAttributePair(c.SA_PACKAGE_SOURCE, target.source))
        handle = await self.client.start_workflow(
            PackageWorkflow.run, replace(target.package_input(), tuning=self._tuning),
            id=target.workflow_id,
            task_queue=self.settings.task_queue, start_signal=c.SIGNAL_LOOK_AGAIN,
            start_signal_args=[target.signal_input()],
            search_attributes=TypedSearchAttributes(pairs),
            static_summary=f"{target.kind} {target.name}")
        self.stats["signals"] += 1
        log.info("signalled", workflow_id=target.workflow_id, run_id=handle.result_run_id,
                 reason=target.reason)

    async def signal_resolver(self, target: Target) -> None:
        """Signal-with-start the dependency resolver."""
        await self._signal_singleton(target, ResolveDependencies.run,
                                     c.ResolveInput(tuning=self._tuning), "dependency resolution")

    async def signal_activation(self, target: Target) -> None:
        """Signal-with-start the activation workflow."""
        await self._signal_singleton(target, ActivateDefinitions.run,
                                     c.ActivationInput(tuning=self._tuning), "activation policies")

    async def _signal_singleton(self, target: Target, run: Any, arg: Any, summary: str) -> None:
        """Signal-with-start one of the cluster's singleton workflows."""
        handle = await self.client.start_workflow(
            run, arg, id=target.workflow_id, task_queue=self.settings.task_queue,
            start_signal=c.SIGNAL_LOOK_AGAIN, start_signal_args=[target.signal_input()],
            static_summary=summary)
        self.stats["signals"] += 1
        log.info("signalled", workflow_id=target.workflow_id, run_id=handle.result_run_id,
                 reason=target.reason)


def watcher_command(args: argparse.Namespace) -> int:
    """Handler of ``lockwright watcher``: run until SIGTERM or SIGINT."""
    configure()
    settings = settings_or_exit(args)
    asyncio.run(_main(settings))
    return 0


async def _main(settings: Settings) -> None:
    stop = asyncio.Event()
    stop_on_signals(stop)
    client = await connect(settings)
    await Watcher(settings, client).run(stop)
    log.info("watcher stopped")
