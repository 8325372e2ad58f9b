"""A workflow's history as a timeline of steps: pure functions over Temporal's history JSON.

The input is what ``WorkflowHistory.to_json_dict()`` gives (and what ``temporal workflow
show -o json`` prints): events with ``eventType``, ``eventTime`` and one
``<type>EventAttributes`` object, payloads base64-encoded JSON. Each step is one activity
(queued or local), child workflow, timer, signal or update:

- a queued activity runs from its schedule to its close; Temporal writes its
  ``ActivityTaskStarted`` only when it closes, with the attempt that closed it and the
  failure of the attempt before, so ``attempts`` and ``last_failure`` count the retries;
- a local activity has no events of its own, only a marker written when the workflow task
  that ran it completes: it runs from the end of the step before it in that task (or the
  task's start) to the marker's ``complete_time``, as ``benchmarks/install.py`` counts it;
- signals and updates carry the identity of whoever sent them; ``record_approval``'s result
  says who approved a revision, however the approval came.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

Obj = dict[str, Any]

ACTIVITY, LOCAL, CHILD, TIMER, SIGNAL, UPDATE = (
    "activity", "local", "child", "timer", "signal", "update")
OK, FAILED, RUNNING, CANCELLED, TIMED_OUT = "ok", "failed", "running", "cancelled", "timed out"
RECORD_APPROVAL = "record_approval"  # contracts.RECORD_APPROVAL, without Temporal
# contracts.UPDATE_APPROVE_REVISION and SIGNAL_REQUEST_APPROVAL: the registered names
APPROVE_REVISION, REQUEST_APPROVAL = "activate_revision", "request_activation"
_PREFIX = "EVENT_TYPE_"


@dataclass(frozen=True)
class Step:
    """One thing a workflow did, with when, how long, how often and how it ended.

    Attributes:
        kind: ``activity``, ``local``, ``child``, ``timer``, ``signal`` or ``update``.
        name: the activity type, child workflow type, timer, signal or update name.
        start: when it began (epoch seconds); ``end`` is None while it runs.
        attempts: the attempt that closed it (activities); 0 when not known.
        who: the identity of a signal or update, or the approver ``record_approval`` found.
        child: a child step's workflow id and, once started, run id.
    """

    kind: str
    name: str
    summary: str = ""
    start: float = 0.0
    end: float | None = None
    attempts: int = 0
    outcome: str = RUNNING
    message: str = ""
    last_failure: str = ""
    who: str = ""
    child: str = ""
    child_run: str = ""

    @property
    def duration(self) -> float | None:
        """Seconds it took, or None while it runs."""
        return None if self.end is None else max(0.0, self.end - self.start)


@dataclass(frozen=True)
class Timeline:
    """One run of one workflow: when it started, how it ended (so far), its steps."""

    workflow_id: str
    run_id: str = ""
    workflow_type: str = ""
    start: float = 0.0
    end: float | None = None
    outcome: str = RUNNING
    message: str = ""
    started_by: str = ""
    # The run this one continued as new from ("" for the first run of the workflow).
    continued_from: str = ""
    steps: tuple[Step, ...] = ()


@dataclass(frozen=True)
class Pending:
    """A queued activity still running or being retried (``describe()``'s pending list)."""

    activity: str
    attempt: int = 1
    last_failure: str = ""


# --- decoding -----------------------------------------------------------------------------
def seconds(stamp: str) -> float:
    """An RFC 3339 time (nanoseconds allowed) as epoch seconds."""
    return datetime.fromisoformat(stamp).timestamp() if stamp else 0.0


def decode(payloads: Obj | None) -> Any:
    """The first payload of a ``Payloads`` object as JSON, or None (absent, not JSON)."""
    found = (payloads or {}).get("payloads") or []
    return payload(found[0]) if found else None


def payload(one: Obj) -> Any:
    """One payload's JSON value, or None."""
    try:
        return json.loads(base64.b64decode(one.get("data") or ""))
    except ValueError:
        return None


def failure_text(failure: Obj | None) -> str:
    """The innermost message of a failure chain: the error's own words, not a wrapper's."""
    text = ""
    while failure:
        text = str(failure.get("message") or "") or text
        failure = failure.get("cause")
    return text


def _attrs(event: Obj) -> Obj:
    found: Obj = next((v for k, v in event.items() if k.endswith("EventAttributes")), {})
    return found


def _summary(event: Obj) -> str:
    summary = ((event.get("userMetadata") or {}).get("summary")) or {}
    value = payload(summary) if summary else None
    return value if isinstance(value, str) else ""


# --- parsing ------------------------------------------------------------------------------
class _Parser:
    """Walks one history once, opening steps on their first event, closing them later."""

    def __init__(self, workflow_id: str) -> None:
        self.timeline = Timeline(workflow_id)
        self.steps: list[Step] = []
        self.open: dict[str, int] = {}  # event id (or update id) → index in steps
        self.local_from = 0.0  # where the next local activity's time counts from
        self.task_start = 0.0  # the workflow task being recorded began here

    def feed(self, event: Obj) -> None:
        kind = str(event.get("eventType", "")).removeprefix(_PREFIX)
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, event, _attrs(event), seconds(str(event.get("eventTime", ""))))
        elif kind.startswith("WORKFLOW_EXECUTION_") and kind not in _NOT_CLOSING:
            self._closed(kind.removeprefix("WORKFLOW_EXECUTION_"), _attrs(event), event)

    def add(self, key: str, step: Step) -> None:
        if key:
            self.open[key] = len(self.steps)
        self.steps.append(step)

    def close(self, key: str, **changes: Any) -> None:
        index = self.open.pop(key, None)
        if index is not None:
            self.steps[index] = replace(self.steps[index], **changes)

    def amend(self, key: str, **changes: Any) -> None:
        index = self.open.get(key)
        if index is not None:
            self.steps[index] = replace(self.steps[index], **changes)

    def _closed(self, how: str, attrs: Obj, event: Obj) -> None:
        outcome = {"COMPLETED": OK, "CONTINUED_AS_NEW": "continued as new"}.get(
            how, how.lower().replace("_", " ").replace("canceled", CANCELLED))
        self.timeline = replace(self.timeline, end=seconds(str(event.get("eventTime", ""))),
                                outcome=outcome, message=failure_text(attrs.get("failure")))


_NOT_CLOSING = frozenset({"WORKFLOW_EXECUTION_STARTED", "WORKFLOW_EXECUTION_SIGNALED",
                          "WORKFLOW_EXECUTION_UPDATE_ACCEPTED",
                          "WORKFLOW_EXECUTION_UPDATE_COMPLETED",
                          "WORKFLOW_EXECUTION_UPDATE_ADMITTED",
                          "WORKFLOW_EXECUTION_CANCEL_REQUESTED",
                          "WORKFLOW_EXECUTION_OPTIONS_UPDATED"})
Handler = Callable[[_Parser, Obj, Obj, float], None]


def _started(p: _Parser, event: Obj, a: Obj, t: float) -> None:
    p.timeline = replace(p.timeline, start=t, workflow_type=str(
        (a.get("workflowType") or {}).get("name", "")), run_id=str(
        a.get("originalExecutionRunId", "")), started_by=str(a.get("identity", "")),
        continued_from=str(a.get("continuedExecutionRunId", "")))


def _task_started(p: _Parser, event: Obj, a: Obj, t: float) -> None:
    p.local_from = p.task_start = t


def _scheduled(p: _Parser, event: Obj, a: Obj, t: float) -> None:
    name = str((a.get("activityType") or {}).get("name", ""))
    p.add(str(event.get("eventId")), Step(ACTIVITY, name, _summary(event), t))


def _activity_started(p: _Parser, event: Obj, a: Obj, t: float) -> None:
    p.amend(str(a.get("scheduledEventId")), attempts=int(a.get("attempt") or 1),
            last_failure=failure_text(a.get("lastFailure")))


def _activity_done(outcome: str) -> Handler:
    def handle(p: _Parser, event: Obj, a: Obj, t: float) -> None:
        key = str(a.get("scheduledEventId"))
        index = p.open.get(key)
        who, message = _approval(p.steps[index].name if index is not None else "",
                                 decode(a.get("result")))
        p.close(key, end=t, outcome=outcome, who=who,
                message=message or failure_text(a.get("failure")))
    return handle


def _approval(activity: str, result: Any) -> tuple[str, str]:
    """``record_approval``'s result as (who, what): the approval on record."""
    if activity != RECORD_APPROVAL or not isinstance(result, dict):
        return "", ""
    by, at = str(result.get("by", "")), str(result.get("at", ""))
    return by, f"approved by {by} at {at}"


def _marker(p: _Parser, event: Obj, a: Obj, t: float) -> None:
    if a.get("markerName") != "core_local_activity":
        return
    details = a.get("details") or {}
    data = decode(details.get("data")) or {}
    done = data.get("complete_time") or {}
    end = float(done.get("seconds", 0)) + float(done.get("nanos", 0)) / 1e9 if done else t
    name = str(data.get("activity_type", ""))
    who, message = _approval(name, decode(details.get("result")))
    failed = bool(a.get("failure"))
    p.add("", Step(LOCAL, name, _summary(event), min(p.local_from, end), end,
                   int(data.get("attempt") or 1), FAILED if failed else OK,
                   failure_text(a.get("failure")) if failed else message, who=who))
    p.local_from = max(p.local_from, end)


def _timer_started(p: _Parser, event: Obj, a: Obj, t: float) -> None:
    summary = _summary(event) or f"sleep {a.get('startToFireTimeout', '')}"
    p.add(str(event.get("eventId")), Step(TIMER, "timer", summary, t))


def _timer_done(outcome: str) -> Handler:
    def handle(p: _Parser, event: Obj, a: Obj, t: float) -> None:
        p.close(str(a.get("startedEventId")), end=t, outcome=outcome)
    return handle


def _child_initiated(p: _Parser, event: Obj, a: Obj, t: float) -> None:
    name = str((a.get("workflowType") or {}).get("name", ""))
    p.add(str(event.get("eventId")), Step(CHILD, name, _summary(event), t,
                                          child=str(a.get("workflowId", ""))))


def _child_started(p: _Parser, event: Obj, a: Obj, t: float) -> None:
    run = str((a.get("workflowExecution") or {}).get("runId", ""))
    p.amend(str(a.get("initiatedEventId")), child_run=run)


def _child_done(outcome: str) -> Handler:
    def handle(p: _Parser, event: Obj, a: Obj, t: float) -> None:
        p.close(str(a.get("initiatedEventId")), end=t, outcome=outcome,
                message=failure_text(a.get("failure")))
    return handle


def _child_not_started(p: _Parser, event: Obj, a: Obj, t: float) -> None:
    p.close(str(a.get("initiatedEventId")), end=t, outcome=FAILED,
            message=str(a.get("cause", "")).lower().replace("_", " "))


def _signaled(p: _Parser, event: Obj, a: Obj, t: float) -> None:
    p.add("", Step(SIGNAL, str(a.get("signalName", "")), _argument(decode(a.get("input"))),
                   t, t, outcome=OK, who=str(a.get("identity", ""))))


def _update_accepted(p: _Parser, event: Obj, a: Obj, t: float) -> None:
    request = a.get("acceptedRequest") or {}
    meta, inp = request.get("meta") or {}, request.get("input") or {}
    # The event is written when the task that accepted the update completes; the update
    # arrived with that task, before the steps the task ran.
    p.add(f"update:{meta.get('updateId', '')}", Step(
        UPDATE, str(inp.get("name", "")), _argument(decode(inp.get("args"))),
        min(p.task_start or t, t), who=str(meta.get("identity", ""))))


def _update_completed(p: _Parser, event: Obj, a: Obj, t: float) -> None:
    outcome = a.get("outcome") or {}
    failure = outcome.get("failure")
    p.close(f"update:{(a.get('meta') or {}).get('updateId', '')}", end=t,
            outcome=FAILED if failure else OK,
            message=failure_text(failure) or _argument(decode(outcome.get("success")), "message"))


def _argument(value: Any, key: str = "") -> str:
    """A signal's or update's argument in a few words: a revision, a reason, a message."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        keys = (key,) if key else ("revision", "reason")
        return next((str(value[k]) for k in keys if value.get(k)), "")
    return ""


_HANDLERS: dict[str, Handler] = {
    "WORKFLOW_EXECUTION_STARTED": _started,
    "WORKFLOW_TASK_STARTED": _task_started,
    "ACTIVITY_TASK_SCHEDULED": _scheduled,
    "ACTIVITY_TASK_STARTED": _activity_started,
    "ACTIVITY_TASK_COMPLETED": _activity_done(OK),
    "ACTIVITY_TASK_FAILED": _activity_done(FAILED),
    "ACTIVITY_TASK_TIMED_OUT": _activity_done(TIMED_OUT),
    "ACTIVITY_TASK_CANCELED": _activity_done(CANCELLED),
    "MARKER_RECORDED": _marker,
    "TIMER_STARTED": _timer_started,
    "TIMER_FIRED": _timer_done(OK),
    "TIMER_CANCELED": _timer_done(CANCELLED),
    "START_CHILD_WORKFLOW_EXECUTION_INITIATED": _child_initiated,
    "CHILD_WORKFLOW_EXECUTION_STARTED": _child_started,
    "CHILD_WORKFLOW_EXECUTION_COMPLETED": _child_done(OK),
    "CHILD_WORKFLOW_EXECUTION_FAILED": _child_done(FAILED),
    "CHILD_WORKFLOW_EXECUTION_CANCELED": _child_done(CANCELLED),
    "CHILD_WORKFLOW_EXECUTION_TIMED_OUT": _child_done(TIMED_OUT),
    "CHILD_WORKFLOW_EXECUTION_TERMINATED": _child_done("terminated"),
    "START_CHILD_WORKFLOW_EXECUTION_FAILED": _child_not_started,
    "WORKFLOW_EXECUTION_SIGNALED": _signaled,
    "WORKFLOW_EXECUTION_UPDATE_ACCEPTED": _update_accepted,
    "WORKFLOW_EXECUTION_UPDATE_COMPLETED": _update_completed,
}


def parse(workflow_id: str, history: Obj, run_id: str = "") -> Timeline:
    """The timeline of one run from its history JSON (``{"events": [...]}``).

    Args:
        workflow_id: the workflow's id (histories do not carry it).
        history: the history as ``WorkflowHistory.to_json_dict()`` gives it.
        run_id: the run's id, when known (else the first run of its chain, from the start).
    """
    parser = _Parser(workflow_id)
    for event in history.get("events") or []:
        parser.feed(event)
    # Local steps and accepted updates are recorded after the task that ran them: order by
    # when each began, messages first among steps that began together.
    steps = sorted(parser.steps, key=lambda s: (s.start, s.kind not in (SIGNAL, UPDATE)))
    timeline = replace(parser.timeline, steps=tuple(steps))
    return replace(timeline, run_id=run_id) if run_id else timeline


def with_pending(timeline: Timeline, pending: Iterable[Pending]) -> Timeline:
    """The timeline with each running activity's current attempt and last failure.

    A queued activity being retried has no event for its failed attempts until it closes;
    ``describe()`` has them.
    """
    by_name = {p.activity: p for p in pending}
    steps = tuple(replace(s, attempts=by_name[s.name].attempt,
                          last_failure=by_name[s.name].last_failure)
                  if s.kind == ACTIVITY and s.end is None and s.name in by_name else s
                  for s in timeline.steps)
    return replace(timeline, steps=steps)


def approvals(steps: Iterable[Step]) -> list[Step]:
    """The steps that approve a revision or put an approval on record, in order."""
    return [s for s in steps if s.name in (APPROVE_REVISION, REQUEST_APPROVAL)
            or (s.name == RECORD_APPROVAL and s.who)]
