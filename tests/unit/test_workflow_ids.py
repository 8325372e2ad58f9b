"""Workflow ids carry the task queue off the default queue (contracts.names).

Several clusters may share one Temporal namespace, each with its own task queue: each
cluster's workflow ids must be its own, or one cluster's watcher signals another's
workflow. On the default queue the ids are what they always were.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from lockwright import contracts as c


def package(queue: str) -> str:
    return c.package_workflow_id(c.PROVIDER, "p", queue)


def revision(queue: str) -> str:
    return c.revision_workflow_id(c.FUNCTION, "f-0123456789ab", queue)


def plan(queue: str) -> str:
    return c.plan_workflow_id(c.CONFIGURATION, "cfg", "ab12", queue)



@pytest.mark.parametrize("make, queue, expected", [
    (package, c.TASK_QUEUE, "package:provider:p"),
    (package, "cluster-b", "package:provider:p:cluster-b"),
    (revision, c.TASK_QUEUE, "revision:function:f-0123456789ab"),
    (revision, "cluster-b", "revision:function:f-0123456789ab:cluster-b"),
    (plan, c.TASK_QUEUE, "plan:configuration:cfg:ab12"),
    (plan, "cluster-b", "plan:configuration:cfg:ab12:cluster-b"),
    (c.resolve_workflow_id, c.TASK_QUEUE, "resolve:lock"),
    (c.resolve_workflow_id, "cluster-b", "resolve:lock:cluster-b"),
    (c.activation_workflow_id, c.TASK_QUEUE, "activate:definitions"),
    (c.activation_workflow_id, "cluster-b", "activate:definitions:cluster-b"),
])
def test_ids_end_in_the_task_queue_off_the_default_one(
        make: Callable[[str], str], queue: str, expected: str) -> None:
    assert make(queue) == expected


@pytest.mark.parametrize("make", [package, revision, plan, c.resolve_workflow_id,
                                  c.activation_workflow_id])
def test_two_clusters_on_one_namespace_never_share_an_id(make: Callable[[str], str]) -> None:
    ids = {make(q) for q in (c.TASK_QUEUE, "cluster-a", "cluster-b", "lockwright-b")}
    assert len(ids) == 4


LONGEST = "n" * 253  # a Kubernetes object name's limit


@pytest.mark.parametrize("make", [
    lambda q: c.package_workflow_id(c.CONFIGURATION, LONGEST, q),
    lambda q: c.revision_workflow_id(c.CONFIGURATION, LONGEST, q),
    lambda q: c.plan_workflow_id(c.CONFIGURATION, LONGEST, "ab12", q),
])
@pytest.mark.parametrize("queue", [c.TASK_QUEUE, "cluster-b-" + "q" * 200])
def test_ids_of_the_longest_names_fit_a_temporal_cluster_on_sql(
        make: Callable[[str], str], queue: str) -> None:
    """PostgreSQL's Temporal schema keeps 255 characters of a workflow id; longer ids are
    refused ("WorkflowId exceeds maximum allowed length (288/255)")."""
    got = make(queue)
    assert len(got) == c.MAX_WORKFLOW_ID
    assert got == make(queue)  # the same package, the same id: it is the dedup key


def test_long_ids_differing_only_at_their_end_stay_distinct() -> None:
    a = c.package_workflow_id(c.PROVIDER, LONGEST[:-1] + "a", c.TASK_QUEUE)
    b = c.package_workflow_id(c.PROVIDER, LONGEST[:-1] + "b", c.TASK_QUEUE)
    assert a != b and a.startswith("package:provider:nnn") and "~" in a


def test_ids_that_fit_are_unchanged() -> None:
    name = "n" * (c.MAX_WORKFLOW_ID - len("package:provider:"))
    assert c.package_workflow_id(c.PROVIDER, name, c.TASK_QUEUE) == f"package:provider:{name}"
