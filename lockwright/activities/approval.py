"""``record_approval``: who approved a revision (Manual policy), and when, on the record.

Approvals come three ways: the ``approve_revision`` update, the ``request_approval``
signal (registered as ``activate_revision`` and ``request_activation``; both from the
``temporal`` CLI or any client), or ``kubectl`` setting the revision's
``spec.desiredState: Active``. Workflow code cannot see who sent an update or a signal, so
this activity reads the Temporal identity from the workflow's history (of the run that
received the approval: see :func:`approver`);
for kubectl, the field manager and time of ``spec.desiredState`` in the revision's
managedFields (Kubernetes records the writer's field manager there, not the user). The
result is an Event on the revision.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from temporalio.api.common.v1 import Payloads
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client

from lockwright import contracts as c
from lockwright.activities.base import log
from lockwright.activities.connection import TemporalConnection
from lockwright.activities.errors import defn, edge
from lockwright.activities.reads import PackageReader
from lockwright.k8s import NORMAL
from lockwright.upgrade.plan import ACCEPT_PLAN_ANNOTATION as ACCEPT_PLAN
from lockwright.upgrade.switch import annotation_writer, desired_state_writer

Found = tuple[str, str]  # who, when (ISO 8601)
# Runs read back through continue-as-new for an approval whose run is not named.
MAX_RUNS_BACK = 5


class ApprovalActivities:
    """record_approval."""

    def __init__(self, reader: PackageReader, temporal: TemporalConnection) -> None:
        """Read approvals from workflow histories through ``temporal`` (TLS, API key)."""
        self.reader = reader
        self.temporal = temporal

    @defn(name=c.RECORD_APPROVAL)
    @edge
    def record_approval(self, inp: c.RecordApprovalInput) -> c.RecordApprovalResult:
        """An Event on the revision: approved by whom, when, how."""
        rev = self.reader.revision(inp.kind, inp.revision)
        by, at = inp.by, inp.at
        if inp.via == "kubectl":
            by, at = desired_state_writer(rev)
        elif inp.via == "annotation":
            by, at = annotation_writer(self.reader.package(inp.kind, inp.package), ACCEPT_PLAN)
        elif not by:
            by, when = asyncio.run(self.temporal_identity(inp))
            at = when or at
        by = by or "an unknown client"
        what = (("AcceptPlan", "The breaking upgrade plan of") if inp.plan
                else ("ApproveRevision", "Activation of"))
        self.reader.event(rev, NORMAL, what[0],
                   f"{what[1]} {inp.revision} approved by {by} at {at} ({inp.via})")
        log(package=inp.package, revision=inp.revision).info(
            "revision.approved", by=by, at=at, via=inp.via)
        return c.RecordApprovalResult(by=by, at=at)

    async def temporal_identity(self, inp: c.RecordApprovalInput) -> Found:
        """The identity and time of the update or signal approving ``inp.revision``."""
        return await approver(await self.temporal.connect(), inp)


async def approver(client: Client, inp: c.RecordApprovalInput) -> Found:
    """The identity and time of the last update or signal approving ``inp.revision``.

    Read from the history of run ``inp.run_id``, the run that received the approval: the
    server writes a signal's event before any workflow task delivers it, and an update's
    acceptance when the task that accepted it completes, both before the workflow can ask
    for the record, so nothing needs waiting for. A continue-as-new in between does not
    carry those events into the next run, hence the run id. States carried from runs
    before the run id was kept name the current run: the runs it continued from are read
    back, newest first, up to ``MAX_RUNS_BACK``.
    """
    run_id = inp.run_id
    for _ in range(1 + MAX_RUNS_BACK):
        handle = client.get_workflow_handle(inp.workflow_id, run_id=run_id or None)
        events = (await handle.fetch_history()).events
        found = [hit for hit in (approval_in(e, inp.revision) for e in events) if hit]
        if found:
            return found[-1]
        run_id = events[0].workflow_execution_started_event_attributes \
            .continued_execution_run_id if events else ""
        if not run_id:
            break
    return "", ""


def approval_in(event: HistoryEvent, revision: str) -> Found | None:
    """(identity, time) when ``event`` is an update or signal approving ``revision``."""
    when = event.event_time.ToDatetime().isoformat() + "Z"
    if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
        attrs = event.workflow_execution_signaled_event_attributes
        if attrs.signal_name == c.SIGNAL_REQUEST_APPROVAL and names(attrs.input, revision):
            return str(attrs.identity), when
    if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
        request = event.workflow_execution_update_accepted_event_attributes.accepted_request
        if request.input.name == c.UPDATE_APPROVE_REVISION and names(request.input.args,
                                                                     revision):
            return str(request.meta.identity), when
    return None


def names(payloads: Payloads, revision: str) -> bool:
    """True when the first payload is ``revision`` or ``{"revision": revision, ...}``."""
    if not payloads.payloads:
        return False
    try:
        value: Any = json.loads(payloads.payloads[0].data)
    except ValueError:
        return False
    return value == revision or (isinstance(value, dict) and value.get("revision") == revision)

