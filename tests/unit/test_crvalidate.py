"""Local validation of custom resources: one rich schema, an object per way to be (in)valid.

``SCHEMA`` and ``CASES`` are shared with tests/integration/test_crvalidate_agrees.py, which
sends every case to devcluster as a server-side dry run and asserts the same verdict. Here:
each case's verdict and first violation path; CEL and what this port cannot vouch for give
``cannot-check``; the input is never modified; the violation limit; the string formats as
kube-openapi checks them, with its own test vectors where it has them.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from lockwright.crvalidate import CANNOT_CHECK, INVALID, VALID, Validation, Violation, validate
from lockwright.crvalidate.formats import check as check_format
from lockwright.crvalidate.formats import recognized

Obj = dict[str, Any]
S: Obj = {"type": "string"}
I: Obj = {"type": "integer"}

SPEC: Obj = {"type": "object", "required": ["name", "size"], "properties": {
    "name": {**S, "minLength": 2, "maxLength": 10, "pattern": "^[a-z][a-z0-9-]*$"},
    "size": {**I, "minimum": 1, "maximum": 10},
    "ratio": {"type": "number", "minimum": 0, "maximum": 1, "exclusiveMaximum": True},
    "step": {**I, "multipleOf": 5},
    "mode": {**S, "enum": ["Managed", "Unmanaged"], "default": "Managed"},
    "port": {"x-kubernetes-int-or-string": True},
    "note": {**S, "nullable": True},
    "flag": {"type": "boolean"},
    "when": {**S, "format": "date-time"},
    "addr": {**S, "format": "ipv4"},
    "host": {**S, "format": "hostname"},
    "timeout": {**S, "format": "duration"},
    "bits": {**I, "format": "int32"},
    "tags": {"type": "array", "minItems": 1, "maxItems": 3, "items": S,
             "x-kubernetes-list-type": "set"},
    "ports": {"type": "array", "x-kubernetes-list-type": "map",
              "x-kubernetes-list-map-keys": ["name"], "items": {
                  "type": "object", "required": ["name", "port"],
                  "properties": {"name": S, "port": I}}},
    "labels": {"type": "object", "maxProperties": 2, "additionalProperties": S},
    "closed": {"type": "object", "additionalProperties": False},
    "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    "config": {"type": "object", "required": ["region"], "properties": {
        "region": S, "zone": {**S, "default": "a", "enum": ["a", "b"]}}},
    "manifest": {"type": "object", "x-kubernetes-embedded-resource": True,
                 "x-kubernetes-preserve-unknown-fields": True},
    "either": {"type": "object", "properties": {"a": S, "b": S},
               "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
    "guarded": {**S, "x-kubernetes-validations": [{"rule": "self != 'forbidden'"}]},
}}
SCHEMA: Obj = {"type": "object", "required": ["spec"], "properties": {
    "apiVersion": S, "kind": S, "metadata": {"type": "object"}, "spec": SPEC}}

OK: Obj = {"name": "ab", "size": 1}

# (id, spec (None: no spec at all), verdict, first violation path or None)
CASES: list[tuple[str, Obj | None, str, str | None]] = [
    ("minimal", OK, VALID, None),
    ("full", {**OK, "ratio": 0.5, "step": 10, "mode": "Unmanaged", "port": "http",
              "note": "n", "flag": True, "when": "2024-01-01T00:00:00Z", "addr": "10.0.0.1",
              "host": "example.com", "timeout": "1h30m", "bits": 7, "tags": ["a", "b"],
              "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}],
              "labels": {"a": "1"}, "closed": {}, "raw": {"x": [1, {"y": None}]},
              "config": {"region": "eu"}, "either": {"a": "x"},
              "manifest": {"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "cm", "labels": {"app": "x"}}}},
     VALID, None),
    ("unknown-field-pruned", {**OK, "extra": {"deep": 1}}, VALID, None),
    ("no-spec", None, INVALID, ".spec"),
    ("required-missing", {"name": "ab"}, INVALID, ".spec.size"),
    ("required-null-pruned", {**OK, "size": None}, INVALID, ".spec.size"),
    ("optional-null-pruned", {**OK, "addr": None, "flag": None}, VALID, None),
    ("null-defaulted", {**OK, "mode": None}, VALID, None),
    ("nullable-null", {**OK, "note": None}, VALID, None),
    ("integer-as-string", {**OK, "size": "3"}, INVALID, ".spec.size"),
    ("integer-as-integral-float", {**OK, "size": 3.0}, VALID, None),
    ("integer-as-fraction", {**OK, "size": 3.5}, INVALID, ".spec.size"),
    ("integer-as-bool", {**OK, "size": True}, INVALID, ".spec.size"),
    ("boolean-as-string", {**OK, "flag": "true"}, INVALID, ".spec.flag"),
    ("below-minimum", {**OK, "size": 0}, INVALID, ".spec.size"),
    ("above-maximum", {**OK, "size": 11}, INVALID, ".spec.size"),
    ("exclusive-maximum", {**OK, "ratio": 1}, INVALID, ".spec.ratio"),
    ("number-as-integer", {**OK, "ratio": 0}, VALID, None),
    ("not-a-multiple", {**OK, "step": 7}, INVALID, ".spec.step"),
    ("enum-outside", {**OK, "mode": "Other"}, INVALID, ".spec.mode"),
    ("int-or-string-int", {**OK, "port": 8080}, VALID, None),
    ("int-or-string-bool", {**OK, "port": True}, INVALID, ".spec.port"),
    ("int-or-string-fraction", {**OK, "port": 1.5}, INVALID, ".spec.port"),
    ("pattern-mismatch", {**OK, "name": "Ab"}, INVALID, ".spec.name"),
    ("too-long", {**OK, "name": "abcdefghijk"}, INVALID, ".spec.name"),
    ("too-short", {**OK, "name": "a"}, INVALID, ".spec.name"),
    ("date-time-invalid", {**OK, "when": "yesterday"}, INVALID, ".spec.when"),
    ("ipv4-invalid", {**OK, "addr": "10.0.0.256"}, INVALID, ".spec.addr"),
    ("hostname-invalid", {**OK, "host": "-bad-.com"}, INVALID, ".spec.host"),
    ("duration-invalid", {**OK, "timeout": "soon"}, INVALID, ".spec.timeout"),
    # int32 is no format the server checks: no range check either
    ("int32-ignored", {**OK, "bits": 2**40}, VALID, None),
    ("too-few-items", {**OK, "tags": []}, INVALID, ".spec.tags"),
    ("too-many-items", {**OK, "tags": ["a", "b", "c", "d"]}, INVALID, ".spec.tags"),
    ("set-duplicate", {**OK, "tags": ["a", "a"]}, INVALID, ".spec.tags[1]"),
    ("item-type", {**OK, "tags": [1]}, INVALID, ".spec.tags[0]"),
    ("item-null", {**OK, "tags": [None]}, INVALID, ".spec.tags[0]"),
    ("map-list-duplicate-key", {**OK, "ports": [{"name": "a", "port": 1},
                                                {"name": "a", "port": 2}]},
     INVALID, ".spec.ports[1]"),
    ("map-list-item-required", {**OK, "ports": [{"name": "a"}]}, INVALID,
     ".spec.ports[0].port"),
    ("map-values-type", {**OK, "labels": {"a": 1}}, INVALID, ".spec.labels.a"),
    ("max-properties", {**OK, "labels": {"a": "1", "b": "2", "c": "3"}}, INVALID,
     ".spec.labels"),
    ("additional-properties-false", {**OK, "closed": {"k": "v"}}, INVALID, ".spec.closed.k"),
    ("preserved-anything", {**OK, "raw": {"a": {"b": [None, 1.5, "x"]}}}, VALID, None),
    ("nested-required", {**OK, "config": {"zone": "b"}}, INVALID, ".spec.config.region"),
    ("nested-enum", {**OK, "config": {"region": "eu", "zone": "c"}}, INVALID,
     ".spec.config.zone"),
    ("embedded-without-kind", {**OK, "manifest": {"apiVersion": "v1"}}, INVALID,
     ".spec.manifest.kind"),
    ("embedded-empty-api-version", {**OK, "manifest": {"apiVersion": "", "kind": "X"}},
     INVALID, ".spec.manifest.apiVersion"),
    ("one-of-none", {**OK, "either": {}}, INVALID, ".spec.either"),
    ("one-of-both", {**OK, "either": {"a": "x", "b": "y"}}, INVALID, ".spec.either"),
    ("one-of-one", {**OK, "either": {"b": "y"}}, VALID, None),
    ("object-as-list", {**OK, "config": []}, INVALID, ".spec.config"),
    ("cel-rule-present", {**OK, "guarded": "fine"}, CANNOT_CHECK, None),
    ("cel-rule-absent", OK, VALID, None),
]


def resource(spec: Obj | None, name: str = "x") -> Obj:
    out: Obj = {"apiVersion": "example.org/v1", "kind": "Widget", "metadata": {"name": name}}
    return out if spec is None else {**out, "spec": spec}


def first_path(result: Validation) -> str | None:
    return result.violations[0].path if result.violations else None


@pytest.mark.parametrize(("spec", "verdict", "path"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_verdict_and_first_violation(spec: Obj | None, verdict: str, path: str | None) -> None:
    obj = resource(spec)
    before = copy.deepcopy(obj)
    result = validate(obj, SCHEMA)
    assert (result.verdict, first_path(result)) == (verdict, path)
    assert result.ok == (verdict == VALID)
    assert obj == before


def test_cel_is_reported_as_not_checked_and_fails_closed() -> None:
    result = validate(resource({**OK, "guarded": "x"}), SCHEMA)
    assert result.unchecked == [Violation(
        ".spec.guarded", 'x-kubernetes-validations rules not evaluated here: '
        '["self != \'forbidden\'"]')]
    assert not result.ok
    # a violation elsewhere makes it invalid, whatever CEL would say
    assert validate(resource({**OK, "size": 0, "guarded": "x"}), SCHEMA).verdict == INVALID


def test_violations_stop_at_the_limit_and_travel_as_json() -> None:
    bad = {"name": "A", "size": 0, "step": 3, "mode": "x", "flag": 1, "tags": []}
    result = validate(resource(bad), SCHEMA, limit=3)
    assert [v.path for v in result.violations] == [".spec.name", ".spec.name", ".spec.size"]
    assert json.loads(json.dumps(result.to_dict()))["verdict"] == "invalid"
    assert len(validate(resource(bad), SCHEMA).violations) == 5


def test_embedded_metadata_beyond_the_plain_fields_cannot_be_checked() -> None:
    manifest = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "cm", "finalizers": ["x"]}}
    result = validate(resource({**OK, "manifest": manifest}), SCHEMA)
    assert (result.verdict, [v.path for v in result.unchecked]) == (
        CANNOT_CHECK, [".spec.manifest.metadata"])


@pytest.mark.parametrize(("schema", "value", "verdict"), [
    # kube-openapi truncates the bound to int64 for an integer value of a number field...
    ({"type": "number", "minimum": 1.5}, 1, VALID),
    # ...but compares as floats when the field is an integer's and the bound is not one
    ({"type": "integer", "minimum": 1.5}, 1, INVALID),
    ({"type": "number", "multipleOf": 2.5}, 5, INVALID),
    ({"type": "integer", "multipleOf": 2.5}, 5, VALID),
    ({"type": "number", "multipleOf": 0.5}, 1.5, VALID),
    ({"type": "number", "multipleOf": 0.01}, 1.1, CANNOT_CHECK),
    ({"type": "string", "nullable": True, "enum": ["a"]}, None, INVALID),
    ({"type": "object", "x-kubernetes-preserve-unknown-fields": True, "enum": [{"a": 1}]},
     {"a": 1}, CANNOT_CHECK),
    ({"type": "string", "pattern": "^[[:alpha:]]+$"}, "abc", CANNOT_CHECK),
    ({"type": "string", "pattern": "^a$"}, "a\n", CANNOT_CHECK),
    ({"type": "string", "maxLength": 2}, "ää", VALID),
], ids=["number-bound-truncated", "integer-bound-as-float", "number-multiple-truncated",
        "integer-multiple-as-float", "float-multiple", "float-multiple-tolerance",
        "null-never-in-enum", "map-enum-with-numbers", "posix-class", "dollar-newline",
        "length-in-characters"])
def test_server_corners(schema: Obj, value: Any, verdict: str) -> None:
    root = {"type": "object", "properties": {"v": schema}}
    assert validate({"v": value}, root).verdict == verdict


@pytest.mark.parametrize(("fmt", "value", "valid"), [
    ("date-time", "2014-12-15T08:00:00Z", True),
    ("date-time", "2011-08-18T19:03:37.123000000+01:00", True),
    ("date-time", "2014-12-15T08:00", False),  # no seconds
    ("date-time", "2014-12-15T08:00:00", False),  # no zone
    ("date-time", "2014-12-15 08:00:00Z", False),
    ("datetime", "2014-12-15T08:00:00z", True),
    ("date", "2014-12-15", True),
    ("date", "2014-02-30", False),
    ("date", "2014-1-15", False),
    ("duration", "1 ms", True),
    ("duration", "3 weeks", True),
    ("duration", "1h30m", True),
    ("duration", "-1.5h", True),
    ("duration", "0", True),
    ("duration", "1 fortnight", False),
    ("duration", "", False),
    ("byte", "ZWxpemFiZXRocG9zZXk=", True),
    ("byte", "", False),
    ("byte", "ZWxpemFiZXRocG9zZXk", False),
    ("ipv4", "192.168.254.1", True),
    ("ipv4", "010.0.0.1", True),  # sloppy: leading zeros allowed
    ("ipv4", "::ffff:10.0.0.1", True),
    ("ipv4", "192.168.254.256", False),
    ("ipv6", "::1", True),
    ("ipv6", "fe80::1%eth0", False),
    ("ipv6", "1.2.3.4", False),
    ("cidr", "192.0.2.0/24", True),
    ("cidr", "192.0.2.0/33", False),
    ("cidr", "2001:db8::/32", True),
    ("cidr", "192.0.2.0", False),
    ("mac", "01:23:45:67:89:ab", True),
    ("mac", "01-23-45-67-89-ab-cd-ef", True),
    ("mac", "0123.4567.89ab", True),
    ("mac", "01:23-45:67:89:ab", False),
    ("hostname", "somewhere.com", True),
    ("hostname", "localhost", True),
    ("hostname", "www.詹姆斯.org", True),
    ("hostname", "1.2.3.4", False),
    ("hostname", "somewhere.com.", False),
    ("hostname", "a--b", False),
    ("hostname", "x" * 64 + ".com", False),
    ("uuid", "a8098c1a-f86e-11da-bd1a-00112444be1e", True),
    ("uuid4", "a8098c1a-f86e-11da-bd1a-00112444be1e", False),
    ("uuid4", "a8098c1a-f86e-41da-bd1a-00112444be1e", True),
    ("email", "a@b.com", True),
    ("email", "no-at-sign", False),
    ("email", "Someone <a@b.com>", None),
    ("uri", "http://example.com/a%20b?q=1", True),
    ("uri", "/absolute/path", True),
    ("uri", "mailto:someone", True),
    ("uri", "relative/path", False),
    ("uri", "http://example.com/%zz", False),
    ("uri", "http://user@example.com/", None),
    ("bsonobjectid", "507f1f77bcf86cd799439011", True),
    ("bsonobjectid", "507f1f77bcf86cd79943901", False),
    ("hexcolor", "#ffffff", True),
    ("hexcolor", "#fffff", False),
    ("rgbcolor", "rgb(255, 255, 255)", True),
    ("rgbcolor", "rgb(256, 255, 255)", False),
    ("isbn10", "0-306-40615-2", True),
    ("isbn13", "978-0-306-40615-7", True),
    ("isbn", "978-0-306-40615-8", False),
    ("creditcard", "4111-1111-1111-1111", True),
    ("creditcard", "4111-1111-1111-1112", False),
    ("ssn", "111-11-1111", True),
    ("ssn", "111111111", False),
    ("k8s-short-name", "my-name", True),
    ("k8s-short-name", "My-name", False),
    ("k8s-long-name", "my.name", True),
    ("password", "anything at all", True),
    ("int32", "not even a number", True),  # not recognised: dropped by the server
])
def test_formats(fmt: str, value: str, valid: bool | None) -> None:
    assert check_format(fmt, value) is valid


# kubernetes/kube-openapi d427ff9, pkg/validation/strfmt: default_test.go's hostnames,
# duration_test.go's durations, time_test.go's date-times (IsDateTime of the marshalled form)
KUBE_OPENAPI_VECTORS: dict[str, tuple[list[str], list[str]]] = {
    "hostname": (
        ["somewhere.com", "888.com", "a.com", "a.b.com", "a.b.c.com", "a.b.c.d.com",
         "a.b.c.d.e.com", "1.com", "1.2.com", "1.2.3.com", "1.2.3.4.com", "99.domain.com",
         "99.99.domain.com", "1wwworg.example.com", "1000wwworg.example.com",
         "xn--bcher-kva.example.com", "xn-80ak6aa92e.co", "xn-80ak6aa92e.com", "xn--ls8h.la",
         "☁→❄→☃→☀→☺→☂→☹→✝.ws", "www.example.onion", "www.example.ôlà", "ôlà.ôlà",
         "ôlà.ôlà.ôlà", "ex$ample", "localhost", "example", "x", "x-y", "a.b.c.dot",
         "www.example.org", "a.b.c.d.e.f.g.dot", "ex=ample.com", "<foo>",
         "www.example-hyphenated.org", "www.詹姆斯.org", "www.élégigôö.org",
         "www.詹姆斯.london"],
        ["somewhere.com!", "user@email.domain", "1.1.1.1", "a" * 256, "x.y." + "a" * 64,
         "www.example-.org", "www.--example.org", "-www.example.org", "www-.example.org",
         "www.d-.org", "www.-d.org", "www-", "-www", "www.ex ample.org", "_www.example.org",
         "www.ex;ample.org", "www.example_underscored.org", "www.詹姆斯.x", "a.b.c.d", "-xyz",
         "xyz-", "x.", "a.b.c.dot-", "a.b.c.é;ö"]),
    "duration": (
        ["0ms", "2ms", "1ns", "1us", "1µs", "1ms", "1s", "1m", "1h", "1hr", "1d", "1w", "1wk",
         "1nanoseconds", "1nanos", "1microseconds", "1micros", "1millis", "1milliseconds",
         "1second", "1sec", "1min", "1minute", "1hour", "1day", "1week", "1  ns", "1  µs",
         "1  hr", "1  d"],
        ["yada", "three week", "9999999999999999999999999999999999999999999999999999999 weeks",
         "12 parsecs", "12 y", "45 wekk", "45 weeekks"]),
    "date-time": (
        ["2014-12-15T08:00:00.000Z", "2011-08-18T19:03:37.000+01:00",
         "2014-12-15T19:30:20.000Z", "0001-01-01T00:00:00.000Z"], ["yada"]),
}


@pytest.mark.parametrize(("fmt", "value", "valid"), [
    (fmt, v, ok) for fmt, (good, bad) in KUBE_OPENAPI_VECTORS.items()
    for ok, values in ((True, good), (False, bad)) for v in values])
def test_kube_openapi_vectors(fmt: str, value: str, valid: bool) -> None:
    assert check_format(fmt, value) is valid


def test_recognized_formats_are_the_servers() -> None:
    assert [recognized(f) for f in ("date-time", "uri", "k8s-long-name", "int32", "double",
                                    "uint64", "")] == [True, True, True, False, False, False,
                                                       False]
