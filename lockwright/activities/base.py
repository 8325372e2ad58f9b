"""What every activity module shares: names, small readers of objects, and heartbeats.

The activities are plain ``def`` s: the official Kubernetes client is synchronous, so the
worker runs them on a thread pool (``Worker(activity_executor=ThreadPoolExecutor(...))``).
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import structlog
from temporalio import activity
from temporalio.exceptions import CancelledError

from lockwright.errors import ObjectGone
from lockwright.k8s import Obj, deleting
from lockwright.names import PKG_API_VERSION
from lockwright.xpkg.documents import iter_documents
from lockwright.xpkg.meta import is_meta

PKG_V1, PKG_V1BETA1 = PKG_API_VERSION, "pkg.crossplane.io/v1beta1"
DEPLOYMENT_RUNTIME = "Deployment"
KINDS = {"provider": "Provider", "configuration": "Configuration", "function": "Function"}


def kind_of(kind: str) -> str:
    """``Provider`` for ``provider`` (contracts use lower case; Kubernetes title case)."""
    return KINDS.get(kind.lower(), kind)


def revision_kind(kind: str) -> str:
    """``ProviderRevision`` for ``provider``."""
    return f"{kind_of(kind)}Revision"


def spec(obj: Obj | None) -> Obj:
    """``obj.spec``, or an empty dict."""
    out: Obj = (obj or {}).get("spec") or {}
    return out


def meta(obj: Obj | None) -> Obj:
    """``obj.metadata``, or an empty dict."""
    out: Obj = (obj or {}).get("metadata") or {}
    return out


def log(**fields: Any) -> Any:
    """A structlog logger with ``fields`` (package=, revision=, digest=) bound."""
    return structlog.get_logger("activities").bind(**fields)


def secret_names(refs: list[Obj] | None) -> list[str]:
    """Names out of a ``[{name: …}]`` list such as ``packagePullSecrets``."""
    return [str(r["name"]) for r in refs or [] if r.get("name")]


def pulse(*details: Any) -> None:
    """Heartbeat with ``details``, in a (remote) activity. A local activity has none to
    send: the worker's core refuses it, with a warning for every beat."""
    if activity.in_activity() and not activity.info().is_local:
        activity.heartbeat(*details)


def beat(*details: Any) -> None:
    """Heartbeat with ``details``, and stop here when the activity was cancelled.

    Where a long activity checks for its cancellation: Temporal never raises it into the
    thread (:func:`lockwright.activities.errors.defn`), so an activity runs on until it
    asks, between two batches of its work. A local activity only checks (:func:`pulse`).

    Raises:
        CancelledError: the activity was cancelled (timed out, its heartbeat missed, the
            workflow that runs it cancelled, the worker stopping).
    """
    if not activity.in_activity():
        return
    pulse(*details)
    if activity.is_cancelled():
        raise CancelledError("activity cancelled; stopped between two batches")


@contextlib.contextmanager
def heartbeating(every: float = 5.0) -> Iterator[None]:
    """Heartbeat from a side thread while a long call that cannot report progress runs."""
    if not activity.in_activity() or activity.info().is_local:
        yield
        return
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(every):
            pulse()

    thread = threading.Thread(target=contextvars.copy_context().run, args=(beat,),
                              daemon=True, name="heartbeat")
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def living(obj: Obj | None, what: str) -> Obj:
    """``obj``, when it exists and is not being deleted.

    Raises:
        ObjectGone: it is gone or being deleted; nothing may be written for it.
    """
    if obj is None:
        raise ObjectGone(f"{what} is gone")
    if deleting(obj):
        raise ObjectGone(f"{what} is being deleted")
    return obj


def stream_objects(documents: Path) -> Iterator[Obj]:
    """The package's objects, one at a time, meta skipped.

    Args:
        documents: the cache entry's ``documents.jsonl`` (``CacheEntry.documents``), the
            package.yaml decoded once at fetch; reading it back is far cheaper than YAML.
    """
    with documents.open("rb") as f:
        for _, doc in iter_documents(f):
            if not is_meta(doc):
                yield doc


def service_name(package: str, drc: Obj | None) -> str:
    """The package's Service: the DRC's ``serviceTemplate`` name, or the package name."""
    template = spec(drc).get("serviceTemplate") or {}
    return str((template.get("metadata") or {}).get("name") or package)


def service_account_name(revision: str, drc: Obj | None) -> str:
    """The runtime's ServiceAccount: the DRC's template name, or the revision name."""
    template = spec(drc).get("serviceAccountTemplate") or {}
    return str((template.get("metadata") or {}).get("name") or revision)


def deployment_name(revision: str, drc: Obj | None) -> str:
    """The runtime Deployment: the DRC's template name, or the revision name."""
    template = spec(drc).get("deploymentTemplate") or {}
    return str((template.get("metadata") or {}).get("name") or revision)
