"""Temporal histories read as timelines and printed as rows (commands.timeline, commands.rows).

Matrix: each kind of step from the events that make it — a queued activity (retried, failed,
timed out), a local activity from its marker (time counted from the step before it in the
same workflow task), a timer fired or cut short, a child workflow started, completed or
failed, a signal and an update with their sender, ``record_approval``'s approver — and how
a run starts and ends; pending attempts merged in; a recorded history of the real
``InstallRevision``; then the rows: labels, details, nesting of a child's steps, folding of
repeats, totals and approvals, and the plain text as printed.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from lockwright.commands import rows, text
from lockwright.commands.timeline import (
    ACTIVITY,
    CANCELLED,
    CHILD,
    FAILED,
    LOCAL,
    OK,
    RUNNING,
    SIGNAL,
    TIMED_OUT,
    TIMER,
    UPDATE,
    Pending,
    Step,
    Timeline,
    approvals,
    failure_text,
    parse,
    with_pending,
)

Obj = dict[str, Any]
T0 = 1_800_000_000.0
HISTORIES = Path(__file__).resolve().parents[1] / "replay" / "histories"


def payload(value: Any) -> Obj:
    return {"metadata": {"encoding": base64.b64encode(b"json/plain").decode()},
            "data": base64.b64encode(json.dumps(value).encode()).decode()}


def ev(event_id: int, kind: str, t: float, summary: str = "", **attrs: Any) -> Obj:
    """One event as ``to_json_dict()`` writes it, ``t`` seconds after T0."""
    camel = "".join(w.capitalize() for w in kind.lower().split("_"))
    stamp = datetime.fromtimestamp(T0 + t, UTC).isoformat().replace("+00:00", "Z")
    event: Obj = {"eventId": str(event_id), "eventTime": stamp,
                  "eventType": f"EVENT_TYPE_{kind}",
                  f"{camel[0].lower()}{camel[1:]}EventAttributes": attrs}
    if summary:
        event["userMetadata"] = {"summary": payload(summary)}
    return event


def marker(event_id: int, t: float, activity: str, done: float, attempt: int = 1,
           summary: str = "", result: Any = None, failure: Obj | None = None) -> Obj:
    """A local activity's marker, written at ``t``, the activity done at ``done``."""
    secs = T0 + done
    data = {"activity_type": activity, "attempt": attempt,
            "complete_time": {"seconds": int(secs), "nanos": round((secs % 1) * 1e9)}}
    details = {"data": {"payloads": [payload(data)]}}
    if result is not None:
        details["result"] = {"payloads": [payload(result)]}
    extra = {"failure": failure} if failure else {}
    return ev(event_id, "MARKER_RECORDED", t, summary, markerName="core_local_activity",
              details=details, **extra)


def only(*events: Obj) -> Step:
    [step] = parse("w", {"events": list(events)}).steps
    return step


def relative(step: Step) -> tuple[float, float | None]:
    return (round(step.start - T0, 3),
            None if step.end is None else round(step.end - T0, 3))


# --- steps, one kind at a time ------------------------------------------------------------
def test_queued_activity_retried_then_done() -> None:
    """Started is written when the activity closes: its attempt and the failure before."""
    step = only(
        ev(5, "ACTIVITY_TASK_SCHEDULED", 0.0, "fetch sha256:ab",
           activityType={"name": "fetch_package"}),
        ev(6, "ACTIVITY_TASK_STARTED", 2.0, scheduledEventId="5", attempt=3,
           lastFailure={"message": "registry unreachable"}),
        ev(7, "ACTIVITY_TASK_COMPLETED", 2.5, scheduledEventId="5", result=None))
    assert (step.kind, step.name, step.summary, step.attempts, step.outcome) == (
        ACTIVITY, "fetch_package", "fetch sha256:ab", 3, OK)
    assert (relative(step), step.last_failure, step.message) == (
        (0.0, 2.5), "registry unreachable", "")


@pytest.mark.parametrize("closing, outcome", [
    ("ACTIVITY_TASK_FAILED", FAILED),
    ("ACTIVITY_TASK_TIMED_OUT", TIMED_OUT),
    ("ACTIVITY_TASK_CANCELED", CANCELLED),
])
def test_queued_activity_that_did_not_succeed(closing: str, outcome: str) -> None:
    step = only(ev(5, "ACTIVITY_TASK_SCHEDULED", 0.0, activityType={"name": "take_lock"}),
                ev(7, closing, 1.0, scheduledEventId="5", failure={
                    "message": "activity failed", "cause": {"message": "held by other"}}))
    assert (step.outcome, step.message, step.duration) == (outcome, "held by other", 1.0)


def test_queued_activity_still_running() -> None:
    step = only(ev(5, "ACTIVITY_TASK_SCHEDULED", 0.0, activityType={"name": "check_health"}))
    assert (step.outcome, step.end, step.duration, step.attempts) == (RUNNING, None, None, 0)


def test_local_activities_count_from_the_step_before() -> None:
    """Markers land at the task's end; each local step runs from the one before it."""
    timeline = parse("w", {"events": [
        ev(3, "WORKFLOW_TASK_STARTED", 1.0),
        ev(5, "WORKFLOW_TASK_COMPLETED", 1.9),
        marker(6, 1.9, "read_package", 1.2, summary="read provider p"),
        marker(7, 1.9, "resolve_digest", 1.5, attempt=2),
        marker(8, 1.9, "ensure_revision", 1.8,
               failure={"message": "local activity failed", "cause": {"message": "gone"}}),
    ]})
    assert [(s.kind, s.name, relative(s), s.attempts, s.outcome) for s in timeline.steps] == [
        (LOCAL, "read_package", (1.0, 1.2), 1, OK),
        (LOCAL, "resolve_digest", (1.2, 1.5), 2, OK),
        (LOCAL, "ensure_revision", (1.5, 1.8), 1, FAILED)]
    assert (timeline.steps[0].summary, timeline.steps[2].message) == ("read provider p", "gone")


def test_other_markers_are_not_steps() -> None:
    assert parse("w", {"events": [ev(6, "MARKER_RECORDED", 1.0, markerName="core_patch")]}
                 ).steps == ()


@pytest.mark.parametrize("closing, outcome", [("TIMER_FIRED", OK),
                                              ("TIMER_CANCELED", CANCELLED)])
def test_timer(closing: str, outcome: str) -> None:
    step = only(ev(9, "TIMER_STARTED", 0.0, "wait for the runtime", startToFireTimeout="2s"),
                ev(10, closing, 2.0, startedEventId="9"))
    assert (step.kind, step.summary, step.outcome, step.duration) == (
        TIMER, "wait for the runtime", outcome, 2.0)


def test_timer_without_summary_says_how_long() -> None:
    assert only(ev(9, "TIMER_STARTED", 0.0, startToFireTimeout="0.5s")).summary == "sleep 0.5s"


@pytest.mark.parametrize("closing, outcome, message", [
    ("CHILD_WORKFLOW_EXECUTION_COMPLETED", OK, ""),
    ("CHILD_WORKFLOW_EXECUTION_FAILED", FAILED, "cannot get package: not found"),
    ("CHILD_WORKFLOW_EXECUTION_CANCELED", CANCELLED, ""),
    ("CHILD_WORKFLOW_EXECUTION_TERMINATED", "terminated", ""),
])
def test_child(closing: str, outcome: str, message: str) -> None:
    failure: Obj = {"failure": {"message": message}} if message else {}
    step = only(
        ev(13, "START_CHILD_WORKFLOW_EXECUTION_INITIATED", 0.0, "install p-1 (active)",
           workflowId="revision:provider:p-1", workflowType={"name": "InstallRevision"}),
        ev(14, "CHILD_WORKFLOW_EXECUTION_STARTED", 0.1, initiatedEventId="13",
           workflowExecution={"workflowId": "revision:provider:p-1", "runId": "r1"}),
        ev(18, closing, 3.0, initiatedEventId="13", **failure))
    assert (step.kind, step.name, step.child, step.child_run) == (
        CHILD, "InstallRevision", "revision:provider:p-1", "r1")
    assert (step.outcome, step.message, step.duration) == (outcome, message, 3.0)


def test_child_that_could_not_start() -> None:
    step = only(
        ev(13, "START_CHILD_WORKFLOW_EXECUTION_INITIATED", 0.0, workflowId="revision:p",
           workflowType={"name": "InstallRevision"}),
        ev(14, "START_CHILD_WORKFLOW_EXECUTION_FAILED", 0.1, initiatedEventId="13",
           cause="START_CHILD_WORKFLOW_EXECUTION_FAILED_CAUSE_WORKFLOW_ALREADY_EXISTS"))
    assert step.outcome == FAILED and step.message.endswith("workflow already exists")


def test_signal_names_its_sender() -> None:
    step = only(ev(2, "WORKFLOW_EXECUTION_SIGNALED", 1.0, signalName="request_activation",
                   identity="ops@laptop", input={"payloads": [payload("p-0123")]}))
    assert (step.kind, step.name, step.summary, step.who, step.duration) == (
        SIGNAL, "request_activation", "p-0123", "ops@laptop", 0.0)


def test_update_begins_with_the_task_that_accepted_it() -> None:
    """The accepted event is written when the task completes; it arrived as it started."""
    timeline = parse("w", {"events": [
        ev(23, "WORKFLOW_TASK_STARTED", 1.0),
        ev(25, "WORKFLOW_TASK_COMPLETED", 1.5),
        marker(26, 1.5, "read_package", 1.2),
        ev(27, "WORKFLOW_EXECUTION_UPDATE_ACCEPTED", 1.5, acceptedRequest={
            "meta": {"updateId": "u1", "identity": "123@host"},
            "input": {"name": "activate_revision",
                      "args": {"payloads": [payload({"revision": "p-0123"})]}}}),
        ev(42, "WORKFLOW_EXECUTION_UPDATE_COMPLETED", 4.0, meta={"updateId": "u1"},
           outcome={"success": {"payloads": [payload({"message": "p-0123 is active"})]}}),
    ]})
    update, read = timeline.steps
    assert (update.kind, update.name, update.summary, update.who) == (
        UPDATE, "activate_revision", "p-0123", "123@host")
    assert (relative(update), update.outcome, update.message) == (
        (1.0, 4.0), OK, "p-0123 is active")
    assert read.name == "read_package"


def test_refused_update() -> None:
    step = only(
        ev(27, "WORKFLOW_EXECUTION_UPDATE_ACCEPTED", 1.0, acceptedRequest={
            "meta": {"updateId": "u1"}, "input": {"name": "activate_revision"}}),
        ev(42, "WORKFLOW_EXECUTION_UPDATE_COMPLETED", 2.0, meta={"updateId": "u1"},
           outcome={"failure": {"message": "lint failed"}}))
    assert (step.outcome, step.message) == (FAILED, "lint failed")


@pytest.mark.parametrize("local", [True, False])
def test_record_approval_names_the_approver(local: bool) -> None:
    result = {"by": "kubectl-patch", "at": "2026-01-01T00:00:00Z"}
    events = [marker(6, 1.0, "record_approval", 0.5, result=result)] if local else [
        ev(5, "ACTIVITY_TASK_SCHEDULED", 0.0, activityType={"name": "record_approval"}),
        ev(7, "ACTIVITY_TASK_COMPLETED", 0.5, scheduledEventId="5",
           result={"payloads": [payload(result)]})]
    step = only(*events)
    assert (step.who, step.message) == (
        "kubectl-patch", "approved by kubectl-patch at 2026-01-01T00:00:00Z")
    assert approvals([step]) == [step]


def test_approvals_are_updates_signals_and_records() -> None:
    steps = [Step(UPDATE, "activate_revision"), Step(SIGNAL, "look_again"),
             Step(SIGNAL, "request_activation"), Step(ACTIVITY, "record_approval"),
             Step(ACTIVITY, "record_approval", who="x")]
    assert approvals(steps) == [steps[0], steps[2], steps[4]]


# --- runs ---------------------------------------------------------------------------------
@pytest.mark.parametrize("closing, attrs, outcome, message", [
    (None, {}, RUNNING, ""),
    ("WORKFLOW_EXECUTION_COMPLETED", {}, OK, ""),
    ("WORKFLOW_EXECUTION_CONTINUED_AS_NEW", {}, "continued as new", ""),
    ("WORKFLOW_EXECUTION_FAILED", {"failure": {"message": "cannot get package: x"}},
     FAILED, "cannot get package: x"),
    ("WORKFLOW_EXECUTION_TERMINATED", {}, "terminated", ""),
    ("WORKFLOW_EXECUTION_CANCELED", {}, CANCELLED, ""),
])
def test_run(closing: str | None, attrs: Obj, outcome: str, message: str) -> None:
    events = [ev(1, "WORKFLOW_EXECUTION_STARTED", 0.0, workflowType={"name": "PackageWorkflow"},
                 originalExecutionRunId="r2", identity="watcher@host",
                 continuedExecutionRunId="r1"),
              ev(2, "WORKFLOW_EXECUTION_SIGNALED", 0.1, signalName="look_again")]
    events += [ev(9, closing, 5.0, **attrs)] if closing else []
    run = parse("package:provider:p", {"events": events})
    assert (run.workflow_id, run.run_id, run.workflow_type, run.started_by,
            run.continued_from) == ("package:provider:p", "r2", "PackageWorkflow",
                                    "watcher@host", "r1")
    assert (run.outcome, run.message, run.start) == (outcome, message, T0)
    assert run.end == (T0 + 5.0 if closing else None)
    assert parse("x", {"events": events}, run_id="given").run_id == "given"


def test_pending_attempts_are_merged_into_running_steps() -> None:
    timeline = parse("w", {"events": [
        ev(5, "ACTIVITY_TASK_SCHEDULED", 0.0, activityType={"name": "fetch_package"}),
        ev(8, "ACTIVITY_TASK_SCHEDULED", 1.0, activityType={"name": "take_lock"}),
        ev(9, "ACTIVITY_TASK_STARTED", 1.1, scheduledEventId="8", attempt=1),
        ev(10, "ACTIVITY_TASK_COMPLETED", 1.2, scheduledEventId="8")]})
    merged = with_pending(timeline, [Pending("fetch_package", 4, "registry down"),
                                     Pending("take_lock", 9, "never shown")])
    assert [(s.name, s.attempts, s.last_failure) for s in merged.steps] == [
        ("fetch_package", 4, "registry down"), ("take_lock", 1, "")]


def test_failure_text_is_the_innermost_message() -> None:
    assert failure_text(None) == ""
    assert failure_text({"message": "outer", "cause": {"message": "inner", "cause": {}}}) == \
        "inner"
    assert failure_text({"message": "outer", "cause": {"message": ""}}) == "outer"


def test_a_recorded_install() -> None:
    """A history recorded from the real InstallRevision: every step, in order, all ok
    (the package's Healthy written beside the revision's, PATCH_PACKAGE_HEALTHY_BESIDE)."""
    history = json.loads((HISTORIES / "revision_install_provider.json").read_text())
    run = parse("revision:provider:p", history)
    assert (run.workflow_type, run.outcome) == ("InstallRevision", OK)
    assert [s.name for s in run.steps] == [
        "fetch_package", "parse_package", "check_crossplane_version", "take_lock",
        "ensure_tls", "establish_objects", "ensure_rbac", "ensure_runtime", "check_health",
        "write_revision_status", "write_package_status"]
    assert [s.kind for s in run.steps[:2]] == [ACTIVITY, LOCAL]
    assert all(s.outcome == OK and s.duration is not None for s in run.steps)


# --- rows ---------------------------------------------------------------------------------
@pytest.mark.parametrize("step, label, details", [
    (Step(ACTIVITY, "fetch_package", "fetch sha256:ab"), "fetch_package", "fetch sha256:ab"),
    (Step(LOCAL, "take_lock", "lock p"), "take_lock (local)", "lock p"),
    (Step(CHILD, "InstallRevision", "install p-1"), "InstallRevision (child)", "install p-1"),
    (Step(TIMER, "timer", "wait"), "timer", "wait"),
    (Step(SIGNAL, "look_again", "Provider p added", who="w@h"), "signal look_again",
     "from w@h: Provider p added"),
    (Step(UPDATE, "activate_revision", "p-1", who="me", message="p-1 is active"),
     "update activate_revision", "from me: p-1; p-1 is active"),
    (Step(ACTIVITY, "fetch_package", "fetch", attempts=3, last_failure="down"),
     "fetch_package", "fetch; retried after: down"),
    (Step(ACTIVITY, "fetch_package", "fetch", attempts=2, outcome=FAILED, message="down",
          last_failure="down"), "fetch_package", "fetch; down"),
])
def test_label_and_details(step: Step, label: str, details: str) -> None:
    assert (rows.label(step), rows.details(step)) == (label, details)


def install() -> tuple[Timeline, dict[str, Timeline]]:
    """A package run with one child install whose fetch was retried once."""
    child = Timeline("revision:provider:p-1", "c1", "InstallRevision", T0 + 1.0, T0 + 2.0, OK,
                     steps=(Step(ACTIVITY, "fetch_package", "fetch", T0 + 1.0, T0 + 1.5, 2,
                                 OK, last_failure="down"),
                            Step(LOCAL, "check_health", "health 1/40", T0 + 1.5, T0 + 1.51, 1,
                                 OK),
                            Step(LOCAL, "check_health", "health 2/40", T0 + 1.51, T0 + 1.52,
                                 1, OK)))
    run = Timeline("package:provider:p", "r1", "PackageWorkflow", T0, None, RUNNING,
                   started_by="watcher@h",
                   steps=(Step(SIGNAL, "look_again", "added", T0, T0, 0, OK, who="watcher@h"),
                          Step(CHILD, "InstallRevision", "install p-1", T0 + 0.9, T0 + 2.1,
                               outcome=OK, child="revision:provider:p-1", child_run="c1"),
                          Step(UPDATE, "activate_revision", "p-1", T0 + 3, None, who="me")))
    return run, {"revision:provider:p-1/c1": child}


def test_rows_nest_a_child_under_its_step() -> None:
    run, children = install()
    found = rows.rows(run, children)
    assert [(r.depth, r.cells[0], r.cells[1], r.done) for r in found] == [
        (0, "+0ms", "signal look_again", True),
        (0, "+900ms", "InstallRevision (child)", True),
        (1, "+1.00s", "  fetch_package", True),
        (1, "+1.50s", "  check_health (local)", True),
        (1, "+1.51s", "  check_health (local)", True),
        (0, "+3.00s", "update activate_revision", False)]
    assert len({r.key for r in found}) == len(found)
    # A child run not read (yet) leaves its step without rows under it.
    assert len(rows.rows(run, {})) == 3


def test_collapse_folds_repeats() -> None:
    run, children = install()
    folded = rows.collapse(rows.rows(run, children))
    assert [r.cells[1] for r in folded] == [
        "signal look_again", "InstallRevision (child)", "  fetch_package",
        "  check_health (local) ×2", "update activate_revision"]
    assert folded[3].cells[5] == "health 2/40"


def test_history_text() -> None:
    """As printed when stdout is not a terminal: heading, table, totals, approvals."""
    run, children = install()
    assert rows.history_text([run], children).splitlines() == [
        ("package:provider:p (PackageWorkflow) run r1: started 2027-01-15T08:00:00Z by "
        "watcher@h, running"),
        "AT       STEP                       TOOK    TRIES   RESULT    DETAILS",
        "+0ms     signal look_again          0ms     -       ok        from watcher@h: added",
        "+900ms   InstallRevision (child)    1.20s   -       ok        install p-1",
        ("+1.00s     fetch_package            500ms   2       ok        fetch; retried after: "
        "down"),
        "+1.50s     check_health (local)     10ms    1       ok        health 1/40",
        "+1.51s     check_health (local)     10ms    1       ok        health 2/40",
        "+3.00s   update activate_revision   …       -       running   from me: p-1",
        "6 steps, 1 retries (fetch_package), 3.00s so far",
        "approval: update activate_revision of p-1 by me at 2027-01-15T08:00:03Z"]


def test_history_text_of_several_runs() -> None:
    """Runs continued as new: one table each, AT from the first; older runs not read."""
    first = Timeline("w", "r1", "PackageWorkflow", T0, T0 + 1, "continued as new",
                     steps=(Step(LOCAL, "read_package", "", T0, T0 + 0.5, 1, OK),))
    second = Timeline("w", "r2", "PackageWorkflow", T0 + 1, T0 + 2, OK, continued_from="r1")
    lines = rows.history_text([first, second], {}, earlier=True).splitlines()
    assert lines[0] == rows.EARLIER
    assert lines[1].endswith("run r1: started 2027-01-15T08:00:00Z, continued as new")
    assert lines[3].startswith("+0ms   read_package (local)   500ms")
    assert lines[4].endswith("run r2: started 2027-01-15T08:00:01Z, ok")
    assert lines[5] == "1 steps, 0 retries, 2.00s"


@pytest.mark.parametrize("secs, shown", [
    (None, "…"), (0.0, "0ms"), (0.0123, "12ms"), (1.0, "1.00s"), (59.994, "59.99s"),
    (61.0, "1m01s"), (3600.0, "1h00m"), (3725.0, "1h02m")])
def test_duration(secs: float | None, shown: str) -> None:
    assert text.duration(secs) == shown


@pytest.mark.parametrize("message, wide, shown", [
    ("short", False, "short"),
    ("x" * 70, False, "..." + "x" * 64),
    ("x" * 70, True, "x" * 70),
    ("two\n lines", False, "two lines"),
])
def test_clip(message: str, wide: bool, shown: str) -> None:
    assert text.clip(message, wide) == shown


def test_table_aligns_columns_three_spaces_apart() -> None:
    assert text.table(("A", "LONGER"), [("xyz", "1"), ("", "")]) == "A     LONGER\nxyz   1\n"
