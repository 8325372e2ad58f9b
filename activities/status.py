"""Writing conditions the workflows decided, stamped the Kubernetes way, only on change."""

from __future__ import annotations

from datetime import UTC, datetime

from lockwright import conditions as cond
from lockwright.k8s import Obj
from workflows import contracts as c


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
