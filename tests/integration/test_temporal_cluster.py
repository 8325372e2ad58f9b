"""The Temporal cluster tier: PostgreSQL and temporal-server, as lockwright runs on it.

A workflow runs on it with lockwright's search attributes, as the watcher starts package
workflows, and PostgreSQL's visibility store finds it by ``LockwrightPackageName``. Its
components can be SIGKILLed and restarted on their data, losing nothing.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from lockwright.contracts import (
    SA_PACKAGE_KIND,
    SA_PACKAGE_NAME,
    SEARCH_ATTRIBUTES,
    package_workflow_id,
)
from lockwright.controlplane import temporalcluster
from lockwright.controlplane.cluster import StartError
from lockwright.worker.common import ensure_search_attributes
from tests.fixtures.temporal import search_attribute_pairs, temporal_kinds
from tests.helpers import unique, wait_for_async

pytestmark = [
    pytest.mark.temporal,
    # The cluster's first start builds it (minutes on a fresh machine): only when selected.
    pytest.mark.skipif("cluster" not in temporal_kinds(), reason="the Temporal cluster is not "
                       "selected (LOCKWRIGHT_TEST_TEMPORAL=cluster or dev,cluster)"),
]


@workflow.defn(sandboxed=False)
class Waits:
    """Waits for a signal, then returns what it was started with."""

    def __init__(self) -> None:
        self.go = False

    @workflow.signal
    def proceed(self) -> None:
        self.go = True

    @workflow.run
    async def run(self, name: str) -> str:
        await workflow.wait_condition(lambda: self.go)
        return name


def attributes(name: str) -> TypedSearchAttributes:
    """The attributes the watcher starts a package workflow with."""
    return TypedSearchAttributes([SearchAttributePair(SA_PACKAGE_KIND, "provider"),
                                  SearchAttributePair(SA_PACKAGE_NAME, name)])


async def test_search_attributes_are_registered_with_their_types(
        temporal_cluster_env: WorkflowEnvironment) -> None:
    client = temporal_cluster_env.client
    got = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=client.namespace))
    want = {k.name: IndexedValueType.ValueType(k.indexed_value_type) for k in SEARCH_ATTRIBUTES}
    assert {n: got.custom_attributes[n] for n in want if n in got.custom_attributes} == want
    await ensure_search_attributes(client)  # the worker's start-up check finds nothing missing


async def test_a_workflow_runs_and_visibility_finds_it_by_package_name(
        temporal_cluster_env: WorkflowEnvironment) -> None:
    client, queue, name = temporal_cluster_env.client, unique("q"), unique("pkg")
    async with Worker(client, task_queue=queue, workflows=[Waits]):
        handle = await client.start_workflow(
            Waits.run, name, id=f"package:provider:{name}", task_queue=queue,
            search_attributes=attributes(name), execution_timeout=timedelta(minutes=5))
        query = f"{SA_PACKAGE_NAME.name} = '{name}' AND ExecutionStatus = 'Running'"
        await wait_for_async(lambda: _ids(client, query), timeout=60, what=query)
        await handle.signal(Waits.proceed)
        assert await handle.result() == name
    done = f"{SA_PACKAGE_NAME.name} = '{name}' AND ExecutionStatus = 'Completed'"
    assert await wait_for_async(lambda: _ids(client, done), timeout=60,
                                what=done) == [handle.id]


async def test_the_longest_package_name_has_a_workflow(
        temporal_cluster_env: WorkflowEnvironment) -> None:
    """A Kubernetes name may have 253 characters; PostgreSQL's schema keeps 255 of a workflow
    id, and the server refused lockwright's longer ids (the dev server allows 1000)."""
    client, queue, name = temporal_cluster_env.client, unique("q"), "p" * 253
    workflow_id = package_workflow_id("configuration", name, queue)
    async with Worker(client, task_queue=queue, workflows=[Waits]):
        handle = await client.start_workflow(Waits.run, name, id=workflow_id, task_queue=queue,
                                             search_attributes=attributes(name))
        await handle.signal(Waits.proceed)
        assert await handle.result() == name


async def _ids(client: Client, query: str) -> list[str]:
    return [w.id async for w in client.list_workflows(query)]


@pytest.fixture
def own_cluster(tmp_path: Path) -> Iterator[temporalcluster.TemporalCluster]:
    """A cluster of this test's own: killing its servers must not disturb other tests."""
    options = temporalcluster.Options(search_attributes=search_attribute_pairs())
    cluster = temporalcluster.start(tmp_path / "temporal", options)
    try:
        yield cluster
    finally:
        cluster.stop()


async def test_killed_servers_restart_on_their_data_and_open_workflows_finish(
        own_cluster: temporalcluster.TemporalCluster) -> None:
    name, queue = unique("pkg"), unique("q")
    client = await Client.connect(own_cluster.address)
    handle = await client.start_workflow(Waits.run, name, id=f"w-{uuid.uuid4().hex}",
                                         task_queue=queue, search_attributes=attributes(name))
    for component in ("temporal-server", "postgres"):
        own_cluster.kill(component)
        assert own_cluster.processes[component].poll() is not None
        own_cluster.restart(component)
    client = await Client.connect(own_cluster.address)  # a new channel after the restarts
    async with Worker(client, task_queue=queue, workflows=[Waits]):
        await client.get_workflow_handle(handle.id).signal(Waits.proceed)
        assert await client.get_workflow_handle(handle.id).result() == name
    desc = await client.get_workflow_handle(handle.id).describe()
    assert desc.status == WorkflowExecutionStatus.COMPLETED
    assert own_cluster.resident_memory()["postgres"] > 0


def test_an_unknown_component_is_refused_by_name(
        temporal_cluster: temporalcluster.TemporalCluster) -> None:
    with pytest.raises(ValueError, match="unknown component 'etcd': one of postgres, "
                                         "temporal-server"):
        temporal_cluster.kill("etcd")


def test_a_server_that_cannot_start_fails_with_its_log(tmp_path: Path) -> None:
    """temporal-server cannot listen on a frontend port another process holds: the start
    fails at once, naming the component and carrying its log's tail."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        options = temporalcluster.Options(search_attributes=search_attribute_pairs(),
                                          frontend_port=held.getsockname()[1], timeout=60)
        with pytest.raises(StartError, match=r"(?s)temporal-server exited with \d+ before .*"
                                             r"temporal-server\.log:\n.*address already in use"):
            temporalcluster.start(tmp_path / "temporal", options)
