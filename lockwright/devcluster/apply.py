"""Server-side apply, as kube-apiserver's field manager computes it.

The algorithm is structured-merge-diff's ``Updater``: an apply merges the configuration
into the live object, prunes the fields its manager applied last time but no longer
applies (unless someone else owns them), and fails with conflicts when it changes a
field another manager owns. ``track_update`` (non-apply writes) lives in
``devcluster.managedfields`` and is re-exported here.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from lockwright.devcluster.fieldset import (
    MISSING,
    Path,
    compare,
    field_set,
    item_element,
    json_equal,
    path_string,
    remove_path,
    with_named_parents,
)
from lockwright.devcluster.managedfields import (
    STRIPPED,
    ApplyConflict,
    Manager,
    Managers,
    conflict_error,
    encode,
    live_managers,
    quote,
    strip,
    track_update,
    without_managed,
)
from lockwright.devcluster.mergekeys import Node, root_node
from lockwright.devcluster.patch import PatchError

__all__ = ["ApplyConflict", "server_side_apply", "track_update"]

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_ANNOTATIONS_LIMIT = 256 * 1024
# Set by the server: an applied configuration cannot change them.
_SERVER_META = ("uid", "resourceVersion", "creationTimestamp", "generation", "selfLink",
                "managedFields", "deletionTimestamp", "deletionGracePeriodSeconds")


class _Conflicts(Exception):
    def __init__(self, found: dict[str, set[Path]]) -> None:
        super().__init__("conflicts")
        self.found = found


# -- server-side apply -----------------------------------------------------------------


def server_side_apply(live: dict[str, Any] | None, config: dict[str, Any], *, manager: str,
                      force: bool, api_version: str, kind: str, schema: dict[str, Any] | None,
                      now: str, subresource: str = "") -> dict[str, Any]:
    """Apply a configuration (``application/apply-patch+yaml``) to the live object.

    Args:
        live: The stored object, or ``None`` when the apply creates it.
        config: The applied configuration.
        manager: The field manager (required by the server).
        force: Take ownership of conflicting fields instead of failing.
        api_version: The ``group/version`` of the request.
        kind: The object's kind.
        schema: The CRD version's openAPIV3Schema, or ``None`` for built-in types.
        now: The RFC 3339 time of the write.
        subresource: ``status`` for applies to the status subresource.

    Returns:
        The new object, with ``metadata.managedFields`` updated.

    Raises:
        ApplyConflict: Fields owned by other managers would change and ``force`` is off.
        PatchError: The configuration is not acceptable (400) or its list items lack
            or repeat their keys (500, as kube-apiserver answers).
    """
    _check_config(config, api_version, kind)
    node = root_node(api_version, kind, schema)
    meta = config.get("metadata") or {}
    where = f"{meta.get('namespace', '')}/{meta.get('name', '')}; {_gvk(api_version, kind)}"
    _check_keys(config, node, (), where)
    base = without_managed(live) if live is not None else {}
    managers = live_managers(live)
    me = Manager(manager, "Apply", api_version, subresource)
    try:
        new, managers = _apply(base, config, managers, me, node, force, now)
    except _Conflicts as exc:
        allowed = _last_applied_fields(base, api_version, node) if manager == "kubectl" else set()
        remaining = {k: v - allowed for k, v in exc.found.items() if v - allowed}
        if remaining:
            raise conflict_error(remaining, managers) from None
        new, managers = _apply(base, config, managers, me, node, True, now)
    _sync_last_applied(new, config, manager)
    new.setdefault("metadata", {})["managedFields"] = encode(managers)
    return new


def _gvk(api_version: str, kind: str) -> str:
    group, _, version = api_version.rpartition("/")
    return f"{group}/{version}, Kind={kind}"


def _check_config(config: dict[str, Any], api_version: str, kind: str) -> None:
    if (config.get("metadata") or {}).get("managedFields") is not None:
        raise PatchError(400, "metadata.managedFields must be nil")
    if config.get("apiVersion") != api_version or config.get("kind") != kind:
        sent = _gvk(str(config.get("apiVersion") or ""), str(config.get("kind") or ""))
        raise PatchError(400, f"invalid object type: {sent}")


def _check_keys(value: Any, node: Node, path: Path, where: str) -> None:
    """List-map items need their keys and must be unique, as the typed conversion checks.

    kube-apiserver reports these as a plain error, hence 500.
    """
    shape = node.shape()
    if isinstance(value, dict) and shape.relation in ("struct", "map"):
        for key, child in value.items():
            _check_keys(child, node.field(key), path + ("f:" + key,), where)
    elif isinstance(value, list) and shape.relation in ("map_list", "set"):
        seen: set[str] = set()
        for index, item in enumerate(value):
            element = item_element(item, shape, index)
            prefix = f"failed to create typed patch object ({where}): {path_string(path)}"
            if element.startswith("i:"):
                raise PatchError(500, f"{prefix}: element {index}: associative list with keys"
                                      " has an element that omits key field"
                                      f" {quote(shape.keys[-1])} (and doesn't have default"
                                      " value)")
            if element in seen:
                raise PatchError(500, f"{prefix}: duplicate entries for key"
                                      f" {path_string((element,))}")
            seen.add(element)
            _check_keys(item, node.item(), path + (element,), where)


def _apply(base: dict[str, Any], config: dict[str, Any], managers: Managers, me: Manager,
           node: Node, force: bool, now: str) -> tuple[dict[str, Any], Managers]:
    managers = {k: copy.deepcopy(m) for k, m in managers.items()}
    merged = _merge(copy.deepcopy(base), config, node)
    for key in _SERVER_META:
        _copy_meta(base, merged, key)
    previous = managers.get(me.ident)
    me = copy.deepcopy(me)
    # Unstripped until the end: the applied metadata.name keeps metadata from being pruned.
    me.fields = field_set(config, node)
    managers[me.ident] = me
    if previous is not None:
        _prune(merged, previous.fields, managers, node)
    managers = _take_ownership(base, merged, managers, me.ident, node, force)
    changed = not json_equal(base, merged)
    me.time = now if changed or previous is None else previous.time
    return merged, strip(managers)


def _copy_meta(source: dict[str, Any], target: dict[str, Any], key: str) -> None:
    meta = target.get("metadata")
    if not isinstance(meta, dict):
        return
    if key in (source.get("metadata") or {}):
        meta[key] = copy.deepcopy(source["metadata"][key])
    else:
        meta.pop(key, None)


def _merge(live: Any, config: Any, node: Node) -> Any:
    """Merge a configuration into (a private copy of) the live value."""
    shape = node.shape()
    if isinstance(config, dict) and shape.relation in ("struct", "map"):
        out = live if isinstance(live, dict) else {}
        for key, value in config.items():
            if value is None:
                out.pop(key, None)
            else:
                out[key] = _merge(out.get(key, MISSING), value, node.field(key))
        return out
    if isinstance(config, list) and shape.relation in ("map_list", "set"):
        return _merge_list(live if isinstance(live, list) else [], config, node)
    return copy.deepcopy(config)


def _merge_list(live: list[Any], config: list[Any], node: Node) -> list[Any]:
    """Merge list items by key, keeping live-only items where they were."""
    item = node.item()
    lhs = _indexed(live, node)
    rhs = _indexed(config, node)
    shared = [e for e in rhs if e in lhs]
    merged_rhs: set[str] = set()
    out: list[Any] = []
    left, right = list(lhs), list(rhs)
    li = ri = 0
    while li < len(left) or ri < len(right):
        le = left[li] if li < len(left) else None
        if le is not None and ri < len(right):
            if le == right[ri]:
                merged_rhs.add(le)
                out.append(_merge(lhs[le], rhs[le], item))
                li, ri, shared = li + 1, ri + 1, shared[1:]
                continue
            if le in rhs and shared and shared[0] != le:
                li += 1
                continue
        if le is not None and (le not in rhs or le in merged_rhs or ri >= len(right)):
            if le not in rhs:
                out.append(lhs[le])
            li += 1
            continue
        taken = right[ri]
        merged_rhs.add(taken)
        out.append(_merge(lhs.get(taken, MISSING), rhs[taken], item))
        ri += 1
        shared = shared[1:] if shared and shared[0] == taken else shared
    return out


def _indexed(values: list[Any], node: Node) -> dict[str, Any]:
    shape = node.shape()
    out: dict[str, Any] = {}
    for index, value in enumerate(values):
        out.setdefault(item_element(value, shape, index), value)
    return out


def _prune(merged: dict[str, Any], previous: set[Path], managers: Managers,
           node: Node) -> None:
    """Remove what this manager applied before and nobody (itself included) owns now."""
    owned = with_named_parents(set().union(*(m.fields for m in managers.values())))
    for path in sorted(with_named_parents(previous) - owned - STRIPPED, key=len):
        remove_path(merged, path, node)


def _take_ownership(old: dict[str, Any], new: dict[str, Any], managers: Managers,
                    applier: str, node: Node, force: bool) -> Managers:
    diff = compare(old, new, node)
    found = {ident: m.fields & diff.changed for ident, m in managers.items()
             if ident != applier and m.fields & diff.changed}
    if found and not force:
        raise _Conflicts(found)
    for ident, entry in managers.items():
        if ident != applier:
            entry.fields -= found.get(ident, set()) | diff.removed
    return managers


# -- kubectl's client-side apply annotation ---------------------------------------------


def _last_applied_fields(live: dict[str, Any], api_version: str, node: Node) -> set[Path]:
    """Fields the last client-side apply set and that still hold those values."""
    text = ((live.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
    try:
        last = json.loads(text) if text else None
    except ValueError:
        return set()
    if not isinstance(last, dict) or last.get("apiVersion") != api_version:
        return set()
    diff = compare(last, live, node)
    return field_set(last, node) - diff.added - diff.modified - diff.removed


def _sync_last_applied(new: dict[str, Any], config: dict[str, Any], manager: str) -> None:
    """``kubectl apply --server-side`` keeps an existing client-side annotation current."""
    annotations = (new.get("metadata") or {}).get("annotations")
    if manager != "kubectl" or not isinstance(annotations, dict) or not annotations.get(
            LAST_APPLIED):
        return
    applied = copy.deepcopy(config)
    sent = (applied.get("metadata") or {}).get("annotations")
    if isinstance(sent, dict):
        sent.pop(LAST_APPLIED, None)
    annotations[LAST_APPLIED] = _go_json(applied) + "\n"
    if sum(len(k) + len(str(v)) for k, v in annotations.items()) > _ANNOTATIONS_LIMIT:
        del annotations[LAST_APPLIED]


def _go_json(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
