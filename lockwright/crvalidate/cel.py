"""The small part of CEL that code generators write most, evaluated; anything else is not.

upjet writes one rule per required parameter on every managed resource's ``.spec``::

    !('*' in self.managementPolicies || 'Create' in self.managementPolicies)
        || has(self.forProvider.region)
        || (has(self.initProvider) && has(self.initProvider.region))

The grammar here is exactly that: ``||``, ``&&``, ``!``, parentheses, ``has(self.a.b)``
and ``'text' in self.a.b`` (a list's membership). A rule with anything else (comparison,
functions, ``oldSelf``, escaped names) is :data:`UNSUPPORTED` and the caller fails closed,
as for every rule before. Errors follow CEL: selecting a field that is absent is an error,
``true || error`` is true and ``false && error`` is false in either order, and a rule that
ends in an error rejects the object on the API server, so it is :data:`ERROR` here.
"""

from __future__ import annotations

import re
from typing import Any

#: What a rule comes to besides True and False.
ERROR, UNSUPPORTED = "error", "unsupported"
_TOKEN = re.compile(r"\s*(\|\||&&|!|\(|\)|\.|'[^'\\]*'|\"[^\"\\]*\"|[A-Za-z_][A-Za-z0-9_]*)")


class _Unsupported(Exception):
    pass


def evaluate(rule: str, value: Any) -> bool | str:
    """``rule`` with ``self`` bound to ``value``: True, False, :data:`ERROR` or
    :data:`UNSUPPORTED`."""
    try:
        tokens = _tokens(rule)
        result, rest = _or(tokens, value)
    except _Unsupported:
        return UNSUPPORTED
    return result if not rest else UNSUPPORTED


def _tokens(rule: str) -> list[str]:
    out, at = [], 0
    while at < len(rule.rstrip()):
        m = _TOKEN.match(rule, at)
        if not m:
            raise _Unsupported
        out.append(m.group(1))
        at = m.end()
    return out


def _or(tokens: list[str], value: Any) -> tuple[bool | str, list[str]]:
    left, tokens = _and(tokens, value)
    while tokens[:1] == ["||"]:
        right, tokens = _and(tokens[1:], value)
        left = True if True in (left, right) else ERROR if ERROR in (left, right) else False
    return left, tokens


def _and(tokens: list[str], value: Any) -> tuple[bool | str, list[str]]:
    left, tokens = _unary(tokens, value)
    while tokens[:1] == ["&&"]:
        right, tokens = _unary(tokens[1:], value)
        left = False if False in (left, right) else ERROR if ERROR in (left, right) else True
    return left, tokens


def _unary(tokens: list[str], value: Any) -> tuple[bool | str, list[str]]:
    if tokens[:1] == ["!"]:
        if tokens[1:2] not in (["("], ["has"], ["!"]):
            raise _Unsupported  # !'a' in x is (!'a') in x in CEL: left to the server
        inner, rest = _unary(tokens[1:], value)
        return (ERROR if inner == ERROR else not inner), rest
    if tokens[:1] == ["("]:
        inner, rest = _or(tokens[1:], value)
        if rest[:1] != [")"]:
            raise _Unsupported
        return inner, rest[1:]
    if tokens[:2] == ["has", "("]:
        names, rest = _path(tokens[2:])
        if not names or rest[:1] != [")"]:
            raise _Unsupported  # has(self) is no CEL
        parent = _select(value, names[:-1])
        found = ERROR if parent is _ABSENT or not isinstance(parent, dict) else \
            names[-1] in parent
        return found, rest[1:]
    if tokens[:1] and tokens[0][:1] in "'\"" and tokens[1:2] == ["in"]:
        names, rest = _path(tokens[2:])
        items = _select(value, names)
        if isinstance(items, dict):
            raise _Unsupported  # in a map means among its keys
        return (tokens[0][1:-1] in items if isinstance(items, list) else ERROR), rest
    raise _Unsupported


def _path(tokens: list[str]) -> tuple[list[str], list[str]]:
    """``self.a.b`` as ``["a", "b"]``; names CEL or Kubernetes would escape are not read."""
    if tokens[:1] != ["self"]:
        raise _Unsupported
    names, tokens = [], tokens[1:]
    while tokens[:1] == ["."] and len(tokens) > 1:
        name = tokens[1]
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or "__" in name or \
                name in _RESERVED:
            raise _Unsupported
        names.append(name)
        tokens = tokens[2:]
    return names, tokens


class _Absent:
    pass


_ABSENT: Any = _Absent()
# CEL's reserved words, which Kubernetes escapes as __name__ in field selections
_RESERVED = frozenset({"true", "false", "null", "in", "as", "break", "const", "continue",
                       "else", "for", "function", "if", "import", "let", "loop", "package",
                       "namespace", "return", "var", "void", "while"})


def _select(value: Any, names: list[str]) -> Any:
    for name in names:
        if not isinstance(value, dict) or name not in value:
            return _ABSENT
        value = value[name]
    return value
