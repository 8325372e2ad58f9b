"""Writing conditions the workflows decided, stamped the Kubernetes way, only on change.

:func:`write_status` is the one writer of a package's and a revision's status: the
activities ``write_package_status`` and ``write_revision_status`` say which fields, and
which Events follow a transition.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from lockwright import contracts as c
from lockwright.activities.base import PKG_V1, meta
from lockwright import conditions as cond
from lockwright.k8s import Kube, Obj


@dataclass(frozen=True)
class StatusChange:
    """What a workflow decided for one object's status.

    Attributes:
        conditions: set by type (``lastTransitionTime`` moves only on a flip).
        generation: the ``observedGeneration`` the conditions are stamped with.
        fields: other status fields, each written only where it differs.
        drop: condition types to remove.
        guarded: write only over the object as read (its ``resourceVersion``): another
            writer's conditions in between make the patch fail with a conflict rather
            than be replaced (a merge patch replaces the whole list).
    """

    conditions: list[c.Condition]
    generation: int
    fields: Obj
    drop: Sequence[str] = ()
    guarded: bool = False


@dataclass(frozen=True)
class Transition:
    """The conditions before and after a write, for the Events a writer records."""

    before: list[Obj] | None
    after: list[Obj]


def write_status(kube: Kube, kind: str, obj: Obj, change: StatusChange) -> Transition | None:
    """Patch ``obj``'s status subresource with what ``change`` alters; None if nothing.

    Args:
        kind: ``obj``'s kind in ``pkg.crossplane.io/v1`` (a package or revision kind).
    """
    status = obj.get("status") or {}
    before = status.get("conditions")
    after = merged_conditions(before, change.conditions, change.generation)
    after = [x for x in after if x.get("type") not in change.drop]
    changed = changed_fields(status, {"conditions": after, **change.fields})
    if not changed:
        return None
    body: Obj = {"status": changed}
    if change.guarded:
        body["metadata"] = {"resourceVersion": meta(obj)["resourceVersion"]}
    kube.patch(PKG_V1, kind, meta(obj)["name"], body, subresource="status")
    return Transition(before, after)


def merged_conditions(current: list[Obj] | None, new: list[c.Condition],
                      generation: int) -> list[Obj]:
    """``current`` with ``new`` set by type; ``lastTransitionTime`` moves only on a flip."""
    now = datetime.now(UTC)
    out = list(current or [])
    for item in new:
        out = cond.set_condition(out, cond.condition(item.type, item.status, item.reason,
                                                     item.message, generation), now)
    return out


def changed_fields(status: Obj, fields: Obj) -> Obj:
    """The subset of ``fields`` that differs from ``status``."""
    return {k: v for k, v in fields.items() if status.get(k) != v}


def turned(before: list[Obj] | None, after: list[Obj], type_: str, status: str) -> bool:
    """True when condition ``type_`` now has ``status`` and did not before."""
    old, new = cond.get_condition(before, type_), cond.get_condition(after, type_)
    return bool(new and new.get("status") == status
                and (old is None or old.get("status") != status))


def new_message(before: list[Obj] | None, after: list[Obj], type_: str) -> str:
    """The condition's message if it is False and says something new, else ''."""
    old, new = cond.get_condition(before, type_), cond.get_condition(after, type_)
    if not new or new.get("status") != cond.FALSE or not new.get("message"):
        return ""
    return "" if old and old.get("message") == new.get("message") else str(new["message"])
