"""A runtime Deployment's health as it happens: a watch of the one Deployment, with a deadline.

``check_health`` with ``watch_s`` waits here instead of answering from one look: the
Deployment is listed (by name, so the list is one object and gives the version to watch
from), then watched until it is Available on its current spec or the window ends. The
workflow learns of availability within one event of it, where its timer-driven poll
(``Tuning.health_poll_s``, 2 s in production) made it wait up to a whole poll (docs/design.md,
"Health as it happens"). A watch that cannot be opened or breaks is not an error: the
answer then says it did not watch, and the workflow's poll takes over for that window.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

from lockwright.errors import LockwrightError
from lockwright.k8s import Kube, Obj, no_older_than
from lockwright.k8s import watch as kwatch
from lockwright.runtime import manifests as runtime


@dataclass(frozen=True)
class Seen:
    """What the window showed: health, the runtime's message, and whether it was watched."""

    healthy: bool
    message: str
    watched: bool


def judged(deployment: Obj | None, kind: str) -> tuple[bool, str]:
    """Health as ``check_health`` reports it; Available counts only once observed.

    A status not yet observed for the current spec describes the previous one, so an
    Available from it is not taken as the answer while the window lasts.
    """
    healthy, message = runtime.deployment_health(deployment, kind)
    if healthy and deployment is not None and not runtime.deployment_observed(deployment):
        return False, message
    return healthy, message


def watch_health(kube: Kube, namespace: str, name: str, kind: str, window_s: float,
                 not_older_than: str = "") -> Seen:
    """Wait at most ``window_s`` for Deployment ``name`` to be Available.

    Args:
        kube: the connection.
        namespace: the runtime's namespace.
        name: the Deployment.
        kind: ``Provider`` or ``Function`` (in the runtime's message).
        window_s: the deadline, seconds from now.
        not_older_than: the Deployment's ``resourceVersion`` as applied: the first list
            includes that write (``resourceVersionMatch=NotOlderThan``), so the API server
            answers from its watch cache; empty: a consistent list.

    Returns:
        Healthy at the first event that says so; otherwise the last state seen when the
        window ended, ``watched`` False if the watch failed before then.
    """
    deadline = time.monotonic() + window_s
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    selector = f"metadata.name={name}"
    page = next(kube.list_pages(path, [("fieldSelector", selector),
                                       *no_older_than(not_older_than)]))
    items = page.get("items") or []
    state = _State(items[0] if items else None, str(page["metadata"]["resourceVersion"]))
    try:
        while not judged(state.last, kind)[0] and (left := deadline - time.monotonic()) > 0:
            _follow(kube, path, selector, state, kind, left)
    except LockwrightError:
        if time.monotonic() < deadline:  # broken before the window ended: poll instead
            return Seen(*runtime.deployment_health(state.last, kind), watched=False)
    return Seen(*runtime.deployment_health(state.last, kind), watched=True)


@dataclass
class _State:
    """The Deployment as last seen, and the version to watch on from: kept outside the
    stream, since the window's end interrupts it with an error."""

    last: Obj | None
    version: str


def _follow(kube: Kube, path: str, selector: str, state: _State, kind: str,
            left: float) -> None:
    """One watch request, ended by the server, by health, or at ``left`` seconds."""
    with kwatch.watch(kube, path, state.version, max(1, math.ceil(left)),
                      field_selector=selector) as stream:
        # The server's timeout is whole seconds; the window's end shuts the stream.
        timer = threading.Timer(left, stream.interrupt)
        timer.start()
        try:
            for event in stream:
                state.version = event.resource_version or state.version
                if event.type == kwatch.BOOKMARK:
                    continue
                state.last = None if event.type == "DELETED" else event.obj
                if judged(state.last, kind)[0]:
                    return
        finally:
            timer.cancel()
