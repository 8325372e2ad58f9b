"""The subset of k8s.io/client-go/util/jsonpath that printer columns use.

Supported: ``.field``, ``['field']``, ``[n]`` (negative too), ``[a:b]`` slices, ``[*]``,
``..field`` (recursive descent), unions ``[a,b]`` and filters ``[?(@.type=="Ready")]``
(``== != < > <= >=``, or bare ``@.field`` for existence). Missing keys yield no result,
as with ``AllowMissingKeys(true)`` in kube's CRD table convertor.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

Step = tuple[str, Any]

_FILTER = re.compile(r"^\s*(@[^<>=!]*?)\s*(==|!=|<=|>=|<|>)\s*(.+?)\s*$")


class JSONPathError(ValueError):
    """The expression is outside the supported subset."""


@lru_cache(maxsize=4096)
def parse(expr: str) -> tuple[Step, ...]:
    """Parse a JSONPath like ``.status.conditions[?(@.type=="Ready")].status``.

    Args:
        expr: the expression, with or without the surrounding ``{}``.

    Returns:
        The steps, each ``(op, arg)``.

    Raises:
        JSONPathError: when the expression cannot be parsed.
    """
    text = expr.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    text = text.removeprefix("$")
    steps: list[Step] = []
    i = 0
    while i < len(text):
        i = _parse_step(text, i, steps)
    return tuple(steps)


def _parse_step(text: str, i: int, steps: list[Step]) -> int:
    ch = text[i]
    if text.startswith("..", i):
        name, end = _read_name(text, i + 2)
        steps.append(("recurse", name))
        return end
    if ch == ".":
        name, end = _read_name(text, i + 1)
        if name:
            steps.append(("field", name))
        return end
    if ch == "[":
        end = _matching_bracket(text, i)
        steps.append(_parse_bracket(text[i + 1:end].strip()))
        return end + 1
    if ch.isalnum() or ch in "_-":
        name, end = _read_name(text, i)
        steps.append(("field", name))
        return end
    raise JSONPathError(f"unexpected {ch!r} at {i} in {text!r}")


def _read_name(text: str, i: int) -> tuple[str, int]:
    out: list[str] = []
    while i < len(text) and text[i] not in ".[":
        if text[i] == "\\" and i + 1 < len(text):
            i += 1
        out.append(text[i])
        i += 1
    return "".join(out), i


def _matching_bracket(text: str, start: int) -> int:
    depth, quote = 0, ""
    for j in range(start, len(text)):
        c = text[j]
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                return j
    raise JSONPathError(f"unclosed [ in {text!r}")


def _parse_bracket(inner: str) -> Step:
    if inner == "*":
        return ("all", None)
    if inner.startswith("?(") and inner.endswith(")"):
        return ("filter", _parse_filter(inner[2:-1]))
    if ":" in inner and not inner.startswith(("'", '"')):
        parts = [int(p) if p.strip() else None for p in inner.split(":")]
        return ("slice", tuple(parts + [None] * (3 - len(parts)))[:3])
    items = [p.strip() for p in inner.split(",")]
    keys = [_literal(p) for p in items]
    if len(keys) == 1:
        key = keys[0]
        return ("index", key) if isinstance(key, int) else ("field", key)
    return ("union", tuple(keys))


def _parse_filter(body: str) -> tuple[tuple[Step, ...], str, Any]:
    match = _FILTER.match(body)
    if not match:
        return parse(body.strip()[1:]), "exists", None
    left, op, right = match.groups()
    return parse(left[1:]), op, _literal(right)


def _literal(token: str) -> Any:
    token = token.strip()
    if token[:1] in "'\"" and token[-1:] == token[:1]:
        return token[1:-1]
    try:
        return json.loads(token)
    except ValueError:
        return token


def find(expr: str, data: Any) -> list[Any]:
    """Evaluate ``expr`` against ``data``; every match, in document order.

    Args:
        expr: a JSONPath expression (see :func:`parse`).
        data: decoded JSON.

    Returns:
        The matching values (empty when a key is missing).
    """
    current = [data]
    for step in parse(expr):
        current = [out for value in current for out in _apply(step, value)]
    return current


def _apply(step: Step, value: Any) -> list[Any]:
    op, arg = step
    if op == "field":
        return [value[arg]] if isinstance(value, dict) and arg in value else []
    if op == "all":
        if isinstance(value, dict):
            return list(value.values())
        return list(value) if isinstance(value, list) else []
    if op == "index":
        if isinstance(value, list) and -len(value) <= arg < len(value):
            return [value[arg]]
        return []
    if op == "slice":
        return list(value[slice(*arg)]) if isinstance(value, list) else []
    if op == "union":
        return [out for key in arg for out in _apply(_key_step(key), value)]
    if op == "recurse":
        return _recurse(arg, value)
    return _filter(arg, value)


def _key_step(key: Any) -> Step:
    return ("index", key) if isinstance(key, int) else ("field", key)


def _recurse(name: str, value: Any) -> list[Any]:
    found: list[Any] = []
    if isinstance(value, dict):
        if name in value:
            found.append(value[name])
        for child in value.values():
            found.extend(_recurse(name, child))
    elif isinstance(value, list):
        for child in value:
            found.extend(_recurse(name, child))
    return found


def _filter(arg: tuple[tuple[Step, ...], str, Any], value: Any) -> list[Any]:
    path, op, right = arg
    items = value if isinstance(value, list) else list(value.values()) if isinstance(
        value, dict) else []
    return [item for item in items if _matches(path, op, right, item)]


def _matches(path: tuple[Step, ...], op: str, right: Any, item: Any) -> bool:
    current = [item]
    for step in path:
        current = [out for v in current for out in _apply(step, v)]
    if op == "exists":
        return bool(current)
    if not current:
        return False
    left = current[0]
    if op == "==":
        return bool(left == right)
    if op == "!=":
        return bool(left != right)
    try:
        return _compare(op, left, right)
    except TypeError:
        return False


def _compare(op: str, left: Any, right: Any) -> bool:
    if op == "<":
        return bool(left < right)
    if op == ">":
        return bool(left > right)
    if op == "<=":
        return bool(left <= right)
    return bool(left >= right)


def to_text(value: Any) -> str:
    """Render one value as ``jsonpath.PrintResults`` does: JSON for maps and lists.

    Args:
        value: one decoded JSON value.

    Returns:
        Strings as is, numbers and booleans as Go prints them, the rest as compact JSON.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    if isinstance(value, (int, float)):
        return str(value)
    if value is None:
        return "<nil>"
    return json.dumps(value, separators=(",", ":"), sort_keys=True)
