"""Plans: the ``plan_revision`` activity and the ``PlanCandidate`` workflow
(``lockwright plan --package``)."""

from __future__ import annotations

from dataclasses import dataclass

from lockwright.contracts.names import PROVIDER


@dataclass(frozen=True)
class PlanRevisionInput:
    """Activity ``plan_revision``: what switching ``package`` from ``against`` to
    ``revision`` would change; it also writes the revision's PlanCompatible condition."""

    kind: str = ""
    package: str = ""
    revision: str = ""
    digest: str = ""
    against: str = ""
    against_digest: str = ""
    # A candidate (``lockwright plan --package``): this package reference is planned
    # instead of a revision; nothing is written, no condition either.
    candidate: str = ""


@dataclass(frozen=True)
class PlanCandidateInput:
    """Workflow ``PlanCandidate``: the plan of pointing package ``name`` at ``source``,
    without changing the package object or writing anything."""

    kind: str = PROVIDER
    name: str = ""
    source: str = ""
