"""The request shapes of the differential check: what lockwright, kubectl and the Python
client send in the end-to-end suite (every verb, content type, patch type, dry run, field
and label selector, metadata-only and Table answers, watches with bookmarks and 410 Gone,
conflicts, 403/404/409/422 bodies), each a short sequence of requests in a namespace of
its own. A shape returns the answers it got, labelled; the check compares them between
servers after :func:`normalize`.
"""

from __future__ import annotations

import copy
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.fidelity.client import Answer, Client

Steps = list[tuple[str, Answer]]
META = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
META_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
TABLE = "application/json;as=Table;g=meta.k8s.io;v=v1"
GROUP = "fidelity.lockwright.io"


@dataclass(frozen=True)
class Identities:
    """Who sends: the admin, and a ServiceAccount with no rights; and how to compact the
    server's history (etcd's compaction; devcluster's ``POST /debug/compact``)."""

    admin: Client
    nobody: Client
    compact: Callable[[], None]


Shape = Callable[[Identities, str], Steps]
SHAPES: dict[str, Shape] = {}


def shape(fn: Shape) -> Shape:
    SHAPES[fn.__name__] = fn
    return fn


def cm(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name,
            "labels": {"app": "fidelity"}}, "data": data or {"k": "v"}}


#: A watch's filter to the shape's own ConfigMap.
ONLY_ONE = "fieldSelector=metadata.name%3Done"


def ns_path(ns: str, resource: str = "configmaps", name: str = "") -> str:
    return f"/api/v1/namespaces/{ns}/{resource}" + (f"/{name}" if name else "")


def namespace(c: Client, ns: str) -> None:
    c.send("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                          "metadata": {"name": ns}})


# --- create, read, list ------------------------------------------------------------------
@shape
def create_get_list(ids: Identities, ns: str) -> Steps:
    a = ids.admin
    return [("create", a.send("POST", ns_path(ns), cm("one"))),
            ("get", a.send("GET", ns_path(ns, name="one"))),
            ("list", a.send("GET", ns_path(ns) + "?labelSelector=app%3Dfidelity"))]


@shape
def list_with_selectors(ids: Identities, ns: str) -> Steps:
    a = ids.admin
    a.send("POST", ns_path(ns), cm("one"))
    a.send("POST", ns_path(ns), {**cm("two"), "metadata": {"name": "two"}})
    return [("label", a.send("GET", ns_path(ns) + "?labelSelector=app%3Dfidelity")),
            ("field", a.send("GET", ns_path(ns) + "?fieldSelector=metadata.name%3Dtwo")),
            ("bad field", a.send("GET", ns_path(ns) + "?fieldSelector=data.k%3Dv")),
            ("limit", a.send("GET", ns_path(ns) + "?limit=1&labelSelector=app%3Dfidelity"))]


@shape
def list_across_namespaces(ids: Identities, ns: str) -> Steps:
    ids.admin.send("POST", ns_path(ns), cm("one"))
    got = ids.admin.send("GET", f"/api/v1/configmaps?fieldSelector=metadata.namespace%3D{ns}"
                                "&labelSelector=app%3Dfidelity")
    return [("list", got)]


@shape
def metadata_only(ids: Identities, ns: str) -> Steps:
    a = ids.admin
    a.send("POST", ns_path(ns, "secrets"), {"apiVersion": "v1", "kind": "Secret",
                                            "metadata": {"name": "s"},
                                            "stringData": {"password": "x"}})
    return [("get", a.send("GET", ns_path(ns, "secrets", "s"), headers={"Accept": META})),
            ("list", a.send("GET", ns_path(ns, "secrets"), headers={"Accept": META_LIST}))]


@shape
def table(ids: Identities, ns: str) -> Steps:
    a = ids.admin
    a.send("POST", ns_path(ns), cm("one"))
    return [("list", a.send("GET", ns_path(ns) + "?includeObject=None&labelSelector=app%3D"
                                                 "fidelity", headers={"Accept": TABLE})),
            ("get", a.send("GET", ns_path(ns, name="one") + "?includeObject=None",
                           headers={"Accept": TABLE}))]


@shape
def yaml_body(ids: Identities, ns: str) -> Steps:
    # Not "y": kube-apiserver reads YAML 1.1, where a bare y is true (devcluster: a string).
    body = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\n  namespace: {ns}\ndata:\n  k: v\n"
    return [("create", ids.admin.send("POST", ns_path(ns), body,
                                      headers={"Content-Type": "application/yaml"}))]


# --- errors --------------------------------------------------------------------------------
@shape
def not_found(ids: Identities, ns: str) -> Steps:
    return [("get", ids.admin.send("GET", ns_path(ns, name="missing"))),
            ("delete", ids.admin.send("DELETE", ns_path(ns, name="missing")))]


@shape
def already_exists(ids: Identities, ns: str) -> Steps:
    ids.admin.send("POST", ns_path(ns), cm("one"))
    return [("create again", ids.admin.send("POST", ns_path(ns), cm("one")))]


@shape
def conflict(ids: Identities, ns: str) -> Steps:
    a = ids.admin
    first = a.send("POST", ns_path(ns), cm("one")).body
    a.send("PUT", ns_path(ns, name="one"), {**first, "data": {"k": "w"}})
    stale = {**first, "data": {"k": "x"}}
    return [("stale update", a.send("PUT", ns_path(ns, name="one"), stale))]


@shape
def invalid(ids: Identities, ns: str) -> Steps:
    return [("bad name", ids.admin.send("POST", ns_path(ns), cm("Not_A_Name"))),
            ("name mismatch", ids.admin.send("PUT", ns_path(ns, name="a"), cm("b")))]


@shape
def forbidden(ids: Identities, ns: str) -> Steps:
    return [("get", ids.nobody.send("GET", ns_path(ns, name="x"))),
            ("list cluster", ids.nobody.send("GET", "/api/v1/namespaces")),
            ("create", ids.nobody.send("POST", ns_path(ns), cm("x")))]


@shape
def unsupported_patch(ids: Identities, ns: str) -> Steps:
    ids.admin.send("POST", ns_path(ns), cm("one"))
    return [("patch", ids.admin.send("PATCH", ns_path(ns, name="one"), {"data": {"k": "w"}},
                                     headers={"Content-Type": "text/plain"}))]


# --- writes ---------------------------------------------------------------------------------
@shape
def patches(ids: Identities, ns: str) -> Steps:
    a = ids.admin
    a.send("POST", ns_path(ns), cm("one"))
    path = ns_path(ns, name="one")
    return [
        ("merge", a.send("PATCH", path, {"data": {"m": "1"}},
                         headers={"Content-Type": "application/merge-patch+json"})),
        ("json", a.send("PATCH", path, [{"op": "add", "path": "/data/j", "value": "2"}],
                        headers={"Content-Type": "application/json-patch+json"})),
        ("json test fails", a.send("PATCH", path, [{"op": "test", "path": "/data/j",
                                                    "value": "9"}],
                                   headers={"Content-Type": "application/json-patch+json"})),
        ("strategic", a.send("PATCH", path, {"data": {"s": "3"}},
                             headers={"Content-Type": "application/strategic-merge-patch+json"})),
        ("patch missing", a.send("PATCH", ns_path(ns, name="missing"), {"data": {}},
                                 headers={"Content-Type": "application/merge-patch+json"})),
    ]


@shape
def server_side_apply(ids: Identities, ns: str) -> Steps:
    a = ids.admin
    path = ns_path(ns, name="one") + "?fieldManager=lockwright"
    body = cm("one", k="v")
    other = ns_path(ns, name="one") + "?fieldManager=someone"
    return [
        ("apply creates", a.send("PATCH", path, body,
                                 headers={"Content-Type": "application/apply-patch+yaml"})),
        ("conflicting manager", a.send("PATCH", other, cm("one", k="w"),
                                       headers={"Content-Type": "application/apply-patch+yaml"})),
        ("forced", a.send("PATCH", other + "&force=true", cm("one", k="w"),
                          headers={"Content-Type": "application/apply-patch+yaml"})),
    ]


@shape
def dry_run(ids: Identities, ns: str) -> Steps:
    a = ids.admin
    a.send("POST", ns_path(ns), cm("one"))
    return [("create", a.send("POST", ns_path(ns) + "?dryRun=All", cm("two"))),
            ("after create", a.send("GET", ns_path(ns, name="two"))),
            ("patch", a.send("PATCH", ns_path(ns, name="one") + "?dryRun=All",
                             {"data": {"k": "w"}},
                             headers={"Content-Type": "application/merge-patch+json"})),
            ("delete", a.send("DELETE", ns_path(ns, name="one") + "?dryRun=All")),
            ("after", a.send("GET", ns_path(ns, name="one")))]


@shape
def deletes(ids: Identities, ns: str) -> Steps:
    a = ids.admin
    for name in ("bg", "fg", "orphan", "pre"):
        a.send("POST", ns_path(ns), cm(name))
    first = a.send("GET", ns_path(ns, name="pre")).body
    return [
        ("background", a.send("DELETE", ns_path(ns, name="bg"),
                              {"propagationPolicy": "Background"})),
        ("orphan", a.send("DELETE", ns_path(ns, name="orphan"), {"propagationPolicy": "Orphan"})),
        ("precondition", a.send("DELETE", ns_path(ns, name="pre"),
                                {"preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}})),
        ("with uid", a.send("DELETE", ns_path(ns, name="pre"),
                            {"preconditions": {"uid": first["metadata"]["uid"]}})),
    ]


@shape
def finalizers(ids: Identities, ns: str) -> Steps:
    a = ids.admin
    body = cm("f")
    body["metadata"]["finalizers"] = ["lockwright.io/test"]
    a.send("POST", ns_path(ns), body)
    deleting = a.send("DELETE", ns_path(ns, name="f"))
    still = a.send("GET", ns_path(ns, name="f"))
    released = a.send("PATCH", ns_path(ns, name="f"), {"metadata": {"finalizers": None}},
                      headers={"Content-Type": "application/merge-patch+json"})
    return [("delete", deleting), ("still there", still), ("release", released),
            ("gone", a.send("GET", ns_path(ns, name="f")))]


# --- custom resources ---------------------------------------------------------------------
def crd(ns: str) -> dict[str, Any]:
    plural = f"w{ns.replace('-', '')}"
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {"group": GROUP, "scope": "Namespaced",
                 "names": {"plural": plural, "singular": plural, "kind": plural.capitalize(),
                           "listKind": f"{plural.capitalize()}List"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "subresources": {"status": {}},
                               "additionalPrinterColumns": [
                                   {"name": "SIZE", "type": "integer", "jsonPath": ".spec.size"}],
                               "schema": {"openAPIV3Schema": {
                                   "type": "object", "properties": {
                                       "spec": {"type": "object", "required": ["size"],
                                                "properties": {"size": {"type": "integer",
                                                                        "minimum": 1}}},
                                       "status": {"type": "object", "properties": {
                                           "ready": {"type": "boolean"}}}}}}}]}}


def _established(a: Client, name: str) -> Answer:
    deadline = time.monotonic() + 20
    while True:
        got = a.send("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
        conds = {c["type"]: c["status"] for c in (got.body.get("status") or {}).get(
            "conditions") or []}
        if conds.get("Established") == "True" or time.monotonic() > deadline:
            return got
        time.sleep(0.1)  # poll interval of a wait with a deadline


def _served(a: Client, path: str) -> None:
    deadline = time.monotonic() + 20
    while a.send("GET", path).code == 404 and time.monotonic() < deadline:
        time.sleep(0.1)  # poll interval of a wait with a deadline


@shape
def custom_resources(ids: Identities, ns: str) -> Steps:
    a = ids.admin
    definition = crd(ns)
    plural = definition["spec"]["names"]["plural"]
    created = a.send("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                     definition)
    established = _established(a, definition["metadata"]["name"])
    base = f"/apis/{GROUP}/v1/namespaces/{ns}/{plural}"
    _served(a, base)
    kind = definition["spec"]["names"]["kind"]
    obj = {"apiVersion": f"{GROUP}/v1", "kind": kind, "metadata": {"name": "w"},
           "spec": {"size": 2}, "status": {"ready": True}}
    steps = [("crd", created), ("established", established),
             ("create", a.send("POST", base, obj)),
             ("invalid", a.send("POST", base, {**obj, "metadata": {"name": "bad"},
                                               "spec": {"size": 0}})),
             ("unknown field", a.send("POST", base + "?fieldValidation=Strict",
                                      {**obj, "metadata": {"name": "u"},
                                       "spec": {"size": 1, "colour": "red"}}))]
    got = a.send("GET", f"{base}/w").body
    steps += [("status", a.send("PUT", f"{base}/w/status", {**got, "status": {"ready": True}})),
              ("table", a.send("GET", base, headers={"Accept": TABLE})),
              ("metadata list", a.send("GET", base, headers={"Accept": META_LIST})),
              ("crd in use delete", a.send(
                  "DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                            f"{definition['metadata']['name']}"))]
    return steps


# --- watches -------------------------------------------------------------------------------
@shape
def watch_events(ids: Identities, ns: str) -> Steps:
    a = ids.admin
    rv = a.send("GET", ns_path(ns)).body["metadata"]["resourceVersion"]
    a.send("POST", ns_path(ns), cm("one"))
    a.send("PATCH", ns_path(ns, name="one"), {"data": {"k": "w"}},
           headers={"Content-Type": "application/merge-patch+json"})
    a.send("DELETE", ns_path(ns, name="one"))
    # Only "one": kube-controller-manager publishes kube-root-ca.crt into every new
    # namespace, at a moment of its own, and a watch of the whole collection may see it.
    got = a.watch(ns_path(ns) + f"?watch=true&resourceVersion={rv}&{ONLY_ONE}", seconds=5,
                  stop_after=3)
    return [("watch", got)]


@shape
def watch_metadata(ids: Identities, ns: str) -> Steps:
    a = ids.admin
    rv = a.send("GET", ns_path(ns)).body["metadata"]["resourceVersion"]
    a.send("POST", ns_path(ns), cm("one"))
    got = a.watch(ns_path(ns) + f"?watch=true&resourceVersion={rv}&{ONLY_ONE}", seconds=5,
                  stop_after=1, headers={"Accept": META})
    return [("watch", got)]


#: A watch-list: the current state first, then (with bookmarks allowed) one bookmark.
WATCH_LIST = "watch=true&allowWatchBookmarks=true&sendInitialEvents=true"


@shape
def watch_bookmarks(ids: Identities, ns: str) -> Steps:
    """The bookmark that ends a watch-list's initial events, which kube-apiserver sends at
    once (its cacher's ``initialEventsEndBookmark``), also to a watch from no version that
    names neither option (WatchList defaulting, on since 1.34); and the 422s for options
    it refuses.

    Not the periodic bookmark: kube-apiserver schedules it about a minute on (and 2 s
    before the watch's deadline), and then sends it only if its watch cache moved past the
    watch's start version, which depends on what else the cluster writes (a 75 s wait for
    one failed 1 run in 3).
    """
    a = ids.admin
    a.send("POST", ns_path(ns), cm("one"))
    rv = a.send("GET", ns_path(ns)).body["metadata"]["resourceVersion"]
    base = ns_path(ns) + "?"
    return [
        ("initial events end", a.watch(
            base + f"{WATCH_LIST}&resourceVersionMatch=NotOlderThan&resourceVersion={rv}"
                   f"&{ONLY_ONE}", seconds=5, stop_after=2)),
        ("defaulted watch-list", a.watch(
            base + f"watch=true&allowWatchBookmarks=true&{ONLY_ONE}", seconds=5, stop_after=2)),
        ("without NotOlderThan", a.watch(base + f"{WATCH_LIST}&{ONLY_ONE}", seconds=5)),
        ("match without initial events", a.watch(
            base + f"watch=true&resourceVersionMatch=Exact&resourceVersion={rv}", seconds=5)),
    ]


@shape
def watch_too_old(ids: Identities, ns: str) -> Steps:
    a = ids.admin
    rv = a.send("POST", ns_path(ns), cm("one")).body["metadata"]["resourceVersion"]
    a.send("POST", ns_path(ns), cm("two"))
    ids.compact()
    got = a.watch(ns_path(ns) + f"?watch=true&resourceVersion={rv}", seconds=5, stop_after=1)
    return [("410", got)]


@shape
def discovery(ids: Identities, ns: str) -> Steps:
    a = ids.admin
    return [("core", a.send("GET", "/api")), ("v1 has configmaps", _resource(
        a.send("GET", "/api/v1"), "configmaps")),
            ("version", _keys(a.send("GET", "/version")))]


def _resource(got: Answer, name: str) -> Answer:
    found = [r for r in got.body.get("resources") or [] if r.get("name") == name]
    return Answer(got.code, got.media, found)


def _keys(got: Answer) -> Answer:
    return Answer(got.code, got.media, sorted(got.body) if isinstance(got.body, dict) else got.body)


# --- normalising ----------------------------------------------------------------------------
VOLATILE = {"uid", "resourceVersion", "creationTimestamp", "selfLink", "continue",
            "remainingItemCount", "token", "clusterIP", "clusterIPs"}
TIMES = {"time", "lastTransitionTime", "lastUpdateTime", "lastHeartbeatTime",
         "deletionTimestamp", "expirationTimestamp"}
NUMBERS = re.compile(r"\d{3,}")
UIDS = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def normalize(value: Any) -> Any:
    """What must differ between servers made equal: ids, versions, times, big numbers in
    messages (resourceVersions); the order of a list of named objects; the order of
    ``managedFields``, which both servers sort by time to the second, then by manager: two
    writes a replay makes within one second on one server and across a second on the
    other come back in different orders (``lockwright.devcluster.managedfields``)."""
    value = copy.deepcopy(value)
    return _norm(value)


def _norm(value: Any) -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if k == "continue" and v == "":
                continue  # an empty continue token is no token
            if k in VOLATILE:
                out[k] = "<volatile>"
            elif k in TIMES:
                out[k] = "<time>"
            elif k == "managedFields" and isinstance(v, list):
                out[k] = sorted((_norm(e) for e in v), key=lambda e: json.dumps(e, sort_keys=True))
            else:
                out[k] = _norm(v)
        return out
    if isinstance(value, list):
        return [_norm(v) for v in value]
    if isinstance(value, str):
        return NUMBERS.sub("N", UIDS.sub("<uid>", value))
    return value
