"""OpenAPI v3 (and a v2 rendering) of the served types, as pure functions.

What kubectl 1.32 reads from these documents:

* field validation: a PATCH operation tagged with the kind's
  ``x-kubernetes-group-version-kind`` that lists a ``fieldValidation`` query parameter
  makes kubectl skip client-side validation and send ``fieldValidation=Strict``;
* ``kubectl explain``: the GVK of a list/get operation on the resource path, then the
  ``components.schemas`` entry carrying that GVK;
* client-side ``apply``: strategic merge patch is built from OpenAPI only when PATCH
  accepts ``application/strategic-merge-patch+json``. It is not offered here, so kubectl
  falls back to its compiled-in types for built-ins and to JSON merge patch for custom
  resources, which is what kube does for CRDs and exact for built-ins without copying
  upstream's schemas.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterable
from typing import Any

from lockwright.devcluster.discovery import KUBE_VERSION, Snapshot, SnapshotCache, same_types
from lockwright.devcluster.openapi_builtin import kind_schemas
from lockwright.devcluster.openapi_meta import (
    API_VERSION_DESC,
    KIND_DESC,
    LIST_METADATA_DESC,
    META,
    METADATA_DESC,
    REF,
    builtin_properties,
    meta_schemas,
    ref,
)
from lockwright.devcluster.types import ResourceType

_CACHE = SnapshotCache()
_GV_HASHES: dict[tuple[str, str], tuple[tuple[ResourceType, ...], str]] = {}
_PATCH_TYPES = ("application/apply-patch+yaml", "application/json-patch+json",
                "application/merge-patch+json")
_BUILTIN_GROUP_PREFIX = {"": "io.k8s.api.core",
                         "apiextensions.k8s.io":
                             "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions"}


# --- names --------------------------------------------------------------------------

def schema_name(rtype: ResourceType, kind: str | None = None) -> str:
    """The components.schemas key kube uses, e.g. ``io.k8s.api.apps.v1.Deployment``.

    Custom resources use the reversed group: ``io.crossplane.pkg.v1.Provider``.
    """
    kind = kind or rtype.kind
    if rtype.is_custom:
        prefix = ".".join(reversed(rtype.group.split(".")))
    else:
        prefix = _BUILTIN_GROUP_PREFIX.get(rtype.group,
                                           f"io.k8s.api.{rtype.group.split('.')[0]}")
    return f"{prefix}.{rtype.version}.{kind}"


def gv_path(group: str, version: str) -> str:
    """``api/v1`` or ``apis/{group}/{version}``: a key of the /openapi/v3 index."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _gvk(rtype: ResourceType, kind: str | None = None) -> dict[str, str]:
    return {"group": rtype.group, "kind": kind or rtype.kind, "version": rtype.version}


def _camel(rtype: ResourceType) -> str:
    group = rtype.group.removesuffix(".k8s.io") if not rtype.is_custom else rtype.group
    words = [w for part in (group or "core").split(".") for w in part.split("-")]
    return "".join(w[:1].upper() + w[1:] for w in words) + rtype.version.capitalize()


# --- index --------------------------------------------------------------------------

def v3_index(types: Iterable[ResourceType]) -> dict[str, Any]:
    """The /openapi/v3 discovery document: one entry per served group/version.

    Each URL carries a hash of that group/version's content, so clients may cache the
    document for as long as the URL does not change.
    """
    snapshot = _CACHE.get(types)
    if "index" not in snapshot.docs:
        paths = {gv_path(g, v): {"serverRelativeURL":
                                 f"/openapi/v3/{gv_path(g, v)}?hash={_gv_hash(g, v, m)}"}
                 for (g, v), m in sorted(snapshot.by_gv.items())}
        snapshot.docs["index"] = {"paths": paths}
    return dict(snapshot.docs["index"])


def _gv_hash(group: str, version: str, members: list[ResourceType]) -> str:
    current = tuple(members)
    cached = _GV_HASHES.get((group, version))
    if cached and same_types(cached[0], current):
        return cached[1]
    digest = hashlib.sha512(repr(current).encode()).hexdigest().upper()
    _GV_HASHES[(group, version)] = (current, digest)
    return digest


# --- group/version documents --------------------------------------------------------

def v3_group_version(types: Iterable[ResourceType], group: str,
                     version: str) -> dict[str, Any] | None:
    """The /openapi/v3/apis/{group}/{version} (or api/v1) document; None if not served.

    Args:
        types: every served type.
        group: API group, ``""`` for the core group.
        version: API version.
    """
    snapshot = _CACHE.get(types)
    key = ("v3", group, version)
    if key not in snapshot.docs:
        snapshot.docs[key] = _build_gv(snapshot, group, version)
    return snapshot.docs[key]  # type: ignore[no-any-return]


def _build_gv(snapshot: Snapshot, group: str, version: str) -> dict[str, Any] | None:
    members = snapshot.by_gv.get((group, version))
    if not members:
        return None
    paths: dict[str, Any] = {}
    schemas = meta_schemas()
    for rtype in members:
        paths.update(_paths(rtype))
        found = None if rtype.is_custom else kind_schemas(rtype.group, rtype.kind)
        if found is not None:
            schemas.update(found[1])
        schemas[schema_name(rtype)] = kind_schema(rtype)
        schemas[schema_name(rtype, rtype.list_kind)] = _list_schema(rtype)
    if any("scale" in t.subresources for t in members):
        schemas["io.k8s.api.autoscaling.v1.Scale"] = _SCALE
    custom = any(t.is_custom for t in members)
    return {"openapi": "3.0.0",
            "info": {"title": "Kubernetes CRD Swagger" if custom else "Kubernetes",
                     "version": "v0.1.0" if custom else KUBE_VERSION},
            "paths": dict(sorted(paths.items())),
            "components": {"schemas": dict(sorted(schemas.items()))}}


def kind_schema(rtype: ResourceType) -> dict[str, Any]:
    """The published schema of a kind: CRD schema (or built-in fields) plus metadata."""
    base: dict[str, Any]
    if rtype.is_custom:
        base = copy.deepcopy(rtype.schema) if rtype.schema else {
            "type": "object", "x-kubernetes-preserve-unknown-fields": True}
    else:
        base = _builtin_schema(rtype)
    base.setdefault("type", "object")
    props: dict[str, Any] = base.setdefault("properties", {})
    props["apiVersion"] = {"type": "string", "description": API_VERSION_DESC}
    props["kind"] = {"type": "string", "description": KIND_DESC}
    props["metadata"] = ref(META + "ObjectMeta", METADATA_DESC)
    base["x-kubernetes-group-version-kind"] = [_gvk(rtype)]
    return base


def _builtin_schema(rtype: ResourceType) -> dict[str, Any]:
    found = kind_schemas(rtype.group, rtype.kind)
    if found is None:
        return {"type": "object", "description": f"{rtype.kind} of {rtype.group_version}.",
                "properties": builtin_properties(rtype.kind)}
    shared = found[1][found[0]]
    return {**shared, "properties": dict(shared.get("properties", {}))}


def _list_schema(rtype: ResourceType) -> dict[str, Any]:
    return {
        "type": "object", "required": ["items"],
        "description": f"{rtype.list_kind} is a list of {rtype.kind}",
        "properties": {
            "apiVersion": {"type": "string", "description": API_VERSION_DESC},
            "items": {"type": "array", "description": f"List of {rtype.plural}.",
                      "items": {"$ref": REF + schema_name(rtype)}},
            "kind": {"type": "string", "description": KIND_DESC},
            "metadata": ref(META + "ListMeta", LIST_METADATA_DESC)},
        "x-kubernetes-group-version-kind": [_gvk(rtype, rtype.list_kind)]}


_SCALE = {
    "type": "object", "description": "Scale represents a scaling request for a resource.",
    "properties": {
        "apiVersion": {"type": "string", "description": API_VERSION_DESC},
        "kind": {"type": "string", "description": KIND_DESC},
        "metadata": ref(META + "ObjectMeta", METADATA_DESC),
        "spec": {"type": "object", "description": "spec defines the behavior of the scale.",
                 "properties": {"replicas": {"type": "integer", "format": "int32",
                                             "description": "desired number of instances"}}},
        "status": {"type": "object", "description": "current status of the scale.",
                   "properties": {"replicas": {"type": "integer", "format": "int32",
                                               "description": "actual number of instances"},
                                  "selector": {"type": "string",
                                               "description": "label query over pods"}}}},
    "x-kubernetes-group-version-kind": [{"group": "autoscaling", "kind": "Scale",
                                         "version": "v1"}]}


# --- paths --------------------------------------------------------------------------

def _q(name: str, type_: str, description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "description": description,
            "schema": {"type": type_, "uniqueItems": True}}


_DRY_RUN = _q("dryRun", "string", "When present, indicates that modifications should not "
              "be persisted. Valid values are: - All: all dry run stages will be processed")
_FIELD_MANAGER = _q("fieldManager", "string", "fieldManager is a name associated with the "
                    "actor or entity that is making these changes.")
_FIELD_VALIDATION = _q(
    "fieldValidation", "string", "fieldValidation instructs the server on how to handle "
    "objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid "
    "values are: - Ignore - Warn - Strict")
_FORCE = _q("force", "boolean", "Force is going to \"force\" Apply requests. It means user "
            "will re-acquire conflicting fields owned by other people.")
_WRITE_PARAMS = [_DRY_RUN, _FIELD_MANAGER, _FIELD_VALIDATION]
_LIST_PARAMS = [
    _q("allowWatchBookmarks", "boolean", "allowWatchBookmarks requests watch events with type "
       "\"BOOKMARK\"."),
    _q("continue", "string", "The continue option should be set when retrieving more results "
       "from the server."),
    _q("fieldSelector", "string", "A selector to restrict the list of returned objects by "
       "their fields."),
    _q("labelSelector", "string", "A selector to restrict the list of returned objects by "
       "their labels."),
    _q("limit", "integer", "limit is a maximum number of responses to return for a list "
       "call."),
    _q("resourceVersion", "string", "resourceVersion sets a constraint on what resource "
       "versions a request may be served from."),
    _q("resourceVersionMatch", "string", "resourceVersionMatch determines how "
       "resourceVersion is applied to list calls."),
    _q("sendInitialEvents", "boolean", "`sendInitialEvents=true` may be set together with "
       "`watch=true`."),
    _q("timeoutSeconds", "integer", "Timeout for the list/watch call."),
    _q("watch", "boolean", "Watch for changes to the described resources and return them as "
       "a stream of add, update, and remove notifications.")]
_DELETE_PARAMS = [
    _DRY_RUN,
    _q("gracePeriodSeconds", "integer", "The duration in seconds before the object should be "
       "deleted."),
    _q("orphanDependents", "boolean", "Deprecated: please use the PropagationPolicy."),
    _q("propagationPolicy", "string", "Whether and how garbage collection will be performed.")]
_PRETTY = _q("pretty", "string", "If 'true', then the output is pretty printed.")


def _path_param(name: str, description: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "description": description,
            "schema": {"type": "string", "uniqueItems": True}}


def _content(schema: str) -> dict[str, Any]:
    body = {"schema": {"$ref": REF + schema}}
    return {"application/json": body, "application/yaml": body}


def _op(rtype: ResourceType, action: str, op_id: str, description: str, response: str,
        params: list[dict[str, Any]], *, kind: tuple[str, str, str] | None = None,
        body: str | None = None, codes: tuple[str, ...] = ("200",)) -> dict[str, Any]:
    group, version, kind_name = kind or (rtype.group, rtype.version, rtype.kind)
    op: dict[str, Any] = {
        "tags": [(f"{_camel(rtype)[:1].lower()}{_camel(rtype)[1:-len(rtype.version)]}"
                 f"_{rtype.version}")],
        "description": description, "operationId": op_id, "parameters": list(params),
        "responses": {c: {"description": {"200": "OK", "201": "Created",
                                           "202": "Accepted"}[c],
                          "content": _content(response)} for c in codes}
        | {"401": {"description": "Unauthorized"}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": group, "kind": kind_name,
                                            "version": version}}
    if body is not None:
        types = _PATCH_TYPES if action == "patch" else ("*/*",)
        op["requestBody"] = {"content": {t: {"schema": {"$ref": REF + body}} for t in types},
                             "required": True}
    return op


def _prefix(rtype: ResourceType) -> str:
    return f"/{gv_path(rtype.group, rtype.version)}"


def _paths(rtype: ResourceType) -> dict[str, dict[str, Any]]:
    ns = "/namespaces/{namespace}" if rtype.namespaced else ""
    collection = f"{_prefix(rtype)}{ns}/{rtype.plural}"
    out = {collection: _collection_item(rtype), f"{collection}/{{name}}": _named_item(rtype)}
    if rtype.namespaced and "list" in rtype.verbs:
        out[f"{_prefix(rtype)}/{rtype.plural}"] = {
            "get": _op(rtype, "list", f"list{_camel(rtype)}{rtype.kind}ForAllNamespaces",
                       f"list or watch objects of kind {rtype.kind}",
                       schema_name(rtype, rtype.list_kind), _LIST_PARAMS),
            "parameters": [_PRETTY]}
    for sub in rtype.subresources:
        out[f"{collection}/{{name}}/{sub}"] = _subresource_item(rtype, sub)
    return {path: item for path, item in out.items() if len(item) > 1}


def _scope(rtype: ResourceType) -> str:
    return "Namespaced" if rtype.namespaced else ""


def _ns_params(rtype: ResourceType) -> list[dict[str, Any]]:
    return [_path_param("namespace", "object name and auth scope, such as for teams and "
                        "projects")] if rtype.namespaced else []


def _collection_item(rtype: ResourceType) -> dict[str, Any]:
    base, kind, verbs = f"{_camel(rtype)}{_scope(rtype)}{rtype.kind}", rtype.kind, rtype.verbs
    item: dict[str, Any] = {"parameters": _ns_params(rtype) + [_PRETTY]}
    if "list" in verbs:
        item["get"] = _op(rtype, "list", f"list{base}", f"list or watch objects of kind {kind}",
                          schema_name(rtype, rtype.list_kind), _LIST_PARAMS)
    if "create" in verbs:
        item["post"] = _op(rtype, "post", f"create{base}", f"create a {kind}",
                           schema_name(rtype), _WRITE_PARAMS, body=schema_name(rtype),
                           codes=("200", "201", "202"))
    if "deletecollection" in verbs:
        item["delete"] = _op(rtype, "deletecollection", f"deletecollection{base}",
                             f"delete collection of {kind}", META + "Status",
                             _DELETE_PARAMS + _LIST_PARAMS, body=META + "DeleteOptions")
    return item


def _named_item(rtype: ResourceType) -> dict[str, Any]:
    base, kind, verbs = f"{_camel(rtype)}{_scope(rtype)}{rtype.kind}", rtype.kind, rtype.verbs
    item: dict[str, Any] = {"parameters": [_path_param("name", f"name of the {kind}")]
                            + _ns_params(rtype) + [_PRETTY]}
    if "get" in verbs:
        item["get"] = _op(rtype, "get", f"read{base}", f"read the specified {kind}",
                          schema_name(rtype), [])
    if "update" in verbs:
        item["put"] = _op(rtype, "put", f"replace{base}", f"replace the specified {kind}",
                          schema_name(rtype), _WRITE_PARAMS, body=schema_name(rtype),
                          codes=("200", "201"))
    if "patch" in verbs:
        item["patch"] = _op(rtype, "patch", f"patch{base}",
                            f"partially update the specified {kind}", schema_name(rtype),
                            _WRITE_PARAMS + [_FORCE], body=META + "Patch",
                            codes=("200", "201"))
    if "delete" in verbs:
        item["delete"] = _op(rtype, "delete", f"delete{base}", f"delete a {kind}",
                             META + "Status", _DELETE_PARAMS, body=META + "DeleteOptions",
                             codes=("200", "202"))
    return item


def _subresource_item(rtype: ResourceType, sub: str) -> dict[str, Any]:
    base = f"{_camel(rtype)}{_scope(rtype)}{rtype.kind}{sub.capitalize()}"
    scale = sub == "scale"
    kind = ("autoscaling", "v1", "Scale") if scale else None
    response = "io.k8s.api.autoscaling.v1.Scale" if scale else schema_name(rtype)
    item: dict[str, Any] = {"parameters": [_path_param("name", f"name of the {rtype.kind}")]
                            + _ns_params(rtype) + [_PRETTY]}
    item["get"] = _op(rtype, "get", f"read{base}", f"read {sub} of the specified {rtype.kind}",
                      response, [], kind=kind)
    item["put"] = _op(rtype, "put", f"replace{base}",
                      f"replace {sub} of the specified {rtype.kind}", response, _WRITE_PARAMS,
                      kind=kind, body=response, codes=("200", "201"))
    item["patch"] = _op(rtype, "patch", f"patch{base}",
                        f"partially update {sub} of the specified {rtype.kind}", response,
                        _WRITE_PARAMS + [_FORCE], kind=kind, body=META + "Patch",
                        codes=("200", "201"))
    return item


# --- v2 -----------------------------------------------------------------------------

def v2(types: Iterable[ResourceType]) -> dict[str, Any]:
    """A Swagger 2.0 rendering of every group/version, for JSON clients of /openapi/v2.

    kubectl 1.32 asks /openapi/v2 for protobuf only and tolerates its absence (it uses
    OpenAPI v3), so this is served only to clients that accept JSON.
    """
    snapshot = _CACHE.get(types)
    if "v2" not in snapshot.docs:
        snapshot.docs["v2"] = _build_v2(snapshot)
    return snapshot.docs["v2"]  # type: ignore[no-any-return]


def _build_v2(snapshot: Snapshot) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    definitions: dict[str, Any] = {}
    for group, version in sorted(snapshot.by_gv):
        doc = v3_group_version(snapshot.types, group, version) or {}
        definitions.update(doc.get("components", {}).get("schemas", {}))
        for path, item in doc.get("paths", {}).items():
            paths[path] = {method: _v2_operation(op) if method != "parameters"
                           else [_v2_param(p) for p in op] for method, op in item.items()}
    swagger: dict[str, Any] = _rewrite_refs({
        "swagger": "2.0", "info": {"title": "Kubernetes", "version": KUBE_VERSION},
        "paths": paths, "definitions": definitions})
    return swagger


def _v2_param(param: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in param.items() if k != "schema"}
    out["type"] = param.get("schema", {}).get("type", "string")
    out["uniqueItems"] = True
    return out


def _v2_operation(op: dict[str, Any]) -> dict[str, Any]:
    params = [_v2_param(p) for p in op.get("parameters", [])]
    body = op.get("requestBody")
    consumes = ["*/*"]
    if body:
        consumes = list(body["content"])
        schema = next(iter(body["content"].values()))["schema"]
        params.insert(0, {"name": "body", "in": "body", "required": True, "schema": schema})
    responses = {code: {"description": r["description"],
                        **({"schema": r["content"]["application/json"]["schema"]}
                           if "content" in r else {})}
                 for code, r in op.get("responses", {}).items()}
    out = {k: v for k, v in op.items() if k not in ("requestBody", "responses", "parameters")}
    return {**out, "consumes": consumes, "produces": ["application/json", "application/yaml"],
            "schemes": ["https"], "parameters": params, "responses": responses}


def _rewrite_refs(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: (v.replace(REF, "#/definitions/") if k == "$ref" and isinstance(v, str)
                    else _rewrite_refs(v)) for k, v in node.items()}
    if isinstance(node, list):
        return [_rewrite_refs(v) for v in node]
    return node
