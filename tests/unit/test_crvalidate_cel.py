"""crvalidate.cel: the part of CEL upjet writes on every managed resource, evaluated as
kube-apiserver does (issue 31); everything else stays unsupported (fails closed)."""

from __future__ import annotations

from typing import Any

import pytest

from lockwright.crvalidate import CANNOT_CHECK, INVALID, VALID, validate
from lockwright.crvalidate.cel import ERROR, UNSUPPORTED, evaluate

Obj = dict[str, Any]
UPJET = ("!('*' in self.managementPolicies || 'Create' in self.managementPolicies || "
         "'Update' in self.managementPolicies) || has(self.forProvider.region) || "
         "(has(self.initProvider) && has(self.initProvider.region))")
ALL = ["*"]


@pytest.mark.parametrize("rule, value, want", [
    (UPJET, {"managementPolicies": ALL, "forProvider": {"region": "x"}}, True),
    (UPJET, {"managementPolicies": ALL, "forProvider": {}, "initProvider": {"region": "x"}},
     True),
    (UPJET, {"managementPolicies": ALL, "forProvider": {}}, False),
    (UPJET, {"managementPolicies": ALL, "forProvider": {}, "initProvider": {}}, False),
    (UPJET, {"managementPolicies": ["Observe"], "forProvider": {}}, True),
    # no managementPolicies: '*' in <no such key> is an error, which || does not clear
    (UPJET, {"forProvider": {}}, ERROR),
    # ...unless the other side is true, in either order
    (UPJET, {"forProvider": {"region": "x"}}, True),
    ("has(self.a.b)", {}, ERROR),  # selecting a of self fails first
    ("has(self.a) && has(self.a.b)", {}, False),
    ("has(self.a.b) && has(self.a)", {}, False),  # commutative, as CEL's && is
    ("has(self.a.b) || !has(self.a)", {}, True),
    ("!has(self.a)", {"a": 1}, False),
    ("!!has(self.a)", {"a": 1}, True),
    ("'x' in self.tags", {"tags": ["x"]}, True),
    ("'x' in self.tags", {"tags": "x"}, ERROR),
    # outside the grammar: left to the server
    ("self.size >= 0", {"size": 1}, UNSUPPORTED),
    ("self != 'forbidden'", "fine", UNSUPPORTED),
    ("has(self.a) || self.b == 1", {"a": 1}, UNSUPPORTED),
    ("'x' in self.labels", {"labels": {"x": "1"}}, UNSUPPORTED),  # map keys
    ("!'x' in self.tags", {"tags": []}, UNSUPPORTED),
    ("has(self.__namespace__)", {"namespace": 1}, UNSUPPORTED),
    ("has(self.namespace)", {"namespace": 1}, UNSUPPORTED),
    ("has(oldSelf.a)", {"a": 1}, UNSUPPORTED),
    ("has(self)", {}, UNSUPPORTED),
    ("(has(self.a)", {}, UNSUPPORTED),
    ("has(self.a) has(self.b)", {}, UNSUPPORTED),
])
def test_evaluate(rule: str, value: Any, want: bool | str) -> None:
    assert evaluate(rule, value) == want


SCHEMA: Obj = {"type": "object", "properties": {"spec": {
    "type": "object",
    "properties": {"managementPolicies": {"type": "array", "items": {"type": "string"},
                                          "default": ["*"]},
                   "forProvider": {"type": "object", "properties": {"region": {
                       "type": "string"}}},
                   "initProvider": {"type": "object", "properties": {"region": {
                       "type": "string"}}}},
    "required": ["forProvider"],
    "x-kubernetes-validations": [{"rule": UPJET,
                                  "message": "spec.forProvider.region is a required "
                                             "parameter"}]}}}


@pytest.mark.parametrize("spec, verdict", [
    ({"forProvider": {"region": "x"}}, VALID),
    ({"forProvider": {}}, INVALID),  # managementPolicies defaults to ["*"] first
    ({"forProvider": {}, "managementPolicies": ["Observe"]}, VALID),
])
def test_validate_judges_upjets_rules_after_defaulting(spec: Obj, verdict: str) -> None:
    found = validate({"spec": spec}, SCHEMA)
    assert found.verdict == verdict, found
    if verdict == INVALID:
        assert found.violations[0].path == ".spec"
        assert found.violations[0].reason == "spec.forProvider.region is a required parameter"


def test_a_rule_outside_the_grammar_still_fails_closed() -> None:
    schema = {**SCHEMA, "properties": {"spec": {
        **SCHEMA["properties"]["spec"],
        "x-kubernetes-validations": [{"rule": UPJET}, {"rule": "size(self.forProvider) < 9"}]}}}
    found = validate({"spec": {"forProvider": {"region": "x"}}}, schema)
    assert found.verdict == CANNOT_CHECK
    assert "size(self.forProvider) < 9" in found.unchecked[0].reason
    assert UPJET not in found.unchecked[0].reason
