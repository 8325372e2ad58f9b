"""Where lockwright errors become Temporal ``ApplicationError`` s (docs/design.md invariant 6),
and how an activity is declared to Temporal (:func:`defn`).

Every activity is wrapped by :func:`edge`. It binds the activity's Temporal ids (workflow
id, run id, activity, attempt) and the package kind, package and revision its input names
into every structlog line of the call, and turns whatever escapes into an
``ApplicationError`` whose ``type`` is the lockwright error class name and whose
``non_retryable`` comes from ``lockwright.errors.error_type`` — the single table deciding
permanent versus transient.
Messages are already truncated by the error tree; unknown exceptions are truncated here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

import structlog
from temporalio import activity
from temporalio.exceptions import ApplicationError, CancelledError

from lockwright.errors import LockwrightError, error_type, truncate

F = TypeVar("F", bound=Callable[..., Any])
log = structlog.get_logger(__name__)


def defn(name: str) -> Callable[[F], F]:
    """Temporal's ``activity.defn`` for lockwright's activities: a cancellation is never
    raised into the activity's thread (docs/design.md, "Cancellation is cooperative").

    By default the SDK cancels a synchronous activity (a local activity's timeout, a missed
    heartbeat, the worker's shutdown) by raising an exception into its thread between any
    two bytecodes. Raised right after the thread took the Kubernetes client's connection
    pool lock, it leaves that lock taken, and every later request of the worker waits on
    it for good. An activity stops instead where it checks
    (:func:`lockwright.activities.base.beat`).
    """
    return activity.defn(name=name, no_thread_cancel_exception=True)


def to_application_error(exc: BaseException) -> ApplicationError:
    """The ``ApplicationError`` the workflow sees for ``exc``."""
    type_, retryable = error_type(exc)
    message = (exc.message if isinstance(exc, LockwrightError)
               else truncate(f"{type(exc).__name__}: {exc}"))
    return ApplicationError(message, type=type_, non_retryable=not retryable)


def input_fields(arg: object) -> dict[str, str]:
    """Package kind, package and revision, where an activity's input names them.

    Inputs with a ``kind`` name their package ``package`` or, for the package's own
    steps, ``name``.
    """
    kind = getattr(arg, "kind", "")
    package = getattr(arg, "package", "") or (getattr(arg, "name", "") if kind else "")
    fields = {"kind": kind, "package": package, "revision": getattr(arg, "revision", "")}
    return {k: v for k, v in fields.items() if v and isinstance(v, str)}


def edge(fn: F) -> F:
    """Wrap an activity: bind its ids into logs, classify what it raises.

    Apply it under ``@defn`` so Temporal registers the wrapper (type hints are
    read through ``__wrapped__``).
    """
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        info = activity.info()
        with structlog.contextvars.bound_contextvars(
                activity=info.activity_type, activity_id=info.activity_id,
                workflow_id=info.workflow_id, run_id=info.workflow_run_id,
                attempt=info.attempt, **input_fields(args[-1] if args else None)):
            try:
                return fn(*args, **kwargs)
            except (ApplicationError, CancelledError):
                raise
            except Exception as exc:
                err = to_application_error(exc)
                log.warning("activity.failed", error_type=err.type,
                            permanent=err.non_retryable, error=err.message[:300])
                raise err from exc

    return cast(F, wrapper)
