"""The end-to-end stacks run on the Temporal ``LOCKWRIGHT_TEST_TEMPORAL`` selects, with as
many worker processes as it asks for (three on the Temporal cluster), all polling."""

from __future__ import annotations

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

from tests.fixtures.stack import Stack
from tests.fixtures.temporal import STACK_WORKERS, TemporalTarget
from tests.helpers import wait_for_async


async def test_every_worker_of_the_stack_polls_its_task_queue(
        stack: Stack, temporal_env: TemporalTarget) -> None:
    assert stack.temporal_address == temporal_env.address
    assert len(stack.worker_processes) == STACK_WORKERS[temporal_env.kind]
    assert all(p.poll() is None for p in stack.worker_processes)
    client = temporal_env.client
    want = {f"{p.pid}@" for p in stack.worker_processes}

    async def pollers() -> set[str]:
        resp = await client.workflow_service.describe_task_queue(DescribeTaskQueueRequest(
            namespace=client.namespace, task_queue=TaskQueue(name=stack.task_queue),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW))
        seen = {p.identity.split("@")[0] + "@" for p in resp.pollers}
        return seen if want <= seen else set()

    await wait_for_async(pollers, timeout=60, what=f"pollers {sorted(want)}")
