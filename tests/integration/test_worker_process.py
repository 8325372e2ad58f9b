"""The worker's start-up and shutdown: bootstrap, poll the task queue, drain on stop."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client

from lockwright.settings import Settings
from tests.fixtures.devcluster import DevCluster, start_devcluster
from tests.helpers import api_client, wait_for_async
from lockwright.worker.worker import run_worker

pytestmark = pytest.mark.temporal


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    dc = start_devcluster(str(tmp_path_factory.mktemp("worker-dc")))
    yield dc
    dc.stop()


async def pollers(client: Client, queue: str) -> list[str]:
    resp = await client.workflow_service.describe_task_queue(DescribeTaskQueueRequest(
        namespace=client.namespace, task_queue=TaskQueue(name=queue),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW))
    return [p.identity for p in resp.pollers]


async def test_worker_bootstraps_polls_and_drains(temporal_client: Client, task_queue: str,
                                                  cluster: DevCluster, tmp_path: Path) -> None:
    settings = Settings(kubeconfig=cluster.kubeconfig, task_queue=task_queue,
                        cache_dir=str(tmp_path / "cache"), system_namespace="lw-system")
    stop = asyncio.Event()
    task = asyncio.create_task(run_worker(settings, stop, client=temporal_client))
    await wait_for_async(lambda: pollers(temporal_client, task_queue), timeout=60,
                         what="the worker to poll its task queue")
    from kubernetes import client

    with api_client(settings.kubeconfig) as api:
        assert client.CoreV1Api(api).read_namespace("lw-system").metadata.name == "lw-system"
        crd = client.CustomObjectsApi(api).get_cluster_custom_object(
            "apiextensions.k8s.io", "v1", "customresourcedefinitions", "providers.pkg.crossplane.io")
        assert crd["metadata"]["name"] == "providers.pkg.crossplane.io"
    stop.set()
    await asyncio.wait_for(task, 30)


async def test_worker_process_exits_cleanly_on_sigterm(task_queue: str,
                                                       temporal_client: Client,
                                                       cluster: DevCluster,
                                                       tmp_path: Path) -> None:
    settings = Settings(kubeconfig=cluster.kubeconfig, task_queue=task_queue,
                        temporal_address=temporal_client.service_client.config.target_host,
                        cache_dir=str(tmp_path / "cache"))
    root = str(Path(__file__).resolve().parents[2])
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "lockwright", "worker", env={**os.environ, **settings.env(),
                                                           "PYTHONPATH": root},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)

    async def polled_by_it() -> bool:
        return any(i.startswith(f"{proc.pid}@") for i in await pollers(temporal_client,
                                                                       task_queue))

    await wait_for_async(polled_by_it, timeout=60, what="the worker process to poll")
    proc.send_signal(signal.SIGTERM)
    out, _ = await asyncio.wait_for(proc.communicate(), 40)
    assert proc.returncode == 0, out.decode()[-2000:]
    assert b"worker draining" in out and b"worker stopped" in out
