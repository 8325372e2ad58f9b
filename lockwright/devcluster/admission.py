"""Admission: what every write passes before it is stored.

Metadata rules (names, namespaces), then for custom resources structural-schema pruning,
defaulting and validation, for built-ins their defaults and validation, and for CRDs the
apiextensions rules. Failures become kube-apiserver's 400 and 422 Status errors.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

from lockwright.devcluster import crd, defaults, schema
from lockwright.devcluster.errors import bad_request, invalid
from lockwright.devcluster.types import ResourceType

Obj = dict[str, Any]
CRD_GROUP, CRD_PLURAL = "apiextensions.k8s.io", "customresourcedefinitions"
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def now() -> str:
    """The current time as kube-apiserver formats timestamps (seconds, UTC, Z)."""
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class WriteOptions:
    """What a write request carries besides the object."""

    dry_run: bool = False
    field_manager: str = ""
    field_validation: str = "Warn"  # Strict | Warn | Ignore
    force: bool = False
    warnings: list[str] = field(default_factory=list)


def prepare_body(rt: ResourceType, namespace: str | None, body: Obj,
                 name: str | None = None) -> Obj:
    """Check a sent object against the URL; normalise apiVersion, kind and namespace.

    The caller hands over a fresh object (decoded JSON or a clone), changed in place.
    """
    if not isinstance(body, dict):
        raise bad_request("the body of the request was not a JSON object")
    obj = body
    if obj.get("kind", rt.kind) != rt.kind or obj.get("apiVersion", rt.group_version) not in (
            rt.group_version,):
        raise bad_request(f"the API version in the data ({obj.get('apiVersion')}) does not"
                          f" match the expected API version ({rt.group_version})"
                          if obj.get("kind", rt.kind) == rt.kind else
                          f"the kind in the data ({obj.get('kind')}) does not match the"
                          f" expected kind ({rt.kind})")
    obj["apiVersion"], obj["kind"] = rt.group_version, rt.kind
    meta = obj.setdefault("metadata", {})
    if not isinstance(meta, dict):
        raise bad_request("metadata must be an object")
    if rt.namespaced:
        if meta.get("namespace") and namespace and meta["namespace"] != namespace:
            raise bad_request("the namespace of the provided object does not match the"
                              " namespace sent on the request")
        meta["namespace"] = namespace or meta.get("namespace") or "default"
    else:
        meta.pop("namespace", None)
    if name is not None:
        if meta.get("name") and meta["name"] != name:
            raise bad_request(f"the name of the object ({meta['name']}) does not match the"
                              f" name on the URL ({name})")
        meta["name"] = name
    return obj

def admit(rt: ResourceType, obj: Obj, old: Obj | None, opts: WriteOptions) -> None:
    """Metadata rules, then pruning, defaults and validation; 422 with causes."""
    name = obj["metadata"].get("name", "")
    causes = metadata_causes(rt, obj["metadata"])
    if rt.schema is not None:
        unknown = schema.prune(obj, rt.schema)
        _unknown_fields(rt, unknown, opts)
        schema.apply_defaults(obj, rt.schema)
        causes += schema.validate(obj, rt.schema)
    elif not rt.is_custom:
        defaults.apply_defaults(rt.group, rt.kind, obj)
        causes += defaults.validate(rt.group, rt.kind, obj, old)
    if rt.group == CRD_GROUP and rt.plural == CRD_PLURAL and not causes:
        crd.default_crd(obj)
        causes += crd.validate_crd(obj, old)
    if causes:
        raise invalid(rt, name, schema.invalid_message(rt.kind, rt.group, name, causes),
                      [c.status_cause() for c in causes])

def _unknown_fields(rt: ResourceType, paths: list[str], opts: WriteOptions) -> None:
    if not paths or opts.field_validation == "Ignore":
        return
    fields = [f'unknown field "{p.lstrip(".")}"' for p in paths]
    if opts.field_validation == "Strict":
        raise bad_request(f'{rt.kind} in version "{rt.version}" cannot be handled as a'
                          f" {rt.kind}: strict decoding error: " + ", ".join(fields))
    opts.warnings.extend(fields)


def metadata_causes(rt: ResourceType, meta: Obj) -> list[schema.Cause]:
    name = meta.get("name")
    if not name:
        return [schema.Cause("FieldValueRequired", "metadata.name",
                             "name or generateName is required")]
    if rt.group == "rbac.authorization.k8s.io":
        return _path_segment_causes(name)
    pattern = _LABEL if rt.kind == "Namespace" and not rt.group else _SUBDOMAIN
    if len(name) > 253 or not pattern.match(name):
        return [schema.Cause("FieldValueInvalid", "metadata.name",
                             LABEL_MESSAGE if pattern is _LABEL else SUBDOMAIN_MESSAGE, name)]
    return []


# kube-apiserver's words (apimachinery's validation.IsDNS1123Label and ...Subdomain).
LABEL_MESSAGE = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters"
                 " or '-', and must start and end with an alphanumeric character (e.g. "
                 "'my-name',  or '123-abc', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
SUBDOMAIN_MESSAGE = crd.DNS1123_SUBDOMAIN_MESSAGE


def _path_segment_causes(name: str) -> list[schema.Cause]:
    """RBAC names need only be valid path segments (``crossplane:provider:x:system`` is)."""
    if name in (".", ".."):
        return [schema.Cause("FieldValueInvalid", "metadata.name", f"may not be '{name}'", name)]
    for bad in ("/", "%"):
        if bad in name:
            return [schema.Cause("FieldValueInvalid", "metadata.name",
                                 f"may not contain '{bad}'", name)]
    return []
