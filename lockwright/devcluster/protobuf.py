"""Decoding of the Kubernetes protobuf envelope for the kinds kubectl creates imperatively.

kubectl 1.32 sends request bodies of its typed clients (``kubectl create namespace``,
``create configmap``, ``create secret``, ``create deployment`` ...) as
``application/vnd.kubernetes.protobuf``: the bytes ``k8s\\0`` then a ``runtime.Unknown``
carrying apiVersion, kind and the encoded object. Only the fields those commands set are
described; unknown fields are skipped, and zero values are dropped as JSON omitempty would.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

MAGIC = b"k8s\x00"

# A message spec maps a field number to (json name, type); a type is a scalar name
# ("string", "bytes", "int", "bool", "time", "intorstr", "quantity"), a message spec
# (dict), ("map", value_type) or ("list", item_type).
Spec = dict[int, tuple[str, Any]]

_OWNER: Spec = {1: ("kind", "string"), 3: ("name", "string"), 4: ("uid", "string"),
                5: ("apiVersion", "string"), 6: ("controller", "bool"),
                7: ("blockOwnerDeletion", "bool")}
_META: Spec = {
    1: ("name", "string"), 2: ("generateName", "string"), 3: ("namespace", "string"),
    5: ("uid", "string"), 6: ("resourceVersion", "string"), 7: ("generation", "int"),
    8: ("creationTimestamp", "time"), 11: ("labels", ("map", "string")),
    12: ("annotations", ("map", "string")), 13: ("ownerReferences", ("list", _OWNER)),
    14: ("finalizers", ("list", "string"))}
_OBJ_REF: Spec = {1: ("kind", "string"), 2: ("namespace", "string"), 3: ("name", "string"),
                  4: ("uid", "string"), 5: ("apiVersion", "string"),
                  6: ("resourceVersion", "string"), 7: ("fieldPath", "string")}
_LOCAL_REF: Spec = {1: ("name", "string")}
_SELECTOR: Spec = {1: ("matchLabels", ("map", "string")),
                   2: ("matchExpressions", ("list", {1: ("key", "string"),
                                                     2: ("operator", "string"),
                                                     3: ("values", ("list", "string"))}))}
_CONTAINER: Spec = {
    1: ("name", "string"), 2: ("image", "string"), 3: ("command", ("list", "string")),
    4: ("args", ("list", "string")), 5: ("workingDir", "string"),
    6: ("ports", ("list", {1: ("name", "string"), 2: ("hostPort", "int"),
                           3: ("containerPort", "int"), 4: ("protocol", "string")})),
    7: ("env", ("list", {1: ("name", "string"), 2: ("value", "string")})),
    8: ("resources", {1: ("limits", ("map", "quantity")),
                      2: ("requests", ("map", "quantity"))}),
    14: ("imagePullPolicy", "string")}
_POD_SPEC: Spec = {2: ("containers", ("list", _CONTAINER)), 3: ("restartPolicy", "string"),
                   7: ("nodeSelector", ("map", "string")),
                   8: ("serviceAccountName", "string"),
                   20: ("initContainers", ("list", _CONTAINER))}
_DEPLOYMENT_SPEC: Spec = {
    1: ("replicas", "int"), 2: ("selector", _SELECTOR),
    3: ("template", {1: ("metadata", _META), 2: ("spec", _POD_SPEC)}),
    4: ("strategy", {1: ("type", "string")}), 5: ("minReadySeconds", "int"),
    6: ("revisionHistoryLimit", "int"), 7: ("paused", "bool"),
    9: ("progressDeadlineSeconds", "int")}
_SERVICE_SPEC: Spec = {
    1: ("ports", ("list", {1: ("name", "string"), 2: ("protocol", "string"),
                           3: ("port", "int"), 4: ("targetPort", "intorstr"),
                           5: ("nodePort", "int"), 6: ("appProtocol", "string")})),
    2: ("selector", ("map", "string")), 3: ("clusterIP", "string"), 4: ("type", "string"),
    5: ("externalIPs", ("list", "string")), 10: ("externalName", "string")}
_RULE: Spec = {1: ("verbs", ("list", "string")), 2: ("apiGroups", ("list", "string")),
               3: ("resources", ("list", "string")), 4: ("resourceNames", ("list", "string")),
               5: ("nonResourceURLs", ("list", "string"))}
_BINDING: Spec = {1: ("metadata", _META),
                  2: ("subjects", ("list", {1: ("kind", "string"), 2: ("apiGroup", "string"),
                                            3: ("name", "string"),
                                            4: ("namespace", "string")})),
                  3: ("roleRef", {1: ("apiGroup", "string"), 2: ("kind", "string"),
                                  3: ("name", "string")})}

#: Pointer fields whose zero, when sent, means something (JSON keeps them too).
_ZERO_IS_A_VALUE = frozenset({"replicas", "gracePeriodSeconds", "orphanDependents"})
_DELETE_OPTIONS: Spec = {
    1: ("gracePeriodSeconds", "int"),
    2: ("preconditions", {1: ("uid", "string"), 2: ("resourceVersion", "string")}),
    3: ("orphanDependents", "bool"), 4: ("propagationPolicy", "string"),
    5: ("dryRun", ("list", "string"))}
KINDS: dict[tuple[str, str], Spec] = {
    ("v1", "Namespace"): {1: ("metadata", _META),
                          2: ("spec", {1: ("finalizers", ("list", "string"))})},
    ("v1", "ConfigMap"): {1: ("metadata", _META), 2: ("data", ("map", "string")),
                          3: ("binaryData", ("map", "bytes")), 4: ("immutable", "bool")},
    ("v1", "Secret"): {1: ("metadata", _META), 2: ("data", ("map", "bytes")),
                       3: ("type", "string"), 4: ("stringData", ("map", "string")),
                       5: ("immutable", "bool")},
    ("v1", "ServiceAccount"): {1: ("metadata", _META), 2: ("secrets", ("list", _OBJ_REF)),
                               3: ("imagePullSecrets", ("list", _LOCAL_REF)),
                               4: ("automountServiceAccountToken", "bool")},
    ("v1", "Service"): {1: ("metadata", _META), 2: ("spec", _SERVICE_SPEC)},
    ("apps/v1", "Deployment"): {1: ("metadata", _META), 2: ("spec", _DEPLOYMENT_SPEC)},
    ("rbac.authorization.k8s.io/v1", "Role"): {1: ("metadata", _META),
                                               2: ("rules", ("list", _RULE))},
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): {1: ("metadata", _META),
                                                      2: ("rules", ("list", _RULE))},
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): _BINDING,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): _BINDING,
    # kubectl create token: the TokenRequest subresource's body (devcluster.guard).
    ("authentication.k8s.io/v1", "TokenRequest"): {
        1: ("metadata", _META),
        2: ("spec", {1: ("audiences", ("list", "string")), 4: ("expirationSeconds", "int"),
                     3: ("boundObjectRef", {1: ("kind", "string"), 2: ("apiVersion", "string"),
                                            3: ("name", "string"), 4: ("uid", "string")})})},
}


class ProtobufError(ValueError):
    """The body is not a Kubernetes protobuf object this module can read."""


def is_protobuf(body: bytes) -> bool:
    """True when ``body`` starts with the Kubernetes protobuf magic ``k8s\\0``."""
    return body[:4] == MAGIC


def type_meta(body: bytes) -> tuple[str, str]:
    """The apiVersion and kind a ``k8s\\0``-prefixed body names (empty when unreadable)."""
    try:
        meta = _fields(_one(_fields(body[4:]), 1, b""))
        return _one(meta, 1, b"").decode(), _one(meta, 2, b"").decode()
    except (ProtobufError, UnicodeDecodeError, TypeError):
        return "", ""


def decode(body: bytes) -> dict[str, Any]:
    """Decode a ``k8s\\0``-prefixed object into the JSON form the server stores.

    Args:
        body: the request body.

    Returns:
        The object with apiVersion and kind.

    Raises:
        ProtobufError: when the envelope is malformed or the kind is not described here.
    """
    if not is_protobuf(body):
        raise ProtobufError("missing the k8s protobuf prefix")
    envelope = _fields(body[4:])
    type_meta = _fields(_one(envelope, 1, b""))
    api_version = _one(type_meta, 1, b"").decode()
    kind = _one(type_meta, 2, b"").decode()
    spec = KINDS.get((api_version, kind))
    if kind == "DeleteOptions":  # a typed client's delete (helm's of its release Secret)
        spec = _DELETE_OPTIONS  # in every group's version, as the API registers it
    if spec is None:
        raise ProtobufError(f"protobuf bodies of {api_version}/{kind} are not supported; "
                            "send application/json")
    obj = _message(_one(envelope, 2, b""), spec)
    return {"apiVersion": api_version, "kind": kind, **obj}


def _one(fields: dict[int, list[Any]], number: int, default: Any) -> Any:
    values = fields.get(number)
    return values[-1] if values else default


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ProtobufError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(data: bytes) -> dict[int, list[Any]]:
    """Field number → raw values (ints for varints, bytes for length-delimited)."""
    out: dict[int, list[Any]] = {}
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            value, pos = data[pos:pos + length], pos + length
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, pos = int.from_bytes(data[pos:pos + size], "little"), pos + size
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
        out.setdefault(number, []).append(value)
    return out


def _message(data: bytes, spec: Spec) -> dict[str, Any]:
    fields = _fields(data)
    out: dict[str, Any] = {}
    for number, (name, kind) in spec.items():
        if number not in fields:
            continue
        value = _value(fields[number], kind)
        if value not in ("", 0, False, None, {}, []) or name in _ZERO_IS_A_VALUE:
            out[name] = value
    return out


def _value(raw: list[Any], kind: Any) -> Any:
    if isinstance(kind, tuple) and kind[0] == "list":
        return [_scalar(v, kind[1]) for v in raw]
    if isinstance(kind, tuple) and kind[0] == "map":
        entries = [_fields(v) for v in raw]
        return {_one(e, 1, b"").decode(): _scalar(_one(e, 2, b""), kind[1]) for e in entries}
    return _scalar(raw[-1], kind)


def _scalar(raw: Any, kind: Any) -> Any:
    if isinstance(kind, dict):
        return _message(raw, kind)
    if kind == "string":
        return raw.decode()
    if kind == "bytes":
        return base64.b64encode(raw).decode()
    if kind == "int":
        return raw - (1 << 64) if raw >= 1 << 63 else raw
    if kind == "bool":
        return bool(raw)
    if kind == "quantity":
        return _one(_fields(raw), 1, b"").decode()
    if kind == "intorstr":
        parts = _fields(raw)
        return (_one(parts, 3, b"").decode() if _one(parts, 1, 0) == 1
                else _one(parts, 2, 0))
    if kind == "time":
        seconds = _one(_fields(raw), 1, 0)
        return (datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                if seconds else None)
    raise ProtobufError(f"unknown field type {kind!r}")
