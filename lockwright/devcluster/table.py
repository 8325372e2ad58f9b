"""Server-side printing: ``meta.k8s.io`` Table responses, as kube-apiserver builds them.

Also the rest of kube's Accept negotiation for reads: ``as=PartialObjectMetadata[List]``
(metadata only: no ``data``, ``spec`` or ``status``) and 406 NotAcceptable when no media
range can be served.

Custom resources follow apiextensions' table convertor (printer columns evaluated as
JSONPath, first match only, ``date`` cells rendered as an age). Built-in kinds follow the
specialised printers of ``pkg/printers/internalversion`` (Deployment ``READY 1/1``, Service
``PORT(S) 80/TCP`` ...). Cells are final strings or numbers: kubectl prints them verbatim.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeGuard

from lockwright.devcluster import jsonpath
from lockwright.devcluster.errors import ApiError
from lockwright.devcluster.types import ResourceType

TABLE_V1 = "meta.k8s.io/v1"
TABLE_V1BETA1 = "meta.k8s.io/v1beta1"
_METADATA_KINDS = ("PartialObjectMetadata", "PartialObjectMetadataList")
_PROTOBUF = "application/vnd.kubernetes.protobuf"
# What kube-apiserver 1.32 serializes, in its order (CBOR is behind an alpha gate). devcluster
# answers in JSON whichever is chosen, as it does for protobuf requests.
MEDIA_TYPES = ("application/json", "application/yaml", _PROTOBUF)
OBJECT = ("", "")  # negotiation's answer "the object itself, untransformed"

Column = dict[str, Any]
RowFunc = Callable[[dict[str, Any], datetime], list[Any]]

_NAME_DESC = ("Name must be unique within a namespace. Is required when creating resources, "
              "although some resources may allow a client to request the generation of an "
              "appropriate name automatically.")
_AGE_DESC = ("CreationTimestamp is a timestamp representing the server time when this "
             "object was created.")
_DEFAULT_AGE = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}


def _col(name: str, type_: str = "string", description: str = "", priority: int = 0,
         format_: str = "") -> Column:
    return {"name": name, "type": type_, "format": format_,
            "description": description or name, "priority": priority}


_NAME = _col("Name", description=_NAME_DESC, format_="name")
_AGE = _col("Age", description=_AGE_DESC)
_CREATED = _col("Created At", "date", _AGE_DESC)


# --- content negotiation -----------------------------------------------------------

def _media_ranges(accept: str) -> list[tuple[str, dict[str, str]]]:
    ranges: list[tuple[float, int, str, dict[str, str]]] = []
    for index, clause in enumerate(accept.split(",")):
        parts = [p.strip() for p in clause.split(";")]
        params = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
        params = {k.strip().lower(): v.strip().strip('"') for k, v in params.items()}
        try:
            quality = float(params.pop("q", "1"))
        except ValueError:
            quality = 1.0
        if parts[0] and quality > 0:
            ranges.append((-quality, index, parts[0].lower(), params))
    return [(media, params) for _, _, media, params in sorted(ranges)]


def negotiate(accept: str | None) -> tuple[str, str] | None:
    """Which meta.k8s.io transformation the Accept header asks for, if any.

    kube honours the first acceptable media range (by q, then order): a range with
    ``as=Table`` (JSON) or ``as=PartialObjectMetadata[List]`` and ``g=meta.k8s.io``; a plain
    JSON, YAML, protobuf or wildcard range first means "the object itself".

    Args:
        accept: the Accept header.

    Returns:
        ``(kind, apiVersion)`` such as ``("Table", "meta.k8s.io/v1")``, or None (the object
        itself, or nothing acceptable: :func:`output` answers 406 then).
    """
    choice = _negotiate(accept)
    return None if choice in (None, OBJECT) else choice


def output(accept: str | None) -> tuple[str, str] | None:
    """:func:`negotiate` for a GET, list or watch: 406 when no media range is acceptable.

    Like kube-apiserver, a range asking for an unknown ``as=`` (or a group/version other
    than meta.k8s.io v1/v1beta1) is skipped, and a header with nothing else is refused.

    Raises:
        ApiError: 406 NotAcceptable.
    """
    choice = _negotiate(accept)
    if choice is None:
        raise not_acceptable()
    return None if choice == OBJECT else choice


def not_acceptable(message: str = "") -> ApiError:
    """kube's 406 ``NotAcceptable`` Status (negotiation's message unless one is given)."""
    return ApiError(406, "NotAcceptable", message or (
        "only the following media types are accepted: " + ", ".join(MEDIA_TYPES)))


def _negotiate(accept: str | None) -> tuple[str, str] | None:
    if not accept:
        return OBJECT
    kube_accepts = False
    for media, params in _media_ranges(accept):
        served = _served(media)
        choice = _kube_choice(served, params)
        # Tables are answered for JSON ranges only (a YAML Table range is passed over).
        if choice is not None and (choice[0] != "Table" or "application/json" in served):
            return choice
        kube_accepts = kube_accepts or choice is not None
    return OBJECT if kube_accepts else None


def _served(media: str) -> list[str]:
    """The media types kube serializes that a range names: itself, or all for a wildcard."""
    if media in ("*/*", "*", "application/*"):
        return list(MEDIA_TYPES)
    return [media] if media in MEDIA_TYPES else []


def _kube_choice(served: list[str], params: dict[str, str]) -> tuple[str, str] | None:
    """kube's answer to one range: OBJECT, ``(kind, apiVersion)``, or None (range skipped)."""
    if not served:
        return None
    if not {"as", "g", "v"} & params.keys():
        return OBJECT
    kind, version = params.get("as", ""), f"{params.get('g', '')}/{params.get('v', '')}"
    if version not in (TABLE_V1, TABLE_V1BETA1):
        return None
    if kind in _METADATA_KINDS or (kind == "Table" and set(served) - {_PROTOBUF}):
        return kind, version
    return None


def table_version(accept: str | None) -> str | None:
    """The Table apiVersion the Accept header asks for (``meta.k8s.io/v1`` or v1beta1)."""
    choice = negotiate(accept)
    return choice[1] if choice and choice[0] == "Table" else None


def wants_table(accept: str | None) -> bool:
    """True when the Accept header asks for a Table first, as ``kubectl get`` does.

    Args:
        accept: e.g. ``application/json;as=Table;v=v1;g=meta.k8s.io,application/json``.
    """
    return table_version(accept) is not None


# --- the table ----------------------------------------------------------------------

def to_table(rtype: ResourceType, objects: list[dict[str, Any]], *,
             include_object: str = "Metadata", list_meta: dict[str, Any] | None = None,
             api_version: str = TABLE_V1, now: datetime | None = None,
             no_headers: bool = False) -> dict[str, Any]:
    """Render objects of one type as a ``Table``, as kube-apiserver does.

    Args:
        rtype: the served type the objects belong to.
        objects: the objects (one for a GET, the items for a LIST, one per watch event).
        include_object: ``Metadata`` (PartialObjectMetadata), ``Object`` or ``None``.
        list_meta: ListMeta of a list response (resourceVersion, continue, ...); for a
            single object the object's resourceVersion is used, as kube does.
        api_version: ``meta.k8s.io/v1`` or ``meta.k8s.io/v1beta1``.
        now: the clock for ages (tests); defaults to the current UTC time.
        no_headers: omit columnDefinitions (watch events after the first).

    Returns:
        The Table as a JSON-ready dict.
    """
    clock = now or datetime.now(UTC)
    columns, row_func = printer_for(rtype)
    rows = [{"cells": row_func(obj, clock), "object": _row_object(obj, include_object,
                                                                  api_version)}
            for obj in objects]
    metadata = dict(list_meta or {})
    if list_meta is None and len(objects) == 1 and _meta(objects[0]).get("resourceVersion"):
        metadata["resourceVersion"] = _meta(objects[0])["resourceVersion"]
    return {"kind": "Table", "apiVersion": api_version, "metadata": metadata,
            "columnDefinitions": [] if no_headers else [dict(c) for c in columns],
            "rows": rows}


def to_partial_metadata(obj: dict[str, Any], api_version: str = TABLE_V1) -> dict[str, Any]:
    """``PartialObjectMetadata`` of an object (``as=PartialObjectMetadata`` responses)."""
    return {"kind": "PartialObjectMetadata", "apiVersion": api_version,
            "metadata": obj.get("metadata", {})}


def is_metadata(choice: tuple[str, str] | None) -> TypeGuard[tuple[str, str]]:
    """True when negotiation chose ``PartialObjectMetadata`` or ``PartialObjectMetadataList``."""
    return choice is not None and choice[0] in _METADATA_KINDS


def metadata_of(choice: tuple[str, str], obj: dict[str, Any], go_type: str) -> dict[str, Any]:
    """A single object (GET, watch event) as kube's ``asPartialObjectMetadata`` returns it.

    Raises:
        ApiError: 406 when a list kind was asked for a single object.
    """
    kind, version = choice
    if kind != "PartialObjectMetadata":
        raise not_acceptable(f"you requested {kind}, but the requested object is not a list "
                             f"({go_type})")
    return to_partial_metadata(obj, version)


def metadata_list(choice: tuple[str, str], items: list[dict[str, Any]],
                  list_meta: dict[str, Any], go_type: str) -> dict[str, Any]:
    """A list response as kube's ``asPartialObjectMetadataList`` returns it.

    ``items`` is null when empty: the Go list starts nil and encoding/json writes ``null``.

    Raises:
        ApiError: 406 when ``PartialObjectMetadata`` (not a list) was asked for a list.
    """
    kind, version = choice
    if kind != "PartialObjectMetadataList":
        raise not_acceptable(f"you requested {kind}, but the requested object is a list "
                             f"({go_type})")
    return {"kind": "PartialObjectMetadataList", "apiVersion": version, "metadata": list_meta,
            "items": [to_partial_metadata(o, version) for o in items] or None}


def go_type(rtype: ResourceType, of_list: bool = False) -> str:
    """The Go type kube names in 406 messages: ``*core.Secret``, ``*unstructured.Unstructured``.

    Handlers transform the internal objects storage returns; Events of both groups are
    ``core.Event`` and custom resources are unstructured.
    """
    if rtype.is_custom:
        return "*unstructured.UnstructuredList" if of_list else "*unstructured.Unstructured"
    package = "core" if rtype.group in ("", "events.k8s.io") else rtype.group.split(".")[0]
    return f"*{package}.{rtype.kind}{'List' if of_list else ''}"


def _row_object(obj: dict[str, Any], include: str, api_version: str) -> dict[str, Any] | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return to_partial_metadata(obj, api_version)


def printer_for(rtype: ResourceType) -> tuple[list[Column], RowFunc]:
    """Column definitions and the row function kube uses for this type."""
    if not rtype.is_custom:
        special = _BUILTIN_PRINTERS.get((rtype.group, rtype.kind))
        if special is not None:
            return special
        if not rtype.printer_columns:
            return [_NAME, _CREATED], lambda o, now: [_name(o), _created_at(o)]
    return _custom_printer(rtype)


def _custom_printer(rtype: ResourceType) -> tuple[list[Column], RowFunc]:
    specs = list(rtype.printer_columns) or [_DEFAULT_AGE]
    columns = [_NAME] + [
        _col(s["name"], s.get("type", "string"),
             s.get("description") or
             f"Custom resource definition column (in JSONPath format): {s['jsonPath']}",
             int(s.get("priority", 0)), s.get("format", ""))
        for s in specs]

    def row(obj: dict[str, Any], now: datetime) -> list[Any]:
        return [_name(obj)] + [_custom_cell(s, obj, now) for s in specs]
    return columns, row


def _custom_cell(spec: dict[str, Any], obj: dict[str, Any], now: datetime) -> Any:
    try:
        found = jsonpath.find(spec["jsonPath"], obj)
    except (jsonpath.JSONPathError, ValueError, TypeError):
        return None
    if not found or found[0] is None:
        return None
    value = found[0]
    kind = spec.get("type", "string")
    if kind == "string":
        return jsonpath.to_text(value)
    return _typed_cell(kind, value, now)


def _typed_cell(kind: str, value: Any, now: datetime) -> Any:
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "integer":
        return int(value) if is_number else None
    if kind == "number":
        return float(value) if is_number else None
    if kind == "boolean":
        return value if isinstance(value, bool) else None
    if kind == "date" and isinstance(value, str):
        stamp = parse_time(value)
        return "<invalid>" if stamp is None else human_duration(now - stamp)
    return None


# --- time ---------------------------------------------------------------------------

def parse_time(value: str) -> datetime | None:
    """Parse an RFC 3339 timestamp (metav1.Time or MicroTime); None when malformed."""
    try:
        stamp = datetime.fromisoformat(value)
    except (ValueError, AttributeError):
        return None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


def human_duration(delta: Any) -> str:
    """``duration.HumanDuration``: ``45s``, ``3m20s``, ``5h4m``, ``3d2h``, ``2y30d``."""
    seconds = int(delta.total_seconds())
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes, hours = seconds // 60, seconds // 3600
    if minutes < 10:
        return f"{minutes}m" if seconds % 60 == 0 else f"{minutes}m{seconds % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    return _days(hours)


def _days(hours: int) -> str:
    days = hours // 24
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{days}d" if hours % 24 == 0 else f"{days}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{days}d"
    if hours < 24 * 365 * 8:
        years, rest = days // 365, days % 365
        return f"{years}y" if rest == 0 else f"{years}y{rest}d"
    return f"{days // 365}y"


def _since(value: Any, now: datetime) -> str:
    stamp = parse_time(value) if isinstance(value, str) else None
    return "<unknown>" if stamp is None else human_duration(now - stamp)


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _name(obj: dict[str, Any]) -> str:
    return str(_meta(obj).get("name", ""))


def _age(obj: dict[str, Any], now: datetime) -> str:
    return _since(_meta(obj).get("creationTimestamp"), now)


def _created_at(obj: dict[str, Any]) -> str:
    stamp = parse_time(str(_meta(obj).get("creationTimestamp", "")))
    return stamp.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if stamp else ""


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


# --- built-in printers (pkg/printers/internalversion) -------------------------------

def label_string(labels: dict[str, Any] | None) -> str:
    """``labels.FormatLabels``: ``a=b,c=d`` sorted by key, ``<none>`` when empty."""
    if not labels:
        return "<none>"
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


def selector_string(selector: dict[str, Any] | None) -> str:
    """``metav1.LabelSelectorAsSelector(...).String()`` for a LabelSelector."""
    if not selector:
        return ""
    parts = [(k, f"{k}={v}") for k, v in (selector.get("matchLabels") or {}).items()]
    for expr in selector.get("matchExpressions") or []:
        key, values = expr.get("key", ""), sorted(expr.get("values") or [])
        text = {"In": f"{key} in ({','.join(values)})",
                "NotIn": f"{key} notin ({','.join(values)})",
                "Exists": key, "DoesNotExist": f"!{key}"}.get(expr.get("operator", ""), "")
        parts.append((key, text))
    return ",".join(text for _, text in sorted(parts, key=lambda p: p[0]))


def _namespace_row(o: dict[str, Any], now: datetime) -> list[Any]:
    return [_name(o), str(_get(o, "status", "phase") or ""), _age(o, now)]


def _secret_row(o: dict[str, Any], now: datetime) -> list[Any]:
    return [_name(o), str(o.get("type") or ""), len(o.get("data") or {}), _age(o, now)]


def _configmap_row(o: dict[str, Any], now: datetime) -> list[Any]:
    count = len(o.get("data") or {}) + len(o.get("binaryData") or {})
    return [_name(o), count, _age(o, now)]


def _serviceaccount_row(o: dict[str, Any], now: datetime) -> list[Any]:
    return [_name(o), len(o.get("secrets") or []), _age(o, now)]


def _service_row(o: dict[str, Any], now: datetime) -> list[Any]:
    spec = o.get("spec") or {}
    kind = spec.get("type") or "ClusterIP"
    ips = spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else [])
    return [_name(o), kind, ips[0] if ips else "<none>", _external_ip(o, kind),
            _ports(spec.get("ports") or []), _age(o, now), label_string(spec.get("selector"))]


def _external_ip(o: dict[str, Any], kind: str) -> str:
    external = list(_get(o, "spec", "externalIPs") or [])
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) if external else "<none>"
    if kind == "LoadBalancer":
        ingress = _get(o, "status", "loadBalancer", "ingress") or []
        found = [i.get("ip") or i.get("hostname") for i in ingress if isinstance(i, dict)]
        found = [f for f in found if f] + external
        return ",".join(found) if found else "<pending>"
    if kind == "ExternalName":
        return str(_get(o, "spec", "externalName") or "")
    return "<unknown>"


def _ports(ports: list[dict[str, Any]]) -> str:
    out = []
    for port in ports:
        proto = port.get("protocol") or "TCP"
        node = port.get("nodePort")
        out.append(f"{port.get('port')}:{node}/{proto}" if node else f"{port.get('port')}/{proto}")
    return ",".join(out) if out else "<none>"


def _deployment_row(o: dict[str, Any], now: datetime) -> list[Any]:
    spec, status = o.get("spec") or {}, o.get("status") or {}
    desired = spec.get("replicas", 1)
    containers = _get(spec, "template", "spec", "containers") or []
    return [_name(o), f"{int(status.get('readyReplicas') or 0)}/{int(desired or 0)}",
            int(status.get("updatedReplicas") or 0), int(status.get("availableReplicas") or 0),
            _age(o, now), ",".join(str(c.get("name", "")) for c in containers),
            ",".join(str(c.get("image", "")) for c in containers),
            selector_string(spec.get("selector"))]


def _event_row(o: dict[str, Any], now: datetime) -> list[Any]:
    if "regarding" in o or "note" in o:
        o = _core_event(o)
    first = (_since(o["firstTimestamp"], now) if o.get("firstTimestamp")
             else _since(o.get("eventTime"), now))
    last = _since(o["lastTimestamp"], now) if o.get("lastTimestamp") else first
    count = o.get("count") or 1
    if isinstance(o.get("series"), dict):
        last = _since(o["series"].get("lastObservedTime"), now)
        count = o["series"].get("count", count)
    involved = o.get("involvedObject") or {}
    kind = str(involved.get("kind", "")).lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    source = o.get("source") or {}
    component = source.get("component") or o.get("reportingComponent") or ""
    instance = source.get("host") or o.get("reportingInstance") or ""
    return [last, o.get("type", ""), o.get("reason", ""), target,
            involved.get("fieldPath", ""), f"{component}, {instance}" if instance else component,
            str(o.get("message", "")).strip(), first, int(count), _name(o)]


def _core_event(o: dict[str, Any]) -> dict[str, Any]:
    """events.k8s.io/v1 fields mapped to core/v1 ones, as kube converts before printing."""
    return {**o, "involvedObject": o.get("regarding") or {}, "message": o.get("note", ""),
            "firstTimestamp": o.get("deprecatedFirstTimestamp"),
            "lastTimestamp": o.get("deprecatedLastTimestamp"),
            "count": o.get("deprecatedCount"), "source": o.get("deprecatedSource") or {},
            "reportingComponent": o.get("reportingController", "")}


def _created_row(o: dict[str, Any], now: datetime) -> list[Any]:
    return [_name(o), _created_at(o)]


def _binding_row(o: dict[str, Any], now: datetime) -> list[Any]:
    ref = o.get("roleRef") or {}
    subjects = [s for s in o.get("subjects") or [] if isinstance(s, dict)]

    def names(kind: str) -> str:
        return ", ".join(
            f"{s.get('namespace', '')}/{s.get('name', '')}" if kind == "ServiceAccount"
            else str(s.get("name", "")) for s in subjects if s.get("kind") == kind)
    return [_name(o), f"{ref.get('kind', '')}/{ref.get('name', '')}", _age(o, now),
            names("User"), names("Group"), names("ServiceAccount")]


def _webhooks_row(o: dict[str, Any], now: datetime) -> list[Any]:
    return [_name(o), len(o.get("webhooks") or []), _age(o, now)]


def _lease_row(o: dict[str, Any], now: datetime) -> list[Any]:
    return [_name(o), str(_get(o, "spec", "holderIdentity") or ""), _age(o, now)]


_EVENT_COLUMNS = [
    _col("Last Seen"), _col("Type"), _col("Reason"), _col("Object"),
    _col("Subobject", priority=1), _col("Source", priority=1), _col("Message"),
    _col("First Seen", priority=1), _col("Count", priority=1),
    _col("Name", priority=1, description=_NAME_DESC, format_="name")]
_BINDING_COLUMNS = [_NAME, _col("Role"), _AGE, _col("Users", priority=1),
                    _col("Groups", priority=1), _col("ServiceAccounts", priority=1)]
_WEBHOOK_COLUMNS = [_NAME, _col("Webhooks", "integer"), _AGE]

_BUILTIN_PRINTERS: dict[tuple[str, str], tuple[list[Column], RowFunc]] = {
    ("", "Namespace"): ([_NAME, _col("Status"), _AGE], _namespace_row),
    ("", "Secret"): ([_NAME, _col("Type"), _col("Data"), _AGE], _secret_row),
    ("", "ConfigMap"): ([_NAME, _col("Data"), _AGE], _configmap_row),
    ("", "ServiceAccount"): ([_NAME, _col("Secrets"), _AGE], _serviceaccount_row),
    ("", "Service"): ([_NAME, _col("Type"), _col("Cluster-IP"), _col("External-IP"),
                       _col("Port(s)"), _AGE, _col("Selector", priority=1)], _service_row),
    ("", "Event"): (_EVENT_COLUMNS, _event_row),
    ("events.k8s.io", "Event"): (_EVENT_COLUMNS, _event_row),
    ("apps", "Deployment"): ([_NAME, _col("Ready"), _col("Up-to-date"), _col("Available"),
                              _AGE, _col("Containers", priority=1),
                              _col("Images", priority=1), _col("Selector", priority=1)],
                             _deployment_row),
    ("rbac.authorization.k8s.io", "Role"): ([_NAME, _CREATED], _created_row),
    ("rbac.authorization.k8s.io", "ClusterRole"): ([_NAME, _CREATED], _created_row),
    ("rbac.authorization.k8s.io", "RoleBinding"): (_BINDING_COLUMNS, _binding_row),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): (_BINDING_COLUMNS, _binding_row),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): ([_NAME, _CREATED], _created_row),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"):
        (_WEBHOOK_COLUMNS, _webhooks_row),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"):
        (_WEBHOOK_COLUMNS, _webhooks_row),
    ("coordination.k8s.io", "Lease"): ([_NAME, _col("Holder"), _AGE], _lease_row),
}
