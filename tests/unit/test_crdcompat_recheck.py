"""crdcompat.new_rules_only: existing resources are checked against the new schema less the
CEL rules the live CRD already had at the same node (issue 31)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from lockwright import crvalidate
from lockwright.crdcompat import new_rules_only

Obj = dict[str, Any]
R = "x-kubernetes-validations"
SIZE = {"rule": "self.size >= 0"}
COLOR = {"rule": "self.color != ''"}
MOVED = {"rule": "self.size == oldSelf.size"}  # a transition rule: updates only


def spec(*rules: Obj, **props: Obj) -> Obj:
    node: Obj = {"type": "object", "properties": {"size": {"type": "integer"},
                                                  "color": {"type": "string"}, **props}}
    return {**node, R: list(rules)} if rules else node


def root(node: Obj) -> Obj:
    return {"type": "object", "properties": {"spec": node}}


@pytest.mark.parametrize("old, new, left", [
    (spec(SIZE), spec(SIZE), None),  # unchanged: passed when written
    (spec(), spec(SIZE), [SIZE]),  # new: checked (fails closed)
    (spec(SIZE), spec(SIZE, COLOR), [COLOR]),
    (spec({"rule": "self.size >= 1"}), spec(SIZE), [SIZE]),  # text changed
    (spec({**SIZE, "message": "old words"}), spec({**SIZE, "message": "new"}), None),
    (spec(), spec(MOVED), None),  # judges updates, never a stored resource
    ({"type": "object"}, spec(SIZE), [SIZE]),  # the node is new
])
def test_only_rules_the_live_node_lacks_are_kept(old: Obj, new: Obj,
                                                 left: list[Obj] | None) -> None:
    before = copy.deepcopy(new)
    got = new_rules_only(root(old), root(new))["properties"]["spec"]
    assert got.get(R) == left
    assert new == before  # the input is not changed
    assert {k: v for k, v in got.items() if k != R} == {k: v for k, v in new.items() if k != R}


def test_rules_are_matched_at_the_same_node_through_items_and_maps() -> None:
    item = spec(SIZE)
    old = root({"type": "object", "properties": {
        "list": {"type": "array", "items": item},
        "map": {"type": "object", "additionalProperties": spec()}}})
    new = root({"type": "object", "properties": {
        "list": {"type": "array", "items": item},
        "map": {"type": "object", "additionalProperties": spec(SIZE)}}})
    got = new_rules_only(old, new)["properties"]["spec"]["properties"]
    assert R not in got["list"]["items"]
    assert got["map"]["additionalProperties"][R] == [SIZE]


def test_a_resource_is_checked_when_only_a_rule_it_passed_stands_in_the_way() -> None:
    old = root(spec(SIZE))
    new = root(spec(SIZE, list={"type": "array", "items": {"type": "string"},
                                "x-kubernetes-list-type": "set"}))
    ok = {"spec": {"size": 1, "list": ["a", "b"]}}
    twice = {"spec": {"size": 1, "list": ["a", "a"]}}
    # the whole new schema cannot be checked here: the rule would judge .spec
    assert crvalidate.validate(ok, new).verdict == crvalidate.CANNOT_CHECK
    assert crvalidate.validate(ok, new_rules_only(old, new)).ok
    found = crvalidate.validate(twice, new_rules_only(old, new))
    assert not found.ok and found.violations[0].path == ".spec.list[1]"
