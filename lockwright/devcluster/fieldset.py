"""Field sets as structured-merge-diff computes them, and their FieldsV1 encoding.

A path is a tuple of FieldsV1 keys: ``f:<field>``, ``k:<json of list-map keys>``,
``v:<json value>`` (set items) and ``i:<index>``. A field set holds the paths a manager
owns; a path with owned descendants is itself owned only when it is in the set
(encoded as ``.``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from lockwright.devcluster.mergekeys import Node, Shape

Path = tuple[str, ...]


class _Missing:
    """An absent value, as distinct from JSON ``null``."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON sees it: ``true`` is not ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers):
        return a == b
    return type(a) is type(b) and a == b


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def item_element(item: Any, shape: Shape, index: int) -> str:
    """The path element naming one list item: its keys, its value, or else its index."""
    if shape.relation == "set":
        return "v:" + _compact(item)
    if shape.relation == "map_list" and isinstance(item, dict):
        defaults = dict(shape.key_defaults)
        if all(key in item or key in defaults for key in shape.keys):
            return "k:" + _compact({key: item.get(key, defaults.get(key))
                                    for key in shape.keys})
    return f"i:{index}"


def _kind(value: Any, shape: Shape) -> str:
    if isinstance(value, dict) and shape.relation in ("struct", "map"):
        return "map"
    if isinstance(value, list) and shape.relation in ("map_list", "set"):
        return "list"
    return "leaf"


def _children(value: Any, node: Node, kind: str) -> dict[str, tuple[Any, Node]]:
    """The children of a granular map or list, by path element (first duplicate wins)."""
    if kind == "map":
        return {"f:" + k: (v, node.field(k)) for k, v in value.items()}
    shape, item = node.shape(), node.item()
    out: dict[str, tuple[Any, Node]] = {}
    for index, value_ in enumerate(value):
        out.setdefault(item_element(value_, shape, index), (value_, item))
    return out


# -- the set of fields a value sets ----------------------------------------------------


def field_set(value: Any, node: Node) -> set[Path]:
    """The fields an applied configuration sets (structured-merge-diff ``ToFieldSet``)."""
    out: set[Path] = set()
    _collect(value, node, (), out)
    return out


def _collect(value: Any, node: Node, path: Path, out: set[Path]) -> None:
    shape = node.shape()
    kind = _kind(value, shape)
    if kind == "leaf":
        if path:
            out.add(path)
        return
    for element, (child, child_node) in _children(value, node, kind).items():
        _collect(child, child_node, path + (element,), out)
        if kind == "list" or shape.relation == "map":
            out.add(path + (element,))


# -- comparison ------------------------------------------------------------------------


@dataclass
class Diff:
    """Paths added, modified and removed between two values."""

    added: set[Path] = field(default_factory=set)
    modified: set[Path] = field(default_factory=set)
    removed: set[Path] = field(default_factory=set)

    @property
    def changed(self) -> set[Path]:
        return self.added | self.modified


def compare(old: Any, new: Any, node: Node) -> Diff:
    """Compare two values as structured-merge-diff does (``TypedValue.Compare``).

    A granular map or list absent on one side is itself added/removed (``null`` is not
    absent); two empty containers compare as leaves.
    """
    diff = Diff()
    _compare(old, new, node, (), diff)
    return diff


def _empty(value: Any) -> bool:
    return value is MISSING or value is None or (isinstance(value, (dict, list)) and not value)


def _compare(old: Any, new: Any, node: Node, path: Path, diff: Diff) -> None:
    shape = node.shape()
    kinds = {_kind(v, shape) for v in (old, new) if v is not MISSING and v is not None}
    if len(kinds) != 1 or kinds == {"leaf"} or (_empty(old) and _empty(new)):
        _compare_leaf(old, new, path, diff)
        return
    kind = kinds.pop()
    if path and old is MISSING:
        diff.added.add(path)
    if path and new is MISSING:
        diff.removed.add(path)
    before = _children(old, node, kind) if _kind(old, shape) == kind else {}
    after = _children(new, node, kind) if _kind(new, shape) == kind else {}
    for element in list(before) + [e for e in after if e not in before]:
        old_child, child_node = before.get(element) or after[element]
        new_child = after[element][0] if element in after else MISSING
        if element not in before:
            old_child = MISSING
        _compare(old_child, new_child, child_node, path + (element,), diff)


def _compare_leaf(old: Any, new: Any, path: Path, diff: Diff) -> None:
    if not path:
        return
    if old is MISSING and new is not MISSING:
        diff.added.add(path)
    elif new is MISSING and old is not MISSING:
        diff.removed.add(path)
    elif not json_equal(old, new):
        diff.modified.add(path)


# -- FieldsV1 --------------------------------------------------------------------------


def _value_key(value: Any) -> tuple[Any, ...]:
    if value is None:
        return (0,)
    if isinstance(value, bool):
        return (1, value)
    if isinstance(value, (int, float)):
        return (2, value)
    if isinstance(value, str):
        return (3, value)
    return (4, _compact(value))


def element_key(element: str) -> tuple[Any, ...]:
    """Sort order of path elements: fields, then keys, then values, then indices."""
    prefix, body = element[:2], element[2:]
    if prefix == "f:":
        return (0, body)
    if prefix == "k:":
        return (1, tuple((k, _value_key(v)) for k, v in json.loads(body).items()))
    if prefix == "v:":
        return (2, _value_key(json.loads(body)))
    return (3, int(body)) if body.lstrip("-").isdigit() else (4, body)


def _trie(paths: Iterable[Path]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for path in paths:
        node = root
        for element in path:
            node = node.setdefault(element, {})
    return root


def to_fields_v1(paths: set[Path]) -> dict[str, Any]:
    """Encode a field set as a FieldsV1 tree (``.`` marks an owned path with children)."""
    def emit(tree: dict[str, Any], prefix: Path) -> dict[str, Any]:
        out: dict[str, Any] = {".": {}} if tree and prefix in paths else {}
        for element in sorted(tree, key=element_key):
            out[element] = emit(tree[element], prefix + (element,))
        return out

    return emit(_trie(paths), ())


def from_fields_v1(tree: Any, prefix: Path = ()) -> set[Path]:
    """Decode a FieldsV1 tree into a field set.

    Raises:
        ValueError: The tree is not a FieldsV1 object.
    """
    if not isinstance(tree, dict):
        raise ValueError("FieldsV1 must be an object")  # noqa: TRY004 - callers catch ValueError
    out: set[Path] = set()
    for element, sub in tree.items():
        if element == ".":
            out.add(prefix)
        elif not isinstance(sub, dict) or element[:2] not in ("f:", "k:", "v:", "i:"):
            raise ValueError(f"invalid FieldsV1 element {element!r}")
        elif sub:
            out |= from_fields_v1(sub, prefix + (element,))
        else:
            out.add(prefix + (element,))
    return out


def ordered(paths: set[Path]) -> list[Path]:
    """Paths in structured-merge-diff's iteration order: a node's members, then its children."""
    out: list[Path] = []

    def walk(tree: dict[str, Any], prefix: Path) -> None:
        elements = sorted(tree, key=element_key)
        out.extend(prefix + (e,) for e in elements if prefix + (e,) in paths)
        for element in elements:
            if tree[element]:
                walk(tree[element], prefix + (element,))

    walk(_trie(paths), ())
    return out


def _to_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else str(value)


def path_string(path: Path) -> str:
    """A path as kube-apiserver prints it: ``.spec.containers[name="c"].image``."""
    parts = []
    for element in path:
        prefix, body = element[:2], element[2:]
        if prefix == "f:":
            parts.append("." + body)
        elif prefix == "k:":
            keys = json.loads(body)
            parts.append("[" + ",".join(f"{k}={_to_string(v)}" for k, v in keys.items()) + "]")
        elif prefix == "v:":
            parts.append(f"[={_to_string(json.loads(body))}]")
        else:
            parts.append(f"[{body}]")
    return "".join(parts)


def with_named_parents(paths: set[Path]) -> set[Path]:
    """Add every ancestor that is a field (structured-merge-diff ``EnsureNamedFieldsAreMembers``)."""
    out = set(paths)
    for path in paths:
        out.update(path[:i] for i in range(1, len(path)) if path[i - 1].startswith("f:"))
    return out


def remove_path(value: Any, path: Path, node: Node) -> None:
    """Delete the value at ``path`` (with everything under it), if it is there."""
    for element in path[:-1]:
        value, node = _step(value, element, node)
        if value is MISSING:
            return
    last = path[-1]
    if last.startswith("f:") and isinstance(value, dict):
        value.pop(last[2:], None)
    elif isinstance(value, list):
        shape = node.shape()
        for index, item in enumerate(value):
            if item_element(item, shape, index) == last:
                del value[index]
                return


def _step(value: Any, element: str, node: Node) -> tuple[Any, Node]:
    if element.startswith("f:"):
        name = element[2:]
        return (value.get(name, MISSING) if isinstance(value, dict) else MISSING), node.field(name)
    if isinstance(value, list):
        shape = node.shape()
        for index, item in enumerate(value):
            if item_element(item, shape, index) == element:
                return item, node.item()
    return MISSING, node
