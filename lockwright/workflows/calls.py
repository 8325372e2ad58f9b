"""How workflows call activities and read their failures: one shape for every call.

Every activity call goes through :func:`call`, so each has explicit timeouts, the shared
retry policy and a summary for the UI. Failures come back through :func:`classify`, which
decides permanent versus transient once, from the ``ApplicationError`` type the activity's
edge put on the error (lockwright/errors.py names).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    ChildWorkflowError,
    FailureError,
    TimeoutError,
)

from lockwright import contracts as c
from lockwright.workflows.retry import TIMEOUTS, Where, retry_policy

R = TypeVar("R")

MAX_SUMMARY = 200


# workflow.patched() id, for the changes that shipped together: quick steps run as local
# activities (workflows.retry), and InstallRevision's health wait writes the package's
# status too. Runs started before it keep the old way.
PATCH_LOCAL_STEPS = "local-quick-steps"


async def call(name: str, arg: Any, result_type: type[R], summary: str,
               tuning: c.Tuning, small: bool = False) -> R:
    """Run activity ``name`` with its timeouts and the shared retry policy.

    Args:
        name: One of the activity name constants in :mod:`contracts`.
        arg: The activity's ``<Op>Input`` dataclass.
        result_type: The activity's ``<Op>Result`` dataclass, for decoding.
        summary: One line for the Temporal UI.
        tuning: Retry knobs from the workflow input.
        small: the caller knows this step's work is small (package.yaml within
            ``tuning.local_max_bytes``; no other revision to hand control over from).

    Returns:
        The decoded result.

    Raises:
        ActivityError: when the activity failed for good; see :func:`classify`.
    """
    timeouts = TIMEOUTS[name]
    if runs_locally(timeouts.where, small):
        try:
            local: R = await workflow.execute_local_activity(
                name, arg, result_type=result_type,
                start_to_close_timeout=timeouts.start_to_close,
                retry_policy=retry_policy(tuning), summary=summary[:MAX_SUMMARY])
        except ActivityError:
            raise
        except FailureError as err:
            # A local activity's failure arrives bare (SDK 1.35), a queued one's wrapped in
            # ActivityError; wrap it so every caller and classify() see one shape.
            raise ActivityError(f"local activity {name} failed", scheduled_event_id=0,
                                started_event_id=0, identity="", activity_type=name,
                                activity_id="", retry_state=None) from err
        return local
    result: R = await workflow.execute_activity(
        name,
        arg,
        result_type=result_type,
        start_to_close_timeout=timeouts.start_to_close,
        heartbeat_timeout=timeouts.heartbeat,
        retry_policy=retry_policy(tuning),
        summary=summary[:MAX_SUMMARY],
    )
    return result


def runs_locally(where: Where, small: bool) -> bool:
    """True when a step runs as a local activity (see :mod:`workflows.retry`)."""
    if where is Where.QUEUE or (where is Where.LOCAL_WHEN_SMALL and not small):
        return False
    return workflow.patched(PATCH_LOCAL_STEPS)


@dataclass(frozen=True)
class Failure:
    """A failed step, reduced to what status and the retry decision need."""

    type: str
    message: str
    permanent: bool
    step: str = ""


def is_cancellation(err: BaseException) -> bool:
    """Return True when ``err`` only reports that we are being cancelled."""
    return isinstance(_root(err), CancelledError)


def classify(err: BaseException) -> Failure:
    """Turn an activity or child failure into a :class:`Failure`.

    Unknown causes (timeouts, a worker's bug surfacing as a non-application error) count
    as transient: retrying with the error on status is safer than ending an install that
    could finish.
    """
    cause = _root(err)
    if isinstance(cause, ApplicationError):
        type_ = cause.type or "ApplicationError"
        # A failed child names its failing step in the details (see InstallRevision).
        step = cause.details[0] if cause.details and isinstance(cause.details[0], str) else ""
        return Failure(type_, cause.message, cause.non_retryable or type_ in c.PERMANENT_ERRORS,
                       step)
    if isinstance(cause, TimeoutError):
        return Failure("Timeout", cause.message or "timed out", False)
    return Failure(type(cause).__name__, str(cause), False)


def _root(err: BaseException) -> BaseException:
    # Activity and child failures wrap the interesting error; unwrap to the first real one.
    cause: BaseException = err
    while isinstance(cause, (ActivityError, ChildWorkflowError)) and cause.cause is not None:
        cause = cause.cause
    return cause
