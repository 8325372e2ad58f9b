"""What activation policies activate, and what each policy and MRD says about it.

As Crossplane's activation-policy controller
(``internal/controller/apiextensions/activationpolicy/``): each policy's patterns are matched
against every MRD's name (``plural.group``) with Go's ``filepath.Match``; a matching MRD
that is not Active is made Active; ``status.activated`` lists every MRD the policy matches,
sorted. Activation is one way (deleting a policy deactivates nothing) and policies are a
union (each activates its own matches). Pure functions over plain data; the activity
reads and writes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from lockwright.managed.match import matches

#: Event reason on a policy for each MRD it activated (Crossplane's).
REASON_ACTIVATED = "ActivateManagedResourceDefinition"
MSG_ACTIVATED = "Successfully activated ManagedResourceDefinition"
#: The MRD ``Established`` condition's reasons (Crossplane's v1alpha1 conditions).
ESTABLISHED = "Established"
REASON_ESTABLISHED = "EstablishedManagedResource"
REASON_PENDING = "PendingManagedResource"
REASON_INACTIVE = "InactiveManagedResource"
#: The policy's ``Healthy`` condition's reasons.
HEALTHY = "Healthy"
REASON_RUNNING, REASON_ERRORS = "Running", "EncounteredErrors"
#: The policy's ``Established`` condition (crossplane#7822/#7833): True once every MRD it
#: activated is served, its CRD Established; ``kubectl wait --for=condition=Established``.
REASON_POLICY_ESTABLISHED = "EstablishedManagedResources"
REASON_POLICY_PENDING = "PendingManagedResources"
REASON_POLICY_NONE = "NoManagedResources"
#: MRDs a pending policy's message names at most.
NAMED = 5
#: The default policy, made at bootstrap from ``LOCKWRIGHT_DEFAULT_ACTIVATIONS``.
DEFAULT_POLICY = "default"


@dataclass(frozen=True)
class Definition:
    """One MRD as activation sees it: name, whether Active, who controls it."""

    name: str
    active: bool
    controller: str = ""  # the controlling revision's name ("" when none)
    established: str = ""  # its Established condition's status as last written


@dataclass(frozen=True)
class Policy:
    """One activation policy: its name and patterns."""

    name: str
    patterns: tuple[str, ...]

    def activates(self, name: str) -> bool:
        """Whether any pattern matches the MRD name (malformed patterns match nothing)."""
        return any(matches(p, name) for p in self.patterns)

    @classmethod
    def of(cls, obj: dict[str, Any]) -> Policy:
        """A policy object as activation reads it: its name and ``spec.activate``."""
        return cls(name=str((obj.get("metadata") or {})["name"]), patterns=tuple(
            str(p) for p in (obj.get("spec") or {}).get("activate") or []))


@dataclass(frozen=True)
class Activation:
    """What to do: the MRDs to make Active (each with the first policy that asks), and
    each policy's ``status.activated``."""

    activate: dict[str, str] = field(default_factory=dict)  # MRD name → policy name
    activated: dict[str, list[str]] = field(default_factory=dict)  # policy → MRD names


def decide(policies: Iterable[Policy], definitions: Iterable[Definition]) -> Activation:
    """What ``policies`` activate among ``definitions`` (the union, one way only)."""
    defs = sorted(definitions, key=lambda d: d.name)
    activate: dict[str, str] = {}
    activated: dict[str, list[str]] = {}
    for policy in sorted(policies, key=lambda p: p.name):
        names = [d.name for d in defs if policy.activates(d.name)]
        activated[policy.name] = names
        for d in defs:
            if not d.active and d.name in names:
                activate.setdefault(d.name, policy.name)
    return Activation(activate=activate, activated=activated)


def at_install(policies: Iterable[Policy], names: Iterable[str], active: Iterable[str]
               ) -> dict[str, str]:
    """Which of a package's MRDs (``names``) the policies in force make Active as they are
    first established, each with the first policy that asks (issue 33: safe-start in one
    pass). Exactly what :func:`decide` would activate once they existed Inactive beside
    those ``active`` already, so an install and a later activation never disagree."""
    now = set(active)
    return decide(policies, [Definition(name=n, active=n in now) for n in names]).activate


def active_by_revision(definitions: Iterable[Definition], activated: Iterable[str]
                       ) -> dict[str, int]:
    """How many MRDs each controlling revision has Active, counting ``activated`` too."""
    now = set(activated)
    counts: dict[str, int] = {}
    for d in definitions:
        if d.controller:
            counts[d.controller] = counts.get(d.controller, 0) + int(d.active or d.name in now)
    return counts


def settled_rows(definitions: Iterable[Definition], recorded: dict[str, str | None]
                 ) -> list[Definition]:
    """The MRDs whose conditions a pass writes: all but those of a revision whose install
    has not recorded its count of Active MRDs yet (``recorded``: revision → its count,
    None while none); that install is still establishing them, and its recording
    starts another pass. An MRD controlled by no revision, or by one not listed, is
    written."""
    installing = {name for name, count in recorded.items() if count is None}
    return [d for d in definitions if d.controller not in installing]


def established(active: bool, crd_exists: bool) -> tuple[str, str]:
    """The MRD's ``Established`` condition: status and reason (Crossplane's)."""
    if not active:
        return "False", REASON_INACTIVE
    return ("True", REASON_ESTABLISHED) if crd_exists else ("Unknown", REASON_PENDING)


def policy_health(failed: int, matched: int) -> tuple[str, str, str]:
    """The policy's ``Healthy`` condition: status, reason, message (Crossplane's words)."""
    if failed:
        return ("Unknown", REASON_ERRORS,
                f"failed to activate {failed} of {matched} ManagedResourceDefinitions")
    return "True", REASON_RUNNING, ""


def policy_established(matched: list[str], served: set[str]) -> tuple[str, str, str]:
    """The policy's ``Established`` condition: status, reason, message.

    Args:
        matched: the MRDs the policy activated (its ``status.activated``).
        served: the MRDs known to be Active with their CRD Established. While the policy
            waits, a pass stops reading its CRDs at the first that is not Established
            (:func:`unconfirmed`), so the message counts those confirmed so far.

    True once every matched MRD is served. A policy that matches nothing stays Unknown:
    ``kubectl wait`` on a policy applied before its provider waits for the kinds.
    """
    if not matched:
        return ("Unknown", REASON_POLICY_NONE,
                "no ManagedResourceDefinition matches this policy's patterns yet")
    pending = [n for n in matched if n not in served]
    if not pending:
        return ("True", REASON_POLICY_ESTABLISHED,
                f"all {len(matched)} activated ManagedResourceDefinitions are established")
    named = ", ".join(pending[:NAMED]) + (", ..." if len(pending) > NAMED else "")
    return ("Unknown", REASON_POLICY_PENDING,
            f"{len(matched) - len(pending)} of {len(matched)} activated "
            f"ManagedResourceDefinitions confirmed established; waiting for {named}")


def unconfirmed(matched: list[str], present: set[str], served: set[str]) -> list[str]:
    """The MRDs of a waiting policy whose CRDs a pass reads, in order: none when one of
    them is not Active with a CRD (``present``), for the policy waits whatever the others
    say; else those not known to be served yet. The pass reads them a few at a time and
    stops after the first CRD not Established, so a 2,000-kind policy waiting on an API
    server still establishing its kinds costs a few reads a pass, not 2,000."""
    if any(n not in present for n in matched):
        return []
    return sorted(n for n in matched if n not in served)


def settled(conditions: list[dict[str, str]], recorded: list[str], matched: list[str],
            present: set[str]) -> bool:
    """Whether a policy's ``Established`` is True already for the same MRDs, all still
    Active with their CRDs present (``present``): then its CRDs need no reading again."""
    was = next((x for x in conditions if x.get("type") == ESTABLISHED), {})
    return (was.get("status") == "True" and recorded == matched
            and all(n in present for n in matched))


def behind(recorded: str | None, active: int) -> bool:
    """Whether the count of Active MRDs a revision's install recorded is behind ``active``
    (activation only adds); None: its install has not recorded one yet, not behind."""
    if recorded is None:
        return False
    return not recorded.isdigit() or int(recorded) < active
