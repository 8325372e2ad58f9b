"""The upgrade gate: whether an Automatic upgrade with a breaking plan switches on its own.

Two gates, chosen per package by the annotation :data:`ANNOTATION` and cluster-wide by the
worker's ``LOCKWRIGHT_UPGRADE_GATE``:

- ``Evidence`` (the default) holds the switch only when the cluster gives a reason to: an
  existing custom resource the new schema would reject or that would lose a value, a
  CRD-wide change (a stored or served version dropped, the scope changed), or a change no
  check of the existing resources can clear (fail closed). Otherwise the upgrade goes on,
  the revision saying ``PlanCompatible=False`` and a Warning Event naming the changes.
- ``Strict`` holds on any breaking change, as OLM v1 does.

Either way an operator may accept one revision's plan, and Manual upgrades are approved by
hand with the plan in front of them: they are held on any breaking change, as before.
Pure decisions over plans; no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from enum import StrEnum

from lockwright.crdcompat import Change, Kind, Verdict
from lockwright.upgrade.plan import ACCEPT_PLAN_ANNOTATION, BREAKING_LIMIT, Plan, Rejected

EVIDENCE, STRICT = "Evidence", "Strict"
GATES = (EVIDENCE, STRICT)
#: The package annotation that chooses the gate for one package.
ANNOTATION = "lockwright.dev/upgrade-gate"
#: Resources checked per CRD and version: ``(crd, version) → how many``.
Checked = Mapping[tuple[str, str], int]

#: CRD-wide changes: no look at single resources clears them.
WHOLE_CRD = frozenset({Kind.SCOPE_CHANGED, Kind.STORED_VERSION_REMOVED,
                       Kind.SERVED_VERSION_REMOVED})
#: A default added, changed or removed changes what existing resources read without making
#: them invalid; the validator cannot tell which would read differently.
DEFAULTS = frozenset({Kind.DEFAULT_ADDED, Kind.DEFAULT_CHANGED, Kind.DEFAULT_REMOVED})
#: Changes no check of single resources clears yet: values the new schema does not name
#: would be pruned, and the validator prunes them silently.
UNCHECKED = frozenset({Kind.PRESERVE_UNKNOWN_REMOVED})

#: The gate's verdict on one change: passes; cleared or held by checking each existing
#: resource against the new schema; held whenever the CRD has resources; held always.
COMPATIBLE, CHECKED = "compatible", "checked against live resources"
BREAKING, UNCLASSIFIED = "breaking", "unclassified"
VERDICTS = (COMPATIBLE, CHECKED, BREAKING, UNCLASSIFIED)


def verdict_of(change: Change) -> str:
    """How the evidence gate treats ``change`` (one of :data:`VERDICTS`), as `unproven`
    does once resources were listed and checked."""
    if not change.blocking:
        return COMPATIBLE
    if change.kind == Kind.UNKNOWN:
        return UNCLASSIFIED
    if change.kind in WHOLE_CRD | DEFAULTS | UNCHECKED or " -> " in change.version:
        return BREAKING
    return CHECKED


class Outcome(StrEnum):
    """What a prepared upgrade does with its plan."""

    PROCEED = "proceed"  # nothing breaks
    ACCEPTED = "accepted"  # an operator accepted this revision's plan: on record, then on
    UNAFFECTED = "unaffected"  # it breaks, but no existing resource: switch and warn
    HOLD = "hold"  # the old revision keeps running until the plan is accepted or fixed


def choose(annotation: str, default: str, where: str) -> tuple[str, str]:
    """The gate of one package and, for a bad annotation, what is wrong with it.

    Args:
        annotation: the package's :data:`ANNOTATION` value ("" when absent); any case.
        default: the worker's gate (``LOCKWRIGHT_UPGRADE_GATE``).
        where: the package, as ``provider/NAME``, for the problem's text.

    Returns:
        ``(gate, problem)``. A value that is neither gate fails closed: ``Strict``, and
        a problem naming the object, the annotation and the fix.
    """
    if not annotation.strip():
        return default, ""
    found = next((g for g in GATES if g.lower() == annotation.strip().lower()), "")
    if found:
        return found, ""
    return STRICT, (f"{where}: annotation {ANNOTATION} is {annotation!r}, not one of "
                    f"{', '.join(GATES)}; the upgrade gate is Strict until it is fixed")


def unproven(verdicts: list[Verdict], rejected: list[Rejected], checked: Checked) -> list[str]:
    """The breaking changes the existing resources do not clear, as sentences.

    Args:
        verdicts: every changed CRD's verdict (not only the ones a plan keeps).
        rejected: the resources the new schemas would reject or that would lose a value.
        checked: how many resources were checked per CRD and version.
    """
    held = [r.message for r in rejected]
    for verdict in verdicts:
        held += [f"{c.message} ({why})" for c in verdict.blockers()
                 if (why := _unproven(c, checked))]
    return held


def _unproven(change: Change, checked: Checked) -> str:
    """Why the existing resources do not clear ``change``; "" when they do."""
    if change.kind in WHOLE_CRD:
        return "a change to the whole CRD holds whatever resources exist"
    if change.kind == Kind.UNKNOWN:
        return "its effect on existing resources cannot be checked"
    if _held_by(change.crd, checked) == 0:
        return ""  # no resource exists for it to break
    if change.kind in DEFAULTS:
        return "existing resources would read another value; they cannot be told apart here"
    if change.kind in UNCHECKED:
        return "values outside the schema would be pruned; they are not checked here"
    if " -> " in change.version or (change.crd, change.version) not in checked:
        return "the existing resources were not checked against this version's schema"
    return ""  # every resource was checked; the ones it breaks are in ``rejected``


def _held_by(crd: str, checked: Checked) -> int | None:
    """How many resources ``crd`` holds (every served version lists them all); None when
    none of its versions could be listed."""
    counts = [n for (name, _), n in checked.items() if name == crd]
    return max(counts) if counts else None


def weigh(plan: Plan, verdicts: list[Verdict], checked: Checked) -> Plan:
    """``plan`` with what the evidence gate holds on (:func:`unproven`)."""
    held = unproven(verdicts, plan.rejected, checked)
    return replace(plan, held=held[:BREAKING_LIMIT], held_count=len(held), weighed=True)


def decide(plan: Plan | None, gate: str, accepted: str, manual: bool = False) -> Outcome:
    """What a prepared upgrade does with ``plan`` under ``gate``.

    Args:
        plan: the prepared revision's plan (None: nothing active to plan against).
        gate: :data:`EVIDENCE` or :data:`STRICT`; anything else is strict.
        accepted: the revision whose plan an operator accepted; it accepts no other.
        manual: the package is approved by hand (Manual policy): held as ``Strict``.
    """
    if plan is None or plan.compatible:
        return Outcome.PROCEED
    if accepted == plan.revision:
        return Outcome.ACCEPTED
    if gate == EVIDENCE and not manual and plan.weighed and not plan.held_count:
        return Outcome.UNAFFECTED
    return Outcome.HOLD


def reasons(plan: Plan, gate: str) -> str:
    """What holds the upgrade: the unproven changes (Evidence) or every breaking one."""
    if gate == EVIDENCE and plan.weighed and plan.held_count:
        more = f" and {plan.held_count - len(plan.held)} more" if (
            plan.held_count > len(plan.held)) else ""
        return f"{plan.held_count} breaking change(s) would affect existing resources " \
               f"or cannot be checked: {'; '.join(plan.held)}{more}"
    return f"{plan.breaking_count} breaking change(s): {'; '.join(plan.breaking)}"


def refusal(kind: str, name: str, plan: Plan, gate: str, problem: str = "") -> str:
    """The Warning Event that says the gate held an upgrade, why, and how to go on."""
    return (f"Revision {plan.revision} was not activated; {plan.against} keeps running "
            f"(upgrade gate {gate}). {reasons(plan, gate)}. {problem + '. ' if problem else ''}"
            f"Fix the resources or the package, or accept this plan: kubectl annotate "
            f"{kind.lower()} {name} {ACCEPT_PLAN_ANNOTATION}={plan.revision}")[:1000]


def unaffected(kind: str, name: str, plan: Plan) -> str:
    """The Warning Event of a breaking upgrade the evidence gate let through."""
    return (f"Revision {plan.revision} activates although its plan against {plan.against} "
            f"breaks: no existing resource is affected (upgrade gate {EVIDENCE}). "
            f"To hold such upgrades, annotate {kind.lower()} {name} {ANNOTATION}={STRICT}. "
            f"{plan.breaking_count} breaking change(s): {'; '.join(plan.breaking)}")[:1000]
