"""PATCH bodies as kube-apiserver applies them: JSON merge, JSON patch and strategic merge.

Strategic merge follows k8s.io/apimachinery's strategicpatch package with the options the
server uses (parallel lists merged, unmatched nulls ignored), including its error texts.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from lockwright.devcluster.jsonpatch import PatchError, json_patch, merge_patch
from lockwright.devcluster.mergekeys import Node, root_node

__all__ = ["PatchError", "json_patch", "merge_patch", "strategic_merge_patch"]

_DIRECTIVE = "$patch"
_RETAIN_KEYS = "$retainKeys"
_DELETE_PREFIX = "$deleteFromPrimitiveList/"
_ORDER_PREFIX = "$setElementOrder/"


def strategic_merge_patch(target: dict[str, Any], patch: dict[str, Any], api_version: str,
                          kind: str) -> dict[str, Any]:
    """Apply a strategic merge patch (``application/strategic-merge-patch+json``).

    Merge keys and strategies are those Kubernetes' Go types declare; lists without a
    strategy are replaced. Supports ``$patch`` (replace/delete/merge in lists),
    ``$retainKeys``, ``$deleteFromPrimitiveList/<f>``, ``$setElementOrder/<f>`` and
    ``null`` deletion, as the server applies them (parallel lists merged, unmatched
    nulls ignored).

    Args:
        target: The current object; not modified.
        patch: The patch document.
        api_version: The object's ``group/version``.
        kind: The object's kind (a built-in type).

    Returns:
        The patched object.

    Raises:
        PatchError: 400 for a malformed patch or directive.
    """
    if not isinstance(patch, dict):
        raise PatchError(400, "json: cannot unmarshal array into Go value of type"
                              " map[string]interface {}")
    node = root_node(api_version, kind, None)
    return _smp_map(copy.deepcopy(target), copy.deepcopy(patch), node)


def _smp_map(original: dict[str, Any] | None, patch: dict[str, Any], node: Node
             ) -> dict[str, Any]:
    if _DIRECTIVE in patch:
        directive = patch.pop(_DIRECTIVE)
        if directive == "replace":
            return patch
        if directive == "delete":
            return {}
        raise PatchError(400, f"unknown patch type: {directive} in map: {patch}")
    original = original if original is not None else {}
    _retain_keys(original, patch)
    _set_element_orders(original, patch, node)
    deletions = {k: patch.pop(k) for k in list(patch) if k.startswith(_DELETE_PREFIX)}
    for key, value in patch.items():
        _smp_field(original, key, value, node.field(key))
    for key, value in deletions.items():
        _delete_from_primitive_list(original, key[len(_DELETE_PREFIX):], value)
    return original


def _smp_field(original: dict[str, Any], key: str, value: Any, node: Node) -> None:
    if value is None:
        original.pop(key, None)
        return
    current = original.get(key)
    strategy = node.shape().patch_strategy.split(",")
    if isinstance(value, dict):
        base = current if isinstance(current, dict) else None
        original[key] = value if "replace" in strategy else _smp_map(base, value, node)
    elif isinstance(value, list) and "merge" in strategy:
        original[key] = _smp_list(current if isinstance(current, list) else [], value, node)
    elif isinstance(value, list):
        original[key] = [_smp_map(None, v, node.item()) if isinstance(v, dict) else v
                         for v in value]
    else:
        original[key] = value


def _retain_keys(original: dict[str, Any], patch: dict[str, Any]) -> None:
    if _RETAIN_KEYS not in patch:
        return
    keep = patch.pop(_RETAIN_KEYS)
    if not isinstance(keep, list):
        raise PatchError(400, "invalid patch format of retainKeys")
    for key, value in patch.items():
        if value is not None and not key.startswith(("$", )) and key not in keep:
            raise PatchError(400, "invalid patch format of retainKeys")
    for key in [k for k in original if k not in keep]:
        del original[key]


def _delete_from_primitive_list(original: dict[str, Any], key: str, values: Any) -> None:
    if not isinstance(values, list):
        raise PatchError(400, "invalid patch format of primitive list")
    if isinstance(original.get(key), list):
        original[key] = [v for v in original[key] if v not in values]


def _set_element_orders(original: dict[str, Any], patch: dict[str, Any], node: Node) -> None:
    for directive in [k for k in patch if k.startswith(_ORDER_PREFIX)]:
        order = patch.pop(directive)
        key = directive[len(_ORDER_PREFIX):]
        if not isinstance(order, list):
            raise PatchError(400, "invalid patch format of setElementOrder list")
        child = node.field(key)
        if "merge" not in child.shape().patch_strategy.split(","):
            continue
        found = original.get(key)
        current: list[Any] = found if isinstance(found, list) else []
        merge_key = child.shape().patch_merge_key
        listed = patch.pop(key, None) or []
        _check_order(listed, order, merge_key)
        merged = _smp_list(current, listed, child)
        from_order = [m for m in merged if _position(order, m, merge_key) >= 0]
        server_only = [m for m in merged if _position(order, m, merge_key) < 0]
        original[key] = _normalize(from_order, server_only, order, current, merge_key)


def _check_order(listed: list[Any], order: list[Any], merge_key: str) -> None:
    """Patch items must appear in ``$setElementOrder`` in the same relative order."""
    wanted = [item for item in listed if not (isinstance(item, dict) and _DIRECTIVE in item)]
    at = 0
    for entry in order:
        if at < len(wanted) and _position([entry], wanted[at], merge_key) == 0:
            at += 1
    if at < len(wanted):
        raise PatchError(400, f"The order in patch list:\n{listed}\n doesn't match"
                              f" {_ORDER_PREFIX} list:\n{order}\n")


def _smp_list(original: list[Any], patch: list[Any], node: Node) -> list[Any]:
    if not original and not patch:
        return original
    merge_key = node.shape().patch_merge_key
    if not any(isinstance(v, dict) for v in original + patch):
        unique = list({_json_key(v): v for v in reversed(original + patch)}.values())[::-1]
        listed = {_json_key(v) for v in patch}
        return _normalize([v for v in unique if _json_key(v) in listed],
                          [v for v in unique if _json_key(v) not in listed],
                          patch, original, "")
    if not merge_key:
        raise PatchError(400, "cannot merge lists without merge key")
    original, patch = _special_elements(original, patch, merge_key)
    items = _merge_items(list(original), patch, merge_key, node.item())
    keys = [p.get(merge_key) for p in patch]
    in_patch = [m for m in items if m.get(merge_key) in keys]
    server_only = [m for m in items if m.get(merge_key) not in keys]
    return _normalize(in_patch, server_only, patch, original, merge_key)


def _json_key(value: Any) -> str:
    """A scalar's identity for de-duplication, without conflating ``1`` and ``true``."""
    return json.dumps(value, sort_keys=True)


def _special_elements(original: list[Any], patch: list[Any], merge_key: str
                      ) -> tuple[list[Any], list[Any]]:
    rest: list[Any] = []
    replace = False
    for item in patch:
        if not isinstance(item, dict):
            raise PatchError(400, f"expected a map in the list, got {item!r}")
        directive = item.get(_DIRECTIVE)
        if _DIRECTIVE not in item:
            rest.append(item)
        elif directive == "delete":
            if merge_key not in item:
                raise PatchError(400, f"map: {item} does not contain declared merge key:"
                                      f" {merge_key}")
            original = [o for o in original if not _same_key(o, item, merge_key)]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise PatchError(400, "merging lists cannot yet be specified in the patch")
        else:
            raise PatchError(400, f"unknown patch type: {directive} in map: {item}")
    return (rest, []) if replace else (original, rest)


def _same_key(a: Any, b: dict[str, Any], merge_key: str) -> bool:
    return isinstance(a, dict) and a.get(merge_key) == b[merge_key]


def _merge_items(original: list[Any], patch: list[Any], merge_key: str, node: Node) -> list[Any]:
    for item in patch:
        if merge_key not in item:
            raise PatchError(400, f"map: {item} does not contain declared merge key: {merge_key}")
        at = next((i for i, o in enumerate(original) if _same_key(o, item, merge_key)), None)
        if at is None:
            original.append(_smp_map(None, item, node))
        else:
            original[at] = _smp_map(original[at], item, node)
    return original


def _position(items: list[Any], value: Any, merge_key: str) -> int:
    wanted = value.get(merge_key) if merge_key and isinstance(value, dict) else value
    for i, item in enumerate(items):
        got = item.get(merge_key) if merge_key and isinstance(item, dict) else item
        if got == wanted:
            return i
    return -1


def _normalize(from_patch: list[Any], server_only: list[Any], patch_order: list[Any],
               server_order: list[Any], merge_key: str) -> list[Any]:
    """Interleave patch items (in patch order) with server-only items (in live order)."""
    def by(order: list[Any]) -> Any:
        return lambda v: (_position(order, v, merge_key) % (len(order) + 1))

    right = sorted(from_patch, key=by(patch_order))
    left = sorted(server_only, key=by(server_order))
    out: list[Any] = []
    while left and right:
        li = _position(server_order, left[0], merge_key)
        ri = _position(server_order, right[0], merge_key)
        out.append(left.pop(0) if li >= 0 and ri >= 0 and li < ri else right.pop(0))
    return out + left + right
