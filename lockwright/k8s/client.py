"""``Kube``: the small Kubernetes seam, over the official client's ``ApiClient``.

Objects are plain dicts (what the API sends), addressed by ``apiVersion`` and ``kind``; the
plural comes from discovery. Every failure leaves as one of the errors in
``lockwright.errors`` (see :mod:`lockwright.k8s.errors`). The generated typed APIs are not
used: they cannot address CRDs, and their models would be converted back to dicts anyway.
Below the objects, :meth:`Kube.list_pages` and :meth:`Kube.stream` reach a collection by
its REST path, for list-and-watch (:mod:`lockwright.k8s.watch`).

:meth:`Kube.connect` is the one place a kubeconfig is loaded.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from types import TracebackType
from typing import Any, Self

import orjson
import structlog
import urllib3
from kubernetes import client as kclient
from kubernetes import config as kconfig
from kubernetes.client import rest as krest

from lockwright.errors import (
    KubeAlreadyExists,
    KubeCacheBehind,
    KubeConflict,
    KubeInvalid,
    KubeNotFound,
    KubernetesUnavailable,
    LockwrightError,
)
from lockwright.k8s import events
from lockwright.k8s.discovery import Discovery, Resource
from lockwright.k8s.errors import answered, status_error

Obj = dict[str, Any]
Owners = list[Obj]  # ownerReferences (an alias: the class below defines its own list)


def changed_fields(live: Obj | None, expect: Mapping[str, Any]) -> list[str]:
    """The metadata fields of ``expect`` whose value ``live`` no longer holds (None:
    absent), all of them when the object is gone."""
    meta = (live or {}).get("metadata") or {}
    return [f for f, value in expect.items() if live is None or meta.get(f) != value]


def deleting(obj: Obj | None) -> bool:
    """True when ``obj`` has a ``deletionTimestamp``: Kubernetes is deleting it (its
    deletion was admitted; finalizers may still hold it)."""
    return bool(((obj or {}).get("metadata") or {}).get("deletionTimestamp"))
log = structlog.get_logger(__name__)
# The client is untyped; these aliases keep that at the edge of this module.
_loader: Any = kconfig

JSON = "application/json"
PATCH_TYPES = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}
APPLY_TYPE = "application/apply-patch+yaml"
PAGE = 500
#: How many times a list page is asked for while the watch cache is behind its version
#: (``KubeCacheBehind``); the server waits for its cache before each such answer.
CACHE_BEHIND_ASKS = 3
DRY_RUN = ("dryRun", "All")
CACHED = ("resourceVersion", "0")  # a read the watch cache answers
NOT_OLDER_THAN = ("resourceVersionMatch", "NotOlderThan")  # with a resourceVersion
#: What RBAC answers a request it refuses; and where an API server says whether it is ready.
FORBIDDEN = (401, 403)
READYZ = "/readyz"
#: Seconds for the whole request, or (connecting, each read) as urllib3 takes them.
Timeout = float | tuple[float, float]
Query = list[tuple[str, str]]


def no_older_than(version: str) -> Query:
    """The query of a list that must include the write of ``version``
    (``resourceVersionMatch=NotOlderThan``): served from the watch cache once it holds that
    write; empty for no ``version``."""
    return [("resourceVersion", version), NOT_OLDER_THAN] if version else []


#: One page of a list (a module-level name: ``Kube.list`` shadows ``list`` in the class).
Page = list[Obj]


def _meta(obj: Obj) -> Obj:
    meta: Obj = obj.get("metadata") or {}
    return meta


class Kube:
    """Read and write Kubernetes objects as dicts.

    Args:
        api: an official ``kubernetes.client.ApiClient`` (it carries address and auth).
        timeout: seconds for connecting and for each response.
    """

    def __init__(self, api: kclient.ApiClient, timeout: float = 30.0) -> None:
        self._api: Any = api
        self._timeout = timeout
        self._dry_run = False
        self.discovery = Discovery(lambda path: self._call("GET", path))

    @classmethod
    def connect(cls, kubeconfig: str | None = None, timeout: float = 30.0,
                context: str | None = None, connections: int = 32) -> Kube:
        """Connect with the first of: the kubeconfig given, the Pod's service account, ~/.kube.

        In that order: ``kubeconfig`` when given (``Settings.kubeconfig``, which
        ``--kubeconfig`` or ``$KUBECONFIG`` set); else the in-cluster service account when
        running in a Pod (``KUBERNETES_SERVICE_HOST`` is set); else the client's default
        kubeconfig (``$KUBECONFIG`` as the process started, else ``~/.kube/config``).

        Args:
            kubeconfig: a kubeconfig path (or ``:``-separated paths); empty or None when
                none was configured.
            timeout: seconds for connecting and for each response.
            context: a kubeconfig context to use instead of its current one.
            connections: connections kept open for reuse, at least: one for each thread
                that calls at once (the worker's activity threads).

        Raises:
            Exception: the client's ``ConfigException`` (or an ``OSError``) when the chosen
                source cannot be loaded.
        """
        configuration = kclient.Configuration()
        if not kubeconfig and not context and os.environ.get("KUBERNETES_SERVICE_HOST"):
            _loader.load_incluster_config(client_configuration=configuration)
        else:
            _loader.load_kube_config(config_file=kubeconfig or None, context=context or None,
                                     client_configuration=configuration)
        configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize,
                                                     connections)
        return cls(kclient.ApiClient(configuration), timeout)

    def close(self) -> None:
        """Release the connection pool."""
        self._api.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def dry_runs(self) -> Kube:
        """This connection, with every write a server-side dry run (``dryRun=All``).

        The API validates and admits each write as it would the real one, and answers
        the same (errors included), but stores nothing. Shares the connection pool and
        discovery with this one: close this one, not the view.
        """
        view = Kube(self._api, self._timeout)
        view.discovery, view._dry_run = self.discovery, True
        return view

    # --- transport ----------------------------------------------------------------------
    def _call(self, method: str, path: str, query: Query | None = None,
              body: Any = None, content_type: str = JSON, dry_run: bool = False, *,
              accept: str = JSON, timeout: Timeout | None = None) -> Obj:
        headers = {"Accept": accept, "Content-Type": content_type}
        if (dry_run or self._dry_run) and method != "GET":
            query = [*(query or []), DRY_RUN]
        request = self._serialize(method, path, query or [], headers)
        resp, raw = self._answer(method, path, request, body, timeout)
        if resp.status in FORBIDDEN and path != READYZ:
            # A kube-apiserver that is starting (restarted after a crash) serves before its
            # authorizer has synced and refuses what RBAC allows: seen on a killed
            # kube-apiserver (docs/testing.md, "Faults: every server killed mid-change").
            # Not ready: retried as unavailable; ready: asked once more, and a second
            # refusal is RBAC's answer.
            if not self.ready():
                raise KubernetesUnavailable(
                    f"{method} {path}: {resp.status} from a Kubernetes API server that is "
                    f"not ready ({READYZ} failed or was refused too; every user may read "
                    f"it through the ClusterRole system:public-info-viewer); retried")
            resp, raw = self._answer(method, path, request, body, timeout)
        if not 200 <= resp.status < 300:
            raise status_error(resp.status, raw, method, path)
        try:
            out: Obj = orjson.loads(raw) if raw else {}
        except ValueError as exc:
            raise status_error(502, raw[:200], method, path) from exc
        return out

    def _answer(self, method: str, path: str, request: tuple[str, str, dict[str, str]],
                body: Any, timeout: Timeout | None) -> tuple[Any, bytes]:
        with answered(method, path):
            resp: Any = self._send(request, body, timeout or self._timeout)
            raw: bytes = resp.read() or b""
        return resp, raw

    def ready(self) -> bool:
        """Whether the API server says it is ready (``/readyz``); True when it cannot tell
        (no such endpoint).

        Every user may read ``/readyz`` (the bootstrap ClusterRole
        ``system:public-info-viewer``), so a 401/403 for it too is an authorizer that has
        not synced its roles yet, not ready: a restarted kube-apiserver
        (docs/testing.md, "Faults: every server killed mid-change").
        """
        request = self._serialize("GET", READYZ, [], {"Accept": "text/plain"})
        try:
            resp, _ = self._answer("GET", READYZ, request, None, self._timeout)
        except KubernetesUnavailable:
            return False
        return bool(resp.status < 500 and resp.status not in FORBIDDEN)

    def _serialize(self, method: str, path: str, query: Query,
                   headers: dict[str, str]) -> tuple[str, str, dict[str, str]]:
        # The body stays out of param_serialize: it walks every node of the dict, and the
        # client then json.dumps it; a 2,000-CRD package paid that twice per object.
        verb, url, hdrs, _, _ = self._api.param_serialize(
            method, path, query_params=query, header_params=headers,
            auth_settings=["BearerToken"])
        return verb, url, hdrs

    def _send(self, request: tuple[str, str, dict[str, str]], body: Any,
              timeout: Timeout) -> Any:
        method, url, headers = request
        if body is None:
            return self._api.call_api(method, url, headers, None, _request_timeout=timeout)
        # The client's REST layer would json.dumps a JSON body again whatever we pass, so
        # a body we encoded goes to its connection pool (same TLS, proxy and pool
        # settings) directly. JSON is also valid YAML, for server-side apply.
        return krest.RESTResponse(self._api.rest_client.pool_manager.request(
            method, url, body=orjson.dumps(body, option=orjson.OPT_NON_STR_KEYS),
            headers=headers, timeout=urllib3.Timeout(total=self._timeout),
            preload_content=False))

    def stream(self, path: str, query: Query, accept: str, timeout: Timeout) -> Any:
        """GET ``path`` and return the answer unread, to be read as it arrives (a watch).

        Args:
            path: a REST path, such as a collection's.
            query: the query parameters, in order.
            accept: the Accept header (e.g. a metadata-only media type).
            timeout: seconds, or (connecting, each read).

        Returns:
            The ``urllib3`` response; the caller releases it (``release_conn``).

        Raises:
            LockwrightError: the answer was not 2xx (410 is ``KubeGone``), or none came.
        """
        request = self._serialize("GET", path, query, {"Accept": accept})
        with answered("GET", path):
            resp: Any = self._send(request, None, timeout)
            if 200 <= resp.status < 300:
                return resp.response
            raw: bytes = resp.read() or b""
        raise status_error(resp.status, raw, "GET", path)

    def resource(self, api_version: str, kind: str) -> Resource:
        """Where ``kind`` is served (discovery, cached; refreshed on a miss)."""
        return self.discovery.resource(api_version, kind)

    def _path(self, obj: Obj, subresource: str | None = None, named: bool = True) -> str:
        res = self.resource(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        meta = _meta(obj)
        return res.path(meta.get("namespace"), meta.get("name") if named else None, subresource)

    # --- reads --------------------------------------------------------------------------
    def get(self, api_version: str, kind: str, name: str,
            namespace: str | None = None, *, cached: bool = False) -> Obj | None:
        """The object, or None when it does not exist.

        ``cached``: as the API server's watch cache holds it (``resourceVersion=0``), not
        read from etcd; it may be moments old. Only for a read whose write carries the
        ``resourceVersion`` it read (or tests the fields it was decided on), so that a
        change since is refused.
        """
        path = self.resource(api_version, kind).path(namespace, name)
        try:
            return self._call("GET", path, [CACHED] if cached else None)
        except KubeNotFound:
            return None

    def read_path(self, path: str, accept: str = JSON) -> Obj | None:
        """GET a REST path, fresh: one that is not an object's (a discovery document such
        as ``/apis/<group>/<version>``), or an object's as ``accept`` negotiates it (its
        ``PartialObjectMetadata``); None when the server has none (404)."""
        try:
            return self._call("GET", path, accept=accept)
        except KubeNotFound:
            return None

    def list(self, api_version: str, kind: str, namespace: str | None = None,
             label_selector: str | None = None, *, cached: bool = False,
             not_older_than: str = "") -> list[Obj]:
        """Every object of ``kind`` (in ``namespace``, or all), following pagination.

        ``cached``: as the API server's watch cache holds them (``resourceVersion=0``):
        at once, where a consistent list first waits for the cache to reach etcd's latest
        version (30-70 ms on a kube-apiserver busy with writes). ``not_older_than``: a
        ``resourceVersion`` the answer must include (``resourceVersionMatch=NotOlderThan``),
        which the cache reaches as soon as it has seen the write of that version."""
        return [item for page in self.pages(api_version, kind, namespace, label_selector,
                                            cached=cached, not_older_than=not_older_than)
                for item in page]

    def pages(self, api_version: str, kind: str, namespace: str | None = None,
              label_selector: str | None = None, limit: int = PAGE, *,
              cached: bool = False, not_older_than: str = "") -> Iterator[Page]:
        """The objects of ``kind`` a page of at most ``limit`` at a time (bounded memory);
        ``cached`` and ``not_older_than`` as for :meth:`list`."""
        path = self.resource(api_version, kind).path(namespace)
        query = [("labelSelector", label_selector)] if label_selector else []
        query += [CACHED] if cached else []
        query += no_older_than(not_older_than)
        for page in self.list_pages(path, query, limit=limit):
            yield [{"apiVersion": api_version, "kind": kind, **item}
                   for item in page.get("items") or []]

    def list_pages(self, path: str, query: Query | None = None, *, limit: int = PAGE,
                   accept: str = JSON, timeout: Timeout | None = None) -> Iterator[Obj]:
        """The list answers of collection ``path``, following ``continue`` tokens.

        Args:
            path: the collection's REST path.
            query: more query parameters (``limit`` and ``continue`` are added).
            limit: objects per page at most.
            accept: the Accept header (e.g. a metadata-only list).
            timeout: seconds per page (default: this connection's).

        Yields:
            Each page as sent: a ``*List`` object with ``items`` and ``metadata``.
        """
        token = ""
        while True:
            page_query = [("limit", str(limit)), *(query or [])]
            page_query += [("continue", token)] if token else []
            page = self._page(path, page_query, accept, timeout)
            yield page
            token = str((page.get("metadata") or {}).get("continue") or "")
            if not token:
                return

    def _page(self, path: str, query: Query, accept: str, timeout: Timeout | None) -> Obj:
        """One list page, asked for again while the watch cache is behind the version a
        ``continue`` token names (kube-apiserver answers 504 after waiting for its cache,
        so the next ask finds it nearer)."""
        for _ in range(CACHE_BEHIND_ASKS - 1):
            try:
                return self._call("GET", path, query, accept=accept, timeout=timeout)
            except KubeCacheBehind:
                continue
        return self._call("GET", path, query, accept=accept, timeout=timeout)

    def can_i(self, verb: str, group: str, resource: str) -> bool:
        """Whether this connection may ``verb`` ``resource`` of ``group`` in every namespace
        (a SelfSubjectAccessReview: asking is never a refusal, so it may come first)."""
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                  "spec": {"resourceAttributes": {"verb": verb, "group": group,
                                                  "resource": resource}}}
        answer = self._call("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                            body=review)
        return bool((answer.get("status") or {}).get("allowed"))

    # --- writes -------------------------------------------------------------------------
    def create(self, obj: Obj, *, dry_run: bool = False) -> Obj:
        """Create ``obj``; :class:`KubeAlreadyExists` when its name is taken.

        With ``dry_run`` the server checks and answers as for a create, storing nothing.
        """
        return self._call("POST", self._path(obj, named=False), body=obj, dry_run=dry_run)

    def update(self, obj: Obj, *, dry_run: bool = False) -> Obj:
        """Replace ``obj``; its ``metadata.resourceVersion`` makes this a compare-and-swap.

        With ``dry_run`` the server checks and answers as for an update, storing nothing.
        """
        return self._call("PUT", self._path(obj), body=obj, dry_run=dry_run)

    def update_status(self, obj: Obj) -> Obj:
        """Replace ``obj``'s status subresource (compare-and-swap like :meth:`update`)."""
        return self._call("PUT", self._path(obj, "status"), body=obj)

    def patch(self, api_version: str, kind: str, name: str, patch: Any,
              namespace: str | None = None, patch_type: str = "merge",
              subresource: str | None = None, *, dry_run: bool = False) -> Obj:
        """Patch one object (``merge``, ``json`` or ``strategic``), or its subresource.

        With ``dry_run`` the server checks and answers as for the patch, storing nothing.
        """
        path = self.resource(api_version, kind).path(namespace, name, subresource)
        return self._call("PATCH", path, body=patch, content_type=PATCH_TYPES[patch_type],
                          dry_run=dry_run)

    def set_owners(self, api_version: str, kind: str, name: str,
                   owners: Owners, resource_version: str) -> Obj:
        """Replace a cluster-scoped object's ownerReferences, a compare-and-swap on
        ``resource_version``: a merge patch of those two fields, so nothing else of the
        object is sent, and a change since it was read answers 409."""
        return self.patch(api_version, kind, name, {"metadata": {
            "ownerReferences": owners, "resourceVersion": resource_version}})

    def set_owners_if(self, api_version: str, kind: str, name: str, owners: Owners,
                      expect: Mapping[str, Any]) -> Obj:
        """Replace a cluster-scoped object's ownerReferences if each metadata field of
        ``expect`` still holds its value (None: absent): a JSON patch whose ``test``
        operations the API server checks against the object as it stores it. Unlike
        :meth:`set_owners`, a write of fields no test names (a status) does not refuse it.

        Raises:
            KubeConflict: a tested field changed. The API server answers a failed test
                with a bare 422, so a 422 reads the object again to tell which.
            KubeInvalid: the API refused the write itself (its tests hold).
        """
        ops = [{"op": "test", "path": f"/metadata/{field}", "value": value}
               for field, value in expect.items()]
        ops.append({"op": "add", "path": "/metadata/ownerReferences", "value": owners})
        try:
            return self.patch(api_version, kind, name, ops, patch_type="json")
        except KubeInvalid as exc:
            if exc.status != 422:
                raise
            changed = changed_fields(self.get(api_version, kind, name), expect)
            if not changed:
                raise
            raise KubeConflict(f"{kind} {name} changed since it was read "
                               f"({', '.join(changed)}); not written") from exc

    def apply(self, obj: Obj, field_manager: str = "lockwright", force: bool = False) -> Obj:
        """Server-side apply ``obj`` as ``field_manager``; ``force`` takes contested fields."""
        query = [("fieldManager", field_manager)] + ([("force", "true")] if force else [])
        return self._call("PATCH", self._path(obj), query, obj, APPLY_TYPE)

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None,
               propagation: str = "Background", uid: str | None = None) -> bool:
        """Delete one object; False when it was already gone.

        Args:
            uid: delete only if the object still has this UID (a precondition).
        """
        path = self.resource(api_version, kind).path(namespace, name)
        body: Obj = {"apiVersion": "v1", "kind": "DeleteOptions",
                     "propagationPolicy": propagation}
        if uid:
            body["preconditions"] = {"uid": uid}
        try:
            self._call("DELETE", path, body=body)
        except KubeNotFound:
            return False
        return True

    def create_event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        """Record an Event about ``obj``; a repeat bumps the existing one's ``count``.

        Events are advice: a failure to write one is logged, never raised.
        """
        involved = events.involved_object(obj)
        event = events.render_event(involved, type_, reason, message)
        try:
            try:
                self.create(event)
            except KubeAlreadyExists:
                self._bump(event)
        except LockwrightError as exc:
            log.warning("event.failed", reason=reason, error=exc.message[:200])

    def _bump(self, event: Obj) -> None:
        meta = event["metadata"]
        live = self.get("v1", "Event", meta["name"], meta["namespace"])
        count = int((live or {}).get("count") or 1) + 1
        self.patch("v1", "Event", meta["name"], {"count": count,
                   "lastTimestamp": events.now_rfc3339()}, meta["namespace"])
