"""Reading workflow histories in tests: which steps ran, in order."""

from __future__ import annotations

import json

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowHistory

from lockwright import contracts as c

CHILD_STARTED = "child workflow started"


RUN_LOCAL = "local"
RUN_QUEUED = "queued"


def step_names(history: WorkflowHistory) -> list[str]:
    """Every activity the history ran, local or queued, and every child it started."""
    return [name for name, _ in steps(history)]


def steps(history: WorkflowHistory) -> list[tuple[str, str]]:
    """(name, where) of every step in ``history``: an activity run ``RUN_LOCAL`` or ``RUN_QUEUED``,
    or ``CHILD_STARTED`` (where: "")."""
    return [step for event in history.events if (step := _step(event))[0]]


def _step(event: HistoryEvent) -> tuple[str, str]:
    if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
        return str(event.activity_task_scheduled_event_attributes.activity_type.name), RUN_QUEUED
    if event.event_type == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
        return CHILD_STARTED, ""
    if (event.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
            and event.marker_recorded_event_attributes.marker_name == "core_local_activity"):
        data = event.marker_recorded_event_attributes.details["data"].payloads[0].data
        return str(json.loads(data)["activity_type"]), RUN_LOCAL
    return "", ""


def scheduled_locally(history: WorkflowHistory) -> list[str]:
    """The local activities of ``history`` in the order they were scheduled (their markers
    are in the order they ended)."""
    found = []
    for event in history.events:
        attrs = event.marker_recorded_event_attributes
        if (event.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
                and attrs.marker_name == "core_local_activity"):
            data = json.loads(attrs.details["data"].payloads[0].data)
            found.append((int(data["seq"]), str(data["activity_type"])))
    return [name for _, name in sorted(found)]


def steps_after_clean_up(history: WorkflowHistory) -> list[str]:
    """The steps from the first ``cleanup_package`` on ([] when there was none)."""
    names = step_names(history)
    return names[names.index(c.CLEANUP_PACKAGE):] if c.CLEANUP_PACKAGE in names else []
