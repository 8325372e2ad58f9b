"""The evidence gate on a list made a list-map (issue 31), through kubectl and the watcher.

A release that turns a status list of conditions into ``x-kubernetes-list-type: map``
keyed by ``type`` is valid for a resource whose conditions have unique types, and not for
one that repeats a type. The plan checks each existing resource against the new schema
(less the CEL rule both releases have, which the resource passed when it was written; the
rule v2 adds is one lockwright evaluates):
the first upgrade goes on with a warning, the second is held naming the resource.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lockwright import crvalidate
from tests.e2e.packages import crd
from tests.e2e.test_plans import (
    active_revision,
    current,
    events,
    group,
    push,
    revision_condition,
)
from tests.e2e.test_upgrade import wait_active
from tests.fixtures.stack import PKG_GROUP, Stack
from tests.helpers import unique, wait_for

pytestmark = pytest.mark.kube_shows(
    "kube-apiserver's list-map validation of the resources a release would break")

Obj = dict[str, Any]
CONDITION: Obj = {"type": "object", "required": ["type"],
                  "properties": {"type": {"type": "string"}, "status": {"type": "string"}}}
# a CEL rule both releases have, as every upjet CRD has on .spec: the resources passed it
# when they were written, so it does not stand in the way of their check
SPEC_RULE: Obj = {"rule": "self.size >= 0", "message": "size must not be negative"}
# a rule v2 adds, of the form upjet writes for a required parameter: evaluated, not
# failed closed (lockwright.crvalidate.cel)
NEW_RULE: Obj = {"rule": "!has(self.color) || has(self.size)",
                 "message": "size is required with color"}
BY_TYPE: Obj = {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]}


def widget_crd(g: str, conditions: Obj, *rules: Obj) -> Obj:
    """A Widget whose ``status.conditions`` has the schema ``conditions``, and ``.spec``
    :data:`SPEC_RULE` and ``rules``."""
    return crd(g, "Widget", plural="widgets", version="v1", schema={
        "type": "object", "properties": {
            "spec": {"type": "object", "properties": {"size": {"type": "integer"},
                                                      "color": {"type": "string"}},
                     "x-kubernetes-validations": [SPEC_RULE, *rules]},
            "status": {"type": "object", "properties": {"conditions": conditions}}}})


def atomic() -> Obj:
    return {"type": "array", "items": CONDITION}


def keyed() -> Obj:
    return {**atomic(), **BY_TYPE}


def installed_with(stack: Stack, tmp: Path, types: list[str]) -> tuple[str, str, str, str]:
    """A healthy Provider whose Widget ``w`` has conditions of these ``types``, and its
    upgrade applied to a release keying the list by type; (group, name, v1, v2)."""
    g, repo, name = group(), unique("prov"), unique("lists")
    stack.apply_package("Provider", name, push(stack, tmp, repo, "v1.0.0",
                                               [widget_crd(g, atomic())]))
    stack.wait_healthy("Provider", name)
    stack.custom.create_cluster_custom_object(g, "v1", "widgets", {
        "apiVersion": f"{g}/v1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"size": 1},
        "status": {"conditions": [{"type": t, "status": "True"} for t in types]}})
    v1 = active_revision(stack, name)
    v2_ref = push(stack, tmp, repo, "v2.0.0", [widget_crd(g, keyed(), NEW_RULE)])
    stack.kubectl("patch", f"providers.{PKG_GROUP}", name, "--type=merge",
                  "-p", json.dumps({"spec": {"package": v2_ref}}))
    return g, name, v1, current(stack, name, v1)


def test_a_list_keyed_by_type_rolls_out_when_live_keys_are_unique(
        stack: Stack, tmp_path: Path) -> None:
    g, name, _, v2 = installed_with(stack, tmp_path, ["Ready", "Synced"])
    wait_active(stack, name, v2)
    [warned] = wait_for(lambda: events(stack, name, "BreakingUpgrade"), timeout=30,
                        interval=0.2, what="the Warning Event")
    assert "no existing resource is affected (upgrade gate Evidence)" in warned, warned
    assert (f"CustomResourceDefinition widgets.{g} version v1 field .status.conditions: "
            "x-kubernetes-list-type changed from atomic to map") in warned, warned
    assert revision_condition(stack, v2, "PlanCompatible")["status"] == "False"

    def served_as_map() -> bool:
        found = stack.kubectl("get", "crd", f"widgets.{g}", "-o",
                              "jsonpath={.spec.versions[0].schema.openAPIV3Schema"
                              ".properties.status.properties.conditions"
                              ".x-kubernetes-list-type}")
        return found.stdout.strip() == "map"
    wait_for(served_as_map, timeout=60, interval=0.2, what="v2's CRD keying the list")


def test_a_list_keyed_by_type_is_held_naming_a_resource_that_repeats_a_key(
        stack: Stack, tmp_path: Path) -> None:
    g, name, v1, v2 = installed_with(stack, tmp_path, ["Ready", "Ready"])
    held = wait_for(lambda: events(stack, name, "BreakingUpgrade"), timeout=60,
                    interval=0.2, what="the BreakingUpgrade Event")
    assert "upgrade gate Evidence" in held[0], held
    assert (f"1 existing Widget (widgets.{g} v1) would be rejected: w: "
            ".status.conditions[1]: duplicate entry") in held[0], held
    assert f"lockwright.io/accept-plan={v2}" in held[0], held
    installed = stack.conditions("Provider", name)["Installed"]
    assert installed["status"] == "False" and "duplicate entry" in installed["message"]
    assert active_revision(stack, name) == v1


UPJET = ("!('*' in self.managementPolicies || 'Create' in self.managementPolicies || "
         "'Update' in self.managementPolicies) || has(self.forProvider.region) || "
         "(has(self.initProvider) && has(self.initProvider.region))")


def test_upjets_rule_is_judged_as_kube_apiserver_judges_it(stack: Stack,
                                                          cluster_kind: str) -> None:
    if cluster_kind != "kube":
        pytest.skip("devcluster does not evaluate CEL")
    g = group()
    region = {"type": "object", "properties": {"region": {"type": "string"}}}
    spec: Obj = {"type": "object", "x-kubernetes-validations": [{"rule": UPJET}],
                 "properties": {"forProvider": region, "initProvider": region,
                                "managementPolicies": {"type": "array", "default": ["*"],
                                                       "items": {"type": "string"}}}}
    schema: Obj = {"type": "object", "properties": {"spec": spec}}
    stack.kubectl("apply", "-f", "-", stdin=json.dumps(
        crd(g, "Bucket", plural="buckets", version="v1", schema=schema)))
    wait_for(lambda: stack.kubectl("get", f"buckets.{g}", check=False).returncode == 0,
             timeout=60, interval=0.2, what="the CRD served")
    for i, body in enumerate([{"forProvider": {"region": "x"}}, {"forProvider": {}},
                              {"forProvider": {}, "initProvider": {"region": "x"}},
                              {"forProvider": {}, "managementPolicies": ["Observe"]},
                              {"initProvider": {}, "managementPolicies": ["Create"]},
                              {}]):
        obj = {"apiVersion": f"{g}/v1", "kind": "Bucket", "metadata": {"name": f"b{i}"},
               "spec": body}
        served = stack.kubectl("create", "--dry-run=server", "-f", "-",
                               stdin=json.dumps(obj), check=False)
        local = crvalidate.validate(obj, schema)
        assert local.verdict != crvalidate.CANNOT_CHECK, local
        assert (served.returncode == 0) == local.ok, (body, served.stderr, local)
