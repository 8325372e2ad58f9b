"""A cancelled activity stops where it checks, never inside the Kubernetes client.

The SDK cancels a synchronous activity by default by raising an exception into its thread
between any two bytecodes. One raised right after the thread took the Kubernetes client's
connection pool lock (``queue.LifoQueue``'s mutex, taken for every request and every
answer) left that lock taken for good, and every later request of the worker waited on it:
seen in CI on 2026-11-30 as 63 activity threads at ``threading.py __enter__`` under
``Kube._send`` and every later package of the session stack with no condition at all
(docs/design.md, "Cancellation is cooperative"). lockwright declares every activity with
``lockwright.activities.errors.defn``, and a long one stops at its next ``beat()``.

Here local activities so declared time out after 0.2 s, as a status write's can on a
loaded worker. One takes and gives back a connection of a real Kube's pool as fast as it
can for a second, checking nothing: after each round the pool's lock is free and the Kube
answers. Declared with the SDK's default instead (``activity.defn(name=...)``), a round
left the lock taken (2026-11-30: the sixth of ten). Another beats as it works: it ends at
its first beat after the cancel.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.client import Client
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, CancelledError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from lockwright.activities.base import beat
from lockwright.activities.errors import defn
from lockwright.k8s import Kube
from tests.helpers import unique

ROUNDS = 10
CHURN, BEATS = "churn-connection-pool", "beat-until-cancelled"
CHURN_S = 1.0  # the churn's own length: five times its timeout
BEATS_S = 60.0  # the beating activity's, were it never cancelled


class Activities:
    """The two activities, over one real Kube's connection pool."""

    def __init__(self, kube: Kube) -> None:
        api: Any = kube._api  # noqa: SLF001 - the pool whose lock the cancellation hit
        self.pool = api.rest_client.pool_manager.connection_from_url(api.configuration.host)
        self.beats_ended: list[str] = []
        self.beats_done = threading.Event()

    @defn(name=CHURN)
    def churn(self, seconds: float) -> str:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.pool._put_conn(self.pool._get_conn())  # noqa: SLF001
        return "ran its length"

    @defn(name=BEATS)
    def beats(self, seconds: float) -> str:
        end = time.monotonic() + seconds
        try:
            while time.monotonic() < end:
                self.pool._put_conn(self.pool._get_conn())  # noqa: SLF001
                beat()
            self.beats_ended.append("ran its length")
        except CancelledError:
            self.beats_ended.append("stopped at a beat")
            raise
        finally:
            self.beats_done.set()
        return "ran its length"


@workflow.defn(sandboxed=False)
class TimesOut:
    """Runs an activity as a local activity that times out after 0.2 s."""

    @workflow.run
    async def run(self, name: str, seconds: float) -> str:
        try:
            return await workflow.execute_local_activity(
                name, seconds, result_type=str, start_to_close_timeout=timedelta(seconds=0.2),
                retry_policy=RetryPolicy(maximum_attempts=1))
        except ActivityError as err:
            return type(err.cause).__name__


def lock_free(pool: Any) -> bool:
    """Whether the pool's lock can be taken within 5 s (a churn holds it for microseconds).

    A lock left taken is given back here, so that the threads waiting on it end and the
    worker can stop: the test then fails instead of hanging.
    """
    mutex = pool.pool.mutex
    free = mutex.acquire(timeout=5)
    mutex.release()
    return bool(free)


async def times_out(client: Client, queue: str, name: str, seconds: float) -> str:
    return await client.execute_workflow(TimesOut.run, args=[name, seconds],
                                         id=unique("times-out"), task_queue=queue,
                                         execution_timeout=timedelta(seconds=60))


async def test_a_cancelled_activity_leaves_the_connection_pool_usable(
        temporal_dev_env: WorkflowEnvironment, devcluster: Any) -> None:
    client, kube = temporal_dev_env.client, Kube.connect(devcluster.kubeconfig)
    acts, queue = Activities(kube), unique("cancel")
    with ThreadPoolExecutor(ROUNDS) as threads:
        async with Worker(client, task_queue=queue, workflows=[TimesOut],
                          activities=[acts.churn, acts.beats], activity_executor=threads,
                          workflow_runner=UnsandboxedWorkflowRunner()):
            for i in range(ROUNDS):
                assert await times_out(client, queue, CHURN, CHURN_S) == "TimeoutError"
                assert lock_free(acts.pool), (
                    f"round {i + 1}: the cancellation left the connection pool's lock taken")
            assert await times_out(client, queue, BEATS, BEATS_S) == "TimeoutError"
            assert acts.beats_done.wait(timeout=10)
            assert acts.beats_ended == ["stopped at a beat"]
        namespace = threads.submit(kube.get, "v1", "Namespace", "default").result(timeout=10)
    assert namespace is not None and namespace["metadata"]["name"] == "default"
