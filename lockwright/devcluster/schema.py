"""Structural-schema semantics of custom resources: pruning, defaulting, validation.

These are the apiextensions-apiserver rules for objects of a CustomResourceDefinition,
written as plain functions over JSON-like values (dicts, lists, str, int, float, bool,
None) and an ``openAPIV3Schema`` dict exactly as the CRD spells it.

Why not ``jsonschema``: a structural schema is not JSON Schema. ``nullable``,
``x-kubernetes-int-or-string``, ``x-kubernetes-preserve-unknown-fields`` and
``x-kubernetes-embedded-resource`` change what a value may be and what is kept;
``x-kubernetes-list-type`` adds uniqueness rules; and kube-apiserver reports errors in
its own words (kube-openapi messages mapped to ``field.Error``), which clients and tests
compare verbatim. A ``jsonschema`` validator would need the schema rewritten per CRD and
every error message translated back, and compiling validators for 2,000 large CRDs costs
more than it saves. So each function walks the object, guided by the schema, touching
only the parts of the schema the object actually uses; the little that is worth reusing
(compiled patterns, "does this schema use CEL") is cached.

Order of the server's work on a write: ``prune`` (unknown fields), ``apply_defaults``
(which also drops non-nullable nulls), then ``validate``.
"""

from __future__ import annotations

import base64
import binascii
import functools
import ipaddress
import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lockwright.devcluster.types import clone

Schema = dict[str, Any]


# ------------------------------------------------------------------- errors, Go-rendered

class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()

_TYPE_WORDS = {
    "FieldValueNotFound": "Not found", "FieldValueRequired": "Required value",
    "FieldValueDuplicate": "Duplicate value", "FieldValueInvalid": "Invalid value",
    "FieldValueNotSupported": "Unsupported value", "FieldValueForbidden": "Forbidden",
    "FieldValueTooLong": "Too long", "FieldValueTooMany": "Too many",
    "InternalError": "Internal error", "FieldValueTypeInvalid": "Invalid value",
}
_VALUELESS = frozenset({"FieldValueRequired", "FieldValueForbidden", "FieldValueTooLong",
                        "InternalError"})


@dataclass(frozen=True)
class Cause:
    """One field error as kube-apiserver reports it (metav1.StatusCause).

    ``value`` is the bad value (``MISSING`` to leave it out of the text, as kube does for
    a quantity it does not know); it is rendered the way Go's ``field.Error`` does.
    """

    reason: str
    field: str
    detail: str
    value: Any = MISSING

    @property
    def body(self) -> str:
        """``field.Error.ErrorBody()``: the text without the field; a StatusCause's message."""
        words = _TYPE_WORDS.get(self.reason, self.reason)
        if self.reason not in _VALUELESS and self.value is not MISSING:
            words = f"{words}: {go_value(self.value)}"
        return f"{words}: {self.detail}" if self.detail else words

    @property
    def message(self) -> str:
        """``field.Error.Error()``: ``spec.package: Required value``."""
        return f"{self.field}: {self.body}"

    def status_cause(self) -> dict[str, str]:
        """The ``details.causes[]`` entry of a 422 Status (its message has no field)."""
        return {"reason": self.reason, "message": self.body, "field": self.field}


def invalid_message(kind: str, group: str, name: str, causes: list[Cause]) -> str:
    """The ``message`` of a 422 Invalid Status, as ``apierrors.NewInvalid`` writes it.

    Args:
        kind: The object's kind, e.g. ``Provider``.
        group: Its API group, empty for the core group.
        name: The object's name.
        causes: The field errors (repeated messages are shown once).

    Returns:
        ``Provider.pkg.crossplane.io "p" is invalid: spec.package: Required value`` or,
        with several distinct messages, ``... is invalid: [m1, m2]``.
    """
    qualified = f"{kind}.{group}" if group else kind
    head = f"{qualified} {go_quote(name)} is invalid"
    messages = list(dict.fromkeys(c.message for c in causes))
    if not messages:
        return head
    if len(messages) == 1:
        return f"{head}: {messages[0]}"
    return f"{head}: [{', '.join(messages)}]"


def go_quote(s: str) -> str:
    """Go's ``strconv.Quote`` (``%q``)."""
    out = ['"']
    for ch in s:
        out.append(_quote_char(ch))
    out.append('"')
    return "".join(out)


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n",
            "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def _quote_char(ch: str) -> str:
    if ch in _ESCAPES:
        return _ESCAPES[ch]
    if ch.isprintable():
        return ch
    code = ord(ch)
    if code < 0x80:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def go_number(n: float) -> str:
    """A number as Go's ``%v`` prints an int64 or a float64 (``1e+06``, ``0.5``)."""
    if isinstance(n, int):
        return str(n)
    if math.isnan(n):
        return "NaN"
    if math.isinf(n):
        return "+Inf" if n > 0 else "-Inf"
    if n == 0:
        return "-0" if math.copysign(1, n) < 0 else "0"
    digits, point = _shortest_digits(abs(n))
    sign = "-" if n < 0 else ""
    exp = point - 1
    if exp < -4 or exp >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    whole = digits[:point].ljust(point, "0")
    frac = digits[point:]
    return f"{sign}{whole}.{frac}" if frac else f"{sign}{whole}"


def _shortest_digits(f: float) -> tuple[str, int]:
    """Shortest round-trip digits of ``f`` and the decimal point's position."""
    text = repr(f)
    mantissa, _, exponent = text.partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = whole + frac
    point = len(whole) + int(exponent or 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    return stripped.rstrip("0") or "0", point


def go_value(v: Any) -> str:
    """A bad value as ``field.Error.ErrorBody`` renders it (Go ``%v``/``%q``/``%#v``)."""
    if v is None:
        return '"null"'
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return go_number(v)
    if isinstance(v, str):
        return go_quote(v)
    if isinstance(v, GoLiteral):
        return v.text
    return _sharp_v(v)


@dataclass(frozen=True)
class GoLiteral:
    """A value whose Go rendering is given verbatim (a Go struct kube prints with ``%#v``)."""

    text: str


def _sharp_v(v: Any) -> str:
    """Go's ``%#v`` of an unstructured value (``map[string]interface {}{"a":1}``)."""
    if isinstance(v, dict):
        inner = ", ".join(f"{go_quote(str(k))}:{_sharp_v(v[k])}" for k in sorted(v))
        return f"map[string]interface {{}}{{{inner}}}"
    if isinstance(v, list):
        return f"[]interface {{}}{{{', '.join(_sharp_v(i) for i in v)}}}"
    if v is None:
        return "interface {}(nil)"
    return go_value(v)


def go_json(v: Any) -> str:
    """Go's ``json.Marshal`` of an unstructured value (sorted keys, Go float text)."""
    if isinstance(v, dict):
        return "{" + ",".join(f"{_json_str(str(k))}:{go_json(v[k])}" for k in sorted(v)) + "}"
    if isinstance(v, list):
        return "[" + ",".join(go_json(i) for i in v) + "]"
    if isinstance(v, str):
        return _json_str(v)
    if isinstance(v, float) and not isinstance(v, bool):
        return _json_float(v)
    return json.dumps(v)


def _json_str(s: str) -> str:
    return (json.dumps(s, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("&", "\\u0026").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _json_float(f: float) -> str:
    if f == 0 or 1e-6 <= abs(f) < 1e21:
        digits, point = _shortest_digits(abs(f)) if f else ("0", 1)
        text = go_number(f) if -4 <= point - 1 < 6 else _fixed(digits, point)
        return ("-" if f < 0 and not text.startswith("-") else "") + text
    text = go_number(f)
    return re.sub(r"e([+-])0(\d)$", r"e\1\2", text)


def _fixed(digits: str, point: int) -> str:
    if point <= 0:
        return f"0.{'0' * -point}{digits}"
    whole, frac = digits[:point].ljust(point, "0"), digits[point:]
    return f"{whole}.{frac}" if frac else whole

_OBJECT_META_FIELDS = frozenset({
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
    "annotations", "ownerReferences", "finalizers", "managedFields",
})
_BLOCKING = frozenset({
    "FieldValueNotSupported", "FieldValueRequired", "FieldValueTooLong", "FieldValueTooMany",
    "FieldValueTypeInvalid",
})
_CEL_SKIPPED = ("some validation rules were not checked because the object was invalid; "
                "correct the existing errors to complete validation")


# ----------------------------------------------------------------------------- pruning

def prune(obj: dict[str, Any], schema: Schema) -> list[str]:
    """Drops, in place, every field the schema does not specify.

    ``apiVersion``, ``kind`` and ``metadata`` survive at the root and in embedded
    resources (``x-kubernetes-embedded-resource``); an embedded ``metadata`` keeps only
    ObjectMeta fields. Subtrees marked ``x-kubernetes-preserve-unknown-fields`` keep
    unknown fields but their specified properties are still pruned.

    Args:
        obj: The object, modified in place.
        schema: The version's ``openAPIV3Schema``.

    Returns:
        The dropped fields as paths from the root (``.spec.foo``, ``.spec.list[0].bar``).
    """
    pruned: list[str] = []
    _prune(obj, {**schema, "x-kubernetes-embedded-resource": True}, "", pruned, root=True)
    return pruned


def _prune(x: Any, s: Schema | None, path: str, out: list[str], root: bool = False) -> None:
    if s is not None and s.get("x-kubernetes-preserve-unknown-fields"):
        _skip_prune(x, s, path, out)
    elif isinstance(x, dict):
        _prune_map(x, s, path, out, root)
    elif isinstance(x, list):
        items = s.get("items") if s is not None else None
        for i, v in enumerate(x):
            _prune(v, items, f"{path}[{i}]", out)


def _prune_map(x: dict[str, Any], s: Schema | None, path: str, out: list[str],
               root: bool) -> None:
    props = (s.get("properties") or {}) if s is not None else {}
    extra = s.get("additionalProperties") if s is not None else None
    embedded = s is not None and s.get("x-kubernetes-embedded-resource", False)
    for k in list(x):
        v = x[k]
        if embedded and _is_meta_field(k, v):
            if k == "metadata" and not root:
                _prune_object_meta(v, f"{path}.metadata", out)
        elif k in props:
            _prune(v, props[k], f"{path}.{k}", out)
        elif extra is not None:
            # additionalProperties true/false has no schema: the key stays (false is a
            # validation error) but whatever is nested in it is unknown.
            _prune(v, extra if isinstance(extra, dict) else None, f"{path}.{k}", out)
        else:
            out.append(f"{path}.{k}")
            del x[k]


def _is_meta_field(key: str, value: Any) -> bool:
    if key in ("apiVersion", "kind"):
        return isinstance(value, str)
    return key == "metadata" and isinstance(value, dict)


def _prune_object_meta(meta: dict[str, Any], path: str, out: list[str]) -> None:
    for k in [k for k in meta if k not in _OBJECT_META_FIELDS]:
        out.append(f"{path}.{k}")
        del meta[k]


def _skip_prune(x: Any, s: Schema, path: str, out: list[str]) -> None:
    if isinstance(x, dict):
        props = s.get("properties") or {}
        extra = s.get("additionalProperties")
        embedded = s.get("x-kubernetes-embedded-resource", False)
        for k, v in list(x.items()):
            if embedded and _is_meta_field(k, v):
                continue
            if k in props:
                _prune(v, props[k], f"{path}.{k}", out)
            elif isinstance(extra, dict):
                _prune(v, extra, f"{path}.{k}", out)
    elif isinstance(x, list) and isinstance(s.get("items"), dict):
        for i, v in enumerate(x):
            _skip_prune(v, s["items"], f"{path}[{i}]", out)


# --------------------------------------------------------------------------- defaulting

def apply_defaults(obj: dict[str, Any], schema: Schema) -> None:
    """Applies ``default`` values in place, the way apiextensions defaulting does.

    A missing field gets a deep copy of its default, and the copy is defaulted further.
    A ``null`` in a field that is not ``nullable`` is replaced by the default, or
    dropped when there is none. Array items and ``additionalProperties`` values are
    defaulted through their schemas.

    Args:
        obj: The (already pruned) object, modified in place.
        schema: The version's ``openAPIV3Schema``.
    """
    _default(obj, schema)


def _default(x: Any, s: Schema) -> None:
    if isinstance(x, dict):
        _default_map(x, s)
    elif isinstance(x, list):
        items = s.get("items")
        if not isinstance(items, dict):
            return
        for i, v in enumerate(x):
            if v is None and "default" in items and not items.get("nullable"):
                x[i] = v = clone(items["default"])
            if isinstance(v, (dict, list)):
                _default(v, items)


def _default_map(x: dict[str, Any], s: Schema) -> None:
    props: dict[str, Schema] = s.get("properties") or {}
    for k, p in _defaulted_properties(s):
        if k not in x or (x[k] is None and not p.get("nullable")):
            x[k] = clone(p["default"])
    extra = s.get("additionalProperties")
    for k in list(x):
        sub = props.get(k) or (extra if isinstance(extra, dict) else None)
        if sub is None:
            continue
        p, v = sub, x[k]
        if v is None and not p.get("nullable"):
            if "default" not in p:
                del x[k]
                continue
            x[k] = v = clone(p["default"])
        if isinstance(v, (dict, list)):
            _default(v, p)


_DEFAULTED: dict[int, tuple[Schema, tuple[tuple[str, Schema], ...]]] = {}


def _defaulted_properties(s: Schema) -> tuple[tuple[str, Schema], ...]:
    # Objects of a type share one schema dict, so the scan for defaults is done once.
    hit = _DEFAULTED.get(id(s))
    if hit is not None and hit[0] is s:
        return hit[1]
    found = tuple((k, p) for k, p in (s.get("properties") or {}).items() if "default" in p)
    if len(_DEFAULTED) > 100_000:
        _DEFAULTED.clear()
    _DEFAULTED[id(s)] = (s, found)
    return found


# --------------------------------------------------------------------------- validation

def validate(obj: dict[str, Any], schema: Schema) -> list[Cause]:
    """Validates a pruned, defaulted custom object against its schema.

    Produces the errors kube-apiserver reports, in its order: OpenAPI value validation,
    then embedded-resource ``apiVersion``/``kind``, then ``x-kubernetes-list-type``
    uniqueness; CEL rules are not evaluated, but when the schema has some and a blocking
    error was found, the server's "some validation rules were not checked" cause is
    added as it would be.

    Args:
        obj: The object (root ``metadata`` is the server's business).
        schema: The version's ``openAPIV3Schema``.

    Returns:
        The causes, empty when the object is valid.
    """
    out: list[Cause] = []
    _check(obj, schema, "", out)
    _check_embedded(obj, schema, "", out)
    _check_list_types(obj, schema, "", out)
    if any(c.reason in _BLOCKING for c in out) and has_cel(schema):
        out.append(Cause("FieldValueInvalid", "<nil>", _CEL_SKIPPED, None))
    return out


def _check(x: Any, s: Schema, path: str, out: list[Cause]) -> None:
    _check_type(x, s, path, out)
    if x is None:
        _check_enum(x, s, path, out)
        return
    if "allOf" in s or "anyOf" in s or "oneOf" in s or "not" in s:
        _check_junctors(x, s, path, out)
    if isinstance(x, str):
        _check_string(x, s, path, out)
    elif isinstance(x, (int, float)) and not isinstance(x, bool):
        _check_number(x, s, path, out)
    elif isinstance(x, list):
        _check_array(x, s, path, out)
    if "enum" in s:
        _check_enum(x, s, path, out)
    if isinstance(x, dict):
        _check_object(x, s, path, out)


def _json_type(x: Any) -> str:
    if x is None:
        return "null"
    if isinstance(x, bool):
        return "boolean"
    if isinstance(x, int):
        return "integer"
    if isinstance(x, float):
        return "number"
    if isinstance(x, str):
        return "string"
    return "array" if isinstance(x, list) else "object"


def _types(s: Schema) -> tuple[str, ...]:
    if s.get("x-kubernetes-int-or-string"):
        return ("integer", "string")
    t = s.get("type")
    return (t,) if t else ()


def _type_error(path: str, expected: str, actual: str) -> Cause:
    return Cause("FieldValueTypeInvalid", path, f"{path} in body must be of type {expected}: "
                 f"{go_quote(actual)}", actual)


def _check_type(x: Any, s: Schema, path: str, out: list[Cause]) -> None:
    types = _types(s)
    if x is None:
        if types and not s.get("nullable"):
            out.append(_type_error(path, ",".join(types), "null"))
        return
    fmt = s.get("format", "")
    if not types and not fmt:
        return
    actual = _json_type(x)
    native = _NATIVE_FORMAT.get(actual, "")
    matches = actual in types or _numeric_compatible(x, actual, types)
    if fmt and actual not in ("string", "array") and not (matches or fmt == native):
        out.append(_type_error(path, fmt, native))
    elif not matches and types and not (fmt and actual in ("string", "array")
                                        and not {"integer", "number"} & set(types)):
        out.append(_type_error(path, ",".join(types), actual))


_NATIVE_FORMAT = {"integer": "int64", "number": "float64"}


def _numeric_compatible(x: Any, actual: str, types: tuple[str, ...]) -> bool:
    if actual == "integer":
        return "number" in types
    return actual == "number" and "integer" in types and float(x).is_integer()


def _check_junctors(x: Any, s: Schema, path: str, out: list[Cause]) -> None:
    if "anyOf" in s:
        results = [_sub_check(x, sub, path) for sub in s["anyOf"]]
        if not any(not r for r in results):
            out.append(_composite(f"{go_quote(path)} must validate at least one schema (anyOf)"))
            out.extend(_fewest(results))
    if "oneOf" in s:
        _check_one_of(x, s["oneOf"], path, out)
    if "allOf" in s:
        results = [_sub_check(x, sub, path) for sub in s["allOf"]]
        for r in results:
            out.extend(r)
        valid = sum(1 for r in results if not r)
        if valid != len(results):
            none = ". None validated" if valid == 0 else ""
            out.append(_composite(f"{go_quote(path)} must validate all the schemas (allOf){none}"))
    if "not" in s and not _sub_check(x, s["not"], path):
        out.append(_composite(f"{go_quote(path)} must not validate the schema (not)"))


def _check_one_of(x: Any, subs: list[Schema], path: str, out: list[Cause]) -> None:
    results = [_sub_check(x, sub, path) for sub in subs]
    valid = sum(1 for r in results if not r)
    if valid == 1:
        return
    found = "Found none valid" if valid == 0 else f"Found {valid} valid alternatives"
    out.append(_composite(f"{go_quote(path)} must validate one and only one schema (oneOf). "
                          f"{found}"))
    if valid == 0:
        out.extend(_fewest(results))


def _fewest(results: list[list[Cause]]) -> list[Cause]:
    # kube-openapi reports the branch with most passed checks; fewest errors is close.
    return min(results, key=len)


def _sub_check(x: Any, s: Schema, path: str) -> list[Cause]:
    found: list[Cause] = []
    _check(x, s, path, found)
    return found


def _composite(detail: str) -> Cause:
    # kube-openapi reports junctor failures as plain errors, which the apiserver turns
    # into an Invalid error without a field path.
    return Cause("FieldValueInvalid", "<nil>", detail, "")


def _check_string(x: str, s: Schema, path: str, out: list[Cause]) -> None:
    if "maxLength" in s and len(x) > s["maxLength"]:
        out.append(Cause("FieldValueTooLong", path, _too_long_detail(s["maxLength"])))
    elif "minLength" in s and len(x) < s["minLength"]:
        out.append(Cause("FieldValueInvalid", path, f"{path} in body should be at least "
                         f"{s['minLength']} chars long", x))
    elif "pattern" in s and not _matches(s["pattern"], x):
        out.append(Cause("FieldValueInvalid", path,
                         f"{path} in body should match '{s['pattern']}'", x))
    fmt = s.get("format")
    if fmt and fmt in _FORMATS and not _FORMATS[fmt](x):
        out.append(Cause("FieldValueTypeInvalid", path,
                         f"{path} in body must be of type {fmt}: {go_quote(x)}", x))


def _too_long_detail(limit: int) -> str:
    return f"may not be more than {limit} {'byte' if limit == 1 else 'bytes'}"


@functools.lru_cache(maxsize=8192)
def _compiled(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern, re.ASCII)
    except re.error:
        return None


def _matches(pattern: str, value: str) -> bool:
    rx = _compiled(pattern)
    # A pattern Go's RE2 accepts but Python's re cannot compile is not held against the value.
    return rx is None or rx.search(value) is not None


def _check_number(x: float, s: Schema, path: str, out: list[Cause]) -> None:
    if "multipleOf" in s:
        _check_multiple(x, s["multipleOf"], path, out)
    if "minimum" in s:
        _check_bound(x, s["minimum"], bool(s.get("exclusiveMinimum")), path, out, low=True)
    if "maximum" in s:
        _check_bound(x, s["maximum"], bool(s.get("exclusiveMaximum")), path, out, low=False)


def _check_multiple(x: float, factor: float, path: str, out: list[Cause]) -> None:
    if isinstance(x, int) and int(factor) != 0:
        ok, shown = x % int(factor) == 0, go_number(int(factor))
    else:
        mult = x * (1 / factor) if factor < 1 else x / factor
        ok, shown = float(mult).is_integer(), go_number(float(factor))
    if not ok:
        out.append(Cause("FieldValueInvalid", path,
                         f"{path} in body should be a multiple of {shown}", x))


def _check_bound(x: float, bound: float, exclusive: bool, path: str,
                 out: list[Cause], low: bool) -> None:
    # Go compares an integer value with the bound converted to int64 (truncated).
    b: int | float = int(bound) if isinstance(x, int) else float(bound)
    if low:
        bad = x <= b if exclusive else x < b
        words = "greater than" if exclusive else "greater than or equal to"
    else:
        bad = x >= b if exclusive else x > b
        words = "less than" if exclusive else "less than or equal to"
    if bad:
        out.append(Cause("FieldValueInvalid", path,
                         f"{path} in body should be {words} {go_number(b)}", x))


def _check_array(x: list[Any], s: Schema, path: str, out: list[Cause]) -> None:
    items = s.get("items")
    if isinstance(items, dict):
        for i, v in enumerate(x):
            _check(v, items, f"{path}[{i}]", out)
    if "minItems" in s and len(x) < s["minItems"]:
        out.append(Cause("FieldValueInvalid", path, f"{path} in body should have at least "
                         f"{s['minItems']} items", len(x)))
    if "maxItems" in s and len(x) > s["maxItems"]:
        out.append(too_many(path, len(x), s["maxItems"]))
    if s.get("uniqueItems") and _has_duplicates(x):
        out.append(Cause("FieldValueInvalid", path,
                         f"{path} in body shouldn't contain duplicates", ""))


def too_many(path: str, actual: int, limit: int) -> Cause:
    """The kube ``field.TooMany`` error."""
    noun = "item" if limit == 1 else "items"
    return Cause("FieldValueTooMany", path, f"must have at most {limit} {noun}", actual)


def _has_duplicates(x: list[Any]) -> bool:
    return len({_key(v) for v in x}) != len(x)


def _key(v: Any) -> str:
    return json.dumps(v, sort_keys=True)


def _check_enum(x: Any, s: Schema, path: str, out: list[Cause]) -> None:
    allowed = s.get("enum")
    if not allowed or any(_same_value(x, e) for e in allowed):
        return
    shown = [e if isinstance(e, str) else go_json(e) for e in allowed]
    out.append(not_supported(path, x, shown))


def not_supported(path: str, value: Any, allowed: Iterable[str]) -> Cause:
    """The kube ``field.NotSupported`` error."""
    detail = "supported values: " + ", ".join(go_quote(a) for a in allowed)
    return Cause("FieldValueNotSupported", path, detail, value)


def _same_value(x: Any, e: Any) -> bool:
    if x is None or e is None:
        return False
    if isinstance(x, bool) or isinstance(e, bool):
        return isinstance(x, bool) and isinstance(e, bool) and x == e
    numeric = (int, float)
    if isinstance(x, numeric) and isinstance(e, numeric):
        return x == e
    return type(x) is type(e) and x == e


def _check_object(x: dict[str, Any], s: Schema, path: str, out: list[Cause]) -> None:
    if "minProperties" in s and len(x) < s["minProperties"]:
        out.append(Cause("FieldValueInvalid", path, f"{path} in body should have at least "
                         f"{s['minProperties']} properties", len(x)))
        return
    if "maxProperties" in s and len(x) > s["maxProperties"]:
        out.append(too_many(path, len(x), s["maxProperties"]))
        return
    props: dict[str, Schema] = s.get("properties") or {}
    extra = s.get("additionalProperties")
    prefix = f"{path}." if path else ""
    for k, v in x.items():
        if k in props:
            _check(v, props[k], prefix + k, out)
        elif isinstance(extra, dict):
            _check(v, extra, prefix + k, out)
        elif extra is False:
            out.append(Cause("FieldValueInvalid", path or "<nil>",
                             f"{path}.{k} in body is a forbidden property", k))
    for k in s.get("required") or ():
        if k not in x:
            out.append(Cause("FieldValueRequired", prefix + k, ""))


# ---------------------------------------------------------------- embedded and list types

def _children(x: Any, s: Schema, path: str) -> Iterable[tuple[Any, Schema, str]]:
    if isinstance(x, dict):
        props: dict[str, Schema] = s.get("properties") or {}
        extra = s.get("additionalProperties")
        prefix = f"{path}." if path else ""
        for k, v in x.items():
            sub = props.get(k) or (extra if isinstance(extra, dict) else None)
            if sub is not None and isinstance(v, (dict, list)):
                yield v, sub, prefix + k
    elif isinstance(x, list) and isinstance(s.get("items"), dict):
        for i, v in enumerate(x):
            if isinstance(v, (dict, list)):
                yield v, s["items"], f"{path}[{i}]"


def _check_embedded(x: Any, s: Schema, path: str, out: list[Cause]) -> None:
    if path and isinstance(x, dict) and s.get("x-kubernetes-embedded-resource"):
        for key in ("apiVersion", "kind"):
            if key not in x:
                out.append(Cause("FieldValueRequired", f"{path}.{key}", "must not be empty"))
            elif not isinstance(x[key], str):
                out.append(Cause("FieldValueInvalid", f"{path}.{key}", "must be a string", x[key]))
            elif not x[key]:
                out.append(Cause("FieldValueInvalid", f"{path}.{key}", "must not be empty", ""))
    for v, sub, p in _children(x, s, path):
        _check_embedded(v, sub, p, out)


def _check_list_types(x: Any, s: Schema, path: str, out: list[Cause]) -> None:
    if isinstance(x, list):
        kind = s.get("x-kubernetes-list-type")
        if kind == "set":
            _check_set(x, path, out)
        elif kind == "map":
            _check_map_list(x, s.get("x-kubernetes-list-map-keys") or [], path, out)
    for v, sub, p in _children(x, s, path):
        _check_list_types(v, sub, p, out)


def _check_set(x: list[Any], path: str, out: list[Cause]) -> None:
    seen: dict[str, int] = {}
    for i, v in enumerate(x):
        key = _key(v)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] == 2:
            out.append(Cause("FieldValueDuplicate", f"{path}[{i}]", "", v))


def _check_map_list(x: list[Any], keys: list[str], path: str, out: list[Cause]) -> None:
    bad = [i for i, v in enumerate(x) if v is not None and not isinstance(v, dict)]
    for i in bad:
        out.append(Cause("FieldValueInvalid", f"{path}[{i}]",
                         "must be an object for an array of list-type map", x[i]))
    if bad:
        return
    seen: dict[str, int] = {}
    for i, v in enumerate(x):
        if v is None:
            continue
        # Items without a key field all share one "unspecified" key, as in kube.
        key = _key([[v[k]] if k in v else [] for k in keys])
        seen[key] = seen.get(key, 0) + 1
        if seen[key] == 2:
            out.append(Cause("FieldValueDuplicate", f"{path}[{i}]", "", v))


_CEL: dict[int, tuple[Schema, bool]] = {}


def has_cel(schema: Schema) -> bool:
    """Whether any node of the schema has ``x-kubernetes-validations`` (cached per schema)."""
    hit = _CEL.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    found = '"x-kubernetes-validations"' in json.dumps(schema)
    if len(_CEL) > 10_000:
        _CEL.clear()
    _CEL[id(schema)] = (schema, found)
    return found


# ------------------------------------------------------------------------------ formats

_UUID = re.compile(r"^[0-9a-f]{8}-?([0-9a-f]{4}-?){3}[0-9a-f]{12}$", re.IGNORECASE)
_HOSTNAME = re.compile(r"^([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)*"
                       r"[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.?$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")
_MAC = re.compile(r"^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$")
_DURATION = re.compile(r"^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h|d|w)\s*)+$")
_DATE_TIME = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?$")


def _is_date(v: str) -> bool:
    try:
        datetime.strptime(v, "%Y-%m-%d")
    except ValueError:
        return False
    return True


def _is_date_time(v: str) -> bool:
    if not _DATE_TIME.match(v):
        return False
    try:
        datetime.strptime(v[:10], "%Y-%m-%d")
    except ValueError:
        return False
    return True


def _is_byte(v: str) -> bool:
    try:
        base64.b64decode(v, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _is_ip(version: int) -> Any:
    def check(v: str) -> bool:
        try:
            return ipaddress.ip_address(v).version == version
        except ValueError:
            return False
    return check


def _is_cidr(v: str) -> bool:
    try:
        ipaddress.ip_network(v, strict=False)
    except ValueError:
        return False
    return "/" in v


_FORMATS: dict[str, Any] = {
    "date-time": _is_date_time, "datetime": _is_date_time, "date": _is_date, "byte": _is_byte,
    "uuid": _UUID.match, "uuid3": _UUID.match, "uuid4": _UUID.match, "uuid5": _UUID.match,
    "ipv4": _is_ip(4), "ipv6": _is_ip(6), "cidr": _is_cidr, "mac": _MAC.match,
    "hostname": _HOSTNAME.match, "email": _EMAIL.match, "duration": _DURATION.match,
}

