"""How a change to one keyword of one schema node is classified.

Each rule takes the node's path and the keyword's old and new values (``MISSING`` when
absent) and returns what it found, or ``None`` when it cannot tell (the change is then
"unknown" and blocks). A keyword without a rule is unknown too; the harmless ones
(descriptions, titles, examples) have a rule that finds nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, NamedTuple

from lockwright.crdcompat.model import Kind
from lockwright.crvalidate.formats import normalize, recognized


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class Found(NamedTuple):
    """One classified change, before the walk adds the CRD and version."""

    kind: str
    path: str
    detail: str
    fix: str = ""


Rule = Callable[[str, Any, Any], list[Found] | None]


def show(value: Any, limit: int = 80) -> str:
    """A value as JSON, cut to ``limit`` characters."""
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _key(value: Any) -> str:
    # json tells true from 1, which Python's == does not
    return json.dumps(value, sort_keys=True, default=str)


def _same(a: Any, b: Any) -> bool:
    if a is MISSING or b is MISSING:
        return a is b
    return _key(a) == _key(b)


def _nothing(path: str, old: Any, new: Any) -> list[Found]:
    return []


def _type(path: str, old: Any, new: Any) -> list[Found]:
    return [Found(Kind.TYPE_CHANGED, path, f"type changed from {show(old)} to {show(new)}",
                  f"keep {path} of type {show(old)}, or add a field of the new type beside it")]


def _default(path: str, old: Any, new: Any) -> list[Found]:
    if old is MISSING:
        return [Found(Kind.DEFAULT_ADDED, path, f"default {show(new)} added",
                      f"leave {path} without a default: the API server would write it "
                      "into existing resources")]
    if new is MISSING:
        return [Found(Kind.DEFAULT_REMOVED, path, f"default {show(old)} removed",
                      f"keep the default {show(old)} of {path}")]
    return [Found(Kind.DEFAULT_CHANGED, path, f"default changed from {show(old)} to "
                  f"{show(new)}", f"keep the default of {path} at {show(old)}")]


def _enum(path: str, old: Any, new: Any) -> list[Found] | None:
    if old is MISSING and isinstance(new, list):
        return [Found(Kind.ENUM_ADDED, path, f"enum {show(new)} added",
                      f"leave {path} without an enum, or add it in a new API version")]
    if new is MISSING:
        return [Found(Kind.ENUM_REMOVED, path, "enum removed")]
    if not isinstance(old, list) or not isinstance(new, list):
        return None
    return _enum_values(path, old, new)


def _enum_values(path: str, old: list[Any], new: list[Any]) -> list[Found]:
    olds, news = {_key(v): v for v in old}, {_key(v): v for v in new}
    gone = [v for k, v in olds.items() if k not in news]
    more = [v for k, v in news.items() if k not in olds]
    found = [Found(Kind.ENUM_VALUE_REMOVED, path, f"enum values {show(gone)} removed",
                   f"keep {show(gone)} among the values of {path}")] if gone else []
    return found + ([Found(Kind.ENUM_VALUE_ADDED, path, f"enum values {show(more)} added")]
                    if more else [])


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _bound(key: str, lower: bool) -> Rule:
    """The rule of a minimum-like (``lower``) or maximum-like bound."""
    def rule(path: str, old: Any, new: Any) -> list[Found] | None:
        if not all(_is_number(v) for v in (old, new) if v is not MISSING):
            return None
        if new is MISSING or (old is not MISSING and (new <= old if lower else new >= old)):
            gone = "removed" if new is MISSING else f"{'lowered' if lower else 'raised'} to {new}"
            return [Found(Kind.BOUND_LOOSENED, path, f"{key} {show(old)} {gone}")]
        if old is MISSING:
            return [Found(Kind.BOUND_TIGHTENED, path, f"{key} {new} added",
                          f"leave {path} without {key}, or check every existing resource")]
        return [Found(Kind.BOUND_TIGHTENED, path,
                      f"{key} {'raised' if lower else 'lowered'} from {old} to {new}",
                      f"keep {key} of {path} at {old}")]
    return rule


def _exclusive(key: str) -> Rule:
    def rule(path: str, old: Any, new: Any) -> list[Found] | None:
        if not all(isinstance(v, bool) for v in (old, new) if v is not MISSING):
            return None
        if new is True and old is not True:
            return [Found(Kind.BOUND_TIGHTENED, path, f"{key} set",
                          f"keep {key} of {path} false")]
        return [] if old is not True else [Found(Kind.BOUND_LOOSENED, path, f"{key} unset")]
    return rule


def _pattern(path: str, old: Any, new: Any) -> list[Found]:
    if new is MISSING:
        return [Found(Kind.PATTERN_REMOVED, path, f"pattern {show(old)} removed")]
    fix = (f"leave {path} without a pattern" if old is MISSING
           else f"keep the pattern of {path} as {show(old)}")
    what = f"pattern {show(new)} added" if old is MISSING else \
        f"pattern changed from {show(old)} to {show(new)}"
    return [Found(Kind.PATTERN_CHANGED, path, what, fix)]


def _format(path: str, old: Any, new: Any) -> list[Found]:
    # Kubernetes validates only the formats it recognises and ignores the others
    # (int32, int64, double...), so a change between ignored formats changes nothing.
    was, now = (normalize(v) if isinstance(v, str) and recognized(v) else MISSING
                for v in (old, new))
    if was == now:
        return []
    if now is MISSING:
        return [Found(Kind.FORMAT_REMOVED, path, f"format {show(old)} no longer checked")]
    fix = (f"leave {path} without format {show(new)}" if was is MISSING
           else f"keep the format of {path} as {show(old)}")
    return [Found(Kind.FORMAT_CHANGED, path, f"format changed from {show(old)} to "
                  f"{show(new)}" if old is not MISSING else f"format {show(new)} added", fix)]


def _nullable(path: str, old: Any, new: Any) -> list[Found]:
    if (old is True) == (new is True):
        return []
    if new is True:
        return [Found(Kind.NULLABLE_ADDED, path, "nullable added")]
    return [Found(Kind.NULLABLE_REMOVED, path, "nullable removed",
                  f"keep nullable: true on {path}")]


def child(path: str, name: str) -> str:
    """The path of property ``name`` of the node at ``path``."""
    return f"{path}.{name}" if _plain(name) else f"{path}[{json.dumps(name)}]"


def _plain(name: str) -> bool:
    return bool(name) and not any(c in name for c in ".[]\"' ")


def _required(path: str, old: Any, new: Any) -> list[Found] | None:
    olds, news = (list(v) if isinstance(v, list) else [] if v is MISSING else None
                  for v in (old, new))
    if olds is None or news is None:
        return None
    return [Found(Kind.REQUIRED_ADDED, child(path, n), "became required",
                  f"make {child(path, n)} optional: existing resources may not set it")
            for n in news if n not in olds] + \
        [Found(Kind.REQUIRED_REMOVED, child(path, n), "no longer required")
         for n in olds if n not in news]


def _rules_of(value: Any) -> set[str] | None:
    if value is MISSING:
        return set()
    if not isinstance(value, list) or not all(isinstance(r, dict) for r in value):
        return None
    return {str(r.get("rule")) for r in value}


def _validations(path: str, old: Any, new: Any) -> list[Found] | None:
    olds, news = _rules_of(old), _rules_of(new)
    if olds is None or news is None:
        return None
    if news - olds:
        return [Found(Kind.VALIDATION_RULES_CHANGED, path,
                      f"x-kubernetes-validations rules added or changed: "
                      f"{show(sorted(news - olds))}",
                      f"keep the rules of {path} as they were: existing resources cannot "
                      "be checked against new rules here")]
    # the same rules with other messages or reasons validate the same objects
    return [Found(Kind.VALIDATION_RULES_REMOVED, path, "x-kubernetes-validations rules "
                  f"removed: {show(sorted(olds - news))}")] if olds - news else []


_LIST_TYPES = ("atomic", "set", "map")


def _list_type(path: str, old: Any, new: Any) -> list[Found] | None:
    # set and map add uniqueness (docs/design.md, "The upgrade gate's verdicts"): whether
    # existing lists keep to it depends on their values, which the plan checks one by one
    was, now = ("atomic" if v is MISSING else v for v in (old, new))
    if was not in _LIST_TYPES or now not in _LIST_TYPES:
        return None
    if was == now:
        return []
    if now == "atomic":
        return [Found(Kind.LIST_TYPE_LOOSENED, path, f"list type {was} is now atomic")]
    unique = "unique items" if now == "set" else "unique map keys, each item an object"
    return [Found(Kind.LIST_TYPE_TIGHTENED, path,
                  f"x-kubernetes-list-type changed from {was} to {now}: lists need {unique}",
                  f"keep {path} a list of type {was}, or make every existing list's "
                  f"items unique by the new rule first")]


def _map_keys(path: str, old: Any, new: Any) -> list[Found] | None:
    # keys appear and disappear with list type map: the list-type change says it all
    if old is MISSING or new is MISSING:
        return []
    if not isinstance(old, list) or not isinstance(new, list):
        return None
    if set(map(str, old)) <= set(map(str, new)):
        # more keys tell more items apart; a new key must be required or defaulted, which
        # the required and default rules check
        return [Found(Kind.LIST_MAP_KEYS_ADDED, path,
                      f"x-kubernetes-list-map-keys {show(old)} widened to {show(new)}")]
    return [Found(Kind.LIST_MAP_KEYS_CHANGED, path,
                  f"x-kubernetes-list-map-keys changed from {show(old)} to {show(new)}: "
                  "items must be unique by the new keys",
                  f"keep the keys of {path} at {show(old)}, or add to them only")]


def _map_type(path: str, old: Any, new: Any) -> list[Found] | None:
    # granular or atomic only changes how server-side apply merges the object: no value
    # becomes invalid
    was, now = ("granular" if v is MISSING else v for v in (old, new))
    if was not in ("granular", "atomic") or now not in ("granular", "atomic"):
        return None
    return [] if was == now else [Found(Kind.MAP_TYPE_CHANGED, path,
                                        f"x-kubernetes-map-type changed from {was} to {now}")]


def _preserve(path: str, old: Any, new: Any) -> list[Found] | None:
    if not all(v is MISSING or isinstance(v, bool) for v in (old, new)):
        return None
    if (old is True) == (new is True):
        return []
    if new is True:
        return [Found(Kind.PRESERVE_UNKNOWN_ADDED, path, "unknown fields now kept")]
    return [Found(Kind.PRESERVE_UNKNOWN_REMOVED, path,
                  "x-kubernetes-preserve-unknown-fields removed: values the schema does not "
                  "name would be pruned", f"keep x-kubernetes-preserve-unknown-fields on {path}")]


RULES: dict[str, Rule] = {
    "description": _nothing, "title": _nothing, "example": _nothing,
    "externalDocs": _nothing, "type": _type, "default": _default, "enum": _enum,
    "minimum": _bound("minimum", True), "minLength": _bound("minLength", True),
    "minItems": _bound("minItems", True), "minProperties": _bound("minProperties", True),
    "maximum": _bound("maximum", False), "maxLength": _bound("maxLength", False),
    "maxItems": _bound("maxItems", False), "maxProperties": _bound("maxProperties", False),
    "exclusiveMinimum": _exclusive("exclusiveMinimum"),
    "exclusiveMaximum": _exclusive("exclusiveMaximum"),
    "pattern": _pattern, "format": _format, "nullable": _nullable, "required": _required,
    "x-kubernetes-validations": _validations,
    "x-kubernetes-list-type": _list_type, "x-kubernetes-list-map-keys": _map_keys,
    "x-kubernetes-preserve-unknown-fields": _preserve,
    "x-kubernetes-map-type": _map_type,
}


def compare_own(path: str, old: dict[str, Any], new: dict[str, Any]) -> list[Found]:
    """Classify every keyword that differs between two nodes (children excluded).

    Args:
        path: the node's path, for the findings.
        old: the old node's own keywords.
        new: the new node's own keywords.

    Returns:
        What the rules found, then one ``unknown`` finding naming every keyword no rule
        could classify.
    """
    found: list[Found] = []
    unknown: list[str] = []
    for key in sorted(old.keys() | new.keys()):
        a, b = old.get(key, MISSING), new.get(key, MISSING)
        if _same(a, b):
            continue
        result = RULES[key](path, a, b) if key in RULES else None
        found.extend(result if result is not None else [])
        unknown.extend([key] if result is None else [])
    return found + _unknown(path, unknown)


def _unknown(path: str, keys: list[str]) -> list[Found]:
    if not keys:
        return []
    names = ", ".join(keys)
    return [Found(Kind.UNKNOWN, path, f"unclassified change of {names}",
                  f"review the change of {names} on {path or '.'} by hand: lockwright cannot "
                  "tell whether existing resources stay valid")]
