"""Validation of a custom resource against a CRD version's structural schema, locally.

The API server's order: prune, drop non-nullable nulls, default (``normalize``), then
validate with kube-openapi's rules as apiextensions-apiserver configures them, then the
embedded-resource and list-type checks, then CEL. Only the rules of
:mod:`lockwright.crvalidate.cel`'s small grammar (upjet's required-parameter rules) run
here; any other ``x-kubernetes-validations`` rule on a value makes the verdict
``cannot-check``, and so does any corner this port does not reproduce exactly (see
``formats``, ``embedded``, regular expressions RE2 and Python read differently). The
caller fails closed on it.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from lockwright.crvalidate import cel, embedded, scalars
from lockwright.crvalidate.normalize import normalize
from lockwright.crvalidate.scalars import Judgement, show
from lockwright.crvalidate.scalars import key as canonical

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

    def judge_all(self, found: list[Judgement], path: str) -> None:
        for ok, reason in found:
            self.judge(ok, path, reason)

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


_PLAIN_KEY = re.compile(r"[^.\[\]\"' ]+")


def child(path: str, key: str) -> str:
    """The path of ``key`` under ``path``."""
    plain = _PLAIN_KEY.fullmatch(key)
    return f"{path}.{key}" if plain else f"{path}[{json.dumps(key)}]"


def _check(run: _Run, x: Any, s: Schema, path: str) -> None:
    if run.full:
        return
    if x is None:
        _check_null(run, s, path)
        return
    run.judge(scalars.type_ok(x, s), path, f"must be of type {scalars.type_words(s)}")
    if "allOf" in s or "anyOf" in s or "oneOf" in s or "not" in s:
        _check_junctors(run, x, s, path)
    _check_kind(run, x, s, path)
    if "enum" in s:
        run.judge(scalars.in_enum(x, s["enum"]), path, f"must be one of {show(s['enum'])}")
    if s.get("x-kubernetes-validations"):
        _check_rules(run, x, s["x-kubernetes-validations"], path)


def _check_rules(run: _Run, x: Any, rules: Any, path: str) -> None:
    """The rules of ``cel``'s grammar judged; any other left as a doubt (fails closed)."""
    unsure = []
    for r in rules if isinstance(rules, list) else [rules]:
        text = str(r.get("rule")) if isinstance(r, dict) else str(r)
        found = cel.evaluate(text, x)
        if found is False or found == cel.ERROR:
            message = r.get("message") if isinstance(r, dict) else None
            run.fail(path, str(message or f"failed rule: {text}"))
        elif found is not True:
            unsure.append(text)
    if unsure:
        run.doubt(path, f"x-kubernetes-validations rules not evaluated here: {show(unsure)}")


def _check_kind(run: _Run, x: Any, s: Schema, path: str) -> None:
    if isinstance(x, str):
        run.judge_all(scalars.string_checks(x, s), path)
    elif isinstance(x, (int, float)) and not isinstance(x, bool):
        run.judge_all(scalars.number_checks(x, s), path)
    elif isinstance(x, list):
        _check_array(run, x, s, path)
    elif isinstance(x, dict):
        _check_object(run, x, s, path)


def _check_null(run: _Run, s: Schema, path: str) -> None:
    if scalars.types(s) and not s.get("nullable"):
        run.fail(path, "must not be null")
    elif s.get("enum"):
        run.fail(path, f"must be one of {show(s['enum'])}")


def _check_array(run: _Run, x: list[Any], s: Schema, path: str) -> None:
    _check_size(run, len(x), s, path, "items")
    items = s.get("items")
    if isinstance(items, dict):
        for i, v in enumerate(x):
            _check(run, v, items, f"{path}[{i}]")
    kind = s.get("x-kubernetes-list-type")
    if kind == "set":
        _check_duplicates(run, path, [(i, canonical(v)) for i, v in enumerate(x)])
    elif kind == "map":
        _check_map_list(run, x, s.get("x-kubernetes-list-map-keys") or [], path)


def _check_duplicates(run: _Run, path: str, keys: list[tuple[int, str]]) -> None:
    seen: set[str] = set()
    for i, k in keys:
        if k in seen:
            run.fail(f"{path}[{i}]", "duplicate entry")
        seen.add(k)


def _check_map_list(run: _Run, x: list[Any], keys: list[str], path: str) -> None:
    bad = [i for i, v in enumerate(x) if v is not None and not isinstance(v, dict)]
    for i in bad:
        run.fail(f"{path}[{i}]", "must be an object in a list of type map")
    if not bad:
        # items lacking a key field share the key "unspecified", as on the server
        _check_duplicates(run, path, [(i, canonical([[v[k]] if k in v else [] for k in keys]))
                                      for i, v in enumerate(x) if v is not None])


def _check_size(run: _Run, size: int, s: Schema, path: str, noun: str) -> None:
    low, high = s.get(f"min{noun.title()}"), s.get(f"max{noun.title()}")
    if isinstance(low, int) and size < low:
        run.fail(path, f"must have at least {low} {noun}")
    if isinstance(high, int) and size > high:
        run.fail(path, f"must have at most {high} {noun}")


def _check_object(run: _Run, x: dict[str, Any], s: Schema, path: str) -> None:
    _check_size(run, len(x), s, path, "properties")
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
        run.judge(False if found.count(True) > 1 else None if None in found
                  else found.count(True) == 1, path, "must match exactly one schema of oneOf")
    if isinstance(s.get("not"), dict):
        found_not = _sub_run(x, s["not"], path)
        run.judge(None if found_not is None else not found_not, path,
                  "must not match the schema of not")
