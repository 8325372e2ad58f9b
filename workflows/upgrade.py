"""Upgrades of ``PackageWorkflow``: prepare, switch, then finish or revert.

A package whose ``spec.package`` now names another revision than the active one is
upgraded without ever leaving the cluster without a working runtime
(:mod:`lockwright.upgrade.activation` decides; this module carries it out):

1. **Prepare** the new revision while the active one keeps control and keeps running:
   ``InstallRevision`` with ``prepare`` fetches, parses, lints, checks the Crossplane
   version, asks the Lock, and dry-runs every object write. A failure here is written to
   the package's status and nothing else changed.
2. **Switch**: the new revision is marked Active and the old one Inactive, the old one
   keeping its runtime and Lock entry; ``InstallRevision`` then takes control of the
   objects (from the old revision, within the package) and starts the new runtime, and
   waits for it at most the switch deadline.
3. **Finish** when it is healthy: the old revision releases what it still holds, leaves
   the Lock and its runtime is removed. Otherwise **revert**: the old revision takes
   control back (its runtime never stopped), the new one is retired and stays Inactive,
   the package says why (and an Event names both), and the same revision is not tried
   again until the package's spec changes.

Runs started before this (``PATCH_PREPARE_THEN_SWITCH``) activated first and installed
after, and replay that way.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

from temporalio import workflow
from temporalio.exceptions import ActivityError, ChildWorkflowError

with workflow.unsafe.imports_passed_through():
    from lockwright.upgrade.activation import Situation, Step, next_step
    from lockwright.upgrade.plan import Plan, blocks, refusal
    import contracts as c
    from contracts import metrics
    from workflows import status as conditions
    from workflows.calls import R, classify

PATCH_PREPARE_THEN_SWITCH = "prepare-then-switch"
# workflow.patched() id: an approval is put on record (who, when) as it is carried out.
PATCH_RECORD_APPROVALS = "record-approvals"


@dataclass(frozen=True)
class Install:
    """One run of the ``InstallRevision`` child: which revision, from where, and how."""

    revision: str
    source: str
    digest: str
    active: bool
    prepare: bool = False
    deadline_s: float = 0.0  # a switch's health gate

    @property
    def summary(self) -> str:
        """What the UI shows for it."""
        if self.prepare:
            return f"prepare {self.revision}"
        return f"install {self.revision} ({'active' if self.active else 'inactive'})"


class _Host(Protocol):
    """What the upgrade steps use of ``PackageWorkflow``."""

    _inp: c.PackageInput
    _s: c.PackageState
    _activation_errors: dict[str, str]

    async def _call(self, name: str, arg: object, result_type: type[R], summary: str,
                    step: bool = True, small: bool = False) -> R: ...

    async def _install(self, pkg: c.ReadPackageResult, it: Install
                       ) -> c.InstallRevisionResult: ...

    async def _write_status(self, conds: list[c.Condition], resolved: str) -> None: ...

    async def _collect(self, pkg: c.ReadPackageResult, rev: str) -> None: ...

    def _settle(self, active: bool, rev: str) -> None: ...

    def _wait_for_gone(self, message: str) -> None: ...


class Upgrades:
    """The upgrade steps; mixed into ``PackageWorkflow``."""

    def _next_step(self: _Host, pkg: c.ReadPackageResult, rev: str, approved: bool) -> Step:
        """What :func:`lockwright.upgrade.activation.next_step` says for this pass."""
        return next_step(Situation(
            policy=pkg.activation_policy, current=rev, active=pkg.active_revision,
            approved=approved, generation=pkg.generation,
            reverted=self._s.reverted_revision,
            reverted_generation=self._s.reverted_generation))

    def _upgrading(self: _Host, pkg: c.ReadPackageResult, step: Step) -> bool:
        """True when another revision is active: prepare first, switch after."""
        return (step is not Step.KEEP and bool(pkg.active_revision)
                and workflow.patched(PATCH_PREPARE_THEN_SWITCH))

    async def _upgrade(self: _Host, pkg: c.ReadPackageResult, new: Install,
                       step: Step) -> None:
        """Prepare ``new``; switch to it when the policy allows; see the module docstring."""
        if step is Step.HOLD:
            await Upgrades._hold(self, pkg, new)
            return
        key = f"{new.revision}/{pkg.generation}/prepared"
        if step is Step.PREPARE_AND_WAIT and self._s.installed_key == key:
            self._settle(False, new.revision)  # prepared already: wait for the approval
            return
        prepared = await self._install(pkg, replace(new, active=False, prepare=True))
        if prepared.gone:
            self._wait_for_gone(f"{new.revision} or its package went away while preparing")
            return
        self._s = replace(self._s, plan=prepared.plan)
        if step is Step.PREPARE_AND_WAIT:
            self._s = replace(self._s, installed_key=key, healthy=True)
            await self._write_status(conditions.package_ok(False, True, ""), new.source)
            self._settle(False, new.revision)
            return
        if prepared.plan is not None and not prepared.plan.compatible:
            if blocks(prepared.plan, Upgrades._accepted(self, pkg)):
                await Upgrades._refuse_plan(self, pkg, new, prepared.plan)
                return
            await Upgrades._record_acceptance(self, pkg, new.revision)
        await Upgrades._switch(self, pkg, new)

    def _accepted(self: _Host, pkg: c.ReadPackageResult) -> str:
        """The revision whose breaking plan an operator accepted (annotation or update)."""
        return pkg.accept_plan or self._s.accepted_plan

    async def _refuse_plan(self: _Host, pkg: c.ReadPackageResult, new: Install,
                           plan: Plan) -> None:
        """The plan breaks: the new revision stays Inactive, the old one keeps running,
        and an Event (once per revision and generation) says how to go on."""
        key = f"{new.revision}/{pkg.generation}/refused"
        if self._s.installed_key != key:
            inp = self._inp
            await self._call(c.RECORD_EVENT, c.RecordEventInput(
                kind=inp.kind, name=inp.name, type="Warning", reason="BreakingUpgrade",
                message=refusal(inp.kind, inp.name, plan)), c.RecordEventResult,
                f"event: plan of {new.revision} breaks", step=False)
        self._s = replace(self._s, installed_key=key, healthy=True)
        self._activation_errors[new.revision] = (
            f"the upgrade plan of {new.revision} breaks ({plan.breaking_count} change(s)); "
            "approve it again accepting the plan, or fix the package")
        await self._write_status(conditions.package_plan_refused(pkg.active_revision, plan),
                                 new.source)
        self._settle(False, new.revision)

    async def _record_acceptance(self: _Host, pkg: c.ReadPackageResult, rev: str) -> None:
        """Put the acceptance of a breaking plan on record: who, when, how."""
        info, s = workflow.info(), self._s
        by_annotation = pkg.accept_plan == rev
        await self._call(c.RECORD_APPROVAL, c.RecordApprovalInput(
            kind=self._inp.kind, package=self._inp.name, revision=rev,
            via="annotation" if by_annotation else s.approved_via,
            by="" if by_annotation else s.approved_by,
            at="" if by_annotation else s.approved_at, workflow_id=info.workflow_id,
            run_id=info.run_id, plan=True), c.RecordApprovalResult,
            f"record the acceptance of {rev}'s plan", step=False)

    async def _audit(self: _Host, pkg: c.ReadPackageResult, rev: str, step: Step,
                     by_hand: bool) -> None:
        """Put a Manual approval on record once, as it is carried out: who, when, how.

        Args:
            by_hand: the revision was set Active with kubectl, not approved through
                Temporal (its managedFields tell who and when).
        """
        s = self._s
        carried_out = step in (Step.INSTALL, Step.PREPARE_AND_SWITCH)
        if (pkg.activation_policy != c.MANUAL or not carried_out or s.recorded_approval == rev
                or not workflow.patched(PATCH_RECORD_APPROVALS)):
            return
        info = workflow.info()
        done = await self._call(c.RECORD_APPROVAL, c.RecordApprovalInput(
            kind=self._inp.kind, package=self._inp.name, revision=rev,
            via="kubectl" if by_hand else s.approved_via, by="" if by_hand else s.approved_by,
            at="" if by_hand else s.approved_at, workflow_id=info.workflow_id,
            run_id=info.run_id), c.RecordApprovalResult, f"record the approval of {rev}",
            step=False)
        self._s = replace(self._s, recorded_approval=rev, approved_by=done.by,
                          approved_at=done.at)
        workflow.set_current_details(f"**approved** `{rev}` by {done.by} at {done.at}")

    async def _switch(self: _Host, pkg: c.ReadPackageResult, new: Install) -> None:
        old, began = pkg.active_revision, workflow.time()
        await Upgrades._activate(self, new.revision, keep_runtime=True,
                                 why=f"switch {old} → {new.revision}")
        deadline = pkg.switch_deadline_s or self._inp.tuning.switch_deadline_s
        try:
            result = await self._install(pkg, replace(new, active=True, deadline_s=deadline))
        except (ActivityError, ChildWorkflowError) as err:
            # Back to the old revision; a failure that can heal is tried again later.
            failure = classify(err)
            await Upgrades._revert(self, pkg, new, failure.message, hold=failure.permanent)
            _switched(self._inp.kind, began, "failed")
            raise
        if result.gone:
            self._wait_for_gone(f"{new.revision} or its package went away while switching")
            return
        if not result.healthy:
            await Upgrades._revert(self, pkg, new, result.message)
            _switched(self._inp.kind, began, "reverted")
            return
        await Upgrades._activate(self, new.revision, keep_runtime=False,
                                 why=f"finish the switch to {new.revision}", finish=True)
        self._s = replace(self._s, installed_key=f"{new.revision}/{pkg.generation}/active",
                          healthy=True, health_message="", installs=self._s.installs + 1,
                          active_revision=new.revision)
        await self._collect(pkg, new.revision)
        await self._write_status(conditions.package_ok(True, True, ""), new.source)
        self._settle(True, new.revision)
        _switched(self._inp.kind, began, "finished")

    async def _revert(self: _Host, pkg: c.ReadPackageResult, new: Install,
                      message: str, hold: bool = True) -> None:
        """The old revision takes control back; the new one is retired, Inactive."""
        old = pkg.active_revision
        await Upgrades._activate(self, old, keep_runtime=True, why=f"revert to {old}")
        if pkg.active_digest:  # revisions made before lockwright.dev/digest: no reinstall
            await self._install(pkg, Install(old, pkg.active_source, pkg.active_digest, True))
        await Upgrades._activate(self, old, keep_runtime=False,
                                 why=f"retire {new.revision}")
        self._s = replace(self._s, active_revision=old, installed_key="",
                          health_message=message)
        if not hold:
            return
        self._s = replace(self._s, reverted_revision=new.revision,
                          reverted_generation=pkg.generation)
        self._activation_errors[new.revision] = f"reverted to {old}: {message}"
        await self._call(c.RECORD_EVENT, c.RecordEventInput(
            kind=self._inp.kind, name=self._inp.name, type="Warning", reason="RevertRevision",
            message=f"Reverted to revision {old}: revision {new.revision} did not become "
                    f"healthy: {message}"[:1000]),
            c.RecordEventResult, f"event: reverted {new.revision} → {old}", step=False)
        await Upgrades._hold(self, pkg, new)

    async def _hold(self: _Host, pkg: c.ReadPackageResult, new: Install) -> None:
        """The switch to ``new`` was reverted: say so until the spec changes."""
        await self._write_status(conditions.package_reverted(
            pkg.active_revision, self._s.health_message), new.source)
        self._settle(False, new.revision)
        self._s = replace(self._s, phase="Reverted", healthy=False, wake_after_s=0.0)

    async def _activate(self: _Host, rev: str, keep_runtime: bool, why: str,
                        finish: bool = False) -> None:
        inp = self._inp
        await self._call(c.SET_ACTIVE_REVISION, c.SetActiveRevisionInput(
            kind=inp.kind, package=inp.name, revision=rev, keep_runtime=keep_runtime,
            drop_unshipped=finish), c.SetActiveRevisionResult, why)


def _switched(kind: str, began: float, outcome: str) -> None:
    """The switch-over's duration, from taking control to ``outcome``."""
    metrics.switch_finished(workflow.metric_meter(), kind, workflow.time() - began, outcome)
