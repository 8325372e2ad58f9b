"""lockwright's own metrics: their names, buckets and the one place each is recorded.

Workflows record through ``workflow.metric_meter()``: nothing is recorded while a
workflow replays, and recording adds no command to history, so no patch guards it.
Activities record through :func:`activity_meter`. Both meters belong to the worker's
Temporal runtime: with ``--metrics-address`` they are served on the same Prometheus
endpoint as the SDK's own metrics (``temporal_workflow_completed``,
``temporal_activity_execution_latency``, ...); without it nothing is recorded.

An *install* is one run of the ``InstallRevision`` child: ``mode`` says whether it
installs a revision, prepares an upgrade or switches to the new revision. It succeeds
when the revision is installed (or prepared) healthy; it fails with the error that
stopped it, or ``Unhealthy`` when the runtime never became available. One that waits for
its dependencies, finds its package gone or is cancelled is neither.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from temporalio import activity
from temporalio.common import MetricMeter

INSTALLS_STARTED = "lockwright_installs_started_total"
INSTALLS_SUCCEEDED = "lockwright_installs_succeeded_total"
INSTALLS_FAILED = "lockwright_installs_failed_total"
INSTALL_DURATION = "lockwright_install_duration_seconds"
SWITCH_DURATION = "lockwright_switch_duration_seconds"
LOCK_CAS_CONFLICTS = "lockwright_lock_cas_conflicts_total"
RESOLUTION_FAILURES = "lockwright_dependency_resolution_failures_total"

UNHEALTHY = "Unhealthy"  # the error_type of an install whose runtime never became available
INSTALL, PREPARE, SWITCH = "install", "prepare", "switch"  # an install's mode

# Histogram buckets in seconds: a small install takes well under a second, a 2,000-CRD
# one half a minute, and a switch waits at most its deadline (300 s by default).
BUCKETS: Mapping[str, Sequence[float]] = {
    INSTALL_DURATION: (0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600),
    SWITCH_DURATION: (0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600),
}


def install_started(meter: MetricMeter, kind: str, mode: str) -> None:
    """An ``InstallRevision`` run began."""
    meter.create_counter(INSTALLS_STARTED, "installs begun").add(
        1, {"kind": kind, "mode": mode})


def install_finished(meter: MetricMeter, kind: str, mode: str, seconds: float,
                     error_type: str = "") -> None:
    """An install ended: succeeded without ``error_type``, failed with it."""
    outcome = "failed" if error_type else "succeeded"
    labels = {"kind": kind, "mode": mode}
    if error_type:
        meter.create_counter(INSTALLS_FAILED, "installs that failed").add(
            1, {**labels, "error_type": error_type})
    else:
        meter.create_counter(INSTALLS_SUCCEEDED, "installs that succeeded").add(1, labels)
    meter.create_histogram_float(INSTALL_DURATION, "install duration", "s").record(
        seconds, {**labels, "outcome": outcome})


def switch_finished(meter: MetricMeter, kind: str, seconds: float, outcome: str) -> None:
    """An upgrade's switch-over ended: ``finished``, ``reverted`` or ``failed``."""
    meter.create_histogram_float(SWITCH_DURATION, "switch-over duration", "s").record(
        seconds, {"kind": kind, "outcome": outcome})


def lock_cas_conflict(meter: MetricMeter) -> None:
    """A compare-and-swap write of the Lock lost to another writer (a 409)."""
    meter.create_counter(LOCK_CAS_CONFLICTS, "Lock writes that lost a race").add(1)


def resolution_failed(meter: MetricMeter, reason: str) -> None:
    """A dependency resolution pass failed: ``unresolved`` (no solution) or ``error``."""
    meter.create_counter(RESOLUTION_FAILURES, "dependency resolutions that failed").add(
        1, {"reason": reason})


def activity_meter() -> MetricMeter:
    """The running activity's meter; a no-op one outside an activity (direct calls)."""
    return activity.metric_meter() if activity.in_activity() else MetricMeter.noop
