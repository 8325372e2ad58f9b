"""How each position of an object merges: list keys, atomic structs and patch strategies.

Strategic merge patch reads ``patchStrategy``/``patchMergeKey`` from Kubernetes' Go struct
tags; server-side apply reads ``x-kubernetes-list-type``/``-list-map-keys``/``-map-type``
from the OpenAPI schema. For built-in types both come from the tables below (transcribed
from k8s.io/api); for custom resources from the CRD version's openAPIV3Schema.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Shape:
    """The merge behaviour of one position.

    ``relation`` is ``struct`` (granular, fields named by a schema), ``map`` (granular,
    free-form keys: each key is owned as an entry), ``atomic`` (replaced whole),
    ``map_list`` (list merged by ``keys``) or ``set`` (list of unique scalars).
    A list under ``struct`` or ``map`` is atomic.
    """

    relation: str = "struct"
    keys: tuple[str, ...] = ()
    key_defaults: tuple[tuple[str, Any], ...] = ()
    patch_strategy: str = ""
    patch_merge_key: str = ""


class Node(Protocol):
    """A position in a type: its shape and the positions below it."""

    def shape(self) -> Shape: ...

    def field(self, name: str) -> Node: ...

    def item(self) -> Node: ...


ATOMIC = Shape("atomic")
_SET = Shape("set", patch_strategy="merge")
_TCP = (("protocol", "TCP"),)


def _keyed(merge_key: str, *keys: str, strategy: str = "merge",
           defaults: tuple[tuple[str, Any], ...] = ()) -> Shape:
    return Shape("map_list", keys or (merge_key,), defaults, strategy, merge_key)


_META: dict[str, Shape] = {
    "metadata.finalizers": _SET,
    "metadata.ownerReferences": _keyed("uid"),
    "metadata.managedFields": ATOMIC,
}

_CONTAINER: dict[str, Shape] = {
    "ports": _keyed("containerPort", "containerPort", "protocol", defaults=_TCP),
    "env": _keyed("name"),
    "volumeMounts": _keyed("mountPath"),
    "volumeDevices": _keyed("devicePath"),
    "env[].valueFrom.secretKeyRef": ATOMIC,
    "env[].valueFrom.configMapKeyRef": ATOMIC,
    "env[].valueFrom.fieldRef": ATOMIC,
    "env[].valueFrom.resourceFieldRef": ATOMIC,
}

_POD_SPEC: dict[str, Shape] = {
    "volumes": _keyed("name", strategy="merge,retainKeys"),
    "imagePullSecrets": _keyed("name"),
    "imagePullSecrets[]": ATOMIC,
    "hostAliases": _keyed("ip"),
    "topologySpreadConstraints": _keyed("topologyKey", "topologyKey", "whenUnsatisfiable"),
    "topologySpreadConstraints[].labelSelector": ATOMIC,
    "resourceClaims": _keyed("name", strategy="merge,retainKeys"),
    "schedulingGates": _keyed("name"),
    "nodeSelector": ATOMIC,
}
for _list in ("containers", "initContainers", "ephemeralContainers"):
    _POD_SPEC[_list] = _keyed("name")
    _POD_SPEC.update({f"{_list}[].{path}": shape for path, shape in _CONTAINER.items()})

_CONDITIONS = {"status.conditions": _keyed("type")}

_WEBHOOKS: dict[str, Shape] = {
    "webhooks": _keyed("name"),
    "webhooks[].matchConditions": _keyed("name"),
    "webhooks[].namespaceSelector": ATOMIC,
    "webhooks[].objectSelector": ATOMIC,
}

_BY_KIND: dict[tuple[str, str], dict[str, Shape]] = {
    ("v1", "Namespace"): _CONDITIONS,
    ("v1", "ServiceAccount"): {"secrets": _keyed("name"), "secrets[]": ATOMIC},
    ("v1", "Service"): {
        "spec.ports": _keyed("port", "port", "protocol", defaults=_TCP),
        "spec.selector": ATOMIC,
        **_CONDITIONS,
    },
    ("v1", "Event"): {"involvedObject": ATOMIC, "related": ATOMIC},
    ("apps/v1", "Deployment"): {
        "spec.selector": ATOMIC,
        "spec.strategy": Shape(patch_strategy="retainKeys"),
        **{f"spec.template.spec.{path}": shape for path, shape in _POD_SPEC.items()},
        **_CONDITIONS,
    },
    ("events.k8s.io/v1", "Event"): {"regarding": ATOMIC, "related": ATOMIC},
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): {"roleRef": ATOMIC},
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): {"roleRef": ATOMIC},
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): {
        "status.conditions": Shape("map_list", ("type",)),
    },
    ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"): _WEBHOOKS,
    ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"): _WEBHOOKS,
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"): {
        "spec.matchConstraints": ATOMIC,
        "spec.matchConditions": _keyed("name"),
        **_CONDITIONS,
    },
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"): {
        "spec.matchResources": ATOMIC,
        "spec.validationActions": Shape("set"),
    },
}


@dataclass(frozen=True)
class BuiltinNode:
    """A position in a built-in type, named by a dotted path with ``[]`` for list items."""

    rules: dict[str, Shape] = field(hash=False, compare=False)
    path: str = ""

    def shape(self) -> Shape:
        return self.rules.get(self.path, Shape())

    def field(self, name: str) -> BuiltinNode:
        return BuiltinNode(self.rules, f"{self.path}.{name}" if self.path else name)

    def item(self) -> BuiltinNode:
        return BuiltinNode(self.rules, f"{self.path}[]")


_DEDUCED = Shape("map")


@dataclass(frozen=True)
class SchemaNode:
    """A position in a CRD's structural schema; ``None`` is a position without a schema."""

    schema: dict[str, Any] | None = field(hash=False, compare=False)
    root: bool = False

    def shape(self) -> Shape:
        return _schema_shape(self.schema)

    def field(self, name: str) -> Node:
        if self.root and name == "metadata":
            return BuiltinNode(_META, "metadata")
        schema = self.schema or {}
        properties = schema.get("properties") or {}
        if name in properties:
            return SchemaNode(properties[name])
        extra = schema.get("additionalProperties")
        return SchemaNode(extra if isinstance(extra, dict) else None)

    def item(self) -> SchemaNode:
        items = (self.schema or {}).get("items")
        return SchemaNode(items if isinstance(items, dict) else None)


def _schema_shape(schema: dict[str, Any] | None) -> Shape:
    if schema is None:
        return _DEDUCED
    if schema.get("type") == "array":
        list_type = schema.get("x-kubernetes-list-type", "atomic")
        if list_type == "map":
            return _list_map_shape(schema)
        return Shape("set") if list_type == "set" else ATOMIC
    if schema.get("x-kubernetes-map-type") == "atomic":
        return ATOMIC
    if "properties" in schema and not isinstance(schema.get("additionalProperties"), dict):
        return Shape("struct")
    return _DEDUCED


def _list_map_shape(schema: dict[str, Any]) -> Shape:
    keys = tuple(schema.get("x-kubernetes-list-map-keys") or ())
    item_props = ((schema.get("items") or {}).get("properties")) or {}
    defaults = tuple((key, item_props[key]["default"]) for key in keys
                     if "default" in (item_props.get(key) or {}))
    return Shape("map_list", keys, defaults)


def root_node(api_version: str, kind: str, schema: dict[str, Any] | None) -> Node:
    """The root position of an object.

    Args:
        api_version: ``group/version`` (``v1`` for the core group).
        kind: The object's kind.
        schema: A CRD version's openAPIV3Schema, or ``None`` for built-in types.

    Returns:
        A node whose shapes follow the CRD schema or the built-in tables.
    """
    if schema is not None:
        return SchemaNode(schema, root=True)
    return BuiltinNode({**_META, **_BY_KIND.get((api_version, kind), {})})
