"""Upgrades of a package: prepare, switch, then finish or revert.

A package whose ``spec.package`` now names another revision than the active one is
upgraded without ever leaving the cluster without a working runtime
(:mod:`lockwright.upgrade.switch` decides; this module carries it out):

1. **Prepare** the new revision while the active one keeps control and keeps running:
   ``InstallRevision`` with ``prepare`` fetches, parses, lints, checks the Crossplane
   version, asks the Lock, and dry-runs the object writes (of the takes of control, one
   of each kind). A failure here is written to the package's status and nothing else
   changed.
2. **Switch**: the new revision is marked Active and the old one Inactive, the old one
   keeping its runtime and Lock entry; ``InstallRevision`` then takes control of the
   objects (from the old revision, within the package) and starts the new runtime, and
   waits for it at most the switch deadline.
3. **Finish** when it is healthy: the package says so (``PATCH_HEALTHY_BEFORE_RETIRE``;
   before it, only once the old revision was gone; since ``PATCH_SWITCH_HEALTHY_BESIDE``
   the switch's child says so beside its revision's status), then the old revision's
   runtime is removed, and it releases what it still holds and leaves the Lock (a local
   step for a small package, ``PATCH_LOCAL_FINISH``). Otherwise
   **revert**: the old revision takes control back (its runtime never stopped), the new
   one is retired and stays Inactive, the package says why (and an Event names both),
   and the same revision is not tried again until the package's spec changes.

Runs started before this (``PATCH_PREPARE_THEN_SWITCH``) switched first and installed
after, and replay that way.

**Shape.** :class:`Upgrader` carries the steps out; ``PackageWorkflow`` composes one and,
each pass, asks it for the next step (:meth:`Upgrader.next_step`), has it put a Manual
approval on record (:meth:`Upgrader.audit`) and, when another revision is active
(:meth:`Upgrader.upgrading`), has it upgrade (:meth:`Upgrader.upgrade`). The workflow is its
:class:`Host`: the package's state, read and replaced as the steps go, and the workflow's
own steps the upgrade shares (an activity, the ``InstallRevision`` child, the status, the
collection of old revisions, the end of a pass, an approval's failure). The upgrade sees
nothing else of the workflow.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

from temporalio import workflow
from temporalio.exceptions import ActivityError, ChildWorkflowError

with workflow.unsafe.imports_passed_through():
    from lockwright import contracts as c
    from lockwright.contracts import metrics
    from lockwright.upgrade.gate import STRICT, Outcome, decide, refusal, unaffected
    from lockwright.upgrade.plan import Plan, blocks
    from lockwright.upgrade.switch import Situation, Step, next_step
    from lockwright.workflows import status as conditions
    from lockwright.workflows.calls import R, classify

PATCH_PREPARE_THEN_SWITCH = "prepare-then-switch"
# workflow.patched() id: an approval is put on record (who, when) as it is carried out.
PATCH_RECORD_APPROVALS = "record-approvals"
# workflow.patched() id: a breaking plan holds an Automatic upgrade only as the package's
# upgrade gate says (lockwright.upgrade.gate); one it lets through is switched with a
# Warning Event. Runs before held every breaking plan.
PATCH_EVIDENCE_GATE = "evidence-gate"
# workflow.patched() id: a hand-off that only flips desiredState (keep_runtime: the switch,
# the start of a revert) is a local step; it reads the package's revisions and writes two.
# Runs before queued it.
PATCH_LOCAL_HAND_OFF = "local-hand-off"
# workflow.patched() id: once the new revision is healthy the package says so at once, and
# then the old revision is retired, as Crossplane's package copies its current revision's
# health (docs/crossplane.md §9 step 10). Runs before wrote the status after retiring it.
PATCH_HEALTHY_BEFORE_RETIRE = "healthy-before-retire"
# workflow.patched() id: a small package's finish (the old revision's runtime removed, its
# objects released, its Lock entry dropped) is a local step, as its hand-off is. Runs before
# queued it.
PATCH_LOCAL_FINISH = "local-finish"


@dataclass(frozen=True)
class Install:
    """One run of the ``InstallRevision`` child: which revision, from where, and how."""

    revision: str
    source: str
    digest: str
    active: bool
    prepare: bool = False
    deadline_s: float = 0.0  # a switch's health gate
    checked: tuple[str, ...] = ()  # a switch: its preparation's dry-run fingerprints
    parsed: c.ParsePackageResult | None = None  # a switch: its preparation's parse
    size: int = 0  # a switch: the package's size as its preparation fetched it

    @property
    def summary(self) -> str:
        """What the UI shows for it."""
        if self.prepare:
            return f"prepare {self.revision}"
        return f"install {self.revision} ({'active' if self.active else 'inactive'})"


class Host(Protocol):
    """What the upgrade steps use of the workflow that runs them (``PackageWorkflow``)."""

    state: c.PackageState
    """The package's durable state; the steps read it and replace it as they go."""

    async def activity(self, name: str, arg: object, result_type: type[R], summary: str,
                       step: bool = True, small: bool = False) -> R:
        """Run activity ``name``; ``step``: its failure is reported as the pass's step."""

    async def install(self, pkg: c.ReadPackageResult, it: Install) -> c.InstallRevisionResult:
        """Run the ``InstallRevision`` child for ``it`` and return its result."""

    async def write_status(self, conds: list[c.Condition], resolved: str) -> None:
        """Write the package's status with ``conds`` and the reference ``resolved``."""

    async def collect(self, pkg: c.ReadPackageResult, rev: str) -> None:
        """Delete the revisions beyond the package's history limit, never ``rev``."""

    def settle(self, active: bool, rev: str) -> None:
        """End the pass with ``rev`` installed (``active``: in control)."""

    def wait_for_gone(self, message: str) -> None:
        """A step found the package or a revision gone: look again on the next signal."""

    def fail_approval(self, rev: str, reason: str) -> None:
        """Answer an approval of ``rev`` waiting for it with ``reason``: it failed."""


class Upgrader:
    """The upgrade steps of one package; ``PackageWorkflow`` asks them what to do and runs
    them when another revision is active."""

    def __init__(self, host: Host, kind: str, name: str, tuning: c.Tuning) -> None:
        """Upgrade package ``kind``/``name`` through ``host``.

        Args:
            host: The workflow: its state, its activities, its child and its status.
            kind: The package's kind.
            name: The package's name.
            tuning: The workflow's knobs (the switch's default deadline).
        """
        self._host = host
        self._kind = kind
        self._name = name
        self._tuning = tuning

    def next_step(self, pkg: c.ReadPackageResult, rev: str, approved: bool) -> Step:
        """What :func:`lockwright.upgrade.switch.next_step` says for this pass."""
        s = self._host.state
        return next_step(Situation(
            policy=pkg.activation_policy, current=rev, active=pkg.active_revision,
            approved=approved, generation=pkg.generation,
            reverted=s.reverted_revision, reverted_generation=s.reverted_generation))

    def upgrading(self, pkg: c.ReadPackageResult, step: Step) -> bool:
        """True when another revision is active: prepare first, switch after."""
        return (step is not Step.KEEP and bool(pkg.active_revision)
                and workflow.patched(PATCH_PREPARE_THEN_SWITCH))

    async def upgrade(self, pkg: c.ReadPackageResult, new: Install, step: Step) -> None:
        """Prepare ``new``; switch to it when the policy allows; see the module docstring."""
        host = self._host
        if step is Step.HOLD:
            await self._hold(pkg, new)
            return
        key = f"{new.revision}/{pkg.generation}/prepared"
        if step is Step.PREPARE_AND_WAIT and host.state.installed_key == key:
            host.settle(False, new.revision)  # prepared already: wait for the approval
            return
        prepared = await host.install(pkg, replace(new, active=False, prepare=True))
        if prepared.gone:
            host.wait_for_gone(f"{new.revision} or its package went away while preparing")
            return
        host.state = replace(host.state, plan=prepared.plan)
        if step is Step.PREPARE_AND_WAIT:
            host.state = replace(host.state, installed_key=key, healthy=True)
            await host.write_status(conditions.package_ok(False, True, ""), new.source)
            host.settle(False, new.revision)
            return
        if prepared.plan is not None and not prepared.plan.compatible and not (
                await self._through_gate(pkg, new, prepared.plan)):
            return
        await self._switch(pkg, replace(new, checked=tuple(prepared.checked),
                                        parsed=prepared.parsed, size=prepared.size))

    async def audit(self, pkg: c.ReadPackageResult, rev: str, step: Step,
                    by_hand: bool) -> None:
        """Put a Manual approval on record once, as it is carried out: who, when, how.

        Args:
            pkg: The package as this pass read it.
            rev: The current revision.
            step: What the pass does with it.
            by_hand: the revision was set Active with kubectl, not approved through
                Temporal (its managedFields tell who and when).
        """
        s = self._host.state
        carried_out = step in (Step.INSTALL, Step.PREPARE_AND_SWITCH)
        if (pkg.activation_policy != c.MANUAL or not carried_out or s.recorded_approval == rev
                or not workflow.patched(PATCH_RECORD_APPROVALS)):
            return
        info = workflow.info()
        done = await self._host.activity(c.RECORD_APPROVAL, c.RecordApprovalInput(
            kind=self._kind, package=self._name, revision=rev,
            via="kubectl" if by_hand else s.approved_via, by="" if by_hand else s.approved_by,
            at="" if by_hand else s.approved_at, workflow_id=info.workflow_id,
            run_id=_received_in(s)), c.RecordApprovalResult, f"record the approval of {rev}",
            step=False)
        self._host.state = replace(self._host.state, recorded_approval=rev,
                                   approved_by=done.by, approved_at=done.at)
        workflow.set_current_details(f"**approved** `{rev}` by {done.by} at {done.at}")

    def _accepted(self, pkg: c.ReadPackageResult) -> str:
        """The revision whose breaking plan an operator accepted (annotation or update)."""
        return pkg.accept_plan or self._host.state.accepted_plan

    async def _through_gate(self, pkg: c.ReadPackageResult, new: Install, plan: Plan) -> bool:
        """Whether the breaking ``plan`` lets ``new`` switch: accepted (put on record), or
        let through by the package's upgrade gate (a Warning Event says so); else held."""
        if workflow.patched(PATCH_EVIDENCE_GATE):
            gate = pkg.upgrade_gate or STRICT
            outcome = decide(plan, gate, self._accepted(pkg), pkg.activation_policy == c.MANUAL)
        else:
            gate = STRICT
            outcome = Outcome.HOLD if blocks(plan, self._accepted(pkg)) else Outcome.ACCEPTED
        if outcome is Outcome.HOLD:
            await self._refuse_plan(pkg, new, plan, gate)
            return False
        if outcome is Outcome.ACCEPTED:
            await self._record_acceptance(pkg, new.revision)
        else:
            await self._host.activity(c.RECORD_EVENT, c.RecordEventInput(
                kind=self._kind, name=self._name, type="Warning", reason="BreakingUpgrade",
                message=unaffected(self._kind, self._name, plan)), c.RecordEventResult,
                f"event: plan of {new.revision} breaks, no resource affected", step=False)
        return True

    async def _refuse_plan(self, pkg: c.ReadPackageResult, new: Install, plan: Plan,
                           gate: str) -> None:
        """The gate holds: the new revision stays Inactive, the old one keeps running,
        and an Event (once per revision and generation) says why and how to go on."""
        host = self._host
        key = f"{new.revision}/{pkg.generation}/refused"
        if host.state.installed_key != key:
            await host.activity(c.RECORD_EVENT, c.RecordEventInput(
                kind=self._kind, name=self._name, type="Warning", reason="BreakingUpgrade",
                message=refusal(self._kind, self._name, plan, gate, pkg.upgrade_gate_problem)),
                c.RecordEventResult, f"event: plan of {new.revision} breaks", step=False)
        host.state = replace(host.state, installed_key=key, healthy=True)
        host.fail_approval(new.revision, (
            f"the upgrade plan of {new.revision} breaks ({plan.breaking_count} change(s)); "
            "approve it again accepting the plan, or fix the package"))
        await host.write_status(conditions.package_plan_refused(pkg.active_revision, plan,
                                                                gate), new.source)
        host.settle(False, new.revision)

    async def _record_acceptance(self, pkg: c.ReadPackageResult, rev: str) -> None:
        """Put the acceptance of a breaking plan on record: who, when, how."""
        info, s = workflow.info(), self._host.state
        by_annotation = pkg.accept_plan == rev
        await self._host.activity(c.RECORD_APPROVAL, c.RecordApprovalInput(
            kind=self._kind, package=self._name, revision=rev,
            via="annotation" if by_annotation else s.approved_via,
            by="" if by_annotation else s.approved_by,
            at="" if by_annotation else s.approved_at, workflow_id=info.workflow_id,
            run_id=_received_in(s), plan=True), c.RecordApprovalResult,
            f"record the acceptance of {rev}'s plan", step=False)

    async def _switch(self, pkg: c.ReadPackageResult, new: Install) -> None:
        """Hand control to ``new`` and wait for its runtime; finish, or revert."""
        host, old, began = self._host, pkg.active_revision, workflow.time()
        await self._set_active(new.revision, keep_runtime=True,
                               why=f"switch {old} → {new.revision}")
        deadline = pkg.switch_deadline_s or self._tuning.switch_deadline_s
        try:
            result = await host.install(pkg, replace(new, active=True, deadline_s=deadline))
        except (ActivityError, ChildWorkflowError) as err:
            # Back to the old revision; a failure that can heal is tried again later.
            failure = classify(err)
            await self._revert(pkg, new, failure.message, hold=failure.permanent)
            _switched(self._kind, began, "failed")
            raise
        if result.gone:
            host.wait_for_gone(f"{new.revision} or its package went away while switching")
            return
        if not result.healthy:
            await self._revert(pkg, new, result.message)
            _switched(self._kind, began, "reverted")
            return
        await self._finish(pkg, new, result)
        _switched(self._kind, began, "finished")

    async def _finish(self, pkg: c.ReadPackageResult, new: Install,
                      result: c.InstallRevisionResult) -> None:
        """``new`` is healthy: the package says so (the switch said so already when its
        result says ``package_healthy``), then the old revision lets go of the rest and
        leaves."""
        host = self._host
        healthy_first = workflow.patched(PATCH_HEALTHY_BEFORE_RETIRE)
        if healthy_first and not result.package_healthy:
            await host.write_status(conditions.package_ok(True, True, ""), new.source)
        await self._set_active(new.revision, keep_runtime=False,
                               why=f"finish the switch to {new.revision}", finish=True,
                               small=0 < new.size <= self._tuning.local_max_bytes)
        host.state = replace(host.state, installed_key=f"{new.revision}/{pkg.generation}/active",
                             healthy=True, health_message="", installs=host.state.installs + 1,
                             active_revision=new.revision,
                             active_definitions=result.active_definitions)
        await host.collect(pkg, new.revision)
        if not healthy_first:
            await host.write_status(conditions.package_ok(True, True, ""), new.source)
        host.settle(True, new.revision)

    async def _revert(self, pkg: c.ReadPackageResult, new: Install,
                      message: str, hold: bool = True) -> None:
        """The old revision takes control back; the new one is retired, Inactive."""
        host, old = self._host, pkg.active_revision
        await self._set_active(old, keep_runtime=True, why=f"revert to {old}")
        if pkg.active_digest:  # revisions made before lockwright.dev/digest: no reinstall
            await host.install(pkg, Install(old, pkg.active_source, pkg.active_digest, True))
        await self._set_active(old, keep_runtime=False, why=f"retire {new.revision}")
        host.state = replace(host.state, active_revision=old, installed_key="",
                             health_message=message)
        if not hold:
            return
        host.state = replace(host.state, reverted_revision=new.revision,
                             reverted_generation=pkg.generation)
        host.fail_approval(new.revision, f"reverted to {old}: {message}")
        await host.activity(c.RECORD_EVENT, c.RecordEventInput(
            kind=self._kind, name=self._name, type="Warning", reason="RevertRevision",
            message=f"Reverted to revision {old}: revision {new.revision} did not become "
                    f"healthy: {message}"[:1000]),
            c.RecordEventResult, f"event: reverted {new.revision} → {old}", step=False)
        await self._hold(pkg, new)

    async def _hold(self, pkg: c.ReadPackageResult, new: Install) -> None:
        """The switch to ``new`` was reverted: say so until the spec changes."""
        host = self._host
        await host.write_status(conditions.package_reverted(
            pkg.active_revision, host.state.health_message), new.source)
        host.settle(False, new.revision)
        host.state = replace(host.state, phase="Reverted", healthy=False, wake_after_s=0.0)

    async def _set_active(self, rev: str, keep_runtime: bool, why: str,
                          finish: bool = False, small: bool = False) -> None:
        """Mark ``rev`` Active, the others Inactive (``finish``: drop what it no longer
        ships; ``small``: of a package within ``Tuning.local_max_bytes``). A hand-off runs
        locally, so does a small package's finish; any other retirement is queued."""
        local = (workflow.patched(PATCH_LOCAL_HAND_OFF) if keep_runtime
                 else finish and small and workflow.patched(PATCH_LOCAL_FINISH))
        await self._host.activity(c.SET_ACTIVE_REVISION, c.SetActiveRevisionInput(
            kind=self._kind, package=self._name, revision=rev, keep_runtime=keep_runtime,
            drop_unshipped=finish), c.SetActiveRevisionResult, why, small=local)


def _switched(kind: str, began: float, outcome: str) -> None:
    """The switch-over's duration, from taking control to ``outcome``."""
    metrics.switch_finished(workflow.metric_meter(), kind, workflow.time() - began, outcome)


def _received_in(s: c.PackageState) -> str:
    """The run whose history holds the approval's signal or update: the one that received
    it, which a continue-as-new may since have ended (this run's history lacks the event).
    A state carried from a run that did not keep it names none: this run, and
    record_approval reads back through the runs this one continued from."""
    return s.approved_run_id or workflow.info().run_id
