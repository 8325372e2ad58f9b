"""What the cluster's singleton workflows share: a pass per signal (or retry), and telling
packages to look again.

``ResolveDependencies`` and ``ActivateDefinitions`` run one per cluster, forever: signals
only mark them dirty, the loop runs one pass when dirty (or when a retry's timer fires),
and a pass that failed waits for the shared backoff. Their durable states share the fields
of :class:`Looping`; each workflow is a :class:`Host` of its state.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import timedelta
from typing import Any, ClassVar, Protocol, TypeVar

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from lockwright import contracts as c
    from lockwright.workflows import ids
    from lockwright.workflows.retry import loop_backoff


class Looping(Protocol):
    """The loop's fields of a singleton workflow's durable state (a frozen dataclass)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def dirty(self) -> bool: ...

    @property
    def passes(self) -> int: ...

    @property
    def signals_seen(self) -> int: ...

    @property
    def wake_after_s(self) -> float: ...

    @property
    def retry_attempt(self) -> int: ...

    @property
    def last_message(self) -> str: ...


S = TypeVar("S", bound=Looping)


class Host(Protocol[S]):
    """A singleton workflow: its durable state, and whether it is waiting for work."""

    state: S
    idle: bool


def rung(state: S) -> S:
    """``state`` after a ``look_again`` signal: dirty, one more signal seen."""
    return replace(state, dirty=True, signals_seen=state.signals_seen + 1)


async def wait_for_work(host: Host[S], summary: str) -> None:
    """Wait until a signal marks the host dirty or its retry timer fires; count the pass."""
    host.idle = not host.state.dirty
    wake = timedelta(seconds=host.state.wake_after_s) if host.state.wake_after_s else None
    try:
        await workflow.wait_condition(lambda: host.state.dirty, timeout=wake,
                                      timeout_summary=summary)
    except TimeoutError:
        pass  # the retry's backoff elapsed: run a pass without a signal
    host.idle = False
    host.state = replace(host.state, dirty=False, passes=host.state.passes + 1,
                         wake_after_s=0.0)


def retry_later(host: Host[S], tuning: c.Tuning, message: str, what: str) -> timedelta:
    """A failed pass: the next attempt after the shared backoff, said in the details."""
    attempt = host.state.retry_attempt + 1
    wake = loop_backoff(tuning, attempt)
    host.state = replace(host.state, retry_attempt=attempt, wake_after_s=wake.total_seconds(),
                         last_message=message[:500])
    workflow.logger.warning("%s failed attempt=%d: %s", what, attempt, message[:200])
    workflow.set_current_details(f"**retrying** in {wake.total_seconds():g}s "
                                 f"(attempt {attempt}): {message[:160]}")
    return wake


async def tell(packages: list[c.PackageRef], reason: str) -> None:
    """Ask each package's workflow to look again, all at once."""
    await asyncio.gather(*(_look_again(ref, reason) for ref in packages))


async def _look_again(ref: c.PackageRef, reason: str) -> None:
    handle = workflow.get_external_workflow_handle(ids.package_id(ref.kind, ref.name))
    try:
        await handle.signal(c.SIGNAL_LOOK_AGAIN, c.LookAgainInput(reason=reason))
    except Exception as err:  # noqa: BLE001 - not found or closed: nothing to tell
        workflow.logger.info("could not signal %s: %s", ref.name, err)
