"""Upgrade plans end to end (issues 15, 22): packages applied and read back through the
cluster.

Every upgrade is planned while it is prepared; the plan is on the new revision
(``PlanCompatible``) and, in full, in the package workflow (query ``plan``). A breaking
plan the upgrade gate holds stops the upgrade with the old revision running until it is
accepted: under the default evidence gate, one that would break an existing resource;
under the strict gate (annotation or worker setting), any. The module runs on a stack of
its own: one test installs dependencies, which the Lock holds, and one restarts the worker.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from lockwright import contracts as c
from lockwright.identity.names import API_DIGEST, PIN_API
from tests.e2e.packages import crd
from tests.e2e.test_dependencies import dep
from tests.e2e.test_failures import crd_exists
from tests.e2e.test_upgrade import GOOD_IMAGE, temporal_cli, upgrade_to, wait_active
from tests.fixtures.stack import PKG_GROUP, Stack, running_stack
from tests.helpers import unique, wait_for

pytestmark = pytest.mark.kube_shows(
    "kube-apiserver's own CRD validation and dry runs deciding each plan")

Obj = dict[str, Any]
META_API = "meta.pkg.crossplane.io/v1"


@pytest.fixture(scope="module")
def plans(registry: Any, auth_registry: Any, temporal_env: Any,
          cluster_kind: str) -> Iterator[Stack]:
    """A stack of its own (this module installs dependencies)."""
    with running_stack(registry, auth_registry, temporal_env, kind=cluster_kind) as s:
        yield s


def widget_crd(group: str, props: dict[str, Obj], plural: str = "widgets",
               kind: str = "Widget") -> Obj:
    """A CRD serving v1 whose spec has ``props``."""
    return crd(group, kind, plural=plural, version="v1", schema={
        "type": "object", "properties": {"spec": {"type": "object", "properties": props}}})


def push(stack: Stack, tmp: Path, repo: str, tag: str, crds: list[Obj],
         depends_on: list[Obj] | None = None) -> str:
    root = tmp / unique(tag)
    root.mkdir(parents=True)
    spec: Obj = {"controller": {"image": GOOD_IMAGE.format(tag=tag)}}
    spec |= {"dependsOn": depends_on} if depends_on else {}
    meta = {"apiVersion": META_API, "kind": "Provider",
            "metadata": {"name": "provider-widgets"}, "spec": spec}
    (root / "crossplane.yaml").write_text(yaml.safe_dump(meta))
    (root / "crds.yaml").write_text(yaml.safe_dump_all(crds))
    return stack.push(root, repo=repo, tag=tag)


def group() -> str:
    return f"{uuid.uuid4().hex[:8]}.plans.example.org"


def current(stack: Stack, name: str, other_than: str) -> str:
    """The package's current revision once it is another than ``other_than``."""
    def moved() -> str | None:
        pkg = stack.get_package("Provider", name) or {}
        rev = str((pkg.get("status") or {}).get("currentRevision") or "")
        return rev if rev and rev != other_than else None
    found: str = wait_for(moved, timeout=60, interval=0.2, what="the new current revision")
    return found


def revision_condition(stack: Stack, revision: str, type_: str) -> Obj:
    rev = stack.custom.get_cluster_custom_object(PKG_GROUP, "v1", "providerrevisions",
                                                 revision)
    return next((x for x in (rev.get("status") or {}).get("conditions") or []
                 if x["type"] == type_), {})


def plan_of(stack: Stack, name: str) -> Obj:
    """The package workflow's ``plan`` query, as the temporal CLI prints it."""
    out = temporal_cli(stack, "workflow", "query", "--workflow-id",
                       c.package_workflow_id(c.PROVIDER, name, stack.task_queue),
                       "--name", c.QUERY_PLAN, "--output", "json")
    result = json.loads(out)["queryResult"][0]
    assert isinstance(result, dict), out
    return result


def events(stack: Stack, name: str, reason: str) -> list[str]:
    found = client.CoreV1Api(stack.api).list_event_for_all_namespaces(
        field_selector=f"involvedObject.name={name}").items
    return [e.message for e in found if e.reason == reason]


def active_revision(stack: Stack, name: str) -> str:
    return next(r["metadata"]["name"] for r in stack.revisions("Provider", name)
                if r["spec"]["desiredState"] == "Active")


SIZE, COLOR = {"size": {"type": "integer"}}, {"color": {"type": "string"}}


def painted(stack: Stack, tmp: Path, prefix: str) -> tuple[str, str, str]:
    """A Provider whose v1 Widget has ``size`` and ``color``, healthy, and the Widget
    ``painted`` using ``color``; (group, repository, package name)."""
    g, repo, name = group(), unique("prov"), unique(prefix)
    stack.apply_package("Provider", name, push(stack, tmp, repo, "v1.0.0",
                                               [widget_crd(g, {**SIZE, **COLOR})]))
    stack.wait_healthy("Provider", name)
    stack.custom.create_cluster_custom_object(g, "v1", "widgets", {
        "apiVersion": f"{g}/v1", "kind": "Widget", "metadata": {"name": "painted"},
        "spec": {"color": "red"}})
    return g, repo, name


def test_removing_a_field_a_resource_uses_waits_for_the_plan_to_be_accepted(
        plans: Stack, tmp_path: Path) -> None:
    g, repo, name = painted(plans, tmp_path, "plan")
    v1 = active_revision(plans, name)
    before = crd_exists(plans, f"widgets.{g}") or {}

    upgrade_to(plans, name, push(plans, tmp_path, repo, "v2.0.0",
                                 [widget_crd(g, SIZE)]))
    v2 = current(plans, name, v1)
    refused = wait_for(lambda: events(plans, name, "BreakingUpgrade"), timeout=60,
                       interval=0.2, what="the BreakingUpgrade Event")
    assert f"lockwright.io/accept-plan={v2}" in refused[0], refused
    # The evidence gate (the default) holds it and names the resource and its field.
    assert "upgrade gate Evidence" in refused[0], refused
    assert f"1 existing Widget (widgets.{g} v1) would be rejected: painted: .spec.color" in (
        refused[0]), refused
    verdict = revision_condition(plans, v2, "PlanCompatible")
    assert verdict["status"] == "False" and verdict["reason"] == "BreakingChanges"
    assert "painted" in verdict["message"] and ".spec.color" in verdict["message"], verdict
    installed = plans.conditions("Provider", name)["Installed"]
    assert installed["status"] == "False" and "painted" in installed["message"], installed
    after = crd_exists(plans, f"widgets.{g}") or {}  # nothing written
    assert after["metadata"]["resource_version"] == before["metadata"]["resource_version"]
    assert active_revision(plans, name) == v1

    plans.kubectl("annotate", f"providers.{PKG_GROUP}", name,
                  f"lockwright.io/accept-plan={v2}")
    # The annotation itself signals the package: on kube, with the production recheck of
    # an unhealthy package (300 s), this fails if only the recheck noticed the acceptance.
    wait_active(plans, name, v2)

    def v2_schema() -> bool:
        found = (crd_exists(plans, f"widgets.{g}") or {})["spec"]["versions"][0]["schema"]
        return "color" not in found["open_apiv3_schema"]["properties"]["spec"]["properties"]

    wait_for(v2_schema, timeout=60, interval=0.2, what="v2's CRD, without color")
    wait_for(lambda: plans.conditions("Provider", name)["Installed"]["status"] == "True",
             timeout=60, interval=0.2, what="the package Installed again")
    accepted = wait_for(lambda: events(plans, v2, "AcceptPlan"), timeout=30, interval=0.2,
                        what="the acceptance on record")
    assert "(annotation)" in accepted[0] and " by kubectl" in accepted[0], accepted


def test_manual_upgrade_plan_before_approval_lists_field_object_and_dependency(
        plans: Stack, tmp_path: Path) -> None:
    g, repo, name = group(), unique("prov"), unique("manual")
    dep_repo = f"{plans.registry_host}/{unique('dep')}/provider-dep"
    for tag in ("v1.0.0", "v2.0.0"):
        push(plans, tmp_path, dep_repo.split("/", 1)[1], tag, [widget_crd(group(), {})])
    crds = [widget_crd(g, SIZE),
            widget_crd(g, {}, plural="gadgets", kind="Gadget")]
    v1_ref = push(plans, tmp_path, repo, "v1.0.0", crds,
                  [dep("Provider", dep_repo, ">=v1.0.0 <v2.0.0")])
    plans.apply_package("Provider", name, v1_ref, revisionActivationPolicy="Manual")
    v1 = current(plans, name, "")
    plans.kubectl("patch", f"providerrevisions.{PKG_GROUP}", v1, "--type", "merge",
                  "-p", '{"spec":{"desiredState":"Active"}}')
    wait_active(plans, name, v1)
    wait_for(lambda: crd_exists(plans, f"gadgets.{g}"), timeout=60, interval=0.2,
             what="v1's objects established")

    grown = widget_crd(g, {**SIZE, **COLOR})
    upgrade_to(plans, name, push(plans, tmp_path, repo, "v2.0.0", [grown],
                                 [dep("Provider", dep_repo, ">=v2.0.0")]))
    v2 = current(plans, name, v1)
    wait_for(lambda: revision_condition(plans, v2, "PlanCompatible").get("status") == "True",
             timeout=60, interval=0.2, what="the plan on the prepared revision")
    plan = plan_of(plans, name)
    assert (plan["revision"], plan["against"]) == (v2, v1)
    assert plan["first_removed"] == [f"CustomResourceDefinition gadgets.{g}"], plan
    [widgets] = [v for v in plan["crds"] if v["crd"] == f"widgets.{g}"]
    assert widgets["fields"][0]["first_added"] == [".spec.color"], widgets
    assert plan["dependencies"] == [f"move {dep_repo} >=v1.0.0 <v2.0.0 → >=v2.0.0"], plan
    assert active_revision(plans, name) == v1  # nothing switched before the approval


def test_compatible_automatic_upgrade_proceeds_without_a_stop(
        plans: Stack, tmp_path: Path) -> None:
    g, repo, name = group(), unique("prov"), unique("auto")
    plans.apply_package("Provider", name, push(plans, tmp_path, repo, "v1.0.0", [
        widget_crd(g, SIZE)]))
    plans.wait_healthy("Provider", name)
    v1 = active_revision(plans, name)
    upgrade_to(plans, name, push(plans, tmp_path, repo, "v2.0.0", [widget_crd(g, {
        **SIZE, **COLOR})]))
    v2 = current(plans, name, v1)
    wait_active(plans, name, v2)
    verdict = revision_condition(plans, v2, "PlanCompatible")
    assert verdict["status"] == "True" and verdict["message"].startswith(
        f"Compatible with {v1}: 0 added, 1 changed, 0 removed"), verdict
    assert not events(plans, name, "BreakingUpgrade")


def snapshot(stack: Stack, g: str) -> dict[str, str]:
    """Every object an install or a plan could touch, by kind and name: resourceVersion."""
    custom, out = stack.custom, {}
    for group_, version, plural in ((PKG_GROUP, "v1", "providers"),
                                    (PKG_GROUP, "v1", "providerrevisions"),
                                    (PKG_GROUP, "v1beta1", "locks"),
                                    ("apiextensions.k8s.io", "v1", "customresourcedefinitions"),
                                    (g, "v1", "widgets")):
        for item in custom.list_cluster_custom_object(group_, version, plural)["items"]:
            out[f"{plural}/{item['metadata']['name']}"] = item["metadata"]["resourceVersion"]
    core, apps = client.CoreV1Api(stack.api), client.AppsV1Api(stack.api)
    for kind, items in (("secrets", core.list_secret_for_all_namespaces().items),
                        ("deployments", apps.list_deployment_for_all_namespaces().items),
                        ("events", core.list_event_for_all_namespaces().items)):
        out |= {f"{kind}/{i.metadata.name}": i.metadata.resource_version for i in items}
    return out


def test_lockwright_plan_of_a_candidate_changes_nothing_and_gates_on_its_verdict(
        plans: Stack, tmp_path: Path) -> None:
    from tests.e2e.test_commands import lockwright, output

    g, repo, name = painted(plans, tmp_path, "cli")
    both = {**SIZE, **COLOR}
    breaking = push(plans, tmp_path, repo, "v2.0.0",
                    [widget_crd(g, SIZE)])
    grown = push(plans, tmp_path, repo, "v2.1.0", [widget_crd(g, {
        **both, "shape": {"type": "string"}})])
    # Another package holds a CRD the next candidate ships: preparing it would fail.
    gadgets, holder = widget_crd(g, {}, plural="gadgets", kind="Gadget"), unique("holder")
    plans.apply_package("Provider", holder, push(plans, tmp_path, unique("prov"), "v1.0.0",
                                                 [gadgets]))
    plans.wait_healthy("Provider", holder)
    taken = push(plans, tmp_path, repo, "v2.2.0", [widget_crd(g, both), gadgets])
    before = snapshot(plans, g)

    refused = lockwright(plans, "plan", f"provider/{name}", "--package", breaking, "-o", "json")
    assert refused.returncode == 2, output(refused)
    plan = json.loads(refused.stdout)
    assert plan["breaking_count"] == 2, plan  # the field removed, and the resource using it
    assert plan["rejected"][0]["first"] == ["painted"], plan
    fine = lockwright(plans, "plan", f"provider/{name}", "--package", grown)
    assert fine.returncode == 0, output(fine)
    assert "verdict: compatible" in fine.stdout and ".spec.shape" in fine.stdout, fine.stdout
    # The candidate's writes are dry-run as its preparation would make them.
    held = lockwright(plans, "plan", f"provider/{name}", "--package", taken)
    assert held.returncode == 1, output(held)
    assert f"gadgets.{g}" in held.stderr and holder in held.stderr, output(held)
    none = lockwright(plans, "plan", f"provider/{name}")
    assert none.returncode == 1 and "no prepared upgrade" in none.stderr, output(none)
    assert snapshot(plans, g) == before


def test_lockwright_plan_of_a_candidate_refuses_another_api_than_the_pin_as_an_install_does(
        plans: Stack, tmp_path: Path) -> None:
    from tests.e2e.test_commands import lockwright, output

    g, repo, name = group(), unique("prov"), unique("pinned")
    plans.apply_package("Provider", name, push(plans, tmp_path, repo, "v1.0.0",
                                               [widget_crd(g, {**SIZE, **COLOR})]))
    plans.wait_healthy("Provider", name)
    v1 = next(r for r in plans.revisions("Provider", name)
              if r["spec"]["desiredState"] == "Active")
    pinned = v1["metadata"]["annotations"][API_DIGEST]
    plans.kubectl("annotate", "provider", name, f"{PIN_API}={pinned}")
    grown = push(plans, tmp_path, repo, "v1.1.0", [widget_crd(g, {
        **SIZE, **COLOR, "shape": {"type": "string"}})])  # compatible, but another API
    patch = push(plans, tmp_path, repo, "v1.0.1", [widget_crd(g, {**SIZE, **COLOR})])
    before = snapshot(plans, g)

    refused = lockwright(plans, "plan", f"provider/{name}", "--package", grown, "-o", "json")
    assert refused.returncode == 2, output(refused)  # as a blocked plan exits
    plan = json.loads(refused.stdout)
    assert (plan["breaking_count"], plan["held_count"]) == (1, 1), plan
    words = plan["breaking"][0]
    for part in (f"Provider {name}: annotation {PIN_API} pins API {pinned}, but revision ",
                 (f"types that differ from the active revision {v1['metadata']['name']}: "
                  f"CustomResourceDefinition widgets.{g} (changed)"),
                 "to take the new API set the annotation to sha256:"):
        assert part in words, (part, words)
    text = lockwright(plans, "plan", f"provider/{name}", "--package", grown)
    assert text.returncode == 2 and f"✗ {words}" in text.stdout, output(text)
    clean = lockwright(plans, "plan", f"provider/{name}", "--package", patch)
    assert clean.returncode == 0, output(clean)  # a controller-only release: the pinned API
    assert "verdict: compatible" in clean.stdout and PIN_API not in clean.stdout, clean.stdout
    assert snapshot(plans, g) == before

    upgrade_to(plans, name, grown)  # the install refuses it in the same words

    def refusal() -> str | None:
        message = plans.conditions("Provider", name).get("Healthy", {}).get("message", "")
        return message if PIN_API in message else None
    assert words in wait_for(refusal, timeout=60, interval=0.2, what="the pin's refusal")


GATE = "lockwright.dev/upgrade-gate"


def sized(stack: Stack, tmp: Path, prefix: str) -> tuple[str, str, str]:
    """A Provider whose v1 Widget has ``size`` and ``color``, healthy, and the Widget
    ``sized`` in it that sets only ``size``; (group, repository, package name)."""
    g, repo, name = group(), unique("prov"), unique(prefix)
    stack.apply_package("Provider", name, push(stack, tmp, repo, "v1.0.0",
                                               [widget_crd(g, {**SIZE, **COLOR})]))
    stack.wait_healthy("Provider", name)
    stack.custom.create_cluster_custom_object(g, "v1", "widgets", {
        "apiVersion": f"{g}/v1", "kind": "Widget", "metadata": {"name": "sized"},
        "spec": {"size": 3}})
    return g, repo, name


def held_by_strict_gate(stack: Stack, tmp: Path, g: str, repo: str, name: str) -> str:
    """Upgrade to a v2 dropping ``color`` (no resource sets it); see it held by the
    strict gate with v1 running; the held revision."""
    v1 = active_revision(stack, name)
    upgrade_to(stack, name, push(stack, tmp, repo, "v2.0.0", [widget_crd(g, SIZE)]))
    v2 = current(stack, name, v1)
    held = wait_for(lambda: events(stack, name, "BreakingUpgrade"), timeout=60,
                    interval=0.2, what="the BreakingUpgrade Event")
    assert "upgrade gate Strict" in held[0] and ".spec.color" in held[0], held
    assert f"lockwright.io/accept-plan={v2}" in held[0], held
    installed = stack.conditions("Provider", name)["Installed"]
    assert installed["status"] == "False" and "upgrade gate Strict" in installed["message"]
    assert active_revision(stack, name) == v1
    return v2


def test_automatic_upgrade_dropping_a_field_no_resource_sets_rolls_out_with_a_warning(
        plans: Stack, tmp_path: Path) -> None:
    g, repo, name = sized(plans, tmp_path, "evidence")
    v1 = active_revision(plans, name)

    upgrade_to(plans, name, push(plans, tmp_path, repo, "v2.0.0", [widget_crd(g, SIZE)]))
    v2 = current(plans, name, v1)
    wait_active(plans, name, v2)
    verdict = revision_condition(plans, v2, "PlanCompatible")
    assert verdict["status"] == "False" and verdict["reason"] == "BreakingChanges", verdict
    assert ".spec.color" in verdict["message"], verdict
    [warned] = wait_for(lambda: events(plans, name, "BreakingUpgrade"), timeout=30,
                        interval=0.2, what="the Warning Event")
    assert "no existing resource is affected (upgrade gate Evidence)" in warned, warned
    assert f"CustomResourceDefinition widgets.{g} version v1 field .spec.color" in warned
    wait_for(lambda: plans.conditions("Provider", name)["Installed"]["status"] == "True",
             timeout=60, interval=0.2, what="the package Installed on v2")
    widget = plans.custom.get_cluster_custom_object(g, "v1", "widgets", "sized")
    assert widget["spec"] == {"size": 3}  # the resource is untouched


def test_strict_gate_by_annotation_holds_an_upgrade_no_resource_is_affected_by(
        plans: Stack, tmp_path: Path) -> None:
    g, repo, name = sized(plans, tmp_path, "strict")
    plans.kubectl("annotate", f"providers.{PKG_GROUP}", name, f"{GATE}=Strict")
    v2 = held_by_strict_gate(plans, tmp_path, g, repo, name)
    # The annotation signals the package: Evidence lets the same upgrade through.
    plans.kubectl("annotate", "--overwrite", f"providers.{PKG_GROUP}", name,
                  f"{GATE}=Evidence")
    wait_active(plans, name, v2)


def test_strict_gate_by_worker_setting_holds_every_package_the_annotation_does_not_free(
        plans: Stack, tmp_path: Path) -> None:
    plans.restart_worker(LOCKWRIGHT_UPGRADE_GATE="Strict")
    try:
        g, repo, name = sized(plans, tmp_path, "setting")
        v2 = held_by_strict_gate(plans, tmp_path, g, repo, name)
        plans.kubectl("annotate", f"providers.{PKG_GROUP}", name, f"{GATE}=Evidence")
        wait_active(plans, name, v2)
    finally:
        plans.restart_worker(LOCKWRIGHT_UPGRADE_GATE="Evidence")
