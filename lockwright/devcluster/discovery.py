"""API discovery documents (/version, /api, /apis, aggregated discovery), as pure functions.

``types`` is every served ResourceType (built-ins and CRD-derived). Documents are cached
per set of types: the server calls these on every request, and the set only changes when
a CRD does.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from lockwright.devcluster.types import ResourceType

T = TypeVar("T")
KUBE_VERSION = "v1.32.0"
AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1 = (
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList")

# kube-apiserver's group priorities; CRD groups follow, by name.
_GROUP_ORDER = (
    "apiregistration.k8s.io", "apps", "events.k8s.io", "authentication.k8s.io",
    "authorization.k8s.io", "autoscaling", "batch", "certificates.k8s.io",
    "networking.k8s.io", "policy", "rbac.authorization.k8s.io", "storage.k8s.io",
    "admissionregistration.k8s.io", "apiextensions.k8s.io", "scheduling.k8s.io",
    "coordination.k8s.io", "node.k8s.io", "discovery.k8s.io",
    "flowcontrol.apiserver.k8s.io", "resource.k8s.io",
)
_SUBRESOURCE_VERBS = ("get", "patch", "update")
_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d*))?$")


def version() -> dict[str, str]:
    """The /version document of a kube-apiserver 1.32."""
    return {"major": "1", "minor": "32", "gitVersion": KUBE_VERSION,
            "gitCommit": "70d3cc986aa8221cd1dfb1121852688902d3bf53",
            "gitTreeState": "clean", "buildDate": "2024-12-11T17:59:15Z",
            "goVersion": "go1.23.3", "compiler": "gc", "platform": "linux/amd64"}


def core_versions(server_address: str = "") -> dict[str, Any]:
    """The /api document (APIVersions).

    Args:
        server_address: ``host:port`` the client reached; listed for 0.0.0.0/0 like kube.
    """
    cidrs = ([{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]
             if server_address else [])
    return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": cidrs}


def version_sort_key(ver: str) -> tuple[int, int, int, str]:
    """Kube-aware version priority: GA > beta > alpha, then higher numbers; others last."""
    match = _VERSION_RE.match(ver)
    if not match:
        return (3, 0, 0, ver)
    major, level, minor = match.groups()
    rank = {None: 0, "beta": 1, "alpha": 2}[level]
    return (rank, -int(major), -int(minor or 0), "")


def _group_key(group: str) -> tuple[int, str]:
    return (_GROUP_ORDER.index(group), "") if group in _GROUP_ORDER else (len(_GROUP_ORDER),
                                                                         group)


class Snapshot:
    """The served types grouped once; documents derived from it are memoised on it."""

    def __init__(self, types: Sequence[ResourceType]) -> None:
        self.types = tuple(types)
        self.by_gv: dict[tuple[str, str], list[ResourceType]] = {}
        for rtype in self.types:
            self.by_gv.setdefault((rtype.group, rtype.version), []).append(rtype)
        for members in self.by_gv.values():
            members.sort(key=lambda t: t.plural)
        versions: dict[str, list[str]] = {}
        for group, ver in self.by_gv:
            versions.setdefault(group, []).append(ver)
        self.versions = {g: sorted(v, key=version_sort_key) for g, v in versions.items()}
        self.groups = sorted((g for g in self.versions if g), key=_group_key)
        self.docs: dict[Any, Any] = {}


class SnapshotCache:
    """Keeps the snapshot of the last set of types; rebuilt only when the set changes.

    Identity is checked first (the server usually passes the same tuple), then equality,
    so a request costs O(1) while nothing changes and O(n) once after a change.
    """

    def __init__(self, factory: type[Snapshot] = Snapshot) -> None:
        self._factory = factory
        self._source: object = None
        self._snapshot: Snapshot | None = None

    def get(self, types: Iterable[ResourceType]) -> Snapshot:
        if types is self._source and self._snapshot is not None:
            return self._snapshot
        current = tuple(types)
        if self._snapshot is None or not same_types(current, self._snapshot.types):
            self._snapshot = self._factory(current)
        self._source = types
        return self._snapshot


def same_types(a: tuple[ResourceType, ...], b: tuple[ResourceType, ...]) -> bool:
    # Schemas are excluded from ResourceType equality, so compare their identity too.
    return a == b and all(x.schema is y.schema for x, y in zip(a, b))


_CACHE = SnapshotCache()
_PER_TYPE: dict[tuple[Any, int], tuple[ResourceType, Any]] = {}


def per_type(build: Any, rtype: ResourceType) -> Any:
    """``build(rtype)``, memoised per ResourceType object across snapshots.

    One CRD more then costs one entry, not a rebuild of every entry. The cache holds the
    type, so its id cannot be reused while cached; it is emptied when it outgrows churn.
    """
    key = (build, id(rtype))
    hit = _PER_TYPE.get(key)
    if hit is not None and hit[0] is rtype:
        return hit[1]
    if len(_PER_TYPE) > 50_000:
        _PER_TYPE.clear()
    value = build(rtype)
    _PER_TYPE[key] = (rtype, value)
    return value


def _memo(snapshot: Snapshot, key: Any, build: Callable[[], T]) -> T:
    if key not in snapshot.docs:
        snapshot.docs[key] = build()
    return snapshot.docs[key]  # type: ignore[no-any-return]


def storage_version_hash(group: str, ver: str, kind: str) -> str:
    """``discovery.StorageVersionHash``: base64 of the first 8 bytes of sha256(g/v/k)."""
    digest = hashlib.sha256(f"{group}/{ver}/{kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def _subresource_kind(rtype: ResourceType, sub: str) -> tuple[str, str, str]:
    if sub == "scale":
        return "autoscaling", "v1", "Scale"
    return rtype.group, rtype.version, rtype.kind


def _api_resources(rtype: ResourceType) -> list[dict[str, Any]]:
    main: dict[str, Any] = {
        "name": rtype.plural, "singularName": rtype.singular,
        "namespaced": rtype.namespaced, "kind": rtype.kind, "verbs": list(rtype.verbs)}
    if rtype.short_names:
        main["shortNames"] = list(rtype.short_names)
    if rtype.categories:
        main["categories"] = list(rtype.categories)
    stored = rtype.storage_version or (rtype.version if rtype.storage else "")
    if stored:  # as kube-apiserver: every served version names the one stored
        main["storageVersionHash"] = storage_version_hash(rtype.group, stored, rtype.kind)
    out = [main]
    for sub in sorted(rtype.subresources):
        group, ver, kind = _subresource_kind(rtype, sub)
        entry: dict[str, Any] = {"name": f"{rtype.plural}/{sub}", "singularName": "",
                                 "namespaced": rtype.namespaced, "kind": kind,
                                 "verbs": list(_SUBRESOURCE_VERBS)}
        if (group, ver) != (rtype.group, rtype.version):
            entry.update(group=group, version=ver)
        out.append(entry)
    return out


def _resource_list(snapshot: Snapshot, group: str, ver: str) -> dict[str, Any] | None:
    members = snapshot.by_gv.get((group, ver))
    if not members:
        return None
    doc: dict[str, Any] = {"kind": "APIResourceList"}
    if group:
        doc["apiVersion"] = "v1"
    doc["groupVersion"] = f"{group}/{ver}" if group else ver
    doc["resources"] = [r for t in members for r in per_type(_api_resources, t)]
    return doc


def core_resources(types: Iterable[ResourceType]) -> dict[str, Any]:
    """The /api/v1 document (APIResourceList), subresources included."""
    snapshot = _CACHE.get(types)
    doc = _memo(snapshot, ("list", "", "v1"), lambda: _resource_list(snapshot, "", "v1"))
    return doc or {"kind": "APIResourceList", "groupVersion": "v1", "resources": []}


def resource_list(types: Iterable[ResourceType], group: str,
                  version: str) -> dict[str, Any] | None:
    """The /apis/{group}/{version} document, or None when that group/version is not served."""
    snapshot = _CACHE.get(types)
    return _memo(snapshot, ("list", group, version),
                 lambda: _resource_list(snapshot, group, version))


def _group_doc(snapshot: Snapshot, group: str) -> dict[str, Any]:
    versions = [{"groupVersion": f"{group}/{v}", "version": v}
                for v in snapshot.versions[group]]
    return {"name": group, "versions": versions, "preferredVersion": versions[0]}


def group_list(types: Iterable[ResourceType]) -> dict[str, Any]:
    """The /apis document (APIGroupList); preferredVersion is the highest-priority version.

    kube-apiserver prefers by version priority (v1 > v1beta1 > v1alpha1), not by the
    storage version, for CRD groups too.
    """
    snapshot = _CACHE.get(types)
    return _memo(snapshot, "groups", lambda: {
        "kind": "APIGroupList", "apiVersion": "v1",
        "groups": [_group_doc(snapshot, g) for g in snapshot.groups]})


def group(types: Iterable[ResourceType], name: str) -> dict[str, Any] | None:
    """The /apis/{group} document (APIGroup), or None when the group is not served."""
    snapshot = _CACHE.get(types)
    if not name or name not in snapshot.versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_doc(snapshot, name)}


# --- aggregated discovery (apidiscovery.k8s.io) -------------------------------------

def wants_aggregated(accept: str | None) -> tuple[str, str] | None:
    """Whether the Accept header asks for aggregated discovery, as kubectl's does.

    client-go sends ``AcceptV2[,AcceptV2Beta1],application/json``; the first acceptable
    range wins, and client-go recognises the answer by the Content-Type parameters.

    Args:
        accept: the Accept header of a request to /api or /apis.

    Returns:
        ``(version, content_type)`` — version ``v2`` or ``v2beta1`` — to serve
        aggregated discovery, or None to serve the legacy document.
    """
    for clause in (accept or "").split(","):
        parts = [p.strip() for p in clause.split(";")]
        params = {k.strip(): v.strip() for k, _, v in (p.partition("=") for p in parts[1:])}
        if params.get("q") in ("0", "0.0"):
            continue
        if parts[0] in ("application/json", "*/*", "application/*") and (
                params.get("as") == "APIGroupDiscoveryList"
                and params.get("g") == "apidiscovery.k8s.io"):
            if params.get("v") == "v2":
                return "v2", AGGREGATED_V2
            if params.get("v") == "v2beta1":
                return "v2beta1", AGGREGATED_V2BETA1
            continue
        if parts[0] in ("application/json", "*/*", "application/*", "application/yaml"):
            return None
    return None


def _discovery_resource(rtype: ResourceType) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "resource": rtype.plural,
        "responseKind": {"group": rtype.group, "version": rtype.version, "kind": rtype.kind},
        "scope": "Namespaced" if rtype.namespaced else "Cluster",
        "singularResource": rtype.singular, "verbs": list(rtype.verbs)}
    if rtype.short_names:
        entry["shortNames"] = list(rtype.short_names)
    if rtype.categories:
        entry["categories"] = list(rtype.categories)
    subs = []
    for sub in sorted(rtype.subresources):
        group, ver, kind = _subresource_kind(rtype, sub)
        subs.append({"subresource": sub,
                     "responseKind": {"group": group, "version": ver, "kind": kind},
                     "verbs": list(_SUBRESOURCE_VERBS)})
    if subs:
        entry["subresources"] = subs
    return entry


def _discovery_group(snapshot: Snapshot, group: str) -> dict[str, Any]:
    versions = [{"version": v,
                 "resources": [per_type(_discovery_resource, t)
                               for t in snapshot.by_gv[(group, v)]],
                 "freshness": "Current"}
                for v in snapshot.versions[group]]
    metadata: dict[str, Any] = {"name": group} if group else {}
    metadata["creationTimestamp"] = None
    return {"metadata": metadata, "versions": versions}


def aggregated(types: Iterable[ResourceType], core: bool,
               version: str = "v2") -> dict[str, Any]:
    """APIGroupDiscoveryList for /api (``core``) or /apis, versions in preference order.

    Args:
        types: every served type.
        core: True for /api (the legacy group only), False for /apis.
        version: ``v2`` or ``v2beta1`` (from :func:`wants_aggregated`).
    """
    snapshot = _CACHE.get(types)

    def build() -> dict[str, Any]:
        names = [""] if core and "" in snapshot.versions else [] if core else snapshot.groups
        return {"kind": "APIGroupDiscoveryList",
                "apiVersion": f"apidiscovery.k8s.io/{version}", "metadata": {},
                "items": [_discovery_group(snapshot, g) for g in names]}
    return _memo(snapshot, ("aggregated", core, version), build)
