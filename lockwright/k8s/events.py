"""Core v1 Events, named so repeats aggregate instead of piling up.

client-go's recorder correlates identical events and bumps ``count``; we get the same
effect without state by naming an event after its object, reason and message: a repeat
collides on create (409) and is patched to count one more. Cluster-scoped objects' events
go to ``default``, as client-go puts them.
"""

from __future__ import annotations

import hashlib
import socket
from datetime import UTC, datetime
from typing import Any

from lockwright.errors import truncate

Obj = dict[str, Any]

COMPONENT = "lockwright"
DEFAULT_NAMESPACE = "default"
NORMAL, WARNING = "Normal", "Warning"
MAX_EVENT_MESSAGE = 1024


def now_rfc3339() -> str:
    """The current time as Kubernetes serialises ``metav1.Time``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def involved_object(obj: Obj) -> Obj:
    """The ``involvedObject`` reference of ``obj``."""
    meta = obj.get("metadata") or {}
    ref: Obj = {"apiVersion": obj.get("apiVersion", ""), "kind": obj.get("kind", ""),
                "name": meta.get("name", "")}
    for key in ("namespace", "uid"):
        if meta.get(key):
            ref[key] = meta[key]
    return ref


def event_name(involved: Obj, type_: str, reason: str, message: str) -> str:
    """A stable name: the object's name plus a hash of what the event says."""
    key = "|".join([str(involved.get("uid", "")), involved.get("kind", ""), type_, reason,
                    message])
    return f"{str(involved.get('name', 'object'))[:200]}.{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def render_event(involved: Obj, type_: str, reason: str, message: str) -> Obj:
    """A new core v1 Event about ``involved`` (a reference from :func:`involved_object`)."""
    stamp = now_rfc3339()
    namespace = str(involved.get("namespace") or DEFAULT_NAMESPACE)
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": event_name(involved, type_, reason, message),
                     "namespace": namespace},
        "involvedObject": involved, "type": type_, "reason": reason,
        "message": truncate(message, MAX_EVENT_MESSAGE),
        "source": {"component": COMPONENT}, "reportingComponent": COMPONENT,
        "reportingInstance": socket.gethostname()[:128],
        "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
    }
