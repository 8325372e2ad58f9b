"""Upgrade plans in the workflows (issues 15, 22), with fake activities and the real
workflows.

A prepared upgrade is planned (``plan_revision``) against the active revision; a breaking
plan the upgrade gate holds (Strict: any; Evidence: one that would break an existing
resource or that could not be weighed) does not activate on its own: the new revision
stays Inactive, the old one keeps control, an Event says how to go on; the package
annotation or the activation update's accept flag accepts that one revision's plan, on
record (who, when), and no later one. A breaking plan the evidence gate lets through
switches with a Warning Event.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from temporalio.client import Client, WorkflowUpdateFailedError

from lockwright import contracts as c
from lockwright.conditions import MSG_RESOLVE_DEPENDENCIES
from lockwright.upgrade.plan import Plan
from tests.integration.fake_cluster import FakeCluster, FakePackage, permanent
from tests.integration.test_workflows import (  # noqa: F401 - the fixture
    Handle,
    activate,
    cluster,
    provider,
    record,
    settled,
    start,
)
from lockwright.workflows.package import PackageWorkflow
from lockwright.workflows.plan import PlanCandidate

BREAKING = Plan(breaking=[("CustomResourceDefinition widgets.example.org version v1 field "
                           ".spec.size: property removed; keep it")], breaking_count=1)
# Weighed against the live resources: none is affected; or one would be.
UNAFFECTED = replace(BREAKING, weighed=True)
AFFECTED = replace(UNAFFECTED, held_count=1, held=[(
    "1 existing Widget (widgets.example.org v1) would be rejected: default/sized: .spec.size: "
    "removed from the schema: its value would be lost")])


async def upgrade(handle: Handle, cluster: FakeCluster, pkg: FakePackage, version: str,
                  generation: int, phase: str) -> c.PackageStatusResult:
    """Point the package at ``version`` and wait until the workflow settles in ``phase``."""
    cluster.add(replace(pkg, source=pkg.source.replace("v0.1.0", version),
                        generation=generation))
    await handle.signal(PackageWorkflow.look_again, c.LookAgainInput(generation))
    return await settled(handle, phase, signals=generation)


async def test_breaking_plan_holds_until_accepted_by_annotation_for_that_revision_only(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    pkg = cluster.add(provider())
    handle = await start(temporal_client, task_queue, pkg)
    v1 = (await settled(handle, "Healthy", signals=1)).current_revision
    cluster.plans[pkg.name] = BREAKING

    v2 = (await upgrade(handle, cluster, pkg, "v0.2.0", 2, "Inactive")).current_revision
    assert cluster.planned[-1].against == v1 and cluster.planned[-1].revision == v2
    assert cluster.revisions[v1].desired_state == c.ACTIVE
    assert cluster.established[f"{v2}/control"] == 0  # nothing written as active
    [event] = [e for e in cluster.events if e.reason == "BreakingUpgrade"]
    assert f"lockwright.io/accept-plan={v2}" in event.message and "property removed" in (
        event.message)
    installed = cluster.last_status(pkg.name)["Installed"]
    assert installed.status == "False" and "upgrade plan breaks" in installed.message
    shown = await handle.query(PackageWorkflow.plan)
    assert shown is not None and (shown.revision, shown.breaking_count) == (v2, 1)

    cluster.add(replace(pkg, source=pkg.source.replace("v0.1.0", "v0.2.0"), generation=2,
                        accept_plan=v2))
    await handle.signal(PackageWorkflow.look_again, c.LookAgainInput(2))
    st = await settled(handle, "Healthy", signals=3)
    assert st.active_revision == v2 and cluster.revisions[v2].desired_state == c.ACTIVE
    [accepted] = [a for a in cluster.approvals if a.plan]
    assert (accepted.revision, accepted.via) == (v2, "annotation")

    # Accepting v2's plan does not accept v3's.
    v3 = (await upgrade(handle, cluster, replace(pkg, accept_plan=v2), "v0.3.0", 3,
                        "Inactive")).current_revision
    assert v3 != v2 and cluster.revisions[v2].desired_state == c.ACTIVE
    await record(temporal_client, handle.id, "package_upgrade_plan_accepted")
    await record(temporal_client, c.revision_workflow_id(pkg.kind, v2, task_queue),
                 "revision_planned")


async def test_the_preparation_checks_the_lock_dry_runs_and_plans_side_by_side(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    """take_lock's check, the dry run and the plan each wait at a barrier of three until
    all have come (PATCH_PREPARE_TOGETHER): one after another, the first would wait alone
    and fail. The switch then runs as before."""
    pkg = cluster.add(provider())
    handle = await start(temporal_client, task_queue, pkg)
    v1 = (await settled(handle, "Healthy", signals=1)).current_revision
    cluster.prepare_side_by_side = asyncio.Barrier(3)
    st = await upgrade(handle, cluster, pkg, "v0.2.0", 2, "Healthy")
    assert st.active_revision != v1 and cluster.planned[-1].against == v1
    assert cluster.established[f"{st.active_revision}/dry-run"] == 1
    assert [t.check_only for t in cluster.locks_taken] == [False, True, False]


async def test_the_preparation_parses_beside_the_dry_run_and_the_plan(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    """The parse, the dry run and the plan each wait at a barrier of three
    (PATCH_PREPARE_BESIDE_PARSE): parsed first, as before, the parse would wait alone and
    fail. Crossplane's version and the Lock's check still follow the parse."""
    pkg = cluster.add(provider())
    handle = await start(temporal_client, task_queue, pkg)
    v1 = (await settled(handle, "Healthy", signals=1)).current_revision
    cluster.prepare_side_by_side = asyncio.Barrier(3)
    cluster.prepare_parties = frozenset({c.PARSE_PACKAGE, c.ESTABLISH_OBJECTS,
                                         c.PLAN_REVISION})
    begun = len(cluster.order)
    st = await upgrade(handle, cluster, pkg, "v0.2.0", 2, "Healthy")
    assert st.active_revision != v1 and cluster.established[f"{st.active_revision}/dry-run"] == 1
    prepared = cluster.order[begun:]
    parsed = prepared.index(c.PARSE_PACKAGE)
    assert parsed < prepared.index(c.CHECK_CROSSPLANE_VERSION) < prepared.index(c.TAKE_LOCK)
    assert prepared.count(c.PARSE_PACKAGE) == 1  # the switch takes the preparation's parse


@pytest.mark.parametrize(("step", "error", "prefix"), [
    (c.TAKE_LOCK, permanent("ConflictError", "widgets.example.org is held by provider-b"),
     MSG_RESOLVE_DEPENDENCIES),
    (c.PARSE_PACKAGE, permanent("LintError", "object is not a CRD"), "")])
async def test_a_preparation_that_fails_in_the_parses_lane_is_named_after_its_step(
        temporal_client: Client, task_queue: str, cluster: FakeCluster, step: str,
        error: Exception, prefix: str) -> None:
    """The parse's lane runs the parse, Crossplane's version and the Lock's check one after
    another beside the dry run and the plan: the revision's status names the step that
    failed (Crossplane's prefix for the Lock's), not the lane's first; v1 keeps control."""
    pkg = cluster.add(provider())
    handle = await start(temporal_client, task_queue, pkg)
    v1 = (await settled(handle, "Healthy", signals=1)).current_revision
    cluster.fail(step, error)
    st = await upgrade(handle, cluster, pkg, "v0.2.0", 2, "Failed")
    [cond] = cluster.revision_status[st.current_revision][-1].conditions
    assert cond.message == prefix + error.message, cond  # type: ignore[attr-defined]
    assert st.active_revision == v1 and cluster.revisions[v1].desired_state == c.ACTIVE


async def test_manual_approval_of_a_breaking_plan_fails_until_it_accepts_the_plan(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    pkg = cluster.add(provider(policy=c.MANUAL))
    handle = await start(temporal_client, task_queue, pkg)
    v1 = (await settled(handle, "Inactive", signals=1)).current_revision
    await activate(handle, v1)
    cluster.plans[pkg.name] = BREAKING
    v2 = (await upgrade(handle, cluster, pkg, "v0.2.0", 2, "Inactive")).current_revision
    shown = await handle.query(PackageWorkflow.plan)  # the plan is there before approval
    assert shown is not None and shown.revision == v2 and not shown.compatible

    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await activate(handle, v2)
    assert "plan" in str(refused.value.cause) and "accept" in str(refused.value.cause)
    assert cluster.revisions[v1].desired_state == c.ACTIVE

    result: c.ApproveRevisionResult = await handle.execute_update(
        c.UPDATE_APPROVE_REVISION, c.ApproveRevisionInput(v2, by="ops", accept_plan=True),
        result_type=c.ApproveRevisionResult)
    assert result.active and cluster.revisions[v2].desired_state == c.ACTIVE
    assert [(a.via, a.by) for a in cluster.approvals if a.plan] == [("update", "ops")]


async def test_compatible_plan_switches_without_a_stop(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    pkg = cluster.add(provider())
    handle = await start(temporal_client, task_queue, pkg)
    await settled(handle, "Healthy", signals=1)
    st = await upgrade(handle, cluster, pkg, "v0.2.0", 2, "Healthy")
    assert st.active_revision == st.current_revision and len(cluster.planned) == 1
    assert not [e for e in cluster.events if e.reason == "BreakingUpgrade"]
    conditions = {x.type: x for x in cluster.revision_status[st.current_revision][0].conditions}
    assert conditions["PlanCompatible"].status == "True"


async def test_a_candidate_is_planned_against_the_active_revision_and_nothing_else_runs(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    pkg = cluster.add(provider())
    handle = await start(temporal_client, task_queue, pkg)
    v1 = (await settled(handle, "Healthy", signals=1)).current_revision
    cluster.plans[pkg.name] = BREAKING
    before = dict(cluster.calls)
    candidate = pkg.source.replace("v0.1.0", "v9.0.0")
    plan_id = c.plan_workflow_id(pkg.kind, pkg.name, "test", task_queue)
    found = await temporal_client.execute_workflow(
        PlanCandidate.run, c.PlanCandidateInput(kind=pkg.kind, name=pkg.name,
                                                source=candidate),
        id=plan_id, task_queue=task_queue)
    assert (found.against, found.breaking_count) == (v1, 1)
    assert cluster.planned[-1].candidate == candidate
    ran = {k: n - before.get(k, 0) for k, n in cluster.calls.items() if n != before.get(k, 0)}
    assert ran == {c.READ_PACKAGE: 1, c.PLAN_REVISION: 1}
    await record(temporal_client, plan_id, "plan_candidate")


def warnings(cluster: FakeCluster) -> list[c.RecordEventInput]:
    return [e for e in cluster.events if e.reason == "BreakingUpgrade"]


async def test_evidence_gate_switches_when_no_resource_is_affected_and_warns(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    pkg = cluster.add(provider())
    handle = await start(temporal_client, task_queue, pkg)
    v1 = (await settled(handle, "Healthy", signals=1)).current_revision
    cluster.plans[pkg.name] = UNAFFECTED

    st = await upgrade(handle, cluster, pkg, "v0.2.0", 2, "Healthy")
    v2 = st.current_revision
    assert v2 != v1 and st.active_revision == v2
    assert cluster.revisions[v2].desired_state == c.ACTIVE
    [event] = warnings(cluster)
    assert event.type == "Warning" and "no existing resource is affected" in event.message
    assert "property removed" in event.message and not cluster.approvals
    conditions = {x.type: x for x in cluster.revision_status[v2][0].conditions}
    assert conditions["PlanCompatible"].status == "False"
    await record(temporal_client, handle.id, "package_upgrade_plan_unaffected")


async def test_evidence_gate_holds_naming_the_resource_and_strict_holds_either_plan(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    pkg = cluster.add(provider())
    handle = await start(temporal_client, task_queue, pkg)
    v1 = (await settled(handle, "Healthy", signals=1)).current_revision
    cluster.plans[pkg.name] = AFFECTED
    v2 = (await upgrade(handle, cluster, pkg, "v0.2.0", 2, "Inactive")).current_revision
    assert cluster.revisions[v1].desired_state == c.ACTIVE
    installed = cluster.last_status(pkg.name)["Installed"]
    assert "upgrade gate Evidence" in installed.message
    assert "default/sized: .spec.size" in installed.message, installed.message
    [held] = warnings(cluster)
    assert "default/sized" in held.message and f"accept-plan={v2}" in held.message

    # Strict (the annotation) holds even a plan no resource is affected by ...
    cluster.plans[pkg.name] = UNAFFECTED
    strict = replace(pkg, upgrade_gate="Strict")
    v3 = (await upgrade(handle, cluster, strict, "v0.3.0", 3, "Inactive")).current_revision
    assert v3 != v2 and cluster.revisions[v1].desired_state == c.ACTIVE
    assert "upgrade gate Strict" in warnings(cluster)[-1].message
    # ... until the package says Evidence again.
    st = await upgrade(handle, cluster, pkg, "v0.3.0", 3, "Healthy")
    assert st.active_revision == v3 and cluster.revisions[v3].desired_state == c.ACTIVE
    assert "no existing resource is affected" in warnings(cluster)[-1].message
    await record(temporal_client, handle.id, "package_upgrade_plan_strict")
