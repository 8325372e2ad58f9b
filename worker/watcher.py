"""``lockwright watcher``: turn Kubernetes changes into ``look_again`` signals.

Thin by design: one thread per watched resource lists, then watches from the list's
``resourceVersion`` (bookmarks on), resumes from the last version seen after a dropped
stream, relists on ``410 Gone`` and relists with ``signal_all`` every resync interval.
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
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any

import structlog

from lockwright.settings import Settings
from worker.common import Backoff
from worker.targets import RESOURCES, Index, Obj, Resource, Target, in_namespace

log = structlog.get_logger("lockwright.watcher")

WATCH_TIMEOUT_S = 300
SIGNALLERS = 8
LIST_PAGE = 500
SYNCED_EVENT = "watcher synced"  # logged once every resource was listed; dev up waits on it
JSON = "application/json"
# kube-apiserver answers these with PartialObjectMetadata[List]: metadata, never contents
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
METADATA_WATCH = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"


class Gone(Exception):
    """The watch's resourceVersion is older than the server keeps: relist."""


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
    api_client: Any
    emit: Callable[[Message], None]
    stop: threading.Event
    resync_s: float
    rv: str = ""
    _resp: Any = field(default=None, repr=False)

    def run(self) -> None:
        """Loop until ``stop``: (re)list when needed, otherwise watch from ``rv``."""
        backoff, why, signal_all = Backoff(), "start", True
        resync_at = float("inf")
        while not self.stop.is_set():
            try:
                if not self.rv:
                    self.emit(Synced(self.res, self._list(), signal_all, why))
                    if signal_all and self.resync_s:
                        resync_at = time.monotonic() + self.resync_s
                self._watch(resync_at)
                backoff.reset()
                signal_all = False
                if time.monotonic() >= resync_at:
                    self.rv, why, signal_all = "", "resync", True
            except Gone as exc:
                log.info("relist", kind=self.res.kind, reason="410 Gone", detail=str(exc)[:200])
                self.rv, why, signal_all = "", "relist after 410", False
            except Exception as exc:  # noqa: BLE001 - any failure: back off, resume from rv
                if self.stop.is_set():
                    return
                delay = backoff.next()
                log.warning("watch failed", kind=self.res.kind, rv=self.rv, retry_in=delay,
                            error=f"{type(exc).__name__}: {str(exc)[:200]}")
                self.stop.wait(delay)

    def _get(self, query: list[tuple[str, Any]], accept: str, timeout: Any) -> Any:
        """GET the resource's collection and return the raw, unread urllib3 response.

        One request path for custom and core resources (``Resource.path``), and it lets a
        metadata-only resource set the Accept header, which the generated APIs do not
        offer uniformly. Non-2xx answers raise ``ApiException`` as the generated APIs do.
        """
        params = [(k, v) for k, v in query if v is not None]
        return raw_get(self.api_client, self.res.path, params, {"Accept": accept}, timeout)

    def _page(self, token: str | None) -> Obj:
        """One page of the list, as JSON."""
        accept = METADATA_LIST if self.res.metadata_only else JSON
        resp = self._get([("limit", LIST_PAGE), ("continue", token)], accept, 60)
        try:
            page: Obj = json.loads(resp.data)
            return page
        finally:
            resp.release_conn()

    def _list(self) -> list[Obj]:
        items: list[Obj] = []
        token: str | None = None
        while True:
            page = self._page(token)
            items += [self.res.keep(o) for o in page.get("items") or []]
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                self.rv = str(page["metadata"]["resourceVersion"])
                return items

    def _watch(self, until: float) -> None:
        from kubernetes.client.exceptions import ApiException

        timeout = int(max(1, min(WATCH_TIMEOUT_S, until - time.monotonic())))
        # "true" as text: older clients would send Python's "True", which not all servers take
        query = [("watch", "true"), ("resourceVersion", self.rv),
                 ("allowWatchBookmarks", "true"), ("timeoutSeconds", timeout)]
        try:
            self._resp = self._get(query, METADATA_WATCH if self.res.metadata_only else JSON,
                                   (10, timeout + 30))
        except ApiException as exc:
            if exc.status == 410:
                raise Gone(str(exc.reason)) from exc
            raise
        try:
            self._follow(self._resp)
        finally:
            self._resp.release_conn()
            self._resp = None

    def _follow(self, resp: Any) -> None:
        from kubernetes.watch.watch import iter_resp_lines

        for line in iter_resp_lines(resp):  # type: ignore[no-untyped-call]
            if self.stop.is_set():
                return
            if not line.strip():
                continue
            event = json.loads(line)
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "ERROR":
                if obj.get("code") == 410:
                    raise Gone(str(obj.get("message", "")))
                raise RuntimeError(f"watch error: {str(obj.get('message', obj))[:200]}")
            self.rv = str((obj.get("metadata") or {}).get("resourceVersion") or self.rv)
            if kind != "BOOKMARK":
                self.emit(Changed(self.res, str(kind), self.res.keep(obj)))

    def interrupt(self) -> None:
        """Unblock a thread waiting on its watch stream (used at shutdown)."""
        resp = self._resp
        if resp is not None:
            try:
                resp.shutdown()
            except Exception as exc:  # noqa: BLE001 - best effort: the thread is a daemon
                log.debug("interrupt failed", kind=self.res.kind, error=str(exc)[:200])


def raw_get(api: Any, path: str, query: list[tuple[str, Any]], headers: dict[str, str],
            timeout: Any) -> Any:
    """GET ``path`` through the client's ``ApiClient`` (its auth, TLS and pool), unread.

    kubernetes >= 36 (openapi-generator 7) splits requests into ``param_serialize`` and
    ``call_api`` and leaves status checks to the caller; older clients (``kubernetes>=30``
    is allowed) take everything in one ``call_api`` and raise ``ApiException`` themselves.
    """
    from kubernetes.client.exceptions import ApiException

    if not hasattr(api, "param_serialize"):
        return api.call_api(path, "GET", query_params=query, header_params=headers,
                            auth_settings=["BearerToken"], _return_http_data_only=True,
                            _preload_content=False, _request_timeout=timeout)
    request = api.param_serialize("GET", path, query_params=query, header_params=headers,
                                  auth_settings=["BearerToken"])
    resp = api.call_api(*request, _request_timeout=timeout)
    if not 200 <= resp.status <= 299:
        resp.read()
        raise ApiException.from_response(http_resp=resp, body=None, data=None)
    return resp.response


def workflow_tuning(raw: str) -> Any:
    """The workflows' ``Tuning`` from the ``LOCKWRIGHT_TUNING`` setting (JSON overrides)."""
    from contracts import Tuning

    if not raw:
        return Tuning()
    try:
        return Tuning(**json.loads(raw))
    except TypeError as exc:
        known = ", ".join(f.name for f in fields(Tuning))
        raise SystemExit(f"LOCKWRIGHT_TUNING / --tuning: {exc}; known keys: {known}") from None


class Watcher:
    """Streams plus the signal-with-start side; run with :meth:`run`."""

    def __init__(self, settings: Settings, client: Any,
                 api_client_factory: Callable[[], Any] | None = None,
                 resources: tuple[Resource, ...] = RESOURCES) -> None:
        self.settings, self.client = settings, client
        self._factory = api_client_factory or settings.kube_api_client
        self.resources = in_namespace(resources, settings.system_namespace)
        self.index = Index(task_queue=settings.task_queue)
        self.stats: Counter[str] = Counter()
        self.synced = asyncio.Event()
        self._listed: set[str] = set()
        self._pending: dict[str, Target] = {}
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._stop = threading.Event()
        self._streams: list[Stream] = []
        self._tuning = workflow_tuning(settings.tuning)

    async def run(self, stop: asyncio.Event) -> None:
        """Watch and signal until ``stop`` is set."""
        loop = asyncio.get_running_loop()

        def emit(msg: Message) -> None:
            if not self._stop.is_set() and not loop.is_closed():
                loop.call_soon_threadsafe(self._handle, msg)

        tasks = [asyncio.create_task(self._signaller()) for _ in range(SIGNALLERS)]
        for res in self.resources:
            stream = Stream(res, self._factory(), emit, self._stop, self.settings.resync_seconds)
            self._streams.append(stream)
            threading.Thread(target=stream.run, name=f"watch-{res.plural}", daemon=True).start()
        log.info("watching", resources=len(self.resources),
                 task_queue=self.settings.task_queue, resync_s=self.settings.resync_seconds)
        try:
            await stop.wait()
        finally:
            self._stop.set()
            for stream in self._streams:
                stream.interrupt()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def _handle(self, msg: Message) -> None:
        if isinstance(msg, Synced):
            targets = self.index.on_sync(msg.res, msg.items, msg.signal_all, msg.why)
            self.stats[f"list:{msg.why}"] += 1
            self._listed.add(msg.res.kind)
            if len(self._listed) == len(self.resources) and not self.synced.is_set():
                self.synced.set()
                log.info(SYNCED_EVENT, resources=len(self.resources))
        else:
            targets = self.index.on_event(msg.res, msg.type, msg.obj)
            self.stats["events"] += 1
        for target in targets:
            if target.workflow_id not in self._pending:
                self._queue.put_nowait(target.workflow_id)
            self._pending[target.workflow_id] = target

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
        from temporalio.common import SearchAttributePair, TypedSearchAttributes

        from workflows import PackageWorkflow
        import contracts as c

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
        from workflows import ResolveDependencies
        import contracts as c

        handle = await self.client.start_workflow(
            ResolveDependencies.run, c.ResolveInput(tuning=self._tuning),
            id=target.workflow_id, task_queue=self.settings.task_queue,
            start_signal=c.SIGNAL_LOOK_AGAIN, start_signal_args=[target.signal_input()],
            static_summary="dependency resolution")
        self.stats["signals"] += 1
        log.info("signalled", workflow_id=target.workflow_id, run_id=handle.result_run_id,
                 reason=target.reason)


def watcher_command(args: argparse.Namespace) -> int:
    """Handler of ``lockwright watcher``: run until SIGTERM or SIGINT."""
    from lockwright.log import configure
    from worker.common import settings_or_exit

    configure()
    settings = settings_or_exit(args)
    asyncio.run(_main(settings))
    return 0


async def _main(settings: Settings) -> None:
    from worker.common import connect, stop_on_signals

    stop = asyncio.Event()
    stop_on_signals(stop)
    client = await connect(settings)
    await Watcher(settings, client).run(stop)
    log.info("watcher stopped")
