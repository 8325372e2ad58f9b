"""What ``establish_objects``' checking pass gathered over every batch (:class:`Checked`)
and what it read around them (:class:`Surroundings`), the refusal it ends in when
anything forbids writing, and a preparation's result.

A preparation's is kept by its worker for the switch that follows
(:class:`lockwright.activities.trust.Kept`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lockwright import contracts as c
from lockwright.errors import ConflictError, PreflightError
from lockwright.k8s import Obj
from lockwright.objects import crdcheck, holders
from lockwright.objects import establish as est
from lockwright.objects.lock import Conflict, ObjectKey


@dataclass(frozen=True)
class Surroundings:
    """What an establish reads besides its revision and objects, side by side."""

    package: Obj
    lock: Obj  # {} when there is none yet
    target: tuple[bytes | None, str]  # the webhooks' CA bundle and Service


@dataclass
class Checked:
    """What the checking pass gathered, over every batch."""

    refs: list[dict[str, str]] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    findings: list[crdcheck.Finding] = field(default_factory=list)
    seen: dict[ObjectKey, est.Seen] = field(default_factory=dict)
    stale: list[holders.Stale] = field(default_factory=list)
    #: The current UID of each revision a live object's controller reference named
    #: (None: gone), read once per establish.
    current: dict[str, str | None] = field(default_factory=dict)
    #: Per batch, the fingerprint of its planned writes (lockwright.activities.trust).
    prints: list[str] = field(default_factory=list)
    #: Objects whose dry run was skipped: the preparation dry-ran the same writes.
    trusted: int = 0
    #: Taken from the preparation on this worker (trust.Kept): no object read again.
    kept: bool = False
    #: Writes refused as their object changed since it was read, then checked again.
    rechecked: int = 0
    #: The kinds whose take of control passed a dry run: no other take of theirs is.
    takes_passed: set[est.Kind] = field(default_factory=set)

    def add(self, plan: est.Plan, live: dict[ObjectKey, Obj],
            findings: list[crdcheck.Finding]) -> None:
        """Take in one batch's plan, the live objects it read and its CRD findings."""
        self.refs.extend(plan.object_refs)
        self.conflicts.extend(plan.conflicts)
        self.findings.extend(findings)
        self.seen.update(est.seen(plan, live))
        self.stale.extend(plan.stale)

    @property
    def clean(self) -> bool:
        """Nothing found so far that forbids writing."""
        return not self.conflicts and not self.findings


def dry_run_result(refs: list[dict[str, str]], checked: Checked) -> c.EstablishObjectsResult:
    """What a dry run found it would write, and the fingerprints of what it dry-ran."""
    ops = [s.op for s in checked.seen.values()]
    return c.EstablishObjectsResult(
        objects=len(refs), created=ops.count(est.Op.CREATE),
        updated=sum(ops.count(op) for op in (est.Op.UPDATE, est.Op.ADOPT, est.Op.TAKE,
                                             est.Op.OWN)),
        checked=checked.prints, trusted=checked.trusted)


def refuse(checked: Checked) -> None:
    """Raise for conflicts (they may heal) first, then for CRD findings (they cannot)."""
    if checked.conflicts:
        raise ConflictError("; ".join(x.message for x in sorted(checked.conflicts,
                                                                key=lambda x: x.object)))
    if checked.findings:
        raise PreflightError("; ".join(f.message for f in crdcheck.ordered(checked.findings)))
