"""Validation of a custom resource against a CRD version's structural schema, locally.

The API server's order: prune, drop non-nullable nulls, default (``normalize``), then
validate with kube-openapi's rules as apiextensions-apiserver configures them, then the
embedded-resource and list-type checks, then CEL. CEL (``x-kubernetes-validations``) cannot
run here: a value it would judge makes the verdict ``cannot-check``, and so does any
corner this port does not reproduce exactly (see ``formats``, ``embedded``, regular
expressions RE2 and Python read differently). The caller fails closed on it.
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from lockwright.crvalidate import embedded
from lockwright.crvalidate.formats import check as check_format
from lockwright.crvalidate.formats import recognized
from lockwright.crvalidate.normalize import normalize

Schema = dict[str, Any]
VALID, INVALID, CANNOT_CHECK = "valid", "invalid", "cannot-check"
LIMIT = 5


@dataclass(frozen=True)
class Violation:
    """One field the server would reject (or that cannot be checked here), and why."""

    path: str
    reason: str


@dataclass(frozen=True)
class Validation:
    """The verdict on one object.

    Attributes:
        verdict: ``valid``, ``invalid`` (``violations`` says where) or ``cannot-check``
            (valid as far as checked; ``unchecked`` names what was not).
        violations: the first violations found.
        unchecked: the first things that could not be checked locally.
    """

    verdict: str
    violations: list[Violation] = field(default_factory=list)
    unchecked: list[Violation] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Only ``valid`` is ok: ``cannot-check`` fails closed."""
        return self.verdict == VALID

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-shaped data."""
        return asdict(self)


class _Run:
    """What one validation collects; it stops looking after ``limit`` violations."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.bad: list[Violation] = []
        self.unsure: list[Violation] = []

    @property
    def full(self) -> bool:
        return len(self.bad) >= self.limit

    def fail(self, path: str, reason: str) -> None:
        if not self.full:
            self.bad.append(Violation(path or ".", reason))

    def doubt(self, path: str, reason: str) -> None:
        if len(self.unsure) < self.limit:
            self.unsure.append(Violation(path or ".", reason))

    def judge(self, ok: bool | None, path: str, reason: str) -> None:
        if ok is None:
            self.doubt(path, reason)
        elif not ok:
            self.fail(path, reason)

    def result(self) -> Validation:
        verdict = INVALID if self.bad else CANNOT_CHECK if self.unsure else VALID
        return Validation(verdict, self.bad, self.unsure)


def validate(obj: dict[str, Any], schema: Schema, *, limit: int = LIMIT) -> Validation:
    """Would the API server accept ``obj`` under ``schema``?

    Args:
        obj: the custom resource as read (never modified). Its root ``metadata`` is the
            server's business and is not checked beyond what the schema says of it.
        schema: the version's ``openAPIV3Schema``.
        limit: how many violations to collect before stopping.

    Returns:
        The verdict with the first violations (path like ``.spec.ports[0].name``).
    """
    run = _Run(limit)
    _check(run, normalize(obj, schema), schema, "")
    return run.result()


def child(path: str, key: str) -> str:
    """The path of ``key`` under ``path``."""
    plain = key and not any(c in key for c in ".[]\"' ")
    return f"{path}.{key}" if plain else f"{path}[{json.dumps(key)}]"


def _check(run: _Run, x: Any, s: Schema, path: str) -> None:
    if run.full:
        return
    if x is None:
        _check_null(run, s, path)
        return
    run.judge(_type_ok(x, s), path, f"must be of type {_type_words(s)}")
    if any(k in s for k in ("allOf", "anyOf", "oneOf", "not")):
        _check_junctors(run, x, s, path)
    _check_kind(run, x, s, path)
    if "enum" in s:
        run.judge(_in_enum(x, s["enum"]), path, f"must be one of {_show(s['enum'])}")
    if s.get("x-kubernetes-validations"):
        rules = [str(r.get("rule")) for r in s["x-kubernetes-validations"]
                 if isinstance(r, dict)]
        run.doubt(path, f"x-kubernetes-validations rules not evaluated here: {_show(rules)}")


def _check_kind(run: _Run, x: Any, s: Schema, path: str) -> None:
    if isinstance(x, str):
        _check_string(run, x, s, path)
    elif isinstance(x, (int, float)) and not isinstance(x, bool):
        _check_number(run, x, s, path)
    elif isinstance(x, list):
        _check_array(run, x, s, path)
    elif isinstance(x, dict):
        _check_object(run, x, s, path)


def _show(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


def _check_null(run: _Run, s: Schema, path: str) -> None:
    if _types(s) and not s.get("nullable"):
        run.fail(path, "must not be null")
    elif s.get("enum"):
        run.fail(path, f"must be one of {_show(s['enum'])}")


def _types(s: Schema) -> tuple[str, ...]:
    if s.get("x-kubernetes-int-or-string"):
        return ("integer", "string")
    t = s.get("type")
    return (t,) if isinstance(t, str) and t else ()


def _format(s: Schema) -> str:
    # formats the server does not recognise are dropped from the schema before validating
    f = s.get("format")
    return f if isinstance(f, str) and recognized(f) else ""


def _type_words(s: Schema) -> str:
    return ",".join(_types(s)) or _format(s)


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


def _type_ok(x: Any, s: Schema) -> bool | None:
    """kube-openapi's type validator (a number with an integral value is an integer)."""
    types, fmt = _types(s), _format(s)
    if not types and not fmt:
        return True
    actual = _json_type(x)
    if actual in types or (actual == "integer" and "number" in types):
        return True
    if fmt and actual in ("string", "array") and not {"number", "integer"} & set(types):
        return True
    return json_integer(x) if actual == "number" and "integer" in types else False


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


def _check_string(run: _Run, x: str, s: Schema, path: str) -> None:
    if "maxLength" in s and len(x) > s["maxLength"]:
        run.fail(path, f"may not be longer than {s['maxLength']} characters")
    if "minLength" in s and len(x) < s["minLength"]:
        run.fail(path, f"must be at least {s['minLength']} characters long")
    if isinstance(s.get("pattern"), str):
        run.judge(pattern_ok(s["pattern"], x), path, f"must match {_show(s['pattern'])}")
    if _format(s):
        run.judge(check_format(_format(s), x), path, f"must be of format {_format(s)}")


def _native(x: float, bound: float, s: Schema) -> bool:
    # kube-openapi compares an integer value as int64 with the bound cut to int64, unless
    # the schema is an integer's and the bound is no integer (then as floats)
    return isinstance(x, int) and (float(bound).is_integer() or "integer" not in _types(s))


def _check_number(run: _Run, x: float, s: Schema, path: str) -> None:
    for key, low in (("minimum", True), ("maximum", False)):
        bound = s.get(key)
        if isinstance(bound, (int, float)) and not isinstance(bound, bool):
            b = int(bound) if _native(x, bound, s) else float(bound)
            exclusive = bool(s.get("exclusiveMinimum" if low else "exclusiveMaximum"))
            bad = (x <= b if exclusive else x < b) if low else (x >= b if exclusive else x > b)
            run.judge(not bad, path, f"must be {'at least' if low else 'at most'} {bound}"
                      + (" (exclusive)" if exclusive else ""))
    factor = s.get("multipleOf")
    if isinstance(factor, (int, float)) and not isinstance(factor, bool):
        run.judge(_multiple(x, factor, s), path, f"must be a multiple of {factor}")


def _multiple(x: float, factor: float, s: Schema) -> bool | None:
    if _native(x, factor, s):
        return int(factor) > 0 and int(x) % int(factor) == 0
    if factor <= 0:
        return False
    return json_integer((1 / factor) * x if factor < 1 else x / factor)


def _check_array(run: _Run, x: list[Any], s: Schema, path: str) -> None:
    if "minItems" in s and len(x) < s["minItems"]:
        run.fail(path, f"must have at least {s['minItems']} items")
    if "maxItems" in s and len(x) > s["maxItems"]:
        run.fail(path, f"must have at most {s['maxItems']} items")
    items = s.get("items")
    if isinstance(items, dict):
        for i, v in enumerate(x):
            _check(run, v, items, f"{path}[{i}]")
    kind = s.get("x-kubernetes-list-type")
    if kind == "set":
        _check_duplicates(run, x, path, [_key(v) for v in x])
    elif kind == "map":
        _check_map_list(run, x, s.get("x-kubernetes-list-map-keys") or [], path)


def _key(v: Any) -> str:
    return json.dumps(v, sort_keys=True)


def _check_duplicates(run: _Run, x: list[Any], path: str, keys: list[str]) -> None:
    seen: set[str] = set()
    for i, k in enumerate(keys):
        if k in seen:
            run.fail(f"{path}[{i}]", "duplicate entry")
        seen.add(k)


def _check_map_list(run: _Run, x: list[Any], keys: list[str], path: str) -> None:
    bad = [i for i, v in enumerate(x) if v is not None and not isinstance(v, dict)]
    for i in bad:
        run.fail(f"{path}[{i}]", "must be an object in a list of type map")
    if not bad:
        # items lacking a key field share the key "unspecified", as on the server
        entries = [(i, v) for i, v in enumerate(x) if v is not None]
        _check_duplicates(run, [v for _, v in entries], path,
                          [_key([[v[k]] if k in v else [] for k in keys]) for _, v in entries])


def _check_object(run: _Run, x: dict[str, Any], s: Schema, path: str) -> None:
    if "minProperties" in s and len(x) < s["minProperties"]:
        run.fail(path, f"must have at least {s['minProperties']} properties")
    if "maxProperties" in s and len(x) > s["maxProperties"]:
        run.fail(path, f"must have at most {s['maxProperties']} properties")
    props: dict[str, Schema] = s.get("properties") or {}
    extra = s.get("additionalProperties")
    for k, v in x.items():
        sub = props[k] if k in props else extra if isinstance(extra, dict) else None
        if sub is not None:
            _check(run, v, sub, child(path, k))
        elif extra is False:
            run.fail(child(path, k), "is a forbidden property")
    for k in s.get("required") or ():
        if k not in x:
            run.fail(child(path, k), "is required")
    if path and s.get("x-kubernetes-embedded-resource"):
        _check_embedded(run, x, path)


def _check_embedded(run: _Run, x: dict[str, Any], path: str) -> None:
    for key in ("apiVersion", "kind"):
        ok, why = embedded.type_meta(key, x[key]) if key in x else (False, "is required")
        run.judge(ok, child(path, key), why)
    meta = x.get("metadata")
    if isinstance(meta, dict) and meta and not embedded.metadata_accepted(meta):
        run.doubt(child(path, "metadata"), "embedded metadata beyond names, namespace, "
                  "labels and annotations is not checked here")


def _in_enum(x: Any, allowed: Any) -> bool | None:
    """kube-openapi's enum: the value converted to each allowed value's type, compared."""
    if not isinstance(allowed, list):
        return True
    if isinstance(x, (dict, list)):
        # Go's DeepEqual also tells int64 from float64 inside: only number-free is certain
        if not any(_key(_ints(x)) == _key(_ints(e)) for e in allowed):
            return False
        return None if _has_number(x) else True
    return True if any(_same(x, e) for e in allowed) else \
        None if isinstance(x, float) and any(_same(int(x), e) for e in allowed) else False


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
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _same(x: Any, e: Any) -> bool:
    if isinstance(x, bool) or isinstance(e, bool):
        return isinstance(x, bool) and isinstance(e, bool) and x == e
    if isinstance(x, (int, float)) and isinstance(e, (int, float)):
        return float(x) == float(e)
    if isinstance(x, int) and isinstance(e, str):
        # Go converts an integer to a string as the rune it codes
        return 0 <= x <= 0x10FFFF and chr(x) == e
    return isinstance(x, str) and isinstance(e, str) and x == e


def _sub_run(x: Any, s: Schema, path: str) -> bool | None:
    run = _Run(1)
    _check(run, x, s, path)
    return False if run.bad else None if run.unsure else True


def _check_junctors(run: _Run, x: Any, s: Schema, path: str) -> None:
    for sub in s.get("allOf") or ():
        _check(run, x, sub, path)
    if s.get("anyOf"):
        found = [_sub_run(x, sub, path) for sub in s["anyOf"]]
        run.judge(True if True in found else None if None in found else False, path,
                  "must match at least one schema of anyOf")
    if s.get("oneOf"):
        found = [_sub_run(x, sub, path) for sub in s["oneOf"]]
        run.judge(None if None in found else found.count(True) == 1, path,
                  "must match exactly one schema of oneOf")
    if isinstance(s.get("not"), dict):
        found_not = _sub_run(x, s["not"], path)
        run.judge(None if found_not is None else not found_not, path,
                  "must not match the schema of not")
