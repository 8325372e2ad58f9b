"""The shared retry policy and per-activity timeouts.

Two layers of retrying, on purpose:

* **Inside Temporal** (``RetryPolicy``): a few quick attempts with exponential backoff absorb
  blips (a dropped connection, a 503) without anyone noticing. Capped at
  ``Tuning.retry_attempts`` so a longer outage surfaces to the workflow.
* **In the workflow loop**: once the inner attempts are spent, the workflow writes the error
  to the package's status ("retrying, attempt n"), waits on a timer with its own backoff,
  and runs the whole pass again, re-reading the object first. That is how the status shows
  a transient error *while* it is being retried (docs/design.md invariant 6); a pending activity's
  ``last_failure`` is not visible to workflow code, so the inner layer alone could not.

Permanent error types are listed as non-retryable too, so an activity that forgets
``non_retryable=True`` still fails fast.

**Where a step runs.** Quick steps (a few Kubernetes reads and writes, a registry HEAD) run
as *local* activities: the worker that runs the workflow task runs them and records each
result as a marker, so a chain of them costs no task-queue round trips (20-40 ms each on a
dev server). Steps whose work grows with the package run locally only when the caller knows
it is small: parse, establish and an upgrade's plan when package.yaml is at most
``Tuning.local_max_bytes``, ``set_active_revision`` when no other revision hands control
over or when it only flips ``desiredState`` (a switch's hand-off, which keeps every
runtime). Above that, and always for the fetch and deletions, they are regular activities
with heartbeats, shown as pending in the UI while they run. A worker killed during a local
step loses nothing: the workflow task times out (10 s) and the step, idempotent like every
activity, runs again.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from datetime import timedelta

from temporalio.common import RetryPolicy

from lockwright import contracts as c


def retry_policy(tuning: c.Tuning) -> RetryPolicy:
    """Return the activity retry policy for ``tuning`` (production uses the defaults)."""
    return RetryPolicy(
        initial_interval=timedelta(seconds=tuning.retry_initial_s),
        backoff_coefficient=2.0,
        maximum_interval=timedelta(seconds=tuning.retry_max_s),
        maximum_attempts=tuning.retry_attempts,
        non_retryable_error_types=list(c.PERMANENT_ERRORS),
    )


ACTIVITY_RETRY = retry_policy(c.Tuning())


# Doubling stops here: the wait has long reached any cap, and 2.0 ** 1024 overflows (a
# workflow task failing on every attempt), which a package retrying every minute reaches
# after some 17 hours.
MAX_DOUBLINGS = 62


def doubled(first_s: float, attempt: int, max_s: float) -> float:
    """``first_s`` doubled for each attempt after the first (1-based), at most ``max_s``."""
    return min(first_s * 2.0 ** min(max(0, attempt - 1), MAX_DOUBLINGS), max_s)


def loop_backoff(tuning: c.Tuning, attempt: int) -> timedelta:
    """Return the workflow-level wait before pass number ``attempt`` (1-based) retries."""
    return timedelta(seconds=doubled(tuning.backoff_initial_s, attempt, tuning.backoff_max_s))


class Where(enum.Enum):
    """Where a step runs; see the module docstring."""

    LOCAL = "local"
    LOCAL_WHEN_SMALL = "local when the caller says the work is small"
    QUEUE = "task queue"


@dataclass(frozen=True)
class Timeouts:
    """Explicit timeouts for one activity; heartbeat only where the work is long."""

    start_to_close: timedelta
    heartbeat: timedelta | None = None
    where: Where = Where.LOCAL


_SHORT = Timeouts(timedelta(seconds=30))
_MEDIUM = Timeouts(timedelta(seconds=60))
# Pulls and big applies (2,000 CRDs) take minutes; the heartbeat notices a dead worker early.
_LONG = Timeouts(timedelta(minutes=10), heartbeat=timedelta(seconds=30), where=Where.QUEUE)
_SIZED = replace(_LONG, where=Where.LOCAL_WHEN_SMALL)
_RARE = replace(_MEDIUM, where=Where.QUEUE)  # deletions: rare, and best seen while they run

TIMEOUTS: dict[str, Timeouts] = {
    c.READ_PACKAGE: _SHORT,
    c.RESOLVE_DIGEST: _MEDIUM,
    c.ENSURE_REVISION: _SHORT,
    c.SET_ACTIVE_REVISION: _SIZED,
    c.COLLECT_REVISIONS: _RARE,
    c.WRITE_PACKAGE_STATUS: _SHORT,
    c.CLEANUP_PACKAGE: _RARE,
    c.FETCH_PACKAGE: _LONG,
    c.PARSE_PACKAGE: _SIZED,
    c.CHECK_CROSSPLANE_VERSION: _SHORT,
    c.TAKE_LOCK: _MEDIUM,
    c.ENSURE_TLS: _MEDIUM,
    c.ESTABLISH_OBJECTS: _SIZED,
    c.ENSURE_RBAC: _MEDIUM,
    c.ENSURE_RUNTIME: _MEDIUM,
    c.CHECK_HEALTH: _SHORT,
    c.WRITE_REVISION_STATUS: _SHORT,
    c.RECORD_EVENT: _SHORT,
    # Queued, not local: an update's acceptance enters history only when the workflow task
    # that ran its handler completes, and this step reads it from there.
    c.RECORD_APPROVAL: _RARE,
    # Queued, so the UI shows a resolution while it runs: it may list tags and fetch the
    # packages it considers (their dependencies), which takes as long as a fetch.
    c.RESOLVE_DEPENDENCIES: _LONG,
    c.APPLY_RESOLUTION: _RARE,
    c.ACTIVATE_DEFINITIONS: _LONG,
    # Queued: it lists one resource of every type of every Provider.
    c.PROTECT_PROVIDERS: _LONG,
    # It reads both packages whole and lists the resources of changed CRDs: local only for
    # a small package's preparation (InstallRevision since PATCH_LOCAL_PLAN); queued for a
    # big one and for PlanCandidate.
    c.PLAN_REVISION: _SIZED,
}
