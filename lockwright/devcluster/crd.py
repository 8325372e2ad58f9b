"""CustomResourceDefinition semantics of kube-apiserver, as pure functions over CRD dicts.

Defaulting, validation (with the apiserver's messages), the status the apiextensions
controllers keep (accepted names, stored versions, conditions), name conflicts within a
group, and the ResourceTypes a CRD serves. Structural-schema checks of a version's
``openAPIV3Schema`` are here too; the per-object semantics are in ``devcluster.schema``.
"""

from __future__ import annotations

import re
from typing import Any

from lockwright.devcluster.schema import Cause, GoLiteral, go_quote, not_supported
from lockwright.devcluster.types import ResourceType, clone

CRD = dict[str, Any]
Schema = dict[str, Any]

_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                "start with an alphabetic character, and end with an alphanumeric character "
                "(e.g. 'my-name',  or 'abc-123', regex used for validation is "
                "'[a-z]([-a-z0-9]*[a-z0-9])?')")
DNS1123_SUBDOMAIN_MESSAGE = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                "characters, '-' or '.', and must start and end with an alphanumeric character "
                "(e.g. 'example.com', regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
_OPENAPI_TYPES = ("array", "boolean", "integer", "number", "object", "string")
_COLUMN_TYPES = "boolean,date,integer,number,string"
_COLUMN_FORMATS = "byte,date,date-time,double,float,int32,int64,password"
_AGE_DESCRIPTION = (
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is "
    "in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#metadata")
DEFAULT_COLUMNS: tuple[dict[str, Any], ...] = (
    {"name": "Age", "type": "date", "description": _AGE_DESCRIPTION,
     "jsonPath": ".metadata.creationTimestamp"},)


# --------------------------------------------------------------------------- defaulting

def default_crd(crd: CRD) -> None:
    """Applies the apiextensions.k8s.io/v1 defaults in place.

    ``names.singular`` (lower-cased kind), ``names.listKind`` (kind + ``List``),
    ``conversion`` (``strategy: None``) and a webhook service's ``port`` (443).

    Args:
        crd: The CustomResourceDefinition, modified in place.
    """
    spec = crd.setdefault("spec", {})
    names = spec.setdefault("names", {})
    kind = names.get("kind") or ""
    if not names.get("singular") and kind:
        names["singular"] = kind.lower()
    if not names.get("listKind") and kind:
        names["listKind"] = kind + "List"
    conversion = spec.setdefault("conversion", {"strategy": "None"})
    service = (((conversion.get("webhook") or {}).get("clientConfig") or {}).get("service"))
    if isinstance(service, dict) and "port" not in service:
        service["port"] = 443


# --------------------------------------------------------------------------- validation

def validate_crd(crd: CRD, old: CRD | None) -> list[Cause]:
    """Validates a (defaulted) CRD on create or update, as kube-apiserver does.

    Args:
        crd: The new CustomResourceDefinition.
        old: The stored one on update, ``None`` on create.

    Returns:
        The causes in the apiserver's order; empty when the CRD is valid.
    """
    spec = crd.get("spec") or {}
    out = _validate_name(crd, spec)
    out += _validate_group(spec.get("group") or "")
    out += _validate_enum("spec.scope", spec.get("scope") or "", ("Cluster", "Namespaced"))
    out += _validate_versions(spec.get("versions"))
    out += _validate_names(spec.get("names") or {})
    out += _validate_conversion(spec.get("conversion"))
    if spec.get("preserveUnknownFields") is True:
        out.append(Cause("FieldValueInvalid", "spec.preserveUnknownFields",
                         "cannot set to true, set x-kubernetes-preserve-unknown-fields to true "
                         "in spec.versions[*].schema instead", True))
    if old is not None:
        out += _validate_immutable(spec, old)
    return out + _validate_stored_versions(crd, old)


def _validate_name(crd: CRD, spec: dict[str, Any]) -> list[Cause]:
    name = (crd.get("metadata") or {}).get("name") or ""
    plural = (spec.get("names") or {}).get("plural") or ""
    if name == f"{plural}.{spec.get('group') or ''}":
        return []
    return [Cause("FieldValueInvalid", "metadata.name",
                  'must be spec.names.plural+"."+spec.group', name)]


def _validate_group(group: str) -> list[Cause]:
    if not group:
        return [Cause("FieldValueRequired", "spec.group", "")]
    problems = _dns_problems(group, 253, _DNS1123_SUBDOMAIN, DNS1123_SUBDOMAIN_MESSAGE)
    if problems:
        return [Cause("FieldValueInvalid", "spec.group", problems, group)]
    if "." not in group:
        return [Cause("FieldValueInvalid", "spec.group",
                      "should be a domain with at least one dot", group)]
    return []


def _dns_problems(value: str, limit: int, pattern: re.Pattern[str], message: str) -> str:
    problems = [f"must be no more than {limit} characters"] if len(value) > limit else []
    if not pattern.match(value):
        problems.append(message)
    return ",".join(problems)


def _validate_enum(path: str, value: str, allowed: tuple[str, ...]) -> list[Cause]:
    if not value:
        return [Cause("FieldValueRequired", path, "")]
    return [] if value in allowed else [not_supported(path, value, allowed)]


def _validate_versions(given: list[dict[str, Any]] | None) -> list[Cause]:
    versions = given or []
    out: list[Cause] = []
    for i, version in enumerate(versions):
        path = f"spec.versions[{i}]"
        name = version.get("name") or ""
        problems = _dns_problems(name, 63, _DNS1035, _DNS1035_MSG)
        if problems:
            out.append(Cause("FieldValueInvalid", f"{path}.name", problems, name))
        out += _validate_version(version, path)
    names = [v.get("name") for v in versions]
    if len(set(names)) != len(names):
        out.append(Cause("FieldValueInvalid", "spec.versions", "must contain unique version names",
                         _versions_literal(given)))
    if sum(1 for v in versions if v.get("storage")) != 1:
        out.append(Cause("FieldValueInvalid", "spec.versions",
                         "must have exactly one version marked as storage version",
                         _versions_literal(given)))
    return out


def _versions_literal(versions: list[dict[str, Any]] | None) -> GoLiteral:
    # kube prints its internal []CustomResourceDefinitionVersion with %#v (pointer
    # addresses included); this keeps the shape and the fields a reader needs.
    if versions is None:
        return GoLiteral("[]apiextensions.CustomResourceDefinitionVersion(nil)")
    parts = ", ".join(
        f"apiextensions.CustomResourceDefinitionVersion{{Name:{go_quote(v.get('name') or '')}, "
        f"Served:{str(bool(v.get('served'))).lower()}, "
        f"Storage:{str(bool(v.get('storage'))).lower()}, ...}}" for v in versions)
    return GoLiteral(f"[]apiextensions.CustomResourceDefinitionVersion{{{parts}}}")


def _validate_version(version: dict[str, Any], path: str) -> list[Cause]:
    schema = (version.get("schema") or {}).get("openAPIV3Schema")
    if not isinstance(schema, dict):
        out = [Cause("FieldValueRequired", f"{path}.schema.openAPIV3Schema",
                     "schemas are required")]
    else:
        out = schema_errors(schema, f"{path}.schema.openAPIV3Schema")
    out += _validate_subresources(version.get("subresources"), f"{path}.subresources")
    for i, column in enumerate(version.get("additionalPrinterColumns") or []):
        out += _validate_column(column, f"{path}.additionalPrinterColumns[{i}]")
    return out


def _validate_subresources(sub: dict[str, Any] | None, path: str) -> list[Cause]:
    scale = (sub or {}).get("scale")
    if not isinstance(scale, dict):
        return []
    out: list[Cause] = []
    for key, under in (("specReplicasPath", ".spec."), ("statusReplicasPath", ".status.")):
        value = scale.get(key) or ""
        if not value:
            out.append(Cause("FieldValueRequired", f"{path}.scale.{key}", ""))
        elif not value.startswith("."):
            out.append(Cause("FieldValueInvalid", f"{path}.scale.{key}",
                             "must be a simple json path starting with .", value))
        elif not value.startswith(under):
            out.append(Cause("FieldValueInvalid", f"{path}.scale.{key}",
                             f"should be a json path under {under.rstrip('.')}", value))
    return out


def _validate_column(column: dict[str, Any], path: str) -> list[Cause]:
    out: list[Cause] = []
    if not column.get("name"):
        out.append(Cause("FieldValueRequired", f"{path}.name", ""))
    ctype = column.get("type") or ""
    if not ctype:
        out.append(Cause("FieldValueRequired", f"{path}.type", f"must be one of {_COLUMN_TYPES}"))
    elif ctype not in _COLUMN_TYPES.split(","):
        out.append(Cause("FieldValueInvalid", f"{path}.type", f"must be one of {_COLUMN_TYPES}",
                         ctype))
    fmt = column.get("format") or ""
    if fmt and fmt not in _COLUMN_FORMATS.split(","):
        out.append(Cause("FieldValueInvalid", f"{path}.format",
                         f"must be one of {_COLUMN_FORMATS}", fmt))
    json_path = column.get("jsonPath") or ""
    if not json_path:
        out.append(Cause("FieldValueRequired", f"{path}.JSONPath", ""))
    elif not json_path.startswith("."):
        out.append(Cause("FieldValueInvalid", f"{path}.JSONPath",
                         "must be a simple json path starting with .", json_path))
    return out


def _validate_names(names: dict[str, Any]) -> list[Cause]:
    out = [Cause("FieldValueRequired", f"spec.names.{key}", "")
           for key in ("plural", "singular", "kind", "listKind") if not names.get(key)]
    for key in ("plural", "singular"):
        out += _label_error(f"spec.names.{key}", names.get(key) or "", "")
    for key in ("kind", "listKind"):
        out += _label_error(f"spec.names.{key}", names.get(key) or "",
                            "may have mixed case, but should otherwise match: ")
    for i, short in enumerate(names.get("shortNames") or []):
        out += _label_error(f"spec.names.shortNames[{i}]", short, "", required=True)
    if names.get("kind") and names.get("kind") == names.get("listKind"):
        out.append(Cause("FieldValueInvalid", "spec.names.listKind",
                         "kind and listKind may not be the same", names["listKind"]))
    for i, category in enumerate(names.get("categories") or []):
        out += _label_error(f"spec.names.categories[{i}]", category, "", required=True)
    return out


def _label_error(path: str, value: str, prefix: str, required: bool = False) -> list[Cause]:
    if not value and not required:
        return []
    problems = _dns_problems(value.lower() if prefix else value, 63, _DNS1035, _DNS1035_MSG)
    return [Cause("FieldValueInvalid", path, prefix + problems, value)] if problems else []


def _validate_conversion(conversion: dict[str, Any] | None) -> list[Cause]:
    if conversion is None:
        return []
    strategy = conversion.get("strategy") or ""
    out = _validate_enum("spec.conversion.strategy", strategy, ("None", "Webhook"))
    client = (conversion.get("webhook") or {}).get("clientConfig")
    if strategy == "Webhook" and client is None:
        out.append(Cause("FieldValueRequired", "spec.conversion.webhookClientConfig",
                         "required when strategy is set to Webhook"))
    elif strategy != "Webhook" and client is not None:
        out.append(Cause("FieldValueForbidden", "spec.conversion.webhookClientConfig",
                         "should not be set when strategy is not set to Webhook"))
    return out


def _validate_immutable(spec: dict[str, Any], old: CRD) -> list[Cause]:
    old_spec = old.get("spec") or {}
    checks = [("spec.group", spec.get("group"), old_spec.get("group")),
              ("spec.names.plural", _name(spec, "plural"), _name(old_spec, "plural"))]
    if _condition_true(old, "Established"):
        checks[:0] = [("spec.scope", spec.get("scope"), old_spec.get("scope")),
                      ("spec.names.kind", _name(spec, "kind"), _name(old_spec, "kind"))]
    return [Cause("FieldValueInvalid", path, "field is immutable", new)
            for path, new, was in checks if new != was]


def _name(spec: dict[str, Any], key: str) -> Any:
    return (spec.get("names") or {}).get(key)


def _condition_true(crd: CRD, ctype: str) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == ctype and c.get("status") == "True" for c in conditions)


def _validate_stored_versions(crd: CRD, old: CRD | None) -> list[Cause]:
    # The apiserver puts the storage version into status.storedVersions before it
    # validates, so only versions stored earlier and since removed can fail.
    stored = stored_versions(crd, old)
    served = {v.get("name") for v in (crd.get("spec") or {}).get("versions") or []}
    return [Cause("FieldValueInvalid", f"status.storedVersions[{i}]",
                  "must appear in spec.versions", v)
            for i, v in enumerate(stored) if v not in served]


def stored_versions(crd: CRD, old: CRD | None) -> list[str]:
    """``status.storedVersions`` after this write: the old ones plus the storage version.

    Args:
        crd: The new CustomResourceDefinition.
        old: The stored one on update, ``None`` on create.

    Returns:
        Version names, in the order they were first stored.
    """
    stored = list(((old or {}).get("status") or {}).get("storedVersions") or [])
    current = storage_version(crd)
    if current and current not in stored:
        stored.append(current)
    return stored


def storage_version(crd: CRD) -> str | None:
    """The name of the version marked ``storage: true``, if exactly that is clear."""
    for version in (crd.get("spec") or {}).get("versions") or []:
        if version.get("storage"):
            return str(version.get("name"))
    return None


# ------------------------------------------------------------------ structural schemas

def schema_errors(schema: Schema, path: str) -> list[Cause]:
    """OpenAPI v3 and structural-schema errors of one version's ``openAPIV3Schema``.

    Args:
        schema: The ``openAPIV3Schema``.
        path: Its field path, e.g. ``spec.versions[0].schema.openAPIV3Schema``.

    Returns:
        The OpenAPI errors first, then the structural ones sorted by message (as kube
        sorts them).
    """
    openapi: list[Cause] = []
    structural: list[Cause] = []
    _walk_schema(schema, path, "root", False, (openapi, structural))
    return openapi + sorted(structural, key=lambda c: c.message)


def _walk_schema(s: Schema, path: str, level: str, nested: bool,
                 out: tuple[list[Cause], list[Cause]]) -> None:
    _openapi_node(s, path, out[0])
    if nested:
        _nested_node(s, path, out[1])
    else:
        _structural_node(s, path, level, out[1])
    for key, sub in (s.get("properties") or {}).items():
        if isinstance(sub, dict):
            _walk_schema(sub, f"{path}.properties[{key}]", "field", nested, out)
    extra = s.get("additionalProperties")
    if isinstance(extra, dict):
        _walk_schema(extra, f"{path}.additionalProperties", "field", nested, out)
    items = s.get("items")
    if isinstance(items, dict):
        _walk_schema(items, f"{path}.items", "item", nested, out)
    for junctor in ("anyOf", "allOf", "oneOf"):
        subs = s.get(junctor)
        # The int-or-string pattern (anyOf: [{type: integer}, {type: string}]) may carry
        # types; kube skips it.
        if isinstance(subs, list) and not (junctor == "anyOf" and _is_int_or_string_any_of(subs)):
            for i, sub in enumerate(subs):
                _walk_schema(sub, f"{path}.{junctor}[{i}]", level, True, out)
    if isinstance(s.get("not"), dict):
        _walk_schema(s["not"], f"{path}.not", level, True, out)


def _is_int_or_string_any_of(any_of: Any) -> bool:
    return bool(any_of == [{"type": "integer"}, {"type": "string"}])


def _openapi_node(s: Schema, path: str, out: list[Cause]) -> None:
    stype = s.get("type")
    if stype == "null":
        out.append(Cause("FieldValueForbidden", f"{path}.type",
                         "type cannot be set to null, use nullable as an alternative"))
    elif stype and stype not in _OPENAPI_TYPES:
        out.append(not_supported(f"{path}.type", stype, _OPENAPI_TYPES))
    if "$ref" in s:
        out.append(Cause("FieldValueForbidden", f"{path}.$ref", "$ref is not supported"))
    if s.get("uniqueItems") is True:
        out.append(Cause("FieldValueForbidden", f"{path}.uniqueItems", "uniqueItems cannot be set "
                         "to true since the runtime complexity becomes quadratic"))
    extra = s.get("additionalProperties")
    if s.get("properties") and (extra is False or isinstance(extra, dict)):
        out.append(Cause("FieldValueForbidden", f"{path}.additionalProperties",
                         "additionalProperties and properties are mutual exclusive"))
    if isinstance(s.get("items"), list):
        out.append(Cause("FieldValueForbidden", f"{path}.items",
                         "items must be a schema object and not an array"))


_EMPTY_BY_LEVEL = {"root": "must not be empty at the root",
                   "item": "must not be empty for specified array items",
                   "field": "must not be empty for specified object fields"}


def _structural_node(s: Schema, path: str, level: str, out: list[Cause]) -> None:
    stype = s.get("type") or ""
    embedded = bool(s.get("x-kubernetes-embedded-resource"))
    if stype == "array" and "items" not in s:
        out.append(Cause("FieldValueRequired", f"{path}.items", "must be specified"))
    if embedded and stype != "object":
        detail = "must be object if x-kubernetes-embedded-resource is true"
        out.append(Cause("FieldValueInvalid", f"{path}.type", detail, stype) if stype
                   else Cause("FieldValueRequired", f"{path}.type", detail))
    elif not stype and not s.get("x-kubernetes-int-or-string") and \
            not s.get("x-kubernetes-preserve-unknown-fields"):
        out.append(Cause("FieldValueRequired", f"{path}.type", _EMPTY_BY_LEVEL[level]))
    if embedded and "additionalProperties" in s:
        out.append(Cause("FieldValueForbidden", f"{path}.additionalProperties",
                         "must not be used if x-kubernetes-embedded-resource is set"))
    if level == "root":
        _root_node(s, path, stype, out)
    if level == "root" or embedded:
        _meta_types(s, path, out)
    if embedded and not s.get("x-kubernetes-preserve-unknown-fields") and not s.get("properties"):
        out.append(Cause("FieldValueRequired", f"{path}.properties", "must not be empty if "
                         "x-kubernetes-embedded-resource is true without "
                         "x-kubernetes-preserve-unknown-fields"))
    _int_or_string_extensions(s, path, out)


def _root_node(s: Schema, path: str, stype: str, out: list[Cause]) -> None:
    if "additionalProperties" in s:
        out.append(Cause("FieldValueForbidden", f"{path}.additionalProperties",
                         "must not be used at the root"))
    if stype and stype != "object":
        out.append(Cause("FieldValueInvalid", f"{path}.type", "must be object at the root", stype))
    metadata = (s.get("properties") or {}).get("metadata")
    if isinstance(metadata, dict) and not _plain_metadata(metadata):
        out.append(Cause("FieldValueForbidden", f"{path}.properties[metadata]",
                         "must not specify anything other than name and generateName, but "
                         "metadata is implicitly specified"))


def _plain_metadata(metadata: Schema) -> bool:
    props = metadata.get("properties") or {}
    if set(props) - {"name", "generateName"}:
        return False
    return not set(metadata) - {"type", "properties", "default"}


def _meta_types(s: Schema, path: str, out: list[Cause]) -> None:
    props = s.get("properties") or {}
    for key, want in (("kind", "string"), ("apiVersion", "string"), ("metadata", "object")):
        got = (props.get(key) or {}).get("type", "") if key in props else want
        if got != want:
            out.append(Cause("FieldValueInvalid", f"{path}.properties[{key}].type",
                             f"must be {want}", got))


def _int_or_string_extensions(s: Schema, path: str, out: list[Cause]) -> None:
    if not s.get("x-kubernetes-int-or-string"):
        return
    for key in ("x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource"):
        if s.get(key):
            out.append(Cause("FieldValueInvalid", f"{path}.{key}",
                             "must be false if x-kubernetes-int-or-string is true", True))


_NESTED_FORBIDDEN = (
    ("type", "must be empty to be structural"),
    ("additionalProperties", "must be undefined to be structural"),
    ("default", "must be undefined to be structural"),
    ("title", "must be empty to be structural"),
    ("description", "must be empty to be structural"),
    ("nullable", "must be false to be structural"),
    ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
    ("x-kubernetes-embedded-resource", "must be false to be structural"),
    ("x-kubernetes-int-or-string", "must be false to be structural"),
    ("x-kubernetes-list-map-keys", "must be empty to be structural"),
    ("x-kubernetes-list-type", "must be undefined to be structural"),
)


def _nested_node(s: Schema, path: str, out: list[Cause]) -> None:
    for key, detail in _NESTED_FORBIDDEN:
        if s.get(key) not in (None, False, "", []):
            out.append(Cause("FieldValueForbidden", f"{path}.{key}", detail))
    if "metadata" in (s.get("properties") or {}):
        out.append(Cause("FieldValueForbidden", f"{path}.properties[metadata]",
                         "must not be specified in a nested context"))


# ------------------------------------------------------------------------------- status

def conflict(crd: CRD, others: list[CRD]) -> tuple[str, str] | None:
    """The NamesAccepted=False reason and message when another CRD of the group owns a name.

    Names are checked in kube's order (plural, singular, short names, kind, list kind);
    the last conflict found is the one reported, as the naming controller does. A name
    this CRD has already been granted (``status.acceptedNames``) never conflicts.

    Args:
        crd: The (defaulted) CRD whose names are requested.
        others: Every other CRD (any group; other groups are ignored).

    Returns:
        ``(reason, message)``, e.g. ``("PluralConflict", '"foos" is already in use')``.
    """
    names, accepted = _requested(crd), _accepted(crd)
    used_resources, used_kinds = _names_in_group(crd, others)
    found: tuple[str, str] | None = None
    for key, reason, used in (("plural", "PluralConflict", used_resources),
                              ("singular", "SingularConflict", used_resources)):
        if _clashes(names.get(key), accepted.get(key), used):
            found = (reason, f"{go_quote(names[key])} is already in use")
    for short in names.get("shortNames") or []:
        if short not in (accepted.get("shortNames") or []) and short in used_resources:
            found = ("ShortNamesConflict", f"{go_quote(short)} is already in use")
    for key, reason in (("kind", "KindConflict"), ("listKind", "ListKindConflict")):
        if _clashes(names.get(key), accepted.get(key), used_kinds):
            found = (reason, f"{go_quote(names[key])} is already in use")
    return found


def names_conflict(crd: CRD, others: list[CRD]) -> str | None:
    """The message for NamesAccepted=False, or ``None`` when the names are free.

    Args:
        crd: The (defaulted) CRD whose names are requested.
        others: Every other CRD.

    Returns:
        e.g. ``'"foos" is already in use'``; ``conflict`` also gives the reason.
    """
    found = conflict(crd, others)
    return found[1] if found else None


def _requested(crd: CRD) -> dict[str, Any]:
    names = clone((crd.get("spec") or {}).get("names") or {})
    if names.get("kind"):
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", names["kind"] + "List")
    return dict(names)


def _accepted(crd: CRD) -> dict[str, Any]:
    return dict((crd.get("status") or {}).get("acceptedNames") or {})


def _names_in_group(crd: CRD, others: list[CRD]) -> tuple[set[str], set[str]]:
    group = (crd.get("spec") or {}).get("group")
    me = (crd.get("metadata") or {}).get("name")
    resources: set[str] = set()
    kinds: set[str] = set()
    for other in others:
        if (other.get("spec") or {}).get("group") != group or \
                (other.get("metadata") or {}).get("name") == me:
            continue
        names = _accepted(other) or _requested(other)
        resources.update(n for n in (names.get("plural"), names.get("singular")) if n)
        resources.update(names.get("shortNames") or [])
        kinds.update(n for n in (names.get("kind"), names.get("listKind")) if n)
    return resources, kinds


def _clashes(requested: str | None, accepted: str | None, used: set[str]) -> bool:
    return bool(requested) and requested != accepted and requested in used


def crd_status(crd: CRD, now: str, others: list[CRD] | None = None) -> dict[str, Any]:
    """The status the apiextensions controllers keep for a CRD after a write.

    Args:
        crd: The (defaulted, validated) CRD; its current ``status`` is the old status.
        now: RFC 3339 time for conditions whose status changes.
        others: Other CRDs, to detect name conflicts (none checked when omitted).

    Returns:
        ``{acceptedNames, conditions, storedVersions}``.
    """
    old = crd.get("status") or {}
    found = conflict(crd, others or [])
    accepted = _accepted_names(crd, found)
    if found:
        names_cond = ("False", found[0], found[1])
    else:
        names_cond = ("True", "NoConflicts", "no conflicts found")
    if found and not _condition_true(crd, "Established"):
        established = ("False", "NotAccepted", "not all names are accepted")
    else:
        established = ("True", "InitialNamesAccepted", "the initial names have been accepted")
    conditions = [_condition(old, "NamesAccepted", names_cond, now),
                  _condition(old, "Established", established, now)]
    stored = stored_versions(crd, {"status": old})
    return {"acceptedNames": accepted, "conditions": conditions, "storedVersions": stored}


_NAME_ORDER = ("plural", "singular", "shortNames", "kind", "listKind", "categories")


def _accepted_names(crd: CRD, found: tuple[str, str] | None) -> dict[str, Any]:
    requested = _requested(crd)
    if found:
        # Keep what was granted before for every name; the conflict blocks the change.
        previous = _accepted(crd)
        requested = {k: previous[k] for k in _NAME_ORDER if k in previous}
    return {k: clone(requested[k]) for k in _NAME_ORDER if requested.get(k)}


def _condition(old: dict[str, Any], ctype: str, state: tuple[str, str, str],
               now: str) -> dict[str, Any]:
    status, reason, message = state
    previous = next((c for c in old.get("conditions") or [] if c.get("type") == ctype), None)
    since = previous.get("lastTransitionTime") if previous and \
        previous.get("status") == status else None
    return {"type": ctype, "status": status, "lastTransitionTime": since or now,
            "reason": reason, "message": message}


# ------------------------------------------------------------------------ resource types

def resource_types(crd: CRD) -> list[ResourceType]:
    """The ResourceTypes a CRD serves: one per served version.

    Names come from ``status.acceptedNames`` when the CRD has them (that is what the
    apiserver routes and discovers), else from ``spec.names``.

    Args:
        crd: The CustomResourceDefinition.

    Returns:
        ResourceTypes in ``spec.versions`` order.
    """
    spec = crd.get("spec") or {}
    names = {**_requested(crd), **_accepted(crd)}
    return [_resource_type(crd, spec, names, v) for v in spec.get("versions") or []
            if v.get("served")]


def _resource_type(crd: CRD, spec: dict[str, Any], names: dict[str, Any],
                   version: dict[str, Any]) -> ResourceType:
    sub = version.get("subresources") or {}
    columns = version.get("additionalPrinterColumns") or DEFAULT_COLUMNS
    return ResourceType(
        group=spec.get("group") or "", version=version.get("name") or "",
        kind=names.get("kind") or "", plural=names.get("plural") or "",
        singular=names.get("singular") or "", namespaced=spec.get("scope") == "Namespaced",
        short_names=tuple(names.get("shortNames") or ()),
        categories=tuple(names.get("categories") or ()),
        subresources=tuple(k for k in ("status", "scale") if k in sub),
        printer_columns=tuple(columns),
        schema=(version.get("schema") or {}).get("openAPIV3Schema"),
        storage=bool(version.get("storage")), crd_name=(crd.get("metadata") or {}).get("name"),
        storage_version=next((str(v.get("name")) for v in spec.get("versions") or []
                              if v.get("storage")), ""))
