"""Schemas of built-in kinds, read from the official ``kubernetes`` client's models.

The client is generated from kube-apiserver's OpenAPI, so its models carry every field,
its JSON name, type, description and whether it is required: enough for ``kubectl explain
deployment.spec.template`` to read like it does against a real cluster. Patch metadata is
not in the models, which is why the documents never offer strategic merge patch.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from lockwright.devcluster.openapi_meta import META, REF, meta_schemas

_MODELS = {
    ("", "Namespace"): "V1Namespace", ("", "Secret"): "V1Secret",
    ("", "ConfigMap"): "V1ConfigMap", ("", "ServiceAccount"): "V1ServiceAccount",
    ("", "Service"): "V1Service", ("", "Event"): "CoreV1Event",
    ("apps", "Deployment"): "V1Deployment", ("events.k8s.io", "Event"): "EventsV1Event",
    ("rbac.authorization.k8s.io", "Role"): "V1Role",
    ("rbac.authorization.k8s.io", "RoleBinding"): "V1RoleBinding",
    ("rbac.authorization.k8s.io", "ClusterRole"): "V1ClusterRole",
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): "V1ClusterRoleBinding",
    ("apiextensions.k8s.io", "CustomResourceDefinition"): "V1CustomResourceDefinition",
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"):
        "V1ValidatingWebhookConfiguration",
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"):
        "V1MutatingWebhookConfiguration",
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"):
        "V1ValidatingAdmissionPolicy",
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"):
        "V1ValidatingAdmissionPolicyBinding",
    ("coordination.k8s.io", "Lease"): "V1Lease",
}
_SCALARS = {"str": {"type": "string"}, "int": {"type": "integer", "format": "int64"},
            "float": {"type": "number", "format": "double"}, "bool": {"type": "boolean"},
            "datetime": {"type": "string", "format": "date-time"},
            "date": {"type": "string", "format": "date"}, "object": {"type": "object"},
            "bytearray": {"type": "string", "format": "byte"}}
_META_KEYS = frozenset(meta_schemas())
_PREFIX = re.compile(r"^([A-Z][a-z]+)?(V\d+(?:(?:alpha|beta)\d+)?)(?=[A-Z])")


def schema_key(class_name: str) -> str:
    """components.schemas key of a client model: meta types keep kube's names."""
    meta = META + class_name.removeprefix("V1")
    if class_name.startswith("V1") and meta in _META_KEYS:
        return meta
    match = _PREFIX.match(class_name)
    if not match:
        return f"io.k8s.api.{class_name}"
    group, version = match.groups()
    parts = [p for p in ((group or "").lower(), version.lower()) if p]
    return f"io.k8s.api.{'.'.join(parts)}.{class_name[match.end():]}"


@cache
def kind_schemas(group: str, kind: str) -> tuple[str, dict[str, dict[str, Any]]] | None:
    """The schema key of a built-in kind and the schemas of every type it uses.

    Returns:
        ``(key, schemas)``, or None when the kind or the client library is unknown. The
        result is shared: callers copy before changing anything.
    """
    name = _MODELS.get((group, kind))
    if name is None:
        return None
    try:
        import kubernetes.client as models
    except ImportError:  # pragma: no cover - the client is a dependency
        return None
    out: dict[str, dict[str, Any]] = {}
    _walk(models, name, out)
    return schema_key(name), out


def _walk(models: Any, name: str, out: dict[str, dict[str, Any]]) -> None:
    key = schema_key(name)
    if key in out or key.startswith(META):
        return
    cls = getattr(models, name)
    out[key] = {}
    fields = getattr(cls, "model_fields", {})
    props: dict[str, Any] = {}
    required: list[str] = []
    for attr, type_name in cls.openapi_types.items():
        json_name = cls.attribute_map[attr]
        info = fields.get(attr)
        prop = _type_schema(models, type_name, out)
        if info is not None and info.description:
            prop = {**prop, "description": info.description}
        props[json_name] = prop
        if info is not None and info.is_required():
            required.append(json_name)
    schema: dict[str, Any] = {"type": "object", "description": _class_doc(cls),
                              "properties": props}
    if required:
        schema["required"] = required
    out[key] = schema


def _type_schema(models: Any, type_name: str, out: dict[str, dict[str, Any]]) -> dict[str, Any]:
    if type_name in _SCALARS:
        return dict(_SCALARS[type_name])
    if type_name.startswith("List[") and type_name.endswith("]"):
        return {"type": "array", "items": _type_schema(models, type_name[5:-1], out)}
    if type_name.startswith("Dict[str, ") and type_name.endswith("]"):
        return {"type": "object",
                "additionalProperties": _type_schema(models, type_name[10:-1], out)}
    if hasattr(models, type_name):
        _walk(models, type_name, out)
        return {"allOf": [{"$ref": REF + schema_key(type_name)}]}
    return {"type": "object"}


def _class_doc(cls: Any) -> str:
    doc = (cls.__doc__ or "").strip()
    return doc.split("\n\n", 1)[0].strip() if not doc.startswith("NOTE") else ""
