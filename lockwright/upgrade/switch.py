"""Which revision of a package runs: when to install, prepare, switch, finish or revert.

Pure decisions over plain data (no Temporal, no I/O); ``PackageWorkflow`` carries them out.
The rule they implement: a cluster is never left without a working runtime. A new revision
is *prepared* completely (fetched, parsed, linted, version-checked, the Lock and every
object write checked by a server-side dry run) while the active revision keeps control and
keeps running; only then does it take control and start its runtime (the *switch*). The
old runtime is removed (*finish*) only once the new one is healthy; if it is not healthy
by the deadline the old revision takes control back (*revert*) and the failed revision
stays Inactive until ``spec.package`` (the package's generation) changes again.

Under the Manual policy an operator approves; who approved with kubectl, and when, is read
from the managedFields of the field they set (:func:`field_writer`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

AUTOMATIC, MANUAL = "Automatic", "Manual"
Obj = dict[str, Any]
#: A field's last writer: its field manager and the time it wrote (ISO 8601); "" unknown.
Writer = tuple[str, str]


class Step(str, Enum):
    """What the package's workflow does next."""

    INSTALL = "install"  # nothing else runs: install the current revision directly
    PREPARE_AND_SWITCH = "prepare and switch"  # upgrade from the active revision
    PREPARE_AND_WAIT = "prepare and wait for approval"  # Manual: prepared, not switched to
    HOLD = "hold: reverted, waiting for a new spec"  # the last switch to it was reverted
    KEEP = "keep"  # the current revision is the active one: make sure it is installed


@dataclass(frozen=True)
class Situation:
    """What a pass knows when it decides.

    Attributes:
        policy: ``revisionActivationPolicy``.
        current: the revision ``spec.package`` resolves to.
        active: the revision now in control (``desiredState: Active``), or "".
        approved: an operator approved ``current`` (Manual), by update, signal or kubectl.
        generation: the package's ``metadata.generation``.
        reverted: the revision the last switch was reverted from, and the generation it
            was tried at ("" / 0 when none).
    """

    policy: str = AUTOMATIC
    current: str = ""
    active: str = ""
    approved: bool = False
    generation: int = 0
    reverted: str = ""
    reverted_generation: int = 0


def next_step(s: Situation) -> Step:
    """The next step for a pass in situation ``s``."""
    if s.active == s.current:
        return Step.KEEP
    if s.reverted == s.current and s.reverted_generation == s.generation:
        return Step.HOLD
    wanted = s.policy != MANUAL or s.approved
    if not s.active:
        return Step.INSTALL if wanted else Step.PREPARE_AND_WAIT
    return Step.PREPARE_AND_SWITCH if wanted else Step.PREPARE_AND_WAIT


def switch_deadline(annotation: str) -> float:
    """Seconds a switch waits for the new runtime, from the package's annotation value.

    ``"90"``, ``"90s"`` and ``"1.5"`` are seconds. An empty, malformed or negative value
    gives 0, which leaves the worker's default deadline in force.
    """
    try:
        return max(0.0, float(annotation.removesuffix("s")))
    except ValueError:
        return 0.0


def field_writer(obj: Obj, *path: str) -> Writer:
    """The field manager that last wrote the field at ``path`` of ``obj``, and when.

    Kubernetes records the fields each manager set in ``metadata.managedFields``; of the
    entries holding the field, the latest ``time`` wins. It names the manager (kubectl,
    a controller), not the user.

    Args:
        obj: the object as read.
        path: the field's keys in ``fieldsV1``, e.g. ``"f:spec", "f:desiredState"``.
    """
    writers = [m for m in (obj.get("metadata") or {}).get("managedFields") or []
               if _holds(m.get("fieldsV1") or {}, path)]
    last: Obj = max(writers, key=lambda m: str(m.get("time", "")), default={})
    return str(last.get("manager", "")), str(last.get("time", ""))


def _holds(fields: Obj, path: tuple[str, ...]) -> bool:
    *parents, leaf = path
    for key in parents:
        fields = fields.get(key) or {}
    return leaf in fields


def annotation_writer(obj: Obj, key: str) -> Writer:
    """Who last wrote annotation ``key`` of ``obj``, and when (:func:`field_writer`)."""
    return field_writer(obj, "f:metadata", "f:annotations", f"f:{key}")


def desired_state_writer(rev: Obj) -> Writer:
    """Who last wrote a revision's ``spec.desiredState``, and when: a kubectl approval."""
    return field_writer(rev, "f:spec", "f:desiredState")
