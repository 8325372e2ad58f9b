"""What the API server does to a custom resource before validating it.

In its order: unknown fields are pruned (kept under ``x-kubernetes-preserve-unknown-fields``,
and ``apiVersion``/``kind``/``metadata`` at the root and in embedded resources), a ``null``
in a field that is not ``nullable`` is dropped (or replaced by the field's default), and
defaults fill missing fields. The input is never modified: a normalised copy is returned.
"""

from __future__ import annotations

import copy
from typing import Any

Schema = dict[str, Any]
OBJECT_META_FIELDS = frozenset({
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
    "annotations", "ownerReferences", "finalizers", "managedFields",
})


def normalize(obj: dict[str, Any], schema: Schema) -> dict[str, Any]:
    """A pruned, defaulted copy of a custom resource (the root's metadata as it is)."""
    return _map(obj, schema, root=True)


def _value(x: Any, s: Schema | None) -> Any:
    if s is not None and s.get("x-kubernetes-preserve-unknown-fields"):
        return _preserved(x, s)
    if isinstance(x, dict):
        return _map(x, s) if s is not None else {}
    if isinstance(x, list):
        return _list(x, _items(s))
    return x


def _items(s: Schema | None) -> Schema | None:
    items = s.get("items") if s is not None else None
    return items if isinstance(items, dict) else None


def _list(x: list[Any], items: Schema | None) -> list[Any]:
    out = []
    for v in x:
        if v is None and items is not None and "default" in items and \
                not items.get("nullable"):
            v = copy.deepcopy(items["default"])
        out.append(_value(v, items))
    return out


def _is_meta_field(key: str, value: Any) -> bool:
    if key in ("apiVersion", "kind"):
        return isinstance(value, str)
    return key == "metadata" and isinstance(value, dict)


def _meta(key: str, value: Any, root: bool) -> Any:
    if key != "metadata" or root:
        return value
    return {k: v for k, v in value.items() if k in OBJECT_META_FIELDS}


def _sub(s: Schema, key: str) -> Schema | None | bool:
    """The schema of ``key`` in an object: a dict, ``None`` (pruned) or ``True`` (kept,
    its contents unknown)."""
    props = s.get("properties") or {}
    if key in props:
        return dict(props[key])
    extra = s.get("additionalProperties")
    if isinstance(extra, dict):
        return extra
    return True if extra is not None else None


def _map(x: dict[str, Any], s: Schema, root: bool = False) -> dict[str, Any]:
    embedded = root or bool(s.get("x-kubernetes-embedded-resource"))
    out: dict[str, Any] = {}
    for k, v in x.items():
        if embedded and _is_meta_field(k, v):
            out[k] = _meta(k, v, root)
            continue
        sub = _sub(s, k)
        if isinstance(sub, dict):
            _put(out, k, v, sub)
        elif sub is True:
            out[k] = _value(v, None)
    _defaults(out, s)
    return out


def _put(out: dict[str, Any], key: str, v: Any, sub: Schema) -> None:
    if v is None and not sub.get("nullable"):
        if "default" not in sub:
            return
        v = copy.deepcopy(sub["default"])
    out[key] = _value(v, sub)


def _defaults(out: dict[str, Any], s: Schema) -> None:
    for k, p in (s.get("properties") or {}).items():
        if k not in out and isinstance(p, dict) and "default" in p:
            out[k] = _value(copy.deepcopy(p["default"]), p)


def _preserved(x: Any, s: Schema) -> Any:
    """Under ``x-kubernetes-preserve-unknown-fields`` unknown fields stay as they are;
    the fields the schema specifies are still pruned and defaulted."""
    if isinstance(x, list):
        items = _items(s)
        return [_preserved(v, items) if items is not None else v for v in x]
    if not isinstance(x, dict):
        return x
    embedded = bool(s.get("x-kubernetes-embedded-resource"))
    out: dict[str, Any] = {}
    for k, v in x.items():
        sub = _sub(s, k)
        if embedded and _is_meta_field(k, v):
            out[k] = v
        elif isinstance(sub, dict):
            _put(out, k, v, sub)
        else:
            out[k] = _value(v, None) if sub is True else v
    _defaults(out, s)
    return out
