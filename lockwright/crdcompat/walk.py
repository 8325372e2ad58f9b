"""The walk over the old and the new schema of one version, side by side.

Identical subtrees are skipped with one ``==`` (C speed), so a version whose schema barely
changed costs little more than the comparison of two dicts. A node's own keywords (all but
its children: ``properties``, ``items``, ``additionalProperties``) are classified by
:mod:`lockwright.crdcompat.rules`; children present on one side only are fields added or
removed, reported once for their whole subtree.

Python's ``==`` takes ``1`` for ``true``: a schema whose only change swaps one for the
other (a default or enum value, with nothing else changing) goes unseen. The API server
would refuse such a CRD unless the field has no type; it is the price of the fast path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lockwright.crdcompat.model import FieldSummary, Kind
from lockwright.crdcompat.rules import Found, child, compare_own

Schema = dict[str, Any]
_NESTED = {"items": "[*]", "additionalProperties": ".*"}


@dataclass
class Diff:
    """What the walk found: classified changes, fields added and removed (top paths)."""

    found: list[Found] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    @property
    def changed(self) -> list[str]:
        """The paths of every change but removals, once each, in order."""
        return list(dict.fromkeys(f.path or "." for f in self.found
                                  if f.kind != Kind.PROPERTY_REMOVED))

    def summary(self, version: str, limit: int) -> FieldSummary:
        """Counts and the first ``limit`` paths of each list."""
        changed = self.changed
        return FieldSummary(version, "changed", len(self.added), len(self.removed),
                            len(changed), self.added[:limit], self.removed[:limit],
                            changed[:limit])

    def __bool__(self) -> bool:
        return bool(self.found or self.added or self.removed)


def diff_schemas(old: Any, new: Any) -> Diff:
    """Walk two ``openAPIV3Schema`` trees; a missing or malformed one counts as ``{}``."""
    diff = Diff()
    _walk(diff, _node(old), _node(new), "")
    return diff


def _node(value: Any) -> Schema:
    return value if isinstance(value, dict) else {}


def _walk(diff: Diff, old: Schema, new: Schema, path: str) -> None:
    if old == new:
        return
    diff.found.extend(compare_own(path, _own(old), _own(new)))
    olds, news = _children(old, path), _children(new, path)
    for p, sub in olds.items():
        if p in news:
            _walk(diff, sub, news[p], p)
        else:
            diff.removed.append(p)
            diff.found.append(Found(Kind.PROPERTY_REMOVED, p, "field removed",
                                    f"keep {p} (deprecate it in its description instead), "
                                    "or remove it in a new API version"))
    diff.added.extend(p for p in news if p not in olds)


def _own(node: Schema) -> Schema:
    return {k: v for k, v in node.items()
            if k != "properties" and not (k in _NESTED and isinstance(v, dict))}


def _children(node: Schema, path: str) -> dict[str, Schema]:
    props = node.get("properties")
    kids = {child(path, k): _node(v) for k, v in props.items()} if isinstance(props, dict) \
        else {}
    for key, suffix in _NESTED.items():
        if isinstance(node.get(key), dict):
            kids[path + suffix] = node[key]
    return kids
