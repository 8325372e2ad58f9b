"""List-and-watch over the :class:`~lockwright.k8s.Kube` seam, beside its reads and writes.

A watcher lists a collection (:func:`list_all`, a page at a time), then watches it from the
list's ``resourceVersion`` (:func:`watch`, bookmarks on). Collections are addressed by REST
path, and a metadata-only watcher asks for ``PartialObjectMetadata`` (never the contents).
Failures are lockwright errors, classified in :mod:`lockwright.k8s.errors` as for every
other request: a watch's version the server no longer keeps is :class:`KubeGone`, whether
the server says so with HTTP 410 or, once the stream is open, with an ``ERROR`` event.
What to do then (list again), and when to resume or resync, is the caller's policy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

import orjson
from kubernetes.watch.watch import iter_resp_lines

from lockwright.k8s.client import JSON, Kube, Obj
from lockwright.k8s.errors import answered, status_object_error

# kube-apiserver answers these with PartialObjectMetadata[List]: metadata, never contents
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
METADATA_WATCH = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
# The server prints each object's columns (a CRD's additionalPrinterColumns) and its metadata.
TABLE = "application/json;as=Table;g=meta.k8s.io;v=v1"
LIST_PAGE = 500
LIST_TIMEOUT_S = 60.0
CONNECT_TIMEOUT_S = 10.0
# Beyond the server's own timeoutSeconds: a read that long means the stream is dead.
READ_SLACK_S = 30.0
BOOKMARK = "BOOKMARK"


def _as_sent(obj: Obj) -> Obj:
    return obj


@dataclass(frozen=True)
class Listing:
    """A whole collection: its objects, and the version to watch it from."""

    items: list[Obj]
    resource_version: str


def list_all(kube: Kube, path: str, *, metadata_only: bool = False,
             keep: Callable[[Obj], Obj] = _as_sent) -> Listing:
    """List collection ``path`` a page of :data:`LIST_PAGE` at a time.

    Args:
        kube: the connection.
        path: the collection's REST path.
        metadata_only: ask for ``PartialObjectMetadataList`` instead of whole objects.
        keep: applied to each object as its page arrives (cut objects down early).

    Raises:
        LockwrightError: a page failed (a ``continue`` token that expired is ``KubeGone``).
    """
    accept = METADATA_LIST if metadata_only else JSON
    items: list[Obj] = []
    last: Obj = {}
    for last in kube.list_pages(path, limit=LIST_PAGE, accept=accept, timeout=LIST_TIMEOUT_S):
        items += [keep(obj) for obj in last.get("items") or []]
    return Listing(items, str(last["metadata"]["resourceVersion"]))


def list_columns(kube: Kube, path: str) -> Iterator[tuple[dict[str, Any], Obj]]:
    """Each object of collection ``path`` as the server prints it: its columns by name
    (``Name`` and the printer columns) and its metadata, a page at a time.

    Cheaper than the objects when they are large (an MRD holds a whole CRD schema) and a
    printer column says what is needed.

    Raises:
        LockwrightError: a page failed.
    """
    query = [("includeObject", "Metadata")]
    for page in kube.list_pages(path, query, limit=LIST_PAGE, accept=TABLE,
                                timeout=LIST_TIMEOUT_S):
        names = [str(c.get("name", "")) for c in page.get("columnDefinitions") or []]
        for row in page.get("rows") or []:
            cells = dict(zip(names, row.get("cells") or [], strict=False))
            yield cells, ((row.get("object") or {}).get("metadata") or {})


@dataclass(frozen=True)
class Event:
    """One watch event: ``ADDED``, ``MODIFIED``, ``DELETED`` or ``BOOKMARK``, and its object."""

    type: str
    obj: Obj

    @property
    def resource_version(self) -> str:
        """The object's ``resourceVersion`` (a bookmark's too); empty when it has none."""
        return str((self.obj.get("metadata") or {}).get("resourceVersion") or "")


class Watch:
    """One open watch request: iterate it for :class:`Event` s until the server ends it.

    Use it as a context manager (the connection goes back to the pool on exit);
    :meth:`interrupt` from another thread ends the iteration early.
    """

    def __init__(self, resp: Any, path: str) -> None:
        self._resp, self._path = resp, path

    def __iter__(self) -> Iterator[Event]:
        with answered("GET", self._path):
            for line in iter_resp_lines(self._resp):  # type: ignore[no-untyped-call]
                if line.strip():
                    yield self._event(orjson.loads(line))

    def _event(self, raw: Obj) -> Event:
        kind, obj = str(raw.get("type")), raw.get("object") or {}
        if kind == "ERROR":
            raise status_object_error(obj, "GET", self._path)
        return Event(kind, obj)

    def interrupt(self) -> None:
        """Shut the stream down, so that a thread blocked reading it wakes (at shutdown)."""
        self._resp.shutdown()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._resp.release_conn()


def watch(kube: Kube, path: str, resource_version: str, timeout_s: int, *,
          metadata_only: bool = False, field_selector: str = "") -> Watch:
    """Open a watch of collection ``path`` from ``resource_version``, bookmarks on.

    Args:
        kube: the connection.
        path: the collection's REST path.
        resource_version: where to start (a list's, or the last event's).
        timeout_s: the server ends the stream after this many seconds.
        metadata_only: ask for ``PartialObjectMetadata`` events instead of whole objects.
        field_selector: only the objects it selects (``metadata.name=x``: one object).

    Raises:
        KubeGone: ``resource_version`` is older than the server keeps: list again.
        LockwrightError: any other refusal, or no answer.
    """
    # "true" as text: older clients would send Python's "True", which not all servers take
    query = [("watch", "true"), ("resourceVersion", resource_version),
             ("allowWatchBookmarks", "true"), ("timeoutSeconds", str(timeout_s))]
    if field_selector:
        query.append(("fieldSelector", field_selector))
    accept = METADATA_WATCH if metadata_only else JSON
    timeout = (CONNECT_TIMEOUT_S, timeout_s + READ_SLACK_S)
    return Watch(kube.stream(path, query, accept, timeout), path)
