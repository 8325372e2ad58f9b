"""Structural-schema semantics: validation messages, defaulting, pruning, Go renderings."""

from __future__ import annotations

from typing import Any

import pytest

from lockwright.devcluster.schema import (
    Cause,
    apply_defaults,
    go_json,
    go_number,
    go_quote,
    go_value,
    invalid_message,
    prune,
    validate,
)


def _root(prop: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"x": prop}}}}


def _messages(prop: dict[str, Any], value: Any) -> list[str]:
    return [c.message for c in validate({"spec": {"x": value}}, _root(prop))]


OBJ = {"type": "object"}
ANY_OF = {**OBJ, "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}
ONE_OF = {**OBJ, "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}
COMPOSITE = '<nil>: Invalid value: "": "spec.x" '


@pytest.mark.parametrize(("prop", "value", "expected"), [
    ({"type": "string"}, "a", []),
    ({"type": "string"}, 5,
     ['spec.x: Invalid value: "integer": spec.x in body must be of type string: "integer"']),
    ({"type": "integer"}, "x",
     ['spec.x: Invalid value: "string": spec.x in body must be of type integer: "string"']),
    ({"type": "integer"}, 2.0, []),
    ({"type": "integer"}, 2.5,
     ['spec.x: Invalid value: "number": spec.x in body must be of type integer: "number"']),
    ({"type": "number"}, 3, []),
    ({"type": "boolean"}, "true",
     ['spec.x: Invalid value: "string": spec.x in body must be of type boolean: "string"']),
    ({"type": "object"}, [],
     ['spec.x: Invalid value: "array": spec.x in body must be of type object: "array"']),
    ({"type": "array", "items": {"type": "string"}}, {},
     ['spec.x: Invalid value: "object": spec.x in body must be of type array: "object"']),
    ({"type": "string"}, None,
     ['spec.x: Invalid value: "null": spec.x in body must be of type string: "null"']),
    ({"type": "string", "nullable": True}, None, []),
    ({"x-kubernetes-int-or-string": True}, 5, []),
    ({"x-kubernetes-int-or-string": True}, "5", []),
    ({"x-kubernetes-int-or-string": True}, True,
     [('spec.x: Invalid value: "boolean": spec.x in body must be of type integer,string: '
      '"boolean"')]),
    ({"type": "integer", "format": "int32"}, 1.5,
     ['spec.x: Invalid value: "float64": spec.x in body must be of type int32: "float64"']),
    ({"x-kubernetes-preserve-unknown-fields": True}, {"any": [1]}, []),
])
def test_type(prop: dict[str, Any], value: Any, expected: list[str]) -> None:
    assert _messages(prop, value) == expected


@pytest.mark.parametrize(("prop", "value", "expected"), [
    ({"type": "string", "enum": ["a", "b"]}, "a", []),
    ({"type": "string", "enum": ["a", "b"]}, "c",
     ['spec.x: Unsupported value: "c": supported values: "a", "b"']),
    ({"type": "integer", "enum": [1, 2]}, 3,
     ['spec.x: Unsupported value: 3: supported values: "1", "2"']),
    ({"type": "number", "enum": [1, 2]}, 2.0, []),
    ({"type": "string", "pattern": "^a$"}, "a", []),
    ({"type": "string", "pattern": "^a$"}, "b",
     ["spec.x: Invalid value: \"b\": spec.x in body should match '^a$'"]),
    ({"type": "string", "format": "date-time"}, "2024-01-02T03:04:05Z", []),
    ({"type": "string", "format": "date-time"}, "x",
     ['spec.x: Invalid value: "x": spec.x in body must be of type date-time: "x"']),
    ({"type": "string", "format": "int32"}, "anything", []),
    ({"type": "integer", "format": "int64"}, 5, []),
    ({"type": "string", "format": "no-such-format"}, "x", []),
    ({"type": "integer", "minimum": 10}, 10, []),
    ({"type": "integer", "minimum": 10}, 5,
     ["spec.x: Invalid value: 5: spec.x in body should be greater than or equal to 10"]),
    ({"type": "integer", "minimum": 10, "exclusiveMinimum": True}, 10,
     ["spec.x: Invalid value: 10: spec.x in body should be greater than 10"]),
    ({"type": "number", "maximum": 1}, 1.5,
     ["spec.x: Invalid value: 1.5: spec.x in body should be less than or equal to 1"]),
    ({"type": "integer", "maximum": 3, "exclusiveMaximum": True}, 3,
     ["spec.x: Invalid value: 3: spec.x in body should be less than 3"]),
    ({"type": "number", "maximum": 1000000}, 2e6,
     ["spec.x: Invalid value: 2e+06: spec.x in body should be less than or equal to 1e+06"]),
    ({"type": "integer", "multipleOf": 5}, 7,
     ["spec.x: Invalid value: 7: spec.x in body should be a multiple of 5"]),
    ({"type": "string", "minLength": 2}, "ab", []),
    ({"type": "string", "minLength": 2}, "a",
     ['spec.x: Invalid value: "a": spec.x in body should be at least 2 chars long']),
    ({"type": "string", "maxLength": 3}, "abc", []),
    ({"type": "string", "maxLength": 3}, "abcd",
     ["spec.x: Too long: may not be more than 3 bytes"]),
    ({"type": "string", "maxLength": 1}, "ab", ["spec.x: Too long: may not be more than 1 byte"]),
])
def test_scalar_keywords(prop: dict[str, Any], value: Any, expected: list[str]) -> None:
    assert _messages(prop, value) == expected


STRINGS = {"type": "array", "items": {"type": "string"}}


@pytest.mark.parametrize(("prop", "value", "expected"), [
    ({**STRINGS, "minItems": 1}, [],
     ["spec.x: Invalid value: 0: spec.x in body should have at least 1 items"]),
    ({**STRINGS, "maxItems": 2}, ["a", "b", "c"],
     ["spec.x: Too many: 3: must have at most 2 items"]),
    ({**STRINGS, "maxItems": 2}, ["a", "b"], []),
    ({**STRINGS, "uniqueItems": True}, ["a", "a"],
     ["spec.x: Invalid value: \"\": spec.x in body shouldn't contain duplicates"]),
    ({"type": "array", "items": {"type": "integer"}}, [1, "a"],
     ['spec.x[1]: Invalid value: "string": spec.x[1] in body must be of type integer: "string"']),
    ({**OBJ, "minProperties": 1}, {},
     ["spec.x: Invalid value: 0: spec.x in body should have at least 1 properties"]),
    ({**OBJ, "maxProperties": 1}, {"a": 1, "b": 2},
     ["spec.x: Too many: 2: must have at most 1 item"]),
    ({**OBJ, "additionalProperties": {"type": "integer"}}, {"a": "s"},
     ['spec.x.a: Invalid value: "string": spec.x.a in body must be of type integer: "string"']),
    ({**OBJ, "additionalProperties": False}, {"a": 1},
     ['spec.x: Invalid value: "a": spec.x.a in body is a forbidden property']),
    ({**OBJ, "required": ["a", "b"], "properties": {"a": {"type": "string"}}}, {"a": "v"},
     ["spec.x.b: Required value"]),
    ({"type": "array", "items": {**OBJ, "required": ["name"]}}, [{"name": "a"}, {}],
     ["spec.x[1].name: Required value"]),
])
def test_container_keywords(prop: dict[str, Any], value: Any, expected: list[str]) -> None:
    assert _messages(prop, value) == expected


@pytest.mark.parametrize(("prop", "value", "expected"), [
    (ANY_OF, {"b": 1}, []),
    (ANY_OF, {},
     [COMPOSITE + "must validate at least one schema (anyOf)", "spec.x.a: Required value"]),
    (ONE_OF, {"a": 1}, []),
    (ONE_OF, {}, [COMPOSITE + "must validate one and only one schema (oneOf). Found none valid",
                  "spec.x.a: Required value"]),
    (ONE_OF, {"a": 1, "b": 2},
     [COMPOSITE + "must validate one and only one schema (oneOf). Found 2 valid alternatives"]),
    ({**OBJ, "allOf": [{"required": ["a"]}, {"required": ["b"]}]}, {"a": 1},
     ["spec.x.b: Required value", COMPOSITE + "must validate all the schemas (allOf)"]),
    ({**OBJ, "allOf": [{"required": ["a"]}]}, {},
     ["spec.x.a: Required value",
      COMPOSITE + "must validate all the schemas (allOf). None validated"]),
    ({**OBJ, "not": {"required": ["a"]}}, {"a": 1},
     [COMPOSITE + "must not validate the schema (not)"]),
    ({**OBJ, "not": {"required": ["a"]}}, {}, []),
])
def test_junctors(prop: dict[str, Any], value: Any, expected: list[str]) -> None:
    assert _messages(prop, value) == expected


MAP_LIST = {"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {**OBJ, "properties": {"name": {"type": "string"}, "v": {"type": "integer"}}}}


@pytest.mark.parametrize(("prop", "value", "expected"), [
    ({**STRINGS, "x-kubernetes-list-type": "set"}, ["a", "b"], []),
    ({**STRINGS, "x-kubernetes-list-type": "set"}, ["a", "b", "a", "a"],
     ['spec.x[2]: Duplicate value: "a"']),
    (MAP_LIST, [{"name": "a", "v": 1}, {"name": "b", "v": 1}], []),
    (MAP_LIST, [{"name": "a", "v": 1}, {"name": "a", "v": 2}],
     ['spec.x[1]: Duplicate value: map[string]interface {}{"name":"a", "v":2}']),
    ({**STRINGS, "x-kubernetes-list-type": "atomic"}, ["a", "a"], []),
])
def test_list_types(prop: dict[str, Any], value: Any, expected: list[str]) -> None:
    assert _messages(prop, value) == expected


EMBEDDED = {"type": "object", "x-kubernetes-embedded-resource": True,
            "x-kubernetes-preserve-unknown-fields": True}


@pytest.mark.parametrize(("value", "expected"), [
    ({"apiVersion": "v1", "kind": "ConfigMap"}, []),
    ({"kind": "ConfigMap"}, ["spec.x.apiVersion: Required value: must not be empty"]),
    ({"apiVersion": "v1", "kind": ""}, ['spec.x.kind: Invalid value: "": must not be empty']),
    ({"apiVersion": 1, "kind": "A"}, ["spec.x.apiVersion: Invalid value: 1: must be a string"]),
])
def test_embedded_resource(value: dict[str, Any], expected: list[str]) -> None:
    assert _messages(EMBEDDED, value) == expected


CEL = {"type": "string", "x-kubernetes-validations": [{"rule": "self != 'x'"}]}
SKIPPED = ('<nil>: Invalid value: "null": some validation rules were not checked because the '
           "object was invalid; correct the existing errors to complete validation")


@pytest.mark.parametrize(("value", "expected"), [
    ("x", []),
    (5, ['spec.x: Invalid value: "integer": spec.x in body must be of type string: "integer"',
         SKIPPED]),
])
def test_cel_rules_are_not_run_but_reported_as_skipped(value: Any, expected: list[str]) -> None:
    assert _messages(CEL, value) == expected


def test_validate_reports_paths_from_the_root() -> None:
    schema = {"type": "object", "required": ["spec"], "properties": {"spec": OBJ}}
    assert [c.field for c in validate({}, schema)] == ["spec"]


# --------------------------------------------------------------------- causes, messages

@pytest.mark.parametrize(("cause", "body"), [
    (Cause("FieldValueRequired", "spec.package", ""), "Required value"),
    (Cause("FieldValueRequired", "spec.t.kind", "must not be empty"),
     "Required value: must not be empty"),
    (Cause("FieldValueInvalid", "spec.x", "bad", "v"), 'Invalid value: "v": bad'),
    (Cause("FieldValueInvalid", "spec.x", "bad", None), 'Invalid value: "null": bad'),
    (Cause("FieldValueInvalid", "spec.x", "bad", True), "Invalid value: true: bad"),
    (Cause("FieldValueForbidden", "spec.x", "no", "ignored"), "Forbidden: no"),
    (Cause("FieldValueTooLong", "spec.x", "may not be more than 3 bytes", "abcd"),
     "Too long: may not be more than 3 bytes"),
    (Cause("FieldValueDuplicate", "spec.x[1]", "", ["a", 1]),
     'Duplicate value: []interface {}{"a", 1}'),
    (Cause("FieldValueInvalid", "spec.x", "bad"), "Invalid value: bad"),
])
def test_cause_body_and_message(cause: Cause, body: str) -> None:
    assert (cause.body, cause.message) == (body, f"{cause.field}: {body}")


def test_status_cause_message_has_no_field() -> None:
    cause = Cause("FieldValueRequired", "spec.package", "")
    assert cause.status_cause() == {"reason": "FieldValueRequired", "message": "Required value",
                                    "field": "spec.package"}


REQ = Cause("FieldValueRequired", "spec.package", "")
BAD = Cause("FieldValueInvalid", "spec.x", "bad", 1)


@pytest.mark.parametrize(("kind", "group", "causes", "expected"), [
    ("Provider", "pkg.crossplane.io", [REQ],
     'Provider.pkg.crossplane.io "p" is invalid: spec.package: Required value'),
    ("ConfigMap", "", [REQ], 'ConfigMap "p" is invalid: spec.package: Required value'),
    ("ConfigMap", "", [REQ, BAD, REQ],
     'ConfigMap "p" is invalid: [spec.package: Required value, spec.x: Invalid value: 1: bad]'),
    ("ConfigMap", "", [], 'ConfigMap "p" is invalid'),
])
def test_invalid_message(kind: str, group: str, causes: list[Cause], expected: str) -> None:
    assert invalid_message(kind, group, "p", causes) == expected


@pytest.mark.parametrize(("value", "text"), [
    (1e6, "1e+06"), (123456.0, "123456"), (1234567.0, "1.234567e+06"), (0.5, "0.5"),
    (1e-5, "1e-05"), (0.0001, "0.0001"), (-2.25, "-2.25"), (3.0, "3"), (7, "7"),
])
def test_go_number(value: float, text: str) -> None:
    assert go_number(value) == text


@pytest.mark.parametrize(("value", "text"), [
    ({"b": 1, "a": [True, None]},
     'map[string]interface {}{"a":[]interface {}{true, interface {}(nil)}, "b":1}'),
    ("tab\there", '"tab\\there"'),
    ("é", '"é"'),
])
def test_go_value(value: Any, text: str) -> None:
    assert go_value(value) == text


def test_go_quote_and_json() -> None:
    assert go_quote('a"\x01') == '"a\\"\\x01"'
    assert go_json({"b": 1.0, "a": "<"}) == '{"a":"\\u003c","b":1}'


# --------------------------------------------------------------------------- defaulting

DEFAULTS = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
    "policy": {"type": "string", "default": "Always"},
    "ref": {"type": "object", "default": {}, "properties": {
        "name": {"type": "string", "default": "default"}}},
    "items": {"type": "array", "items": {"type": "object", "properties": {
        "port": {"type": "integer", "default": 80}}}},
    "labels": {"type": "object", "additionalProperties": {
        "type": "object", "properties": {"v": {"type": "string", "default": "x"}}}},
    "opt": {"type": "string", "nullable": True, "default": "d"},
    "plain": {"type": "string"},
    "deep": {"type": "object", "properties": {"leaf": {"type": "string", "default": "z"}}},
}}}}


@pytest.mark.parametrize(("spec", "expected"), [
    ({}, {"policy": "Always", "ref": {"name": "default"}, "opt": "d"}),
    ({"policy": "Never", "ref": {"name": "mine"}},
     {"policy": "Never", "ref": {"name": "mine"}, "opt": "d"}),
    ({"items": [{}, {"port": 8080}]},
     {"policy": "Always", "ref": {"name": "default"}, "opt": "d",
      "items": [{"port": 80}, {"port": 8080}]}),
    ({"labels": {"a": {}}},
     {"policy": "Always", "ref": {"name": "default"}, "opt": "d", "labels": {"a": {"v": "x"}}}),
    ({"policy": None, "plain": None, "opt": None},
     {"policy": "Always", "ref": {"name": "default"}, "opt": None}),
    ({"deep": {}},
     {"policy": "Always", "ref": {"name": "default"}, "opt": "d", "deep": {"leaf": "z"}}),
])
def test_defaults(spec: dict[str, Any], expected: dict[str, Any]) -> None:
    obj = {"spec": spec}
    apply_defaults(obj, DEFAULTS)
    assert obj["spec"] == expected


def test_defaults_are_copies() -> None:
    first: dict[str, Any] = {"spec": {}}
    second: dict[str, Any] = {"spec": {}}
    apply_defaults(first, DEFAULTS)
    first["spec"]["ref"]["name"] = "changed"
    apply_defaults(second, DEFAULTS)
    assert second["spec"]["ref"] == {"name": "default"}


def test_defaults_do_not_create_missing_parents() -> None:
    obj: dict[str, Any] = {}
    apply_defaults(obj, DEFAULTS)
    assert obj == {}


# ------------------------------------------------------------------------------ pruning

PRUNING = {"type": "object", "properties": {
    "spec": {"type": "object", "properties": {
        "a": {"type": "string"},
        "list": {"type": "array", "items": {"type": "object", "properties": {
            "k": {"type": "string"}}}},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                 "properties": {"known": {"type": "object", "properties": {
                     "x": {"type": "string"}}}}},
        "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                     "properties": {"spec": {"type": "object"}}},
        "map": {"type": "object", "additionalProperties": {
            "type": "object", "properties": {"v": {"type": "string"}}}},
    }},
}}


@pytest.mark.parametrize(("obj", "kept", "dropped"), [
    ({"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "n", "x": 1}, "spec": {"a": "1"}},
     {"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "n", "x": 1}, "spec": {"a": "1"}},
     []),
    ({"spec": {"a": "1", "b": 2}, "other": {}}, {"spec": {"a": "1"}}, [".spec.b", ".other"]),
    ({"spec": {"list": [{"k": "v", "z": 1}]}}, {"spec": {"list": [{"k": "v"}]}},
     [".spec.list[0].z"]),
    ({"spec": {"free": {"any": {"thing": 1}, "known": {"x": "1", "y": 2}}}},
     {"spec": {"free": {"any": {"thing": 1}, "known": {"x": "1"}}}}, [".spec.free.known.y"]),
    ({"spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "bad": 1},
                            "spec": {}, "junk": 1}}},
     {"spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                            "spec": {}}}},
     [".spec.template.metadata.bad", ".spec.template.junk"]),
    ({"spec": {"map": {"one": {"v": "1", "w": 2}}}}, {"spec": {"map": {"one": {"v": "1"}}}},
     [".spec.map.one.w"]),
])
def test_prune(obj: dict[str, Any], kept: dict[str, Any], dropped: list[str]) -> None:
    assert (prune(obj, PRUNING), obj) == (dropped, kept)


def test_prune_keeps_apiversion_kind_only_as_strings_in_embedded() -> None:
    obj = {"spec": {"template": {"apiVersion": 1, "kind": "Pod"}}}
    assert prune(obj, PRUNING) == [".spec.template.apiVersion"]
