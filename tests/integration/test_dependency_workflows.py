"""Dependencies in the workflows, on a real Temporal server with the fake cluster.

The revision side: a revision whose dependencies are not met stops after the Lock, says so
on the revision and the package (Installed=True, Healthy=False with Crossplane's message)
and installs the rest once a look again finds them met. The resolver: a signal runs one
resolution, the decision is applied and the packages it names are signalled.
Set ``LOCKWRIGHT_RECORD_HISTORIES=1`` to (re)write the replay histories.
"""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.client import Client, WorkflowHandle

from lockwright import contracts as c
from tests.helpers import wait_for_async
from tests.integration.fake_cluster import FakeCluster, FakePackage, transient
from tests.integration.test_workflows import cluster, provider, record, settled, start
from lockwright.workflows import ResolveDependencies

pytestmark = pytest.mark.temporal
__all__ = ["cluster"]  # the fixture, imported for this module's tests

MISSING = 'missing dependencies: "xpkg.example.com/acme/provider-p" (>=v1.0.0)'
Resolver = WorkflowHandle[ResolveDependencies, c.ResolveResult]


def unmet(**kw: Any) -> c.TakeLockResult:
    return c.TakeLockResult(dependencies=1, installed_dependencies=0,
                            dependency_message=MISSING, **kw)


async def test_unmet_dependencies_stop_after_the_lock_and_heal_on_a_look_again(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    pkg = cluster.add(provider(c.CONFIGURATION))
    cluster.lock_reports[pkg.name] = [unmet()]
    handle = await start(temporal_client, task_queue, pkg)
    await settled(handle, "WaitingForDependencies", signals=1)

    conds = cluster.last_status(pkg.name)
    assert (conds["Installed"].status, conds["Installed"].reason) == (
        "True", "ActivePackageRevision")
    assert (conds["Healthy"].status, conds["Healthy"].message) == (
        "False", 'Package revision health is "False" with message: '
                 f"cannot resolve package dependencies: {MISSING}")
    assert cluster.calls[c.ESTABLISH_OBJECTS] == 0
    written = [w for ws in cluster.revision_status.values() for w in ws]
    assert written[-1].found_dependencies == 1 and written[-1].installed_dependencies == 0
    assert written[-1].conditions[0].message == f"cannot resolve package dependencies: {MISSING}"

    cluster.lock_reports[pkg.name] = [c.TakeLockResult(dependencies=1, installed_dependencies=1)]
    await handle.signal(c.SIGNAL_LOOK_AGAIN, c.LookAgainInput(reason="the Lock changed"))
    st = await settled(handle, "Healthy", signals=2)
    assert cluster.calls[c.ESTABLISH_OBJECTS] == 1
    assert cluster.last_status(pkg.name)["Healthy"].status == "True"
    written = [w for ws in cluster.revision_status.values() for w in ws]
    assert written[-1].installed_dependencies == 1
    await record(temporal_client,
                 c.revision_workflow_id(pkg.kind, st.current_revision, task_queue),
                 "revision_dependencies_unmet")


async def test_skip_dependency_resolution_still_takes_the_lock(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    """skipDependencyResolution must not skip the claim on objects (exactly one winner)."""
    pkg = cluster.add(provider(c.CONFIGURATION, skip_dependency_resolution=True))
    handle = await start(temporal_client, task_queue, pkg)
    await settled(handle, "Healthy", signals=1)
    assert [t.skip_dependencies for t in cluster.locks_taken] == [True]


async def test_a_switch_waits_for_new_dependencies_within_its_deadline(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    """v2 depends on something not installed yet: v1 keeps running while the resolver works."""
    pkg = cluster.add(provider(c.CONFIGURATION))
    handle = await start(temporal_client, task_queue, pkg)
    first = await settled(handle, "Healthy", signals=1)
    cluster.add(FakePackage(pkg.kind, pkg.name, pkg.source.replace("v0.1.0", "v0.2.0"),
                            generation=2))
    met = c.TakeLockResult(dependencies=1, installed_dependencies=1, found_dependencies=1)
    # prepare (check only), then the switch: unmet twice, then the resolver has done its work.
    cluster.lock_reports[pkg.name] = [c.TakeLockResult(), unmet(), unmet(), met]
    await handle.signal(c.SIGNAL_LOOK_AGAIN, c.LookAgainInput(2))
    st = await settled(handle, "Healthy", signals=2)
    assert st.current_revision != first.current_revision
    assert cluster.revisions[st.current_revision].desired_state == c.ACTIVE
    assert len(cluster.locks_taken) == 5  # install, prepare, switch, two looks again
    written = [w for w in cluster.revision_status[st.current_revision]]
    assert written[-1].installed_dependencies == 1
    assert any("missing dependencies" in w.conditions[0].message for w in written)
    child = c.revision_workflow_id(pkg.kind, st.current_revision, task_queue)
    await record(temporal_client, child, "revision_switch_awaits_dependencies", last=True)


async def start_resolver(client: Client, task_queue: str) -> Resolver:
    """Signal-with-start, as the watcher does."""
    return await client.start_workflow(
        ResolveDependencies.run, c.ResolveInput(tuning=c.Tuning(
            retry_initial_s=0.1, retry_max_s=0.2, retry_attempts=2, backoff_initial_s=0.2,
            backoff_max_s=1.0)),
        id=c.resolve_workflow_id(task_queue), task_queue=task_queue,
        start_signal=c.SIGNAL_LOOK_AGAIN,
        start_signal_args=[c.LookAgainInput(reason="test")])


async def idle_after(handle: Resolver, passes: int) -> c.ResolveStatusResult:
    async def check() -> c.ResolveStatusResult | None:
        st = await handle.query(ResolveDependencies.status)
        return st if st.idle and st.passes >= passes else None
    found = await wait_for_async(check, timeout=20, what=f"resolver idle after {passes}")
    assert found is not None
    return found


async def test_resolver_applies_its_decision_and_nudges_the_dependents(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    pkg = cluster.add(provider(c.CONFIGURATION))
    cluster.lock_reports[pkg.name] = [unmet()]
    dependent = await start(temporal_client, task_queue, pkg)
    before = await settled(dependent, "WaitingForDependencies", signals=1)

    change = c.DependencyChange(kind="Provider", name="acme-provider-p",
                                package="xpkg.example.com/acme/provider-p:v1.5.0")
    cluster.decisions = [c.ResolveDependenciesResult(
        lock_packages=1, dependencies=1, repositories_listed=1, changes=[change],
        lock_stale=True, nudge=[c.PackageRef(c.CONFIGURATION, pkg.name),
                                c.PackageRef(c.PROVIDER, "never-started")])]
    cluster.lock_reports[pkg.name] = [c.TakeLockResult(dependencies=1, installed_dependencies=1)]
    resolver = await start_resolver(temporal_client, task_queue)
    st = await idle_after(resolver, 1)

    assert (st.resolved, st.created, st.moved) == (True, 1, 0)
    assert [a.changes for a in cluster.applied] == [[change]]
    await settled(dependent, "Healthy", signals=before.signals_seen + 1)
    await resolver.terminate("test over")
    await record(temporal_client, resolver.id, "resolve_create_and_nudge")


async def test_resolver_reports_no_solution_and_retries_a_registry_failure(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    failed = c.UnresolvedDependencies(revisions=["cfg-a-0123456789ab"],
                                      message="no version of x satisfies every constraint")
    cluster.decisions = [c.ResolveDependenciesResult(unresolved=[failed], lock_stale=True,
                                                     retry=True),
                         c.ResolveDependenciesResult(lock_stale=True)]
    cluster.fail(c.RESOLVE_DEPENDENCIES, transient(), transient())
    resolver = await start_resolver(temporal_client, task_queue)
    # The API failure is retried by the loop; then the registry-failed decision is taken
    # again on a timer, with no further signal, and the second decision resolves.
    st = await idle_after(resolver, 3)
    assert st.resolved and st.retry_attempt == 0
    assert [a.unresolved for a in cluster.applied] == [[failed], []]
    await resolver.terminate("test over")
    await record(temporal_client, resolver.id, "resolve_unresolved_retry")
