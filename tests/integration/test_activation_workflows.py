"""Activation in the workflows, on a real Temporal server with the fake cluster.

A safe-start provider whose MRDs are all Inactive installs with its runtime at zero and
is Healthy with ``AwaitingActivation`` (no health wait); the activation workflow's pass
tells the package, whose next pass installs again and runs the runtime. One whose MRDs a
policy in force names installs them Active in its first pass (issue 33). Set
``LOCKWRIGHT_RECORD_HISTORIES=1`` to (re)write the replay histories.
"""

from __future__ import annotations

import pytest
from temporalio.client import Client, WorkflowHandle

from lockwright import contracts as c
from lockwright.conditions import MSG_AWAITING_ACTIVATION
from tests.helpers import wait_for_async
from tests.integration.fake_cluster import FakeCluster
from tests.integration.test_workflows import cluster, provider, record, settled, start
from lockwright.workflows import ActivateDefinitions

pytestmark = pytest.mark.temporal
__all__ = ["cluster"]  # the fixture, imported for this module's tests

Activation = WorkflowHandle[ActivateDefinitions, c.ActivationResult]


async def start_activation(client: Client, task_queue: str) -> Activation:
    """Signal-with-start, as the watcher does."""
    return await client.start_workflow(
        ActivateDefinitions.run, c.ActivationInput(tuning=c.Tuning(
            retry_initial_s=0.1, retry_max_s=0.2, retry_attempts=2)),
        id=c.activation_workflow_id(task_queue), task_queue=task_queue,
        start_signal=c.SIGNAL_LOOK_AGAIN, start_signal_args=[c.LookAgainInput(reason="test")])


async def idle_after(handle: Activation, passes: int) -> c.ActivationStatusResult:
    async def check() -> c.ActivationStatusResult | None:
        st = await handle.query(ActivateDefinitions.status)
        return st if st.idle and st.passes >= passes else None
    found = await wait_for_async(check, timeout=20, what=f"activation idle after {passes}")
    assert found is not None
    return found


async def test_safe_start_waits_at_zero_and_an_activation_wakes_it(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    pkg = cluster.add(provider())
    cluster.capabilities[pkg.name] = ["SafeStart"]
    cluster.definitions[pkg.name] = (50, 0)
    handle = await start(temporal_client, task_queue, pkg)
    first = await settled(handle, "Healthy", signals=1)
    assert [r.awaiting_activation for r in cluster.runtimes] == [True]
    assert cluster.calls[c.CHECK_HEALTH] == 0  # at zero replicas there is nothing to wait for
    healthy = cluster.last_status(pkg.name)["Healthy"]
    assert (healthy.status, healthy.reason, healthy.message) == (
        "True", "AwaitingActivation", MSG_AWAITING_ACTIVATION)
    runtime_active = {x.type: x for x in cluster.revision_status[first.current_revision][-1]
                      .conditions}["RuntimeActive"]
    assert (runtime_active.status, runtime_active.reason) == ("False", "AwaitingActivation")

    cluster.definitions[pkg.name] = (50, 2)  # a policy made two Active
    cluster.activation_passes = [c.ActivateDefinitionsResult(
        policies=1, definitions=50, activated=[c.Activated("a.x.io", "p"),
                                               c.Activated("b.x.io", "p")],
        activated_count=2, packages=[c.PackageRef(c.PROVIDER, pkg.name),
                                     c.PackageRef(c.PROVIDER, "never-started")])]
    activation = await start_activation(temporal_client, task_queue)
    st = await idle_after(activation, 1)
    assert st.activated == 2
    await settled(handle, "Healthy", signals=2)
    assert [r.awaiting_activation for r in cluster.runtimes] == [True, False]
    assert cluster.calls[c.CHECK_HEALTH] >= 1
    assert cluster.last_status(pkg.name)["Healthy"].reason == "HealthyPackageRevision"
    assert cluster.established[f"{first.current_revision}/control"] == 2

    await handle.signal(c.SIGNAL_LOOK_AGAIN, c.LookAgainInput(reason="nothing changed"))
    await settled(handle, "Healthy", signals=3)
    assert cluster.established[f"{first.current_revision}/control"] == 2  # not again
    await activation.terminate("test over")
    await record(temporal_client, activation.id, "activation_pass_and_nudge")
    await record(temporal_client,
                 c.revision_workflow_id(pkg.kind, first.current_revision, task_queue),
                 "revision_awaiting_activation")


async def test_safe_start_with_a_policy_in_force_installs_in_one_pass(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    """Issue 33: the install's establish made 10 of 50 MRDs Active (a policy in force named
    them), so the runtime runs at once and the health is waited for; the activation
    workflow's pass, finding them Active, tells no package, and nothing installs again."""
    pkg = cluster.add(provider())
    cluster.capabilities[pkg.name] = ["SafeStart"]
    cluster.definitions[pkg.name] = (50, 10)
    handle = await start(temporal_client, task_queue, pkg)
    first = await settled(handle, "Healthy", signals=1)
    assert [r.awaiting_activation for r in cluster.runtimes] == [False]
    assert cluster.calls[c.CHECK_HEALTH] >= 1
    assert cluster.last_status(pkg.name)["Healthy"].reason == "HealthyPackageRevision"
    cluster.activation_passes = [c.ActivateDefinitionsResult(policies=1, definitions=50)]
    activation = await start_activation(temporal_client, task_queue)
    await idle_after(activation, 1)
    await handle.signal(c.SIGNAL_LOOK_AGAIN, c.LookAgainInput(reason="an MRD changed"))
    await settled(handle, "Healthy", signals=2)
    assert cluster.established[f"{first.current_revision}/control"] == 1
    assert len(cluster.runtimes) == 1
    await activation.terminate("test over")


async def test_a_failed_pass_is_retried(temporal_client: Client, task_queue: str,
                                        cluster: FakeCluster) -> None:
    from tests.integration.fake_cluster import transient

    cluster.fail(c.ACTIVATE_DEFINITIONS, *(transient() for _ in range(2)))
    activation = await start_activation(temporal_client, task_queue)
    st = await idle_after(activation, 2)
    assert st.retry_attempt == 0 and cluster.calls[c.ACTIVATE_DEFINITIONS] == 3
    await activation.terminate("test over")


async def start_deferring(client: Client, task_queue: str, defer_s: float) -> Activation:
    """The activation workflow with ``activation_defer_s`` at ``defer_s``, one pass done."""
    handle = await client.start_workflow(
        ActivateDefinitions.run, c.ActivationInput(tuning=c.Tuning(activation_defer_s=defer_s)),
        id=c.activation_workflow_id(task_queue), task_queue=task_queue,
        start_signal=c.SIGNAL_LOOK_AGAIN, start_signal_args=[c.LookAgainInput(reason="test")])
    await idle_after(handle, 1)
    return handle


async def deferral_timers(handle: Activation) -> list[float]:
    """The seconds of every timer the workflow started so far."""
    history = await handle.fetch_history()
    return [e.timer_started_event_attributes.start_to_fire_timeout.ToTimedelta()
            .total_seconds() for e in history.events
            if e.HasField("timer_started_event_attributes")]


async def test_deferrable_signals_wait_for_their_deferral_and_one_not_to_defer_does_not(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    """docs/design.md, "Activation passes deferred while a policy waits": CRDs written
    while a policy waits start one pass after the deferral, however many; a policy's
    change meanwhile starts it at once, and takes their place."""
    handle = await start_deferring(temporal_client, task_queue, 3600)
    for n in range(3):
        await handle.signal(c.SIGNAL_LOOK_AGAIN,
                            c.LookAgainInput(reason=f"CRD {n} written", deferrable=True))

    async def deferring() -> list[float] | None:
        return await deferral_timers(handle) or None
    timers = await wait_for_async(deferring, timeout=20, what="the deferral's timer")
    assert timers is not None and len(timers) == 1 and 3500 < timers[0] <= 3600, timers
    st = await handle.query(ActivateDefinitions.status)
    assert (st.passes, st.signals_seen, st.idle) == (1, 4, False)

    await handle.signal(c.SIGNAL_LOOK_AGAIN, c.LookAgainInput(reason="a policy changed"))
    st = await idle_after(handle, 2)
    assert (st.passes, cluster.calls[c.ACTIVATE_DEFINITIONS]) == (2, 2)
    assert len(await deferral_timers(handle)) == 1  # the CRDs' pass was that one
    await handle.terminate("test over")
    await record(temporal_client, handle.id, "activation_deferred")


async def test_a_deferrable_signal_alone_still_starts_a_pass(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    """With the production deferral (a second): the pass comes, only later."""
    handle = await start_deferring(temporal_client, task_queue, c.Tuning().activation_defer_s)
    await handle.signal(c.SIGNAL_LOOK_AGAIN,
                        c.LookAgainInput(reason="CRD written", deferrable=True))
    st = await idle_after(handle, 2)
    assert (st.passes, cluster.calls[c.ACTIVATE_DEFINITIONS]) == (2, 2)
    await handle.terminate("test over")
