"""``ProtectProviders`` on a real Temporal server with the fake cluster (issue 31).

Signals mark it dirty and a burst of them costs one pass; a pass that fails is retried
with the shared backoff. Set ``LOCKWRIGHT_RECORD_HISTORIES=1`` to (re)write the replay
history.
"""

from __future__ import annotations

import pytest
from temporalio.client import Client, WorkflowHandle

from lockwright import contracts as c
from lockwright.workflows import ProtectProviders
from tests.helpers import wait_for_async
from tests.integration.fake_cluster import FakeCluster, transient
from tests.integration.test_workflows import cluster, record

pytestmark = pytest.mark.temporal
__all__ = ["cluster"]  # the fixture, imported for this module's tests

Protection = WorkflowHandle[ProtectProviders, c.ProtectionResult]


async def start_protection(client: Client, task_queue: str) -> Protection:
    """Signal-with-start, as the watcher does."""
    return await client.start_workflow(
        ProtectProviders.run, c.ProtectionInput(tuning=c.Tuning(
            retry_initial_s=0.1, retry_max_s=0.2, retry_attempts=2, backoff_initial_s=0.1)),
        id=c.protection_workflow_id(task_queue), task_queue=task_queue,
        start_signal=c.SIGNAL_LOOK_AGAIN, start_signal_args=[c.LookAgainInput(reason="test")])


async def idle_after(handle: Protection, passes: int) -> c.ProtectionStatusResult:
    async def check() -> c.ProtectionStatusResult | None:
        st = await handle.query(ProtectProviders.status)
        return st if st.idle and st.passes >= passes else None
    found = await wait_for_async(check, timeout=20, what=f"protection idle after {passes}")
    assert found is not None
    return found


async def test_each_signal_asks_for_a_pass(temporal_client: Client, task_queue: str,
                                          cluster: FakeCluster) -> None:
    handle = await start_protection(temporal_client, task_queue)
    await idle_after(handle, 1)
    assert cluster.calls[c.PROTECT_PROVIDERS] == 1
    await handle.signal(c.SIGNAL_LOOK_AGAIN, c.LookAgainInput(reason="a type's first resource"))
    st = await idle_after(handle, 2)
    assert (st.signals_seen, cluster.calls[c.PROTECT_PROVIDERS]) == (2, 2)
    await handle.terminate("test over")
    await record(temporal_client, handle.id, "protection_pass")


async def test_a_failed_pass_is_retried(temporal_client: Client, task_queue: str,
                                        cluster: FakeCluster) -> None:
    cluster.fail(c.PROTECT_PROVIDERS, *(transient() for _ in range(2)))
    handle = await start_protection(temporal_client, task_queue)
    st = await idle_after(handle, 2)
    assert st.retry_attempt == 0 and cluster.calls[c.PROTECT_PROVIDERS] == 3
    await handle.terminate("test over")
