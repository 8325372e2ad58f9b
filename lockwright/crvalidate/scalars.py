"""kube-openapi's checks of one value, as apiextensions-apiserver configures them.

Each check answers ``True`` (valid), ``False`` (invalid) or ``None`` (this port cannot
tell; the caller fails closed). The checks that may find several things return
``Judgement`` pairs of that answer and the reason shown when it is not ``True``.
"""

from __future__ import annotations

import functools
import json
import math
import re
from typing import Any

from lockwright.crvalidate.formats import check as check_format
from lockwright.crvalidate.formats import recognized

Schema = dict[str, Any]
Judgement = tuple[bool | None, str]


def show(value: Any) -> str:
    """A value as JSON, cut to 120 characters."""
    text = json.dumps(value, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


def types(s: Schema) -> tuple[str, ...]:
    """The schema's types (``x-kubernetes-int-or-string`` is integer and string)."""
    if s.get("x-kubernetes-int-or-string"):
        return ("integer", "string")
    t = s.get("type")
    return (t,) if isinstance(t, str) and t else ()


def string_format(s: Schema) -> str:
    """The format the server checks; one it does not recognise is dropped before."""
    f = s.get("format")
    return f if isinstance(f, str) and recognized(f) else ""


def type_words(s: Schema) -> str:
    """The expected type, for a reason."""
    return ",".join(types(s)) or string_format(s)


def _json_type(x: Any) -> str:
    if isinstance(x, bool):
        return "boolean"
    if isinstance(x, int):
        return "integer"
    if isinstance(x, float):
        return "number"
    if isinstance(x, str):
        return "string"
    return "array" if isinstance(x, list) else "object"


def type_ok(x: Any, s: Schema) -> bool | None:
    """kube-openapi's type validator (a number with an integral value is an integer)."""
    want, fmt = types(s), string_format(s)
    if not want and not fmt:
        return True
    actual = _json_type(x)
    if actual in want or (actual == "integer" and "number" in want):
        return True
    if fmt and actual in ("string", "array") and not {"number", "integer"} & set(want):
        return True
    return json_integer(x) if actual == "number" and "integer" in want else False


def json_integer(f: float) -> bool | None:
    """swag's ``IsFloat64AJSONInteger``: an integral float within ±(2^53-1); a value a
    hair's breadth from an integer is judged with a tolerance not reproduced here."""
    if math.isnan(f) or math.isinf(f) or abs(f) > 2**53 - 1:
        return False
    if float(f).is_integer():
        return True
    return None if abs(f) >= 1 and abs(f - round(f)) < 1e-9 * abs(f) else False


_RE2_ONLY = re.compile(r"\\[pPzCQE]|\[\[:|\(\?[a-zA-Z]*U")


@functools.lru_cache(maxsize=4096)
def _compiled(pattern: str) -> re.Pattern[str] | None:
    if _RE2_ONLY.search(pattern):
        return None
    try:
        return re.compile(pattern, re.ASCII)
    except re.error:
        return None


def pattern_ok(pattern: str, value: str) -> bool | None:
    """Go's ``regexp.MatchString`` (RE2, unanchored); ``None`` where Python's ``re`` may
    read the pattern or the value differently."""
    rx = _compiled(pattern)
    if rx is None or ("\n" in value and "$" in pattern) or \
            (not value.isascii() and "(?i" in pattern):
        return None
    return rx.search(value) is not None


def string_checks(x: str, s: Schema) -> list[Judgement]:
    """Length (in characters), pattern and format."""
    found: list[Judgement] = []
    if "maxLength" in s and len(x) > s["maxLength"]:
        found.append((False, f"may not be longer than {s['maxLength']} characters"))
    if "minLength" in s and len(x) < s["minLength"]:
        found.append((False, f"must be at least {s['minLength']} characters long"))
    if isinstance(s.get("pattern"), str):
        found.append((pattern_ok(s["pattern"], x), f"must match {show(s['pattern'])}"))
    if fmt := string_format(s):
        found.append((check_format(fmt, x), f"must be of format {fmt}"))
    return found


def _native(x: float, bound: float, s: Schema) -> bool:
    # kube-openapi compares an integer value as int64 with the bound cut to int64, unless
    # the schema is an integer's and the bound is no integer (then as floats)
    return isinstance(x, int) and (float(bound).is_integer() or "integer" not in types(s))


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _bound(x: float, s: Schema, name: str, low: bool) -> Judgement:
    bound = s[name]
    b = int(bound) if _native(x, bound, s) else float(bound)
    exclusive = bool(s.get("exclusiveMinimum" if low else "exclusiveMaximum"))
    bad = (x <= b if exclusive else x < b) if low else (x >= b if exclusive else x > b)
    words = f"must be {'at least' if low else 'at most'} {bound}"
    return not bad, words + (" (exclusive)" if exclusive else "")


def number_checks(x: float, s: Schema) -> list[Judgement]:
    """Minimum, maximum (exclusive or not) and multipleOf."""
    found = [_bound(x, s, name, low) for name, low in (("minimum", True), ("maximum", False))
             if _number(s.get(name))]
    factor: Any = s.get("multipleOf")
    if _number(factor):
        found.append((_multiple(x, factor, s), f"must be a multiple of {factor}"))
    return found


def _multiple(x: float, factor: float, s: Schema) -> bool | None:
    if _native(x, factor, s):
        return int(factor) > 0 and int(x) % int(factor) == 0
    if factor <= 0:
        return False
    return json_integer((1 / factor) * x if factor < 1 else x / factor)


def key(v: Any) -> str:
    """A value as canonical JSON (``true`` is not ``1``)."""
    return json.dumps(v, sort_keys=True)


def in_enum(x: Any, allowed: Any) -> bool | None:
    """kube-openapi's enum: the value converted to each allowed value's type, compared."""
    if not isinstance(allowed, list):
        return True
    if isinstance(x, (dict, list)):
        # Go's DeepEqual also tells int64 from float64 inside: only number-free is certain
        if not any(key(_ints(x)) == key(_ints(e)) for e in allowed):
            return False
        return None if _has_number(x) else True
    if any(_same(x, e) for e in allowed):
        return True
    # Go converts 1.5 to the int64 1 before comparing with an integral value
    return None if isinstance(x, float) and any(_same(int(x), e) for e in allowed) else False


def _ints(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _ints(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_ints(v) for v in x]
    return int(x) if isinstance(x, float) and x.is_integer() else x


def _has_number(x: Any) -> bool:
    if isinstance(x, dict):
        return any(_has_number(v) for v in x.values())
    if isinstance(x, list):
        return any(_has_number(v) for v in x)
    return _number(x)


def _same(x: Any, e: Any) -> bool:
    if isinstance(x, bool) or isinstance(e, bool):
        return isinstance(x, bool) and isinstance(e, bool) and x == e
    if _number(x) and _number(e):
        return float(x) == float(e)
    if isinstance(x, int) and isinstance(e, str):
        # Go converts an integer to a string as the rune it codes
        return 0 <= x <= 0x10FFFF and chr(x) == e
    return isinstance(x, str) and isinstance(e, str) and x == e
