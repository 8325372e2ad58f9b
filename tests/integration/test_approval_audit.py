"""Who approved a Manual revision is never lost (issue 32), with the real workflows, the real
history lookup of ``record_approval`` and fake cluster activities.

An approval sent as a signal can land at the tail of a pass, after the pass looked for
one; the loop then continues as new (history over the limit) before the next pass puts
the approval on record. The ``WorkflowExecutionSignaled`` event holding the sender's
identity is in the history of the run that received it, not of the run that records it.
These tests make that happen on purpose: the operator approves while the pass writes the
prepared revision's status (as the e2e test does, having seen that status), and the
history is pushed past the session server's continue-as-new limit first.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace

import pytest
from temporalio.client import Client
from temporalio.worker import Worker

from lockwright import contracts as c
from lockwright.activities.approval import approver
from lockwright.upgrade.plan import Plan
from lockwright.workflows import ALL_WORKFLOWS, PackageWorkflow
from tests.fixtures.temporal import CAN_SUGGESTED_AFTER_EVENTS
from tests.helpers import wait_for_async
from tests.integration.fake_cluster import FakeCluster
from tests.integration.test_workflows import Handle, provider, settled, start

pytestmark = pytest.mark.temporal

ALICE = "alice@ops (signal)"
BOB = "bob@ops (update)"
BREAKING = Plan(breaking=["CustomResourceDefinition widgets.example.org version v1 field "
                          ".spec.size: property removed"], breaking_count=1)


@pytest.fixture
async def cluster(temporal_client: Client, task_queue: str) -> AsyncIterator[FakeCluster]:
    """Fake activities, except that ``record_approval`` reads the history as the real one."""
    fake = FakeCluster()

    async def lookup(inp: c.RecordApprovalInput) -> str:
        return (await approver(temporal_client, inp))[0] or "an unknown client"

    fake.approver = lookup
    async with Worker(temporal_client, task_queue=task_queue, workflows=ALL_WORKFLOWS,
                      activities=fake.activities()):
        yield fake


async def as_operator(client: Client, identity: str) -> Client:
    """Another client of the same server, under the Temporal identity ``identity``."""
    return await Client.connect(client.service_client.config.target_host,
                                namespace=client.namespace, identity=identity)


async def run_id(handle: Handle) -> str:
    """The workflow's latest run."""
    return (await handle.describe()).run_id or ""


async def fill_history(handle: Handle) -> None:
    """Signal ``look_again`` until the run's history is over the continue-as-new limit."""
    while (await handle.describe()).raw_description.workflow_execution_info.history_length \
            <= CAN_SUGGESTED_AFTER_EVENTS:
        await handle.signal(PackageWorkflow.look_again, c.LookAgainInput(reason="filler"))


async def upgrade_approved_mid_pass(
        client: Client, task_queue: str, cluster: FakeCluster,
        approve: Callable[[Handle, str], Awaitable[None]], plan: Plan | None = None
) -> tuple[Handle, str, str]:
    """v1 approved by update; v2 (with ``plan`` against v1) prepared and approved by
    ``approve`` while the pass writes its waiting status, the history over the limit.
    Returns the handle, v2 once it runs, and the run that received v2's approval."""
    pkg = cluster.add(provider(policy=c.MANUAL))
    handle = await start(client, task_queue, pkg)
    v1 = (await settled(handle, "Inactive", signals=1)).current_revision
    bob = await as_operator(client, BOB)
    await bob.get_workflow_handle(handle.id).execute_update(
        c.UPDATE_APPROVE_REVISION, v1, result_type=c.ApproveRevisionResult)
    received: list[str] = []

    async def approve_v2(inp: c.WritePackageStatusInput) -> None:
        waiting = any(x.reason == "InactivePackageRevision" for x in inp.conditions)
        if waiting and inp.current_revision != v1 and not received:
            await fill_history(handle)
            received.append(await run_id(handle))
            await approve(handle, inp.current_revision)

    cluster.during_status.append(approve_v2)
    if plan is not None:
        cluster.plans[pkg.name] = plan
    cluster.add(replace(pkg, source=pkg.source.replace("v0.1.0", "v0.2.0"), generation=2))
    await handle.signal(PackageWorkflow.look_again, c.LookAgainInput(2))

    async def switched() -> str | None:
        st = await handle.query(PackageWorkflow.status)
        return st.active_revision if st.idle and st.active_revision != v1 else None

    v2 = await wait_for_async(switched, timeout=30, what="v2 approved and active")
    assert v2 and received, cluster.approved_by
    return handle, v2, received[0]


async def test_a_signal_approval_names_its_sender_after_continue_as_new(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    """The signal lands after the pass looked for an approval; the run continues as new
    before the next pass records it; the record still names the signal's sender."""
    alice = await as_operator(temporal_client, ALICE)

    async def signal(handle: Handle, rev: str) -> None:
        await alice.get_workflow_handle(handle.id).signal(c.SIGNAL_REQUEST_APPROVAL, rev)

    handle, v2, received_in = await upgrade_approved_mid_pass(
        temporal_client, task_queue, cluster, signal)
    by, recorded_in = cluster.approved_by[v2]
    assert recorded_in != received_in, "no continue-as-new between approval and record"
    assert by == ALICE, cluster.approved_by
    assert [who for who, _ in cluster.approved_by.values()] == [BOB, ALICE]
    asked = cluster.approvals[-1]
    assert (asked.revision, asked.via, asked.run_id) == (v2, "signal", received_in)
    # A state carried from a run before the run id was kept names the recording run: the
    # lookup reads back through the runs it continued from.
    assert (await approver(temporal_client, replace(asked, run_id=recorded_in)))[0] == ALICE


async def test_a_signal_accepting_a_breaking_plan_names_its_sender_after_continue_as_new(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    """The same race for the signal that approves v2 and accepts its breaking plan: both
    records (the approval and the acceptance of the plan) name the sender."""
    alice = await as_operator(temporal_client, ALICE)

    async def signal(handle: Handle, rev: str) -> None:
        await alice.get_workflow_handle(handle.id).signal(
            c.SIGNAL_REQUEST_APPROVAL, c.ApproveRevisionInput(rev, accept_plan=True))

    handle, v2, received_in = await upgrade_approved_mid_pass(
        temporal_client, task_queue, cluster, signal, BREAKING)
    assert cluster.approved_by[v2][1] != received_in, "no continue-as-new in between"
    assert cluster.approved_by[v2][0] == ALICE, cluster.approved_by
    assert cluster.approved_by[f"{v2}/plan"][0] == ALICE, cluster.approved_by
