"""Workflow ids computed inside a workflow: they carry the workflow's own task queue.

A Temporal namespace shared by several clusters gives each cluster its own task queue, and
a package's workflow, its revisions' children and the singletons' signals must stay on that
cluster's ids (``contracts.names``). The queue is the running workflow's (a child, a signal
target and a continued run are on the same one), so workflows need no input for it.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from lockwright import contracts as c

# workflow.patched() id: off the default task queue, child and signal ids end in
# ``:<task queue>``. Runs started before kept the default queue's ids on every queue; on
# the default queue the ids are unchanged and no marker is written.
PATCH_TASK_QUEUE_IDS = "task-queue-ids"


def task_queue() -> str:
    """The task queue this workflow's ids carry: its own, except in runs from before
    :data:`PATCH_TASK_QUEUE_IDS` (they named the default queue's ids)."""
    queue = workflow.info().task_queue
    if queue == c.TASK_QUEUE or not workflow.patched(PATCH_TASK_QUEUE_IDS):
        return c.TASK_QUEUE
    return queue


def package_id(kind: str, name: str) -> str:
    """The id of a package's workflow on this workflow's cluster."""
    return c.package_workflow_id(kind, name, task_queue())


def revision_id(kind: str, revision: str) -> str:
    """The id of a revision's ``InstallRevision`` child on this workflow's cluster."""
    return c.revision_workflow_id(kind, revision, task_queue())
