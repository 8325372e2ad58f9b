"""What the Lock and the revisions should say after a resolution (docs/crossplane.md §5, §11, §12).

Pure functions: the resolution activity compares what they return with what it read, and
writes (or asks a package to look again) only where the two differ.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lockwright import conditions as cond
from lockwright.dependencies.graph import UNRESOLVED_ANNOTATION, report

Obj = dict[str, Any]
LOCK_FINALIZER = "lock.pkg.crossplane.io"


@dataclass(frozen=True)
class LockStatus:
    """The Lock's finalizer, ``Resolved`` condition and explanations annotation."""

    finalizer: bool
    condition: cond.Condition | None
    explanations: dict[str, str]


def lock_status(lock: Obj, message: str, explanations: dict[str, str]) -> LockStatus:
    """What the Lock should say: nothing while it is empty (Crossplane clears it then)."""
    if not lock.get("packages"):
        return LockStatus(False, None, {})
    condition = (cond.resolution_failed(message) if message
                 else cond.resolution_succeeded())
    return LockStatus(True, condition, explanations)


def with_explanations(lock: Obj, explanations: dict[str, str]) -> Obj:
    """A copy of the Lock carrying ``explanations`` as the revision side will read them."""
    out = copy.deepcopy(lock)
    notes = out.setdefault("metadata", {}).setdefault("annotations", {})
    notes.pop(UNRESOLVED_ANNOTATION, None)
    if explanations:
        notes[UNRESOLVED_ANNOTATION] = json.dumps(explanations, sort_keys=True)
    return out


def metadata_patch(lock: Obj, wanted: LockStatus) -> Obj | None:
    """The merge patch of annotation and finalizer, or None when they already say so."""
    metadata = lock.get("metadata") or {}
    have = (metadata.get("annotations") or {}).get(UNRESOLVED_ANNOTATION)
    want = json.dumps(wanted.explanations, sort_keys=True) if wanted.explanations else None
    finalizers = list(metadata.get("finalizers") or [])
    held = LOCK_FINALIZER in finalizers
    if have == want and held == wanted.finalizer:
        return None
    if wanted.finalizer and not held:
        finalizers.append(LOCK_FINALIZER)
    elif not wanted.finalizer:
        finalizers = [f for f in finalizers if f != LOCK_FINALIZER]
    return {"metadata": {"annotations": {UNRESOLVED_ANNOTATION: want},
                         "finalizers": finalizers}}


def conditions_after(lock: Obj, wanted: LockStatus, now: datetime) -> list[cond.Condition] | None:
    """The Lock's new ``status.conditions``, or None when they already say so."""
    current = list((lock.get("status") or {}).get("conditions") or [])
    if wanted.condition is None:
        return [] if current else None
    old = cond.get_condition(current, cond.RESOLVED)
    if old is not None and all(old.get(k) == wanted.condition.get(k)
                               for k in ("status", "reason", "message")):
        return None
    return cond.set_condition(current, wanted.condition, now)


def stale(lock: Obj, wanted: LockStatus) -> bool:
    """Whether the Lock does not say ``wanted`` yet."""
    return (metadata_patch(lock, wanted) is not None
            or conditions_after(lock, wanted, datetime.now()) is not None)


def revision_out_of_date(lock: Obj, revision: Obj) -> bool:
    """Whether a revision's dependency status differs from what the Lock now implies.

    Compares ``installedDependencies``, ``invalidDependencies`` and the dependency message
    of its ``RevisionHealthy`` condition with :func:`~lockwright.dependencies.graph.report`.
    Revisions without dependencies never are.
    """
    name = str((revision.get("metadata") or {}).get("name", ""))
    expected = report(lock, name)
    status = revision.get("status") or {}
    if not expected.found and not status.get("foundDependencies"):
        return False
    healthy = cond.get_condition(status.get("conditions"), cond.REVISION_HEALTHY) or {}
    message = str(healthy.get("message") or "")
    shown = message if (healthy.get("status") == cond.FALSE
                        and message.startswith(cond.MSG_RESOLVE_DEPENDENCIES)) else ""
    want = cond.MSG_RESOLVE_DEPENDENCIES + expected.message if expected.message else ""
    return (int(status.get("installedDependencies") or 0), int(
        status.get("invalidDependencies") or 0), shown) != (
        expected.installed, expected.invalid, want)
