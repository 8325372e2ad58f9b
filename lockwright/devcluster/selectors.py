"""Label and field selectors, parsed once and matched against many objects.

Label selectors support ``=``, ``==``, ``!=``, ``in``, ``notin``, ``key`` (exists) and
``!key`` (does not exist). Field selectors support ``=``, ``==`` and ``!=`` on the fields
kube-apiserver indexes: ``metadata.name`` and ``metadata.namespace`` for every resource,
plus the event fields ``kubectl describe`` uses.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from lockwright.devcluster.errors import ApiError, bad_request

Matcher = Callable[[dict[str, Any]], bool]

_SET_TERM = re.compile(r"^\s*(\S+?)\s+(in|notin)\s+\(([^)]*)\)\s*$")
_EVENT_FIELDS = {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                 "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
                 "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type",
                 "regarding.kind", "regarding.name", "regarding.namespace", "regarding.uid"}
_FIELDS = {"metadata.name", "metadata.namespace", "status.phase", "type", "spec.nodeName"}


def _split_terms(selector: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    terms, depth, current = [], 0, ""
    for ch in selector:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += ch
    terms.append(current)
    return [t.strip() for t in terms if t.strip()]


def _label_term(term: str) -> Matcher:
    m = _SET_TERM.match(term)
    if m:
        key, op = m.group(1), m.group(2)
        values = {v.strip() for v in m.group(3).split(",") if v.strip()}
        if op == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    for op in ("!=", "==", "="):
        if op in term:
            key, _, value = (p.strip() for p in term.partition(op))
            if not key:
                break
            if op == "!=":
                return lambda labels: labels.get(key) != value
            return lambda labels: labels.get(key) == value
    if term.startswith("!"):
        key = term[1:].strip()
        return lambda labels: key not in labels
    if re.fullmatch(r"[A-Za-z0-9._/-]+", term):
        return lambda labels: term in labels
    raise bad_request(f"unable to parse requirement: found '{term}', expected: in, notin, =, ==, !=, gt, lt")


def label_selector(selector: str | None) -> Matcher:
    """Return a predicate over objects for a label selector string (empty matches all)."""
    if not selector:
        return lambda obj: True
    terms = [_label_term(t) for t in _split_terms(selector)]
    return lambda obj: all(t((obj.get("metadata") or {}).get("labels") or {}) for t in terms)


def _field_value(obj: dict[str, Any], path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return "" if value is None else str(value)


def field_selector(selector: str | None, kind: str) -> Matcher:
    """Return a predicate for a field selector; unsupported fields are a 400 as in kube."""
    if not selector:
        return lambda obj: True
    checks: list[Matcher] = []
    allowed = _FIELDS | (_EVENT_FIELDS if kind == "Event" else set())
    for term in _split_terms(selector):
        op = "!=" if "!=" in term else ("==" if "==" in term else "=")
        field, _, value = (p.strip() for p in term.partition(op))
        if field not in allowed:
            raise ApiError(400, "BadRequest",
                           f'"{field}" is not a known field selector: only "metadata.name",'
                           f' "metadata.namespace"')
        checks.append(_field_check(field, value, op == "!="))
    return lambda obj: all(c(obj) for c in checks)


def _field_check(field: str, value: str, negate: bool) -> Matcher:
    return lambda obj: (_field_value(obj, field) == value) != negate
