"""PackageWorkflow and InstallRevision on a real dev server, with fake activities.

Matrix:
- happy path per kind (provider, configuration, function): Installed/Healthy written, and
  only the steps the kind needs (RBAC for providers, TLS/runtime/health for runtimes);
- duplicated, repeated and reordered signals: exactly one install of the revision;
- permanent errors (bad reference, lint, Crossplane constraint): written to status once,
  never retried, a later signal runs again;
- errors that heal (outage, tag not yet pushed, no pull secret yet, a conflict): retried
  with capped backoff, shown on status and in the workflow meanwhile, then Healthy;
- runtime that never becomes available: Healthy=False with the runtime's message;
- Manual approval: waits for the update, whose validator rejects unknown revisions;
- continue-as-new: state survives, nothing reinstalled;
- package deleted: cleanup, workflow ends; a package being deleted (any propagation) is
  only cleaned up, an install running then is cancelled, and nothing is written after;
- a revision deleted by hand: re-created once it is gone, not while it goes, not in a loop;
- every history read back: no payload over 32 KiB, no pull-secret value.

Set ``LOCKWRIGHT_RECORD_HISTORIES=1`` to (re)write ``tests/replay/histories/`` from these
runs; do it only on purpose, when a workflow's command order changed by design.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.message import Message
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.exceptions import ApplicationError
from temporalio.worker import Worker

from lockwright import contracts as c
from lockwright.conditions import MSG_ESTABLISH
from tests.helpers import unique, wait_for_async
from tests.integration.fake_cluster import (
    PULL_SECRET_VALUE,
    FakeCluster,
    FakePackage,
    gone,
    permanent,
    transient,
)
from lockwright.workflows import ALL_WORKFLOWS, PackageWorkflow

pytestmark = pytest.mark.temporal

FAST = c.Tuning(retry_initial_s=0.1, retry_max_s=0.2, retry_attempts=2,
                backoff_initial_s=0.2, backoff_max_s=1.0, health_poll_s=0.1, health_polls=4,
                unhealthy_recheck_s=3600)
MAX_PAYLOAD = 32 * 1024
HISTORIES = Path(__file__).parent.parent / "replay" / "histories"
RECORD = os.environ.get("LOCKWRIGHT_RECORD_HISTORIES") == "1"

Handle = WorkflowHandle[PackageWorkflow, c.PackageResult]


@pytest.fixture
async def cluster(temporal_client: Client, task_queue: str) -> AsyncIterator[FakeCluster]:
    """A fake cluster whose activities, and the real workflows, run on this test's queue."""
    fake = FakeCluster()
    async with Worker(temporal_client, task_queue=task_queue, workflows=ALL_WORKFLOWS,
                      activities=fake.activities()):
        yield fake


async def start(client: Client, task_queue: str, pkg: FakePackage,
                generation: int = 1, tuning: c.Tuning = FAST) -> Handle:
    """Signal-with-start, as the watcher does."""
    return await client.start_workflow(
        PackageWorkflow.run, c.PackageInput(kind=pkg.kind, name=pkg.name, tuning=tuning),
        id=c.package_workflow_id(pkg.kind, pkg.name, task_queue), task_queue=task_queue,
        start_signal=c.SIGNAL_LOOK_AGAIN,
        start_signal_args=[c.LookAgainInput(generation=generation, reason="test")],
        search_attributes=TypedSearchAttributes([
            SearchAttributePair(c.SA_PACKAGE_KIND, pkg.kind),
            SearchAttributePair(c.SA_PACKAGE_NAME, pkg.name)]),
        static_summary=f"{pkg.kind} {pkg.name}")


async def settled(handle: Handle, phase: str, signals: int = 0,
                  timeout: float = 20.0) -> c.PackageStatusResult:
    """Wait until the workflow idles in ``phase`` having seen at least ``signals`` signals."""
    seen: list[c.PackageStatusResult] = []

    async def check() -> c.PackageStatusResult | None:
        st = await handle.query(PackageWorkflow.status)
        seen[:] = [st]
        ok = st.idle and st.phase == phase and st.signals_seen >= signals
        return st if ok else None
    try:
        found = await wait_for_async(check, timeout=timeout, what=f"phase {phase}")
    except AssertionError as err:
        raise AssertionError(f"{err}; last status {seen}") from None
    assert found is not None
    return found


async def activate(handle: Handle, revision: str,
                   update_id: str | None = None) -> c.ApproveRevisionResult:
    """The operator's approval, by update name as the CLI sends it."""
    result: c.ApproveRevisionResult = await handle.execute_update(
        c.UPDATE_APPROVE_REVISION, c.ApproveRevisionInput(revision), id=update_id,
        result_type=c.ApproveRevisionResult)
    return result


def provider(kind: str = c.PROVIDER, **kw: Any) -> FakePackage:
    """A package with a unique name."""
    name = unique(kind[:4])
    return FakePackage(kind=kind, name=name, source=f"xpkg.example.com/{name}:v0.1.0", **kw)


# --- happy path -------------------------------------------------------------------------
@pytest.mark.parametrize("kind, rbac, runtime", [
    (c.PROVIDER, 1, 1), (c.CONFIGURATION, 0, 0), (c.FUNCTION, 0, 1)])
async def test_install_ends_installed_and_healthy(
        temporal_client: Client, task_queue: str, cluster: FakeCluster,
        kind: str, rbac: int, runtime: int) -> None:
    """A new package installs its revision, activates it and writes Installed/Healthy."""
    pkg = cluster.add(provider(kind))
    handle = await start(temporal_client, task_queue, pkg)
    st = await settled(handle, "Healthy", signals=1)

    first = {x.type: x for x in cluster.package_status[pkg.name][0].conditions}
    assert first["Healthy"].message == 'Package revision health is "Unknown"'
    conds = cluster.last_status(pkg.name)
    assert (conds["Installed"].status, conds["Installed"].reason) == (
        "True", "ActivePackageRevision")
    assert (conds["Healthy"].status, conds["Healthy"].reason) == ("True", "HealthyPackageRevision")
    assert st.active_revision == st.current_revision and st.installs == 1
    assert cluster.revisions[st.current_revision].desired_state == c.ACTIVE
    assert cluster.activations == []  # created Active: nothing to hand over
    assert cluster.established == {f"{st.current_revision}/control": 1}
    assert (cluster.calls[c.ENSURE_RBAC], cluster.calls[c.ENSURE_RUNTIME],
            cluster.calls[c.ENSURE_TLS]) == (rbac, runtime, runtime)
    rev_conds = {x.type: x for x in cluster.revision_status[st.current_revision][-1].conditions}
    assert rev_conds["RevisionHealthy"].status == "True"
    assert ("RuntimeHealthy" in rev_conds) == bool(runtime)
    # The child says Healthy on the package beside the revision (PATCH_PACKAGE_HEALTHY_BESIDE);
    # the parent's write after it is the same, so the real activity finds nothing to change.
    writes, by = cluster.package_status[pkg.name], cluster.package_status_from[pkg.name]
    healthy = [i for i, w in enumerate(writes)
               if any(x.type == "Healthy" and x.status == "True" for x in w.conditions)]
    assert [by[i] for i in healthy] == ["InstallRevision", "PackageWorkflow"]
    assert writes[healthy[0]] == writes[healthy[1]]
    await check_histories(temporal_client, handle, [st.current_revision], kind)
    if kind == c.PROVIDER:
        await record(temporal_client, handle.id, "package_install")
        await record(temporal_client,
                     c.revision_workflow_id(kind, st.current_revision, task_queue),
                     "revision_install_provider")


@pytest.mark.parametrize("kind, parties", [(c.PROVIDER, 3), (c.FUNCTION, 2)])
async def test_tls_objects_and_rbac_run_side_by_side(
        temporal_client: Client, task_queue: str, cluster: FakeCluster,
        kind: str, parties: int) -> None:
    """A revision in the Lock runs TLS, establish and RBAC at once: each fake waits at a
    barrier until all have come, so one after another the first would wait alone and fail."""
    cluster.side_by_side = asyncio.Barrier(parties)
    pkg = cluster.add(provider(kind))
    handle = await start(temporal_client, task_queue, pkg)
    st = await settled(handle, "Healthy", signals=1)
    assert (cluster.calls[c.ENSURE_TLS], cluster.calls[c.ESTABLISH_OBJECTS],
            cluster.calls[c.ENSURE_RBAC]) == (1, 1, 1 if kind == c.PROVIDER else 0)
    assert cluster.calls[c.ENSURE_RUNTIME] == 1 and st.installs == 1


@pytest.mark.parametrize("step, prefix", [
    (c.ESTABLISH_OBJECTS, MSG_ESTABLISH), (c.ENSURE_RBAC, "")])
async def test_a_step_failing_beside_the_others_is_the_one_named(
        temporal_client: Client, task_queue: str, cluster: FakeCluster,
        step: str, prefix: str) -> None:
    """One step of the three fails: the others still run to their end, the revision's status
    names the failed one (by its message's prefix), and no runtime starts."""
    cluster.side_by_side = asyncio.Barrier(3)
    pkg = cluster.add(provider())
    cluster.fail(step, permanent("PermissionRejected", f"refused in {step}"))
    handle = await start(temporal_client, task_queue, pkg)
    st = await settled(handle, "Failed", signals=1)
    assert (cluster.calls[c.ENSURE_TLS], cluster.calls[c.ESTABLISH_OBJECTS],
            cluster.calls[c.ENSURE_RBAC], cluster.calls[c.ENSURE_RUNTIME]) == (1, 1, 1, 0)
    [cond] = cluster.revision_status[st.current_revision][-1].conditions
    assert cond.message == f"{prefix}refused in {step}"


async def test_duplicate_and_reordered_signals_install_once(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    """Many watchers, repeated events, out-of-order generations: one install, same status."""
    pkg = cluster.add(provider())
    handles = await asyncio.gather(*(start(temporal_client, task_queue, pkg, g)
                                     for g in (3, 1, 2)))
    assert len({h.result_run_id for h in handles}) == 1
    for generation in (5, 3, 4, 1):
        await handles[0].signal(PackageWorkflow.look_again, c.LookAgainInput(generation))
    st = await settled(handles[0], "Healthy", signals=7)

    assert st.installs == 1
    assert cluster.established == {f"{st.current_revision}/control": 1}
    assert cluster.calls[c.FETCH_PACKAGE] == 1
    assert len(cluster.revisions) == 1
    await check_histories(temporal_client, handles[0], [st.current_revision])


# --- errors -----------------------------------------------------------------------------
@pytest.mark.parametrize("step, error, reason, text", [
    (c.RESOLVE_DIGEST, permanent("InvalidReference", "cannot parse package reference x::y"),
     "UnpackingPackage", "cannot unpack package: cannot parse package reference x::y"),
    (c.PARSE_PACKAGE, permanent("LintError", "linting package contents failed: bad CRD"),
     "UnpackingPackage", "linting package contents failed: bad CRD"),
    (c.CHECK_CROSSPLANE_VERSION, permanent(
        "ConstraintError", "incompatible Crossplane version: package is not compatible"),
     "UnhealthyPackageRevision", "incompatible Crossplane version"),
])
async def test_permanent_error_is_written_and_not_retried(
        temporal_client: Client, task_queue: str, cluster: FakeCluster,
        step: str, error: Exception, reason: str, text: str) -> None:
    """A permanent error ends the attempt once, shows on status, waits for the next signal."""
    pkg = cluster.add(provider())
    cluster.fail(step, error)
    handle = await start(temporal_client, task_queue, pkg)
    st = await settled(handle, "Failed", signals=1)

    assert cluster.calls[step] == 1
    healthy = cluster.last_status(pkg.name)["Healthy"]
    assert healthy.status == "False" and text in healthy.message
    assert reason in {x.reason for x in cluster.last_status(pkg.name).values()}
    assert "retrying" not in healthy.message and st.retry_attempt == 0
    assert st.last_error_type == error.type  # type: ignore[attr-defined]
    if step == c.CHECK_CROSSPLANE_VERSION:
        # The failing revision says why.
        [written] = cluster.revision_status[st.current_revision]
        [cond] = written.conditions
        assert cond.message.startswith("incompatible Crossplane version"), cond

    await handle.signal(PackageWorkflow.look_again, c.LookAgainInput(2, "fixed"))
    await settled(handle, "Healthy", signals=2)
    assert cluster.calls[step] == 2
    await check_histories(temporal_client, handle, [st.current_revision] if st.current_revision
                          else [])
    if step == c.CHECK_CROSSPLANE_VERSION:
        await record(temporal_client, handle.id, "package_permanent_error")


async def test_transient_error_retries_with_status_shown(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    """A registry outage longer than the quick retries shows on status, then heals."""
    pkg = cluster.add(provider())
    cluster.fail(c.FETCH_PACKAGE, *(transient() for _ in range(FAST.retry_attempts * 2)))
    handle = await start(temporal_client, task_queue, pkg)
    st = await settled(handle, "Healthy", signals=1)

    messages = [w.conditions[-1].message for w in cluster.package_status[pkg.name]]
    retrying = [m for m in messages if "retrying" in m]
    assert len(retrying) == 2, messages
    assert "cannot unpack package: cannot get package: registry unreachable" in retrying[0]
    assert "attempt 1" in retrying[0] and "attempt 2" in retrying[1]
    assert cluster.calls[c.FETCH_PACKAGE] == FAST.retry_attempts * 2 + 1
    assert cluster.last_status(pkg.name)["Healthy"].status == "True"
    assert st.retry_attempt == 0 and st.last_error == ""
    await check_histories(temporal_client, handle, [st.current_revision])
    await record(temporal_client, handle.id, "package_transient_retry")
    await record(temporal_client,
                 c.revision_workflow_id(pkg.kind, st.current_revision, task_queue),
                 "revision_install_failed", status=WorkflowExecutionStatus.FAILED)


@pytest.mark.parametrize("step, error", [
    (c.RESOLVE_DIGEST, ApplicationError("xpkg.example.com/p:v2 not found: manifest unknown",
                                        type="PackageNotFound")),
    (c.RESOLVE_DIGEST, ApplicationError("registry requires credentials and none are "
                                        "configured", type="Unauthorized")),
    (c.TAKE_LOCK, ApplicationError("CRD nops.example.org belongs to Provider provider-b",
                                   type="ConflictError")),
])
async def test_errors_that_heal_are_retried_with_capped_backoff(
        temporal_client: Client, task_queue: str, cluster: FakeCluster, step: str,
        error: ApplicationError) -> None:
    """A tag not pushed yet, a missing pull secret, a Lock conflict: retried until healed."""
    pkg = cluster.add(provider())
    attempts = FAST.retry_attempts * 4  # four passes fail, the fifth heals
    cluster.fail(step, *(error for _ in range(attempts)))
    handle = await start(temporal_client, task_queue, pkg)

    async def retrying() -> c.PackageStatusResult | None:
        st = await handle.query(PackageWorkflow.status)
        return st if st.phase == "Retrying" and st.retry_attempt >= 2 else None

    shown = await wait_for_async(retrying, timeout=20, what="retrying, attempt 2")
    assert shown.last_error_type == error.type and shown.next_retry_at, shown
    details = await current_details(handle)
    assert "**Retrying**" in details and "next retry at" in details, details
    await settled(handle, "Healthy", signals=1, timeout=30)
    assert cluster.calls[step] == attempts + 1
    messages = [w.conditions[-1].message for w in cluster.package_status[pkg.name]]
    waits = [float(m.split("retrying in ")[1].split("s,")[0]) for m in messages
             if "retrying in" in m]
    # Exponential, capped at backoff_max_s (a minute by default, as Crossplane's requeues).
    assert waits == [min(FAST.backoff_initial_s * 2 ** i, FAST.backoff_max_s)
                     for i in range(4)], messages


async def current_details(handle: Handle) -> str:
    """The workflow's current details, as the Temporal UI shows them."""
    from temporalio.api.sdk.v1 import WorkflowMetadata

    meta = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
    return str(meta.current_details)


async def test_runtime_never_available_is_unhealthy_not_failed(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    """The revision installs; Healthy=False carries the runtime's own message."""
    pkg = cluster.add(provider())
    cluster.health[pkg.name] = c.CheckHealthResult(
        healthy=False, message="Deployment has minimum availability: False")
    handle = await start(temporal_client, task_queue, pkg)
    st = await settled(handle, "Unhealthy", signals=1)

    healthy = cluster.last_status(pkg.name)["Healthy"]
    assert (healthy.status, healthy.reason) == ("False", "UnhealthyPackageRevision")
    assert healthy.message == ('Package runtime health is "False" with message: post establish'
                               ' runtime hook failed for package: Deployment has minimum '
                               'availability: False')
    assert cluster.calls[c.CHECK_HEALTH] == FAST.health_polls
    assert len(cluster.revision_status[st.current_revision]) == 2  # once while waiting, once at end
    # The package shows the runtime's words while the wait runs, not "Unknown" until it ends.
    writes = cluster.package_status[pkg.name]
    during = [w for w in writes if w.current_revision == st.current_revision
              and any(x.type == "Healthy" and "minimum availability" in x.message
                      for x in w.conditions)]
    assert len(during) == 2 and during[0].observed_generation == 1, writes  # wait, then end
    await check_histories(temporal_client, handle, [st.current_revision])
    await record(temporal_client,
                 c.revision_workflow_id(pkg.kind, st.current_revision, task_queue),
                 "revision_install_unhealthy")


# --- Manual approval --------------------------------------------------------------------
async def test_manual_activation_waits_for_update(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    """Manual: installed inactive; the update's validator rejects unknown revisions."""
    pkg = cluster.add(provider(policy=c.MANUAL))
    handle = await start(temporal_client, task_queue, pkg)
    st = await settled(handle, "Inactive", signals=1)
    installed = cluster.last_status(pkg.name)["Installed"]
    assert (installed.status, installed.reason) == ("False", "InactivePackageRevision")
    assert cluster.established == {f"{st.current_revision}/owner": 1}

    with pytest.raises(WorkflowUpdateFailedError) as err:
        await activate(handle, "nope-123456789abc")
    assert "unknown revision" in str(err.value.cause)

    result = await activate(handle, st.current_revision, update_id=f"approve-{st.current_revision}")
    assert result.active and result.revision == st.current_revision
    installed = cluster.last_status(pkg.name)["Installed"]
    assert (installed.status, installed.reason) == ("True", "ActivePackageRevision")
    assert cluster.revisions[st.current_revision].desired_state == c.ACTIVE
    assert cluster.established[f"{st.current_revision}/control"] == 1
    [approval] = cluster.approvals  # on record once: who (from history) and when
    assert (approval.revision, approval.via, approval.by) == (st.current_revision, "update", "")
    assert approval.at and approval.workflow_id == handle.id
    await check_histories(temporal_client, handle, [st.current_revision])
    await record(temporal_client, handle.id, "package_manual_activation")


async def test_activation_signal_twin_records_approval(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    """The signal twin approves without waiting; the loop carries it out."""
    pkg = cluster.add(provider(policy=c.MANUAL))
    handle = await start(temporal_client, task_queue, pkg)
    st = await settled(handle, "Inactive", signals=1)
    # A plain string, as typed on the temporal CLI: --input '"<revision>"'.
    await handle.signal(c.SIGNAL_REQUEST_APPROVAL, st.current_revision)
    await settled(handle, "Healthy")
    assert cluster.revisions[st.current_revision].desired_state == c.ACTIVE
    assert [(a.revision, a.via) for a in cluster.approvals] == [(st.current_revision,
                                                                 "signal")]


async def test_manual_upgrade_is_prepared_then_switched_on_a_plain_string_update(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    """Manual: v2 is prepared while v1 runs; the approval (a bare name) switches to it."""
    pkg = cluster.add(provider(policy=c.MANUAL))
    handle = await start(temporal_client, task_queue, pkg)
    v1 = (await settled(handle, "Inactive", signals=1)).current_revision
    await activate(handle, v1)
    cluster.add(replace(pkg, source=pkg.source.replace("v0.1.0", "v0.2.0"), generation=2))
    await handle.signal(PackageWorkflow.look_again, c.LookAgainInput(2))
    st = await settled(handle, "Inactive", signals=2)
    v2 = st.current_revision
    assert (st.active_revision, cluster.established[f"{v2}/dry-run"]) == (v1, 1)
    assert cluster.revisions[v1].desired_state == c.ACTIVE

    result: c.ApproveRevisionResult = await handle.execute_update(
        c.UPDATE_APPROVE_REVISION, v2, result_type=c.ApproveRevisionResult)
    assert result.active and result.revision == v2
    assert cluster.revisions[v1].desired_state == c.INACTIVE
    assert [(a.revision, a.via) for a in cluster.approvals] == [(v1, "update"),
                                                                (v2, "update")]
    assert "approved by identity of the update" in await current_details(handle)
    await record(temporal_client, handle.id, "package_manual_upgrade")


async def test_automatic_policy_rejects_activation_update(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    """Under Automatic there is nothing to approve."""
    pkg = cluster.add(provider())
    handle = await start(temporal_client, task_queue, pkg)
    st = await settled(handle, "Healthy", signals=1)
    with pytest.raises(WorkflowUpdateFailedError) as err:
        await activate(handle, st.current_revision)
    assert "Automatic" in str(err.value.cause)


async def test_an_update_before_the_package_was_read_is_judged_once_it_is(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    """An approval reaching a run whose state has not read the package (its first read is
    retrying; a pass lost with a timed-out workflow task looks the same) is judged against
    the package once read, not against the defaults: "Automatic" was said of a Manual one."""
    pkg = cluster.add(provider(policy=c.MANUAL))
    cluster.fail(c.READ_PACKAGE, *(transient() for _ in range(FAST.retry_attempts * 2)))
    handle = await start(temporal_client, task_queue, pkg,
                         tuning=replace(FAST, backoff_initial_s=3.0, backoff_max_s=3.0))
    await wait_for_async(lambda: _true(cluster.calls[c.READ_PACKAGE] >= 1), timeout=20,
                         what="the first read, failing")
    with pytest.raises(WorkflowUpdateFailedError) as err:
        await activate(handle, "not-a-revision")
    assert "unknown revision 'not-a-revision'" in str(err.value.cause)
    assert (await settled(handle, "Inactive", signals=1)).policy == c.MANUAL


async def _true(value: bool) -> bool:
    return value


# --- long life --------------------------------------------------------------------------
async def test_continue_as_new_keeps_state(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    """Enough passes to continue as new several times; nothing is reinstalled or forgotten."""
    pkg = cluster.add(provider())
    handle = await start(temporal_client, task_queue, pkg)
    first = await settled(handle, "Healthy", signals=1)
    for n in range(2, 9):
        await handle.signal(PackageWorkflow.look_again, c.LookAgainInput(n))
        await settled(handle, "Healthy", signals=n)
    st = await handle.query(PackageWorkflow.status)

    runs = [w async for w in temporal_client.list_workflows(f"WorkflowId = '{handle.id}'")]
    assert len(runs) >= 2, "expected at least one continue-as-new"
    assert sum(r.status == WorkflowExecutionStatus.CONTINUED_AS_NEW for r in runs) >= 1
    assert (st.installs, st.active_revision, st.digest) == (1, first.active_revision,
                                                            first.digest)
    assert st.passes >= 8 and st.signals_seen == 8
    assert cluster.established == {f"{st.current_revision}/control": 1}
    await check_histories(temporal_client, handle, [st.current_revision])
    first_run = next(r for r in runs if r.status == WorkflowExecutionStatus.CONTINUED_AS_NEW)
    await record(temporal_client, handle.id, "package_continue_as_new", first_run.run_id)


async def test_new_version_upgrades_and_collects(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    """A new spec.package makes a new revision, activates it, keeps one old revision."""
    pkg = cluster.add(provider())
    cluster.capabilities[pkg.name] = ["example.org/capability"]
    handle = await start(temporal_client, task_queue, pkg)
    first = await settled(handle, "Healthy", signals=1)
    revisions = [first.current_revision]
    for n, version in enumerate(("v0.2.0", "v0.3.0"), start=2):
        cluster.add(FakePackage(pkg.kind, pkg.name, pkg.source.replace("v0.1.0", version),
                                generation=n))
        await handle.signal(PackageWorkflow.look_again, c.LookAgainInput(n))
        st = await settled(handle, "Healthy", signals=n)
        revisions.append(st.current_revision)

    assert len(set(revisions)) == 3 and st.installs == 3
    assert sorted(cluster.revisions) == sorted(revisions[1:])  # history limit 1
    assert cluster.revisions[revisions[2]].desired_state == c.ACTIVE
    assert cluster.revisions[revisions[1]].desired_state == c.INACTIVE
    # Each upgrade was prepared (dry run) before it took control, and the old revision
    # kept its runtime until the switch was finished.
    for old, new in zip(revisions, revisions[1:]):
        assert cluster.established[f"{new}/dry-run"] == 1
        assert cluster.established[f"{new}/control"] == 1
    # The first revision was created Active (PATCH_FIRST_REVISION_ACTIVE): no flip.
    flips = [(a.revision, a.keep_runtime) for a in cluster.activations]
    assert flips == [(revisions[1], True), (revisions[1], False),
                     (revisions[2], True), (revisions[2], False)], flips
    # Fetched and parsed by the first install and by each preparation; each switch took its
    # preparation's parse (PATCH_SWITCH_TAKES_PARSE), so five runs fetched and parsed three
    # times, and the switches wrote what the parse found.
    assert (cluster.calls[c.FETCH_PACKAGE], cluster.calls[c.PARSE_PACKAGE]) == (3, 3)
    assert cluster.revision_status[revisions[2]][-1].capabilities == ["example.org/capability"]
    await record(temporal_client, handle.id, "package_upgrade")
    await record(temporal_client, c.revision_workflow_id(pkg.kind, revisions[2], task_queue),
                 "revision_switch_healthy_beside", last=True)


async def test_upgrade_whose_runtime_never_becomes_healthy_reverts(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    """The health gate: v2 never healthy by the deadline; v1 takes control back."""
    pkg = cluster.add(provider())
    gate = FAST.__class__(**{**FAST.__dict__, "switch_deadline_s": 0.5})
    handle = await start(temporal_client, task_queue, pkg, tuning=gate)
    v1 = (await settled(handle, "Healthy", signals=1)).current_revision
    v2_pkg = cluster.add(FakePackage(pkg.kind, pkg.name, pkg.source.replace("v0.1.0", "v0.2.0"),
                                     generation=2))
    v2 = f"{pkg.name}-{hashlib.sha256(v2_pkg.source.encode()).hexdigest()[:12]}"
    cluster.health[v2] = c.CheckHealthResult(healthy=False, message="crash-looping")
    await handle.signal(PackageWorkflow.look_again, c.LookAgainInput(2))
    st = await settled(handle, "Reverted", signals=2)

    assert (st.current_revision, st.active_revision) == (v2, v1)
    assert cluster.revisions[v1].desired_state == c.ACTIVE
    assert cluster.revisions[v2].desired_state == c.INACTIVE
    conds = cluster.last_status(pkg.name)
    assert (conds["Healthy"].status, conds["Installed"].status) == ("False", "False")
    assert "crash-looping" in conds["Healthy"].message and v1 in conds["Healthy"].message
    [event] = cluster.events
    assert event.reason == "RevertRevision" and v1 in event.message and v2 in event.message
    # Held: more signals do not try again ...
    checks = cluster.calls[c.CHECK_HEALTH]
    await handle.signal(PackageWorkflow.look_again, c.LookAgainInput(2))
    await settled(handle, "Reverted", signals=3)
    assert cluster.calls[c.CHECK_HEALTH] == checks
    # ... a new spec does (here the runtime is fixed).
    del cluster.health[v2]
    cluster.add(replace(v2_pkg, generation=3))
    await handle.signal(PackageWorkflow.look_again, c.LookAgainInput(3))
    st = await settled(handle, "Healthy", signals=4)
    assert st.active_revision == v2 and cluster.revisions[v1].desired_state == c.INACTIVE
    await record(temporal_client, handle.id, "package_upgrade_reverted")


async def test_upgrade_that_fails_to_prepare_leaves_the_old_revision_alone(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    """A v2 that does not lint never takes control: nothing is switched."""
    pkg = cluster.add(provider())
    handle = await start(temporal_client, task_queue, pkg)
    v1 = (await settled(handle, "Healthy", signals=1)).current_revision
    cluster.add(FakePackage(pkg.kind, pkg.name, pkg.source.replace("v0.1.0", "v0.2.0"),
                            generation=2))
    cluster.fail(c.PARSE_PACKAGE, permanent("LintError", "object is not a CRD"))
    await handle.signal(PackageWorkflow.look_again, c.LookAgainInput(2))
    st = await settled(handle, "Failed", signals=2)
    assert st.last_error_type == "LintError"
    assert cluster.revisions[v1].desired_state == c.ACTIVE
    # Nothing switched: v1 was created Active (PATCH_FIRST_REVISION_ACTIVE), v2 never was.
    assert cluster.activations == []
    await record(temporal_client, handle.id, "package_upgrade_prepare_failed")


async def test_pause_stops_every_step_and_resume_goes_on(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    """crossplane.io/paused: Synced=False/ReconcilePaused and nothing else, until removed."""
    pkg = cluster.add(provider())
    pkg.paused = True
    handle = await start(temporal_client, task_queue, pkg)
    await settled(handle, "Paused", signals=1)
    [written] = cluster.package_status[pkg.name]
    [synced] = written.conditions
    assert (synced.type, synced.status, synced.reason) == ("Synced", "False", "ReconcilePaused")
    assert synced.message == ("Reconciliation (including deletion) is paused via the pause "
                              "annotation")
    assert cluster.calls[c.RESOLVE_DIGEST] == 0 and not cluster.revisions

    pkg.paused = False
    await handle.signal(PackageWorkflow.look_again, c.LookAgainInput(1, "resumed"))
    await settled(handle, "Healthy", signals=2)
    assert cluster.package_status[pkg.name][1].drop == ["Synced"]  # the pause is forgotten
    assert not cluster.says_paused[pkg.name]


async def test_resuming_an_installed_package_installs_it_again(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    """Paused once installed, then resumed with the spec unchanged: the install runs again
    (PATCH_RESUME_REINSTALLS), so whatever changed while paused is put back."""
    pkg = cluster.add(provider())
    handle = await start(temporal_client, task_queue, pkg)
    await settled(handle, "Healthy", signals=1)
    assert cluster.calls[c.ESTABLISH_OBJECTS] == 1
    pkg.paused = True
    await handle.signal(PackageWorkflow.look_again, c.LookAgainInput(1, "paused"))
    await settled(handle, "Paused", signals=2)
    pkg.paused = False
    await handle.signal(PackageWorkflow.look_again, c.LookAgainInput(1, "resumed"))
    await settled(handle, "Healthy", signals=3)
    assert cluster.calls[c.ESTABLISH_OBJECTS] == 2  # not only for a changed spec
    await handle.signal(PackageWorkflow.look_again, c.LookAgainInput(1, "nothing new"))
    await settled(handle, "Healthy", signals=4)
    assert cluster.calls[c.ESTABLISH_OBJECTS] == 2
    await record(temporal_client, handle.id, "package_resumed")


async def test_pull_policy_always_picks_up_a_moved_tag(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    """No signal: the tag is re-resolved on a timer and a moved tag is upgraded to."""
    pkg = cluster.add(provider(pull_policy="Always"))
    every = FAST.__class__(**{**FAST.__dict__, "pull_always_s": 0.3})
    handle = await start(temporal_client, task_queue, pkg, tuning=every)
    first = await settled(handle, "Healthy", signals=1)
    moved = "sha256:" + "ab" * 32
    cluster.tags[pkg.source] = moved

    async def upgraded() -> c.PackageStatusResult | None:
        st = await handle.query(PackageWorkflow.status)
        return st if st.active_revision.endswith("ababababab") and st.phase == "Healthy" \
            else None

    st = await wait_for_async(upgraded, timeout=20, what="the moved tag installed")
    assert st.signals_seen == 1 and st.digest == moved  # the timer alone found it
    assert cluster.revisions[first.active_revision].desired_state == c.INACTIVE
    assert cluster.established[f"{st.active_revision}/dry-run"] == 1  # prepared first


async def test_deleted_package_cleans_up_and_ends(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    """Once the object is gone the workflow cleans up and completes."""
    pkg = cluster.add(provider())
    handle = await start(temporal_client, task_queue, pkg)
    await settled(handle, "Healthy", signals=1)
    collect_garbage(cluster, pkg)
    await handle.signal(PackageWorkflow.look_again, c.LookAgainInput(2, "deleted"))
    result = await handle.result()
    assert result.gone and result.installs == 1
    assert cluster.calls[c.CLEANUP_PACKAGE] == 1
    await check_histories(temporal_client, handle, [])
    await record(temporal_client, handle.id, "package_deleted")


async def test_a_signal_during_the_last_clean_up_is_not_dropped(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    """An orphaned revision deleted while the package's clean-up runs: its signal arrives
    before the run would end, so the workflow cleans up again (the orphan's Lock entry
    lingered when the run ended with the signal unread)."""
    pkg = cluster.add(provider())
    handle = await start(temporal_client, task_queue, pkg)
    await settled(handle, "Healthy", signals=1)
    collect_garbage(cluster, pkg)

    async def orphan_deleted() -> None:
        await handle.signal(PackageWorkflow.look_again, c.LookAgainInput(3, "orphan deleted"))

    cluster.during_cleanup.append(orphan_deleted)
    await handle.signal(PackageWorkflow.look_again, c.LookAgainInput(2, "deleted"))
    result = await handle.result()
    assert result.gone
    assert cluster.calls[c.CLEANUP_PACKAGE] == 2
    await record(temporal_client, handle.id, "package_gone_looks_again")


def collect_garbage(cluster: FakeCluster, pkg: FakePackage) -> None:
    """What Kubernetes does once a package is deleted: it and its revisions go."""
    cluster.packages.pop((pkg.kind, pkg.name), None)
    for name in [r.name for r in cluster.revisions.values() if r.package == pkg.name]:
        del cluster.revisions[name]


WRITES = (c.ENSURE_REVISION, c.SET_ACTIVE_REVISION, c.COLLECT_REVISIONS,
          c.WRITE_PACKAGE_STATUS, c.FETCH_PACKAGE, c.ESTABLISH_OBJECTS, c.ENSURE_RUNTIME,
          c.CHECK_HEALTH, c.WRITE_REVISION_STATUS)


def writes(cluster: FakeCluster) -> dict[str, int]:
    """How often each step that creates or rewrites something has run."""
    return {name: cluster.calls[name] for name in WRITES}


async def test_package_being_deleted_is_only_cleaned_up(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    """A deletionTimestamp stops everything but the clean-up; the end comes with the object."""
    pkg = cluster.add(provider())
    handle = await start(temporal_client, task_queue, pkg)
    await settled(handle, "Healthy", signals=1)
    before = writes(cluster)
    pkg.deleting = True  # e.g. kubectl delete --cascade=foreground: the GC is at work
    for n in (2, 3, 4):
        await handle.signal(PackageWorkflow.look_again, c.LookAgainInput(n, "deleting"))
        await settled(handle, "Deleting", signals=n)
    assert writes(cluster) == before  # nothing created, activated or rewritten
    assert cluster.calls[c.CLEANUP_PACKAGE] == 3

    collect_garbage(cluster, pkg)
    await handle.signal(PackageWorkflow.look_again, c.LookAgainInput(5, "deleted"))
    result = await handle.result()
    assert result.gone and result.installs == 1 and writes(cluster) == before
    await check_histories(temporal_client, handle, [])
    await record(temporal_client, handle.id, "package_deleting")


async def test_deletion_cancels_a_running_install(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    """A deletion that begins during the health wait stops the install between steps."""
    pkg = cluster.add(provider())
    cluster.health[pkg.name] = c.CheckHealthResult(healthy=False, message="starting")
    slow = FAST.__class__(**{**FAST.__dict__, "health_polls": 10_000})
    handle = await start(temporal_client, task_queue, pkg, tuning=slow)

    async def waiting_for_health() -> c.PackageStatusResult | None:
        st = await handle.query(PackageWorkflow.status)
        return st if cluster.calls[c.CHECK_HEALTH] >= 2 else None

    st = await wait_for_async(waiting_for_health, timeout=20, what="the health wait")
    pkg.deleting = True
    await handle.signal(PackageWorkflow.look_again, c.LookAgainInput(2, "deleting"))
    await settled(handle, "Deleting", signals=2)
    child = temporal_client.get_workflow_handle(c.revision_workflow_id(
        pkg.kind, st.current_revision, task_queue))
    assert (await child.describe()).status == WorkflowExecutionStatus.CANCELED
    stopped = writes(cluster)
    collect_garbage(cluster, pkg)
    await handle.signal(PackageWorkflow.look_again, c.LookAgainInput(3, "deleted"))
    assert (await handle.result()).gone
    assert writes(cluster) == stopped  # nothing ran after the cancellation
    await record(temporal_client, handle.id, "package_deleted_during_install")


async def test_revision_deleted_by_hand_is_recreated_once(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    """Not while it is being deleted, not in a loop: once, after it is gone."""
    pkg = cluster.add(provider())
    handle = await start(temporal_client, task_queue, pkg)
    first = await settled(handle, "Healthy", signals=1)
    rev = cluster.revisions[first.current_revision]
    rev.deleting = True  # kubectl delete providerrevision --cascade=foreground
    await handle.signal(PackageWorkflow.look_again, c.LookAgainInput(1, "revision deleting"))
    st = await settled(handle, "Healthy", signals=2)
    assert cluster.calls[c.ENSURE_REVISION] == 2 and st.installs == 1

    del cluster.revisions[rev.name]
    cluster.revision_status.pop(rev.name)
    await handle.signal(PackageWorkflow.look_again, c.LookAgainInput(1, "revision deleted"))
    st = await settled(handle, "Healthy", signals=3)
    assert cluster.calls[c.ENSURE_REVISION] == 3 and st.installs == 2
    assert cluster.established == {f"{rev.name}/control": 2}
    assert cluster.revisions[rev.name].desired_state == c.ACTIVE


def test_permanent_error_names_match_the_error_tree() -> None:
    """The workflows' list of permanent types is exactly lockwright's PermanentError tree."""
    from lockwright import errors

    def subclasses(cls: type) -> set[type]:
        found: set[type] = set()
        subs: list[type] = cls.__subclasses__()
        for sub in subs:
            found |= {sub} | subclasses(sub)
        return found

    assert set(c.PERMANENT_ERRORS) == {k.__name__ for k in subclasses(errors.PermanentError)}


# --- history checks and recording -------------------------------------------------------
async def check_histories(client: Client, handle: Handle, revisions: Sequence[str],
                          kind: str = c.PROVIDER) -> None:
    """Every run of the package and its children: small payloads, no secret."""
    queue = (await handle.describe()).task_queue  # the children's ids carry it
    ids = [handle.id] + [c.revision_workflow_id(kind, r, queue) for r in revisions]
    for wf_id in ids:
        async for run in client.list_workflows(f"WorkflowId = '{wf_id}'"):
            history = await client.get_workflow_handle(wf_id, run_id=run.run_id).fetch_history()
            for event in history.events:
                for size in payload_sizes(event):
                    assert size <= MAX_PAYLOAD, f"{wf_id} event {event.event_id}: {size} bytes"
            assert PULL_SECRET_VALUE not in history.to_json()


def payload_sizes(msg: Message) -> list[int]:
    """Sizes of every ``Payload`` inside a history event, however deeply nested."""
    if msg.DESCRIPTOR.full_name == "temporal.api.common.v1.Payload":
        return [msg.ByteSize()]
    sizes: list[int] = []
    for fd, value in msg.ListFields():
        if fd.message_type is None:
            continue
        if fd.message_type.GetOptions().map_entry:
            items = list(value.values())
        elif isinstance(value, Message):
            items = [value]
        else:
            items = list(value)
        for item in items:
            if isinstance(item, Message):
                sizes.extend(payload_sizes(item))
    return sizes


async def record(client: Client, wf_id: str, shape: str, run_id: str | None = None,
                 status: WorkflowExecutionStatus | None = None, last: bool = False) -> None:
    """Write a history for the replay tests, only when asked to.

    Without ``run_id`` the first run (optionally the first with ``status``) is taken: it
    holds the interesting commands, later runs after continue-as-new only idle. ``last``:
    the latest run instead (a switch, whose preparation ran first under the same id).
    """
    if not RECORD:
        return
    if run_id is None:
        runs = [r async for r in client.list_workflows(f"WorkflowId = '{wf_id}'")
                if status is None or r.status == status]
        run_id = (max if last else min)(runs, key=lambda r: r.start_time).run_id
    history = await client.get_workflow_handle(wf_id, run_id=run_id).fetch_history()
    HISTORIES.mkdir(parents=True, exist_ok=True)
    (HISTORIES / f"{shape}.json").write_text(history.to_json())
