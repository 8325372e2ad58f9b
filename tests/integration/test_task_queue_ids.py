"""Two clusters on one Temporal namespace, each with its own task queue (and worker).

A package of the same name, at the same digest (so the same revision name), on both:
each cluster's package workflow and ``InstallRevision`` child are its own, because their
ids end in the task queue off the default one; both clusters install and are Healthy.
Before, the second signal-with-start reached the first cluster's workflow and the second
cluster never installed. Set ``LOCKWRIGHT_RECORD_HISTORIES=1`` to (re)write the history.
"""

from __future__ import annotations

import json

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHistory
from temporalio.worker import Worker

from lockwright import contracts as c
from tests.integration.fake_cluster import FakeCluster
from tests.integration.test_workflows import cluster, provider, record, settled, start
from lockwright.workflows import ALL_WORKFLOWS
from lockwright.workflows.ids import PATCH_TASK_QUEUE_IDS

pytestmark = pytest.mark.temporal
__all__ = ["cluster"]  # the fixture, imported for this module's tests


async def test_two_clusters_install_a_package_of_the_same_name_each_on_its_queue(
        temporal_client: Client, task_queue: str, cluster: FakeCluster) -> None:
    other, other_queue = FakeCluster(), f"{task_queue}-b"
    pkg = cluster.add(provider())
    other.add(pkg)  # the same name and source on the second cluster
    async with Worker(temporal_client, task_queue=other_queue, workflows=ALL_WORKFLOWS,
                      activities=other.activities()):
        a = await start(temporal_client, task_queue, pkg)
        b = await start(temporal_client, other_queue, pkg)
        assert (a.id, b.id) == (f"package:provider:{pkg.name}:{task_queue}",
                                f"package:provider:{pkg.name}:{other_queue}")
        st_a, st_b = await settled(a, "Healthy", signals=1), await settled(b, "Healthy", signals=1)
        assert st_a.current_revision == st_b.current_revision  # one revision name, twice
        for fake, queue in ((cluster, task_queue), (other, other_queue)):
            assert fake.last_status(pkg.name)["Healthy"].status == "True"
            assert fake.calls[c.ESTABLISH_OBJECTS] == 1, queue
            child = await temporal_client.get_workflow_handle(c.revision_workflow_id(
                pkg.kind, st_a.current_revision, queue)).describe()
            assert (child.task_queue, child.status) == (queue,
                                                        WorkflowExecutionStatus.COMPLETED)
    history = await a.fetch_history()
    assert PATCH_TASK_QUEUE_IDS in patches(history)  # the new shape is marked
    [initiated] = [e.start_child_workflow_execution_initiated_event_attributes.workflow_id
                   for e in history.events if e.event_type
                   == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED]
    assert initiated.endswith(f":{task_queue}"), initiated
    await record(temporal_client, a.id, "package_install_queue_ids")


async def test_on_the_default_queue_ids_and_history_are_as_before(
        temporal_client: Client) -> None:
    """No suffix and no patch marker: running deployments and their histories unchanged.
    (Nothing else in the session polls the default queue: each test has a queue.)"""
    fake = FakeCluster()
    pkg = fake.add(provider())
    async with Worker(temporal_client, task_queue=c.TASK_QUEUE, workflows=ALL_WORKFLOWS,
                      activities=fake.activities()):
        handle = await start(temporal_client, c.TASK_QUEUE, pkg)
        assert handle.id == f"package:provider:{pkg.name}"
        st = await settled(handle, "Healthy", signals=1)
        child = await temporal_client.get_workflow_handle(
            f"revision:provider:{st.current_revision}").describe()
        assert child.status == WorkflowExecutionStatus.COMPLETED
        history = await handle.fetch_history()
    assert PATCH_TASK_QUEUE_IDS not in patches(history)
    assert patches(history), "the other patches are marked: the reading is right"


def patches(history: WorkflowHistory) -> list[str]:
    """The ids of the ``workflow.patched()`` markers in ``history``."""
    return [json.loads(e.marker_recorded_event_attributes.details["patch-data"]
                       .payloads[0].data)["id"]
            for e in history.events if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
            and e.marker_recorded_event_attributes.marker_name == "core_patch"]
