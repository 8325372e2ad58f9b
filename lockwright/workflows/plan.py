"""``PlanCandidate``: the plan of pointing a package at another package reference, for
``lockwright plan --package``, without changing the package object or writing anything.

It reads the package (for its active revision) and runs ``plan_revision`` on the
candidate: resolved (ImageConfigs, pull secrets) and verified as an install would be,
fetched into the worker's cache, its writes checked and dry-run as an upgrade's
preparation makes them (for the revision an apply would create, with no Event), compared
with the active revision and checked against the custom resources that exist. A candidate
the preparation would refuse fails with the preparation's error.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from lockwright import contracts as c
    from lockwright.upgrade.plan import Plan
    from lockwright.workflows.calls import call


@workflow.defn
class PlanCandidate:
    """Plan a candidate package reference; the result is the plan."""

    @workflow.run
    async def run(self, inp: c.PlanCandidateInput) -> Plan:
        tuning = c.Tuning()
        pkg = await call(c.READ_PACKAGE, c.ReadPackageInput(kind=inp.kind, name=inp.name),
                         c.ReadPackageResult, f"read {inp.kind} {inp.name}", tuning)
        if not pkg.found or not pkg.active_revision:
            raise ApplicationError(f"{inp.kind} {inp.name} has no active revision to plan "
                                   "against", type="NothingToPlan", non_retryable=True)
        return await call(c.PLAN_REVISION, c.PlanRevisionInput(
            kind=inp.kind, package=inp.name, revision=f"candidate {inp.source}",
            against=pkg.active_revision, against_digest=pkg.active_digest,
            candidate=inp.source), Plan, f"plan {inp.source} against {pkg.active_revision}",
            tuning)
