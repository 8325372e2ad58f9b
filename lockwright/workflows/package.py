"""``PackageWorkflow``: the entity workflow of one package, id ``package:<kind>:<name>``
(``:<task queue>`` appended off the default queue, as on its children: ``workflows.ids``).

Shape: one consumer loop. Handlers only record intent (``look_again`` marks the package
dirty, ``approve_revision`` records an approval); the loop waits for that, then runs one
*pass*: re-read the object → resolve the digest → ensure the revision → switch per
policy → ``InstallRevision`` child → collect old revisions → write the status. A pass reads
all it decides on from Kubernetes (docs/design.md invariant 1), so a lost, repeated or reordered
signal changes nothing; a pass whose revision, generation and desired state were already
installed healthy starts no child, so duplicates install nothing twice.

**Upgrades** are a collaborator's: the workflow composes a :class:`workflows.upgrade.Upgrader`,
asks it for each pass's step and hands it the pass when another revision is active. The
workflow is its :class:`workflows.upgrade.Host`: ``state`` and the steps both use
(``activity``, ``install``, ``write_status``, ``collect``, ``settle``, ``wait_for_gone``,
``fail_approval``) are its only public members besides ``run`` and the handlers.

**Errors while Temporal retries.** Each activity gets a few quick attempts from the shared
retry policy (``workflows.retry``). If they are spent on a transient error, the pass ends,
the status is written with the error and "retrying in Ns, attempt n", and the loop waits on
a timer with its own exponential backoff (a ``look_again`` cuts it short), then runs the
whole pass again. Permanent errors (``contracts.PERMANENT_ERRORS``) are written once and
the loop waits for the next signal. Chosen over one long-retrying activity because workflow
code cannot see a pending activity's ``last_failure``, and a status written only after
success would hide an outage.

**Parent close policy** of the child is ``REQUEST_CANCEL``: if an operator terminates or
resets this workflow, the install stops between idempotent steps instead of being cut
mid-write (``TERMINATE``) or left running unwatched (``ABANDON``). The loop awaits the child,
so continue-as-new never leaves one behind.

**Manual approval** (``revisionActivationPolicy: Manual``): a new revision installs
Inactive (owner references only) and waits; the ``approve_revision`` update (registered as
``activate_revision``; validated: Manual policy, known and current revision) or its
``request_approval`` signal twin (registered as ``request_activation``) records the
approval, and the next pass switches to it and installs it with control. Setting
``desiredState: Active`` on the revision by hand works too. Deviation from Crossplane: the
previously active revision stays active until the approval, instead of being deactivated at
once.

**Deletion** (docs/design.md invariant 8). A package with a ``deletionTimestamp``, whatever the
propagation policy, is only cleaned up: a pass that reads it so runs ``cleanup_package``
(Lock entries of revisions that are gone or going) and nothing else; Kubernetes' garbage
collector removes the revisions and everything they own. The workflow ends once the
package object is gone and no revision still waits for the collector; revisions orphaned
by ``propagationPolicy: Orphan`` are left alone. An install running when the deletion
begins is cancelled between steps, and any step that finds its package or revision gone
(``ObjectGone``) ends its branch without writing or retrying anything: the workflow looks
again on the next signal, so a revision deleted by hand is re-created once, after it is
gone, never while it is going.

**Continue-as-new** at the top of the loop (a quiet point: no pass running, no update
waiting), after draining handlers; all durable state is the ``PackageState`` carried in the
input.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import timedelta

from temporalio import workflow
from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    ChildWorkflowError,
    WorkflowAlreadyStartedError,
)

with workflow.unsafe.imports_passed_through():
    from lockwright import contracts as c
    from lockwright.conditions import SYNCED
    from lockwright.upgrade.plan import Plan
    from lockwright.workflows import ids
    from lockwright.workflows import status as conditions
    from lockwright.workflows.calls import Failure, R, call, classify
    from lockwright.workflows.retry import doubled, loop_backoff
    from lockwright.workflows.revision import InstallRevision
    from lockwright.workflows.upgrade import Install, Upgrader


# workflow.patched() id: a re-attempt no longer writes "installing" over the last outcome.
PATCH_KEEP_LAST_OUTCOME = "keep-last-outcome-on-reattempt"
# workflow.patched() id: a signal during an install re-reads the package and cancels the
# install if the package is being deleted. Runs started before waited for the install.
PATCH_DELETION_STOPS_INSTALL = "deletion-stops-install"
# workflow.patched() id: resuming after the pause annotation installs again, so whatever
# changed while paused is put back (runs before: only a changed spec installed again).
PATCH_RESUME_REINSTALLS = "resume-reinstalls"
# workflow.patched() id: a signal that arrives while the package's last clean-up runs (an
# orphaned revision deleted then) starts another pass instead of being dropped when the
# run ends; its Lock entry lingered. Runs before ended regardless.
PATCH_GONE_LOOKS_AGAIN = "gone-looks-again"
# workflow.patched() id: a package's first revision under Automatic activation is created
# Active, as Crossplane creates it, and set_active_revision is skipped (nothing to hand
# over). Runs before created it Inactive and activated it.
PATCH_FIRST_REVISION_ACTIVE = "first-revision-active"


@workflow.defn
class PackageWorkflow:
    """Keeps one package installed as its Kubernetes object says; never ends while it exists."""

    @workflow.init
    def __init__(self, inp: c.PackageInput) -> None:
        self._inp = inp
        self._s = inp.state or c.PackageState()
        self._step = ""
        self._idle = False
        self._gone = False
        self._updates_waiting = 0
        self._settled_active = ""
        self._approval_errors: dict[str, str] = {}
        self._upgrader = Upgrader(self, inp.kind, inp.name, inp.tuning)

    @property
    def state(self) -> c.PackageState:
        """The package's durable state, carried across continue-as-new."""
        return self._s

    @state.setter
    def state(self, state: c.PackageState) -> None:
        self._s = state

    @workflow.run
    async def run(self, inp: c.PackageInput) -> c.PackageResult:
        """Loop: wait for work, run one pass, continue as new when suggested."""
        self._identify()
        while True:
            await self._run_until_gone(inp)
            await workflow.wait_condition(workflow.all_handlers_finished)
            # A signal during the last clean-up (an orphaned revision deleted meanwhile)
            # reports a change that clean-up did not see: look again before ending.
            if not (self._s.dirty and workflow.patched(PATCH_GONE_LOOKS_AGAIN)):
                break
            self._gone = False
        return c.PackageResult(kind=inp.kind, name=inp.name, gone=True,
                               installs=self._s.installs)

    async def _run_until_gone(self, inp: c.PackageInput) -> None:
        """Wait for work and run passes until the package is gone; continue as new when
        suggested."""
        while not self._gone:
            if self._updates_waiting == 0 and workflow.info().is_continue_as_new_suggested():
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.logger.info("continue as new passes=%d", self._s.passes,
                                     extra=self._log_fields())
                workflow.continue_as_new(replace(inp, state=self._s))
            await self._wait_for_work()
            await self._reconcile()

    # --- handlers: record intent only ---------------------------------------------------
    @workflow.signal(name=c.SIGNAL_LOOK_AGAIN)
    def look_again(self, inp: c.LookAgainInput) -> None:
        """Mark the package dirty; the loop re-reads it."""
        self._s = replace(self._s, dirty=True, signals_seen=self._s.signals_seen + 1)

    @workflow.signal(name=c.SIGNAL_REQUEST_APPROVAL)
    def request_approval(self, inp: c.ApproveRevisionInput | str) -> None:
        """Record an approval without waiting (no worker needed; nothing validated)."""
        self._approve(c.approval(inp), via="signal")

    @workflow.update(name=c.UPDATE_APPROVE_REVISION)
    async def approve_revision(self, raw: c.ApproveRevisionInput | str
                               ) -> c.ApproveRevisionResult:
        """Approve ``inp.revision`` (Manual policy) and return once it is active.

        Raises:
            ApplicationError: the switch to it failed permanently or the package was deleted.
        """
        inp = c.approval(raw)
        if self._s.generation == 0:
            # Accepted before this run's state holds the package (see the validator): judged
            # once a pass has read it.
            await workflow.wait_condition(lambda: self._s.generation != 0 or self._gone)
            if problem := self._approval_problem(inp):
                raise ApplicationError(problem, type="ActivationRefused")  # a client reads it
        self._approve(inp, via="update")
        self._updates_waiting += 1
        try:
            await workflow.wait_condition(
                lambda: self._settled_active == inp.revision
                or inp.revision in self._approval_errors or self._gone)
        finally:
            self._updates_waiting -= 1
        if self._settled_active == inp.revision:
            return c.ApproveRevisionResult(revision=inp.revision, active=True,
                                           message=f"revision {inp.revision} is active")
        reason = self._approval_errors.get(inp.revision, "the package was deleted")
        raise ApplicationError(reason, type="ActivationFailed")  # a client reads it

    @approve_revision.validator
    def _validate_approval(self, raw: c.ApproveRevisionInput | str) -> None:
        # A state that has not read the package yet (generation 0) cannot judge: a pass whose
        # workflow task timed out under load has written the package's status through its
        # local activities while its record, the policy read included, was lost with the
        # task; refusing then said "Automatic" of a Manual package. The handler judges it.
        if self._s.generation != 0 and (problem := self._approval_problem(c.approval(raw))):
            raise ValueError(problem)

    def _approval_problem(self, inp: c.ApproveRevisionInput) -> str | None:
        if self._s.policy != c.MANUAL:
            return f"revisionActivationPolicy is {self._s.policy}; nothing to approve"
        if inp.revision not in self._s.revisions:
            return f"unknown revision {inp.revision!r}"
        if inp.revision != self._s.current_revision:
            return (f"revision {inp.revision!r} is not the current revision "
                    f"{self._s.current_revision!r}")
        return None

    @workflow.query(name=c.QUERY_PLAN)
    def plan(self) -> Plan | None:
        """The plan of the last prepared upgrade (None before any)."""
        return self._s.plan

    @workflow.query(name=c.QUERY_STATUS)
    def status(self) -> c.PackageStatusResult:
        """Return a small summary of progress."""
        s = self._s
        return c.PackageStatusResult(
            kind=self._inp.kind, name=self._inp.name, phase=s.phase, idle=self._idle,
            policy=s.policy, source=s.source, digest=s.digest,
            current_revision=s.current_revision, active_revision=s.active_revision,
            revisions=s.revisions, healthy=s.healthy, installs=s.installs, passes=s.passes,
            signals_seen=s.signals_seen, retry_attempt=s.retry_attempt,
            last_error=s.last_error, last_error_type=s.last_error_type,
            next_retry_at=s.next_retry_at)

    # --- the loop -----------------------------------------------------------------------
    async def _wait_for_work(self) -> None:
        self._idle = not self._s.dirty
        try:
            wake = timedelta(seconds=self._s.wake_after_s) if self._s.wake_after_s else None
            await workflow.wait_condition(lambda: self._s.dirty, timeout=wake,
                                          timeout_summary="retry or re-check health")
        except TimeoutError:
            pass  # backoff or health re-check elapsed: run a pass without a signal
        self._idle = False
        self._s = replace(self._s, dirty=False, passes=self._s.passes + 1)

    async def _reconcile(self) -> None:
        try:
            await self._pass()
        except (ActivityError, ChildWorkflowError, WorkflowAlreadyStartedError) as err:
            failure = (classify(err) if not isinstance(err, WorkflowAlreadyStartedError)
                       else Failure("WorkflowAlreadyStarted", str(err), False))
            if failure.type == c.OBJECT_GONE:
                self.wait_for_gone(failure.message)
            else:
                await self._record_failure(failure)

    async def _pass(self) -> None:
        pkg = await self._read()
        await self._reconcile_package(pkg)
        if pkg.found and pkg.pull_policy == "Always" and not self._gone:
            # Re-resolve the tag on a timer: a moved tag is an upgrade like any other.
            every = self._inp.tuning.pull_always_s
            wake = self._s.wake_after_s
            self._s = replace(self._s, wake_after_s=min(wake, every) if wake else every)

    async def _reconcile_package(self, pkg: c.ReadPackageResult) -> None:
        if pkg.found and pkg.paused:
            await self._pause(pkg)
            return
        if not pkg.found or pkg.deleting:
            await self._clean_up(pkg)
            return
        self._meet(pkg)
        if pkg.synced_paused:  # the pause annotation is gone: resume
            await self.write_status([], "", drop=[SYNCED])
            if workflow.patched(PATCH_RESUME_REINSTALLS):
                # As a resumed Crossplane reconciles in full: what changed while paused
                # (an object deleted, a role edited) is put back.
                self._s = replace(self._s, installed_key="")
        self._s = replace(self._s, policy=pkg.activation_policy, generation=pkg.generation,
                          source=pkg.source, active_revision=pkg.active_revision,
                          revisions=_merge(self._s.revisions, pkg.revisions))
        resolved, ensured = await self._resolve_and_ensure(pkg)
        rev = ensured.revision
        approved = ensured.desired_state == c.ACTIVE or self._s.approved_revision == rev
        step = self._upgrader.next_step(pkg, rev, approved)
        await self._upgrader.audit(pkg, rev, step, by_hand=self._s.approved_revision != rev)
        current = Install(rev, _source(pkg, resolved), resolved.digest, True)
        if self._upgrader.upgrading(pkg, step):
            await self._upgrader.upgrade(pkg, current, step)
        else:
            await self._install_current(pkg, ensured, current, approved)

    async def _install_current(self, pkg: c.ReadPackageResult, ensured: c.EnsureRevisionResult,
                               current: Install, approved: bool) -> None:
        """Nothing else runs (a first install), or the current revision is the active one."""
        inp, rev = self._inp, current.revision
        # Manual: the approved revision, or one an operator set Active by hand, is active.
        active = pkg.activation_policy != c.MANUAL or approved
        if active and (ensured.desired_state != c.ACTIVE or pkg.active_revision != rev):
            # Created Active just now (PATCH_FIRST_REVISION_ACTIVE), the package's only
            # revision (so not the one it read as active): nothing to hand over.
            if not (ensured.created and ensured.desired_state == c.ACTIVE):
                # Nothing to hand over when this is the only revision: a quick local step.
                await self.activity(c.SET_ACTIVE_REVISION, c.SetActiveRevisionInput(
                    kind=inp.kind, package=inp.name, revision=rev),
                    c.SetActiveRevisionResult, f"activate {rev}",
                    small=set(pkg.revisions) <= {rev})
            self._s = replace(self._s, active_revision=rev)
        key = f"{rev}/{pkg.generation}/{'active' if active else 'inactive'}"
        # An MRD activated since (a policy, by hand) needs its CRD and may wake a
        # safe-start runtime: the revision records another count than was installed.
        activated = (active and pkg.active_definitions >= 0
                     and pkg.active_definitions != self._s.active_definitions)
        # A DeploymentRuntimeConfig changed since (its generation): the runtime is rendered
        # again, as Crossplane's revision reconciler does. "" recorded: not known yet.
        reconfigured = self._s.runtime_config not in ("", pkg.runtime_config)
        if (key != self._s.installed_key or not self._s.healthy or ensured.fresh or activated
                or reconfigured):
            fresh = key not in (self._s.installed_key, self._s.attempted_key)
            # Say "installing" first: a health wait can take minutes. Only for a new key: a
            # re-attempt leaves the last outcome (a refusal, an outage being retried, an
            # unhealthy runtime) on the status until it has a new one. Runs started before
            # this change replay the old way (said it on every attempt).
            if fresh or not workflow.patched(PATCH_KEEP_LAST_OUTCOME):
                await self.write_status(conditions.package_installing(active), current.source)
            self._s = replace(self._s, attempted_key=key)
            result = await self.install(pkg, replace(current, active=active))
            if result.gone:
                self.wait_for_gone(f"{rev} or its package went away while installing")
                return
            self._s = replace(self._s, installed_key=key, healthy=result.healthy,
                              active_definitions=result.active_definitions,
                              health_message=result.message, installs=self._s.installs + 1,
                              dependencies_unmet=result.dependencies_unmet)
        self._s = replace(self._s, runtime_config=pkg.runtime_config)
        await self.collect(pkg, rev)
        await self.write_status(conditions.package_ok(
            active, self._s.healthy, self._s.health_message, self._s.dependencies_unmet),
            current.source)
        self.settle(active, rev)

    async def _resolve_and_ensure(
            self, pkg: c.ReadPackageResult) -> tuple[c.ResolveDigestResult, c.EnsureRevisionResult]:
        inp = self._inp
        resolved = await self.activity(c.RESOLVE_DIGEST, c.ResolveDigestInput(
            kind=inp.kind, name=inp.name, source=pkg.source), c.ResolveDigestResult,
            f"resolve {pkg.source}")
        first = (pkg.activation_policy != c.MANUAL and not pkg.revisions
                 and workflow.patched(PATCH_FIRST_REVISION_ACTIVE))
        ensured = await self.activity(c.ENSURE_REVISION, c.EnsureRevisionInput(
            kind=inp.kind, package=inp.name, source=pkg.source, digest=resolved.digest,
            generation=pkg.generation, active_if_first=first), c.EnsureRevisionResult,
            f"ensure revision for {resolved.digest[:19]}")
        self._s = replace(self._s, digest=resolved.digest, current_revision=ensured.revision,
                          revisions=_merge(self._s.revisions, [ensured.revision]))
        self._upsert(_source(pkg, resolved), resolved.digest, ensured.revision)
        return resolved, ensured

    async def collect(self, pkg: c.ReadPackageResult, rev: str) -> None:
        """Delete the revisions beyond ``spec.revisionHistoryLimit``, never ``rev``."""
        limit = pkg.revision_history_limit
        if limit <= 0 or len(_merge(pkg.revisions, [rev])) <= limit + 1:
            return  # 0 turns collection off; otherwise only call when there is work
        collected = await self.activity(c.COLLECT_REVISIONS, c.CollectRevisionsInput(
            kind=self._inp.kind, package=self._inp.name, current_revision=rev, keep=limit),
            c.CollectRevisionsResult, f"collect revisions beyond {limit}")
        self._s = replace(self._s, revisions=[r for r in self._s.revisions
                                              if r not in collected.deleted])

    async def _pause(self, pkg: c.ReadPackageResult) -> None:
        """``crossplane.io/paused: "true"``: say so and do nothing else (docs/crossplane.md §1)."""
        self._s = replace(self._s, phase="Paused", generation=pkg.generation, wake_after_s=0.0)
        await self.write_status([conditions.reconcile_paused()], "")
        workflow.set_current_details("**paused** by the crossplane.io/paused annotation")

    def _meet(self, pkg: c.ReadPackageResult) -> None:
        """Forget what was installed for an earlier object of the same name."""
        s = self._s
        if s.uid and s.uid != pkg.uid:
            workflow.logger.info("new package object uid=%s (was %s)", pkg.uid, s.uid,
                                 extra=self._log_fields())
            s = c.PackageState(dirty=s.dirty, signals_seen=s.signals_seen, passes=s.passes,
                               installs=s.installs)
        self._s = replace(s, uid=pkg.uid)

    async def _read(self, step: bool = True) -> c.ReadPackageResult:
        inp = self._inp
        return await self.activity(
            c.READ_PACKAGE, c.ReadPackageInput(kind=inp.kind, name=inp.name),
            c.ReadPackageResult, f"read {inp.kind} {inp.name}", step=step)

    async def _clean_up(self, pkg: c.ReadPackageResult) -> None:
        inp = self._inp
        done = await self.activity(c.CLEANUP_PACKAGE, c.CleanupPackageInput(
            kind=inp.kind, name=inp.name), c.CleanupPackageResult,
            f"clean up after {inp.kind} {inp.name}")
        if pkg.found or done.waiting:
            self._deleting(pkg, done)
            return
        self._gone = True
        self._s = replace(self._s, phase="Deleted")
        workflow.set_current_details(f"**deleted**; {done.orphaned} orphaned revision(s) left"
                                     if done.orphaned else "**deleted**")

    def _deleting(self, pkg: c.ReadPackageResult, done: c.CleanupPackageResult) -> None:
        """Kubernetes is still deleting: nothing to do but look again when it has."""
        # While the object exists the watcher (and its resyncs) signal every change; once
        # it is gone only revision events do, so a timer backs them up, with backoff.
        checks = 0 if pkg.found else self._s.gone_checks + 1
        wake = 0.0 if pkg.found else doubled(
            self._inp.tuning.gone_recheck_s, checks, self._inp.tuning.backoff_max_s)
        self._s = replace(self._s, phase="Deleting", gone_checks=checks, wake_after_s=wake,
                          retry_attempt=0, last_error="", last_error_type="", next_retry_at="")
        workflow.set_current_details(
            f"**deleting**: {done.waiting} revision(s) left for Kubernetes to remove")

    def wait_for_gone(self, message: str) -> None:
        """A step found its package or revision gone: look again on the next signal."""
        workflow.logger.info("object gone, waiting for the next signal: %s", message,
                             extra=self._log_fields())
        self._s = replace(self._s, wake_after_s=self._inp.tuning.gone_recheck_s)
        workflow.set_current_details(f"**waiting**: {message[:160]}")

    async def install(self, pkg: c.ReadPackageResult, it: Install) -> c.InstallRevisionResult:
        """Run the ``InstallRevision`` child for ``it`` and return its result."""
        inp = self._inp
        self._step = "InstallRevision"
        self._s = replace(self._s, phase="Preparing" if it.prepare else "Installing")
        workflow.set_current_details(f"**{it.summary}**")
        child = await workflow.start_child_workflow(
            InstallRevision.run,
            c.InstallRevisionInput(
                kind=inp.kind, package=inp.name, revision=it.revision,
                source=it.source, digest=it.digest,
                active=it.active, ignore_crossplane_constraints=pkg.ignore_crossplane_constraints,
                skip_dependency_resolution=pkg.skip_dependency_resolution, tuning=inp.tuning,
                generation=pkg.generation, identifier=pkg.source, prepare=it.prepare,
                health_deadline_s=it.deadline_s,
                against=pkg.active_revision if it.prepare else "",
                against_digest=pkg.active_digest if it.prepare else "",
                checked=list(it.checked), parsed=it.parsed, size=it.size),
            id=ids.revision_id(inp.kind, it.revision),
            static_summary=f"{it.summary} ({inp.kind})",
            parent_close_policy=workflow.ParentClosePolicy.REQUEST_CANCEL,
            search_attributes=TypedSearchAttributes([
                SearchAttributePair(c.SA_PACKAGE_KIND, inp.kind),
                SearchAttributePair(c.SA_PACKAGE_NAME, inp.name),
                SearchAttributePair(c.SA_PACKAGE_SOURCE, it.source),
                SearchAttributePair(c.SA_PACKAGE_DIGEST, it.digest),
                SearchAttributePair(c.SA_REVISION, it.revision)]),
        )
        return await self._follow(child)

    async def _follow(self, child: workflow.ChildWorkflowHandle[
            InstallRevision, c.InstallRevisionResult]) -> c.InstallRevisionResult:
        """The install's result; on a signal, cancel it if the package is being deleted."""
        while True:
            await workflow.wait_condition(lambda: child.done() or self._s.dirty)
            if child.done() or not workflow.patched(PATCH_DELETION_STOPS_INSTALL):
                return await child
            pkg = await self._read(step=False)
            if pkg.found and not pkg.deleting:
                return await child  # the package lives; the next pass sees the change
            child.cancel()
            try:
                await child
            except (ChildWorkflowError, asyncio.CancelledError):
                pass  # cancelled between two steps, as asked
            return c.InstallRevisionResult(revision=child.id, gone=True)

    def settle(self, active: bool, rev: str) -> None:
        """End the pass with ``rev`` installed (``active``: in control); an update waiting
        for ``rev`` to be active returns."""
        phase = ("Healthy" if self._s.healthy else "WaitingForDependencies"
                 if self._s.dependencies_unmet else "Unhealthy") if active else "Inactive"
        # An unhealthy runtime is re-checked later even if no signal comes.
        wake = 0.0 if self._s.healthy else self._inp.tuning.unhealthy_recheck_s
        self._s = replace(self._s, retry_attempt=0, last_error="", last_error_type="",
                          next_retry_at="", phase=phase, wake_after_s=wake)
        if active:
            self._settled_active = rev
        approved = (f"; approved by {self._s.approved_by} at {self._s.approved_at}"
                    if self._s.recorded_approval == rev else "")
        workflow.set_current_details(
            f"**{phase}** `{rev}` digest `{self._s.digest[:19]}`{approved}")

    async def _record_failure(self, failure: Failure) -> None:
        attempt = 0 if failure.permanent else self._s.retry_attempt + 1
        wake = None if failure.permanent else loop_backoff(self._inp.tuning, attempt)
        phase = "Failed" if failure.permanent else "Retrying"
        next_at = (workflow.now() + wake).isoformat(timespec="seconds") if wake else ""
        self._s = replace(self._s, retry_attempt=attempt, last_error=failure.message,
                          last_error_type=failure.type, phase=phase, next_retry_at=next_at,
                          wake_after_s=wake.total_seconds() if wake else 0.0)
        if failure.permanent and self._s.approved_revision:
            self.fail_approval(self._s.approved_revision, failure.message)
        step = failure.step or self._step
        workflow.logger.warning("pass failed step=%s type=%s permanent=%s attempt=%d",
                                step, failure.type, failure.permanent, attempt,
                                extra=self._log_fields())
        retry = f" (attempt {attempt}, next retry at {next_at})" if wake else ""
        workflow.set_current_details(f"**{phase}** at {step}{retry}: {failure.message[:120]}")
        written = conditions.package_failed(step, failure.message, wake, attempt)
        try:
            await self.write_status(written, "")
        except ActivityError:
            # Writing status needs the API that may be down; the next pass tries again.
            workflow.logger.warning("could not write failure status step=%s", step,
                                    extra=self._log_fields())

    async def write_status(self, conds: list[c.Condition], resolved: str,
                           drop: list[str] | None = None) -> None:
        """Write the package's status: ``conds`` set, ``drop`` removed, ``resolved`` the
        reference pulled ("" when not known)."""
        s = self._s
        await self.activity(c.WRITE_PACKAGE_STATUS, c.WritePackageStatusInput(
            kind=self._inp.kind, name=self._inp.name, observed_generation=s.generation,
            current_revision=s.current_revision, current_identifier=s.source,
            resolved_package=resolved, conditions=conds, drop=drop or []),
            c.WritePackageStatusResult, f"status of {self._inp.kind} {self._inp.name}",
            step=False)

    async def activity(self, name: str, arg: object, result_type: type[R], summary: str,
                       step: bool = True, small: bool = False) -> R:
        """Run activity ``name`` (see :func:`workflows.calls.call`); ``step``: its failure
        is reported as the pass's failed step."""
        if step:
            self._step = name
        return await call(name, arg, result_type, summary, self._inp.tuning, small)

    def fail_approval(self, rev: str, reason: str) -> None:
        """Answer an approval of ``rev`` waiting for it: it failed, because of ``reason``."""
        self._approval_errors[rev] = reason

    # --- small helpers ------------------------------------------------------------------
    def _approve(self, inp: c.ApproveRevisionInput, via: str) -> None:
        self._approval_errors.pop(inp.revision, None)
        self._s = replace(self._s, approved_revision=inp.revision, dirty=True, approved_via=via,
                          approved_by=inp.by, approved_at=workflow.now().isoformat(),
                          approved_run_id=workflow.info().run_id,
                          accepted_plan=inp.revision if inp.accept_plan
                          else self._s.accepted_plan)

    def _log_fields(self) -> dict[str, str]:
        """``extra`` of this workflow's log lines: which package, which revision."""
        return {"kind": self._inp.kind, "package": self._inp.name,
                "revision": self._s.current_revision}

    def _identify(self) -> None:
        # The watcher sets kind and name at start; set them here too for hand-started runs.
        inp = self._inp
        self._upsert_changed([(c.SA_PACKAGE_KIND, inp.kind), (c.SA_PACKAGE_NAME, inp.name)])

    def _upsert(self, source: str, digest: str, revision: str) -> None:
        self._upsert_changed([(c.SA_PACKAGE_SOURCE, source), (c.SA_PACKAGE_DIGEST, digest),
                              (c.SA_REVISION, revision)])

    def _upsert_changed(self, pairs: list[tuple[SearchAttributeKey[str], str]]) -> None:
        # Upserting only on change keeps repeated passes from adding history events.
        current = workflow.info().typed_search_attributes
        changed = [key.value_set(value) for key, value in pairs if current.get(key) != value]
        if changed:
            workflow.upsert_search_attributes(changed)


def _merge(known: list[str], more: list[str]) -> list[str]:
    """Known revisions plus new ones, order kept (no sets: iteration order must be fixed)."""
    return known + [r for r in more if r not in known]


def _source(pkg: c.ReadPackageResult, resolved: c.ResolveDigestResult) -> str:
    """The reference actually pulled: an ImageConfig may have rewritten ``spec.package``."""
    return resolved.resolved_source or pkg.source
