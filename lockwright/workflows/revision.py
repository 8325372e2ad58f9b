"""``InstallRevision``: install one package revision, step by step (docs/crossplane.md §10).

Child of ``PackageWorkflow``, id ``revision:<kind>:<revision>``, so one revision is never
installed twice at once. Steps, each an idempotent activity: fetch into the cache → parse,
validate, lint → Crossplane version check (a switch takes its preparation's, moments old)
→ take the Lock (dependencies recorded) → TLS (active Providers/Functions), establish
objects and RBAC (Providers), side by side → runtime → wait healthy → write the revision's
status (an active install or switch that ends healthy writes the package's Healthy beside
it; an install's parent's write then finds nothing to change, a switch's parent makes none).
An upgrade's preparation (``prepare``) changes nothing but the revision's metadata and
status: fetch → the parse (then the version check and the Lock's check) beside the dry run
of every write and the plan → the revision's status.

**Health wait.** ``check_health`` watches the runtime's Deployment for a window of at most
``HEALTH_WATCH_S`` and answers as soon as it is Available, again until the polls' span
(``Tuning.health_polls`` × ``health_poll_s``, or a switch's deadline) is spent; only a
window it could not watch is followed by a durable timer of ``health_poll_s`` (the poll,
kept as the fallback; runs before PATCH_HEALTH_WATCH polled only). Short windows rather
than one long heartbeating activity because each look is visible in the UI, a changed
runtime message goes onto the revision's and the package's status between windows, no
worker slot is held for minutes, and cancellation needs no heartbeat (docs/design.md,
"Health as it happens"). A runtime that never becomes healthy is not an error: the revision is
installed, its ``RuntimeHealthy`` is False with the runtime's own message, and the parent
re-checks later.

**Gone.** A step that finds the revision or its package gone or being deleted raises
``ObjectGone``; the install stops there, writes nothing, and returns ``gone=True``.

**Failure.** The failing step's error goes onto the revision's status, then the child fails
with an ``ApplicationError`` of the same type and retryability; the parent decides whether
to retry the whole child (every step is idempotent, and the fetch hits the cache).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, cast

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from lockwright import contracts as c
    from lockwright.contracts import metrics
    from lockwright.conditions import MSG_AWAITING_ACTIVATION
    from lockwright.managed.convert import awaiting_activation
    from lockwright.upgrade.plan import Plan
    from lockwright.workflows import status
    from lockwright.workflows.calls import (
        PATCH_LOCAL_STEPS,
        Failure,
        R,
        call,
        classify,
        is_cancellation,
    )


# workflow.patched() ids. A revision whose dependencies are missing or invalid stops after
# the Lock and says so (runs before: installed regardless). skipDependencyResolution still
# takes the Lock, without dependencies, so its claim on objects counts (before: no Lock).
PATCH_DEPENDENCY_GATE = "dependency-gate"
PATCH_SKIP_KEEPS_CLAIM = "skip-dependencies-keeps-claim"
# A prepared upgrade is planned (plan_revision) before its status is written.
PATCH_UPGRADE_PLAN = "upgrade-plan"
# The plan of a small package (package.yaml within Tuning.local_max_bytes) is a local step,
# as its parse and dry run are; runs before queued it.
PATCH_LOCAL_PLAN = "local-plan"
# The health wait watches the runtime (check_health with watch_s) and polls only when a
# watch fails (docs/design.md, "Health as it happens"); runs before polled every
# Tuning.health_poll_s.
PATCH_HEALTH_WATCH = "health-watch"
#: The longest window one check_health watches: within the workflow task's timeout (10 s),
#: since check_health runs as a local activity.
HEALTH_WATCH_S = 5.0
# Between two watch windows the workflow task ends on a timer this short: local activities
# otherwise keep one workflow task open for the whole wait (up to a switch's deadline), and
# a worker draining for shutdown waited for it (minutes, not its graceful 20 s). Runs
# started before this change replay without the timer.
PATCH_HEALTH_WINDOW_GAP = "health-window-gap"
HEALTH_WINDOW_GAP_S = 0.05
# TLS, the objects and RBAC of a revision in the Lock are established side by side: none
# reads what another writes, and the runtime, which needs all three, starts after them
# (docs/design.md, "TLS, objects and RBAC side by side"). Runs before: one after another.
PATCH_ESTABLISH_TOGETHER = "establish-together"
# An active install that ends healthy writes the package's Healthy beside the revision's,
# as Crossplane's package follows its current revision's health (docs/crossplane.md §9
# step 10), instead of leaving it to the parent once the child has ended (docs/design.md,
# "Health as it happens"). A switch's since PATCH_SWITCH_HEALTHY_BESIDE. Runs before: the
# revision's status only.
PATCH_PACKAGE_HEALTHY_BESIDE = "package-healthy-beside"
# An upgrade's preparation runs the Lock's check, the dry run and the plan side by side:
# none writes anything (docs/design.md, "One dry run per switch-over"). Runs before: one
# after another, the check first.
PATCH_PREPARE_TOGETHER = "prepare-together"
# A switch takes its preparation's parse (and the package's size) instead of fetching and
# parsing again: the same digest on the same revision, fetched, parsed, recorded, linted
# and version-checked moments before in the same pass. Runs before (and a switch handed
# no parse): fetch, parse and check again.
PATCH_SWITCH_TAKES_PARSE = "switch-takes-parse"
# A switch that ends healthy writes the package's Healthy beside its revision's status, as
# an install does (PATCH_PACKAGE_HEALTHY_BESIDE), and says so in its result
# (``package_healthy``): its parent then goes straight to retiring the old revision
# (docs/design.md, "Health as it happens"). Runs before: the parent wrote it first.
PATCH_SWITCH_HEALTHY_BESIDE = "switch-healthy-beside"
# An upgrade's preparation parses beside the dry run and the plan, which read the fetched
# contents and nothing the parse writes; Crossplane's version (the parse's) and the Lock's
# check (only of a package that parsed) follow the parse in its lane (docs/design.md, "One
# dry run per switch-over"). Runs before: the parse and the version check first, then the
# other three side by side.
PATCH_PREPARE_BESIDE_PARSE = "prepare-beside-parse"
_EPSILON_S = 1e-6


@dataclass
class _Lane:
    """Steps run one after another beside others: a failure is named after the one it
    failed in."""

    step: str = ""


@dataclass(frozen=True)
class _Step:
    """One activity call of the steps before the runtime."""

    name: str
    arg: object
    result_type: type[object]
    summary: str


@workflow.defn
class InstallRevision:
    """Installs one revision; returns counts and health, or fails with a typed error."""

    def __init__(self) -> None:
        self._step = ""
        self._began = 0.0  # workflow time the install began, for its duration metric
        self._small = False  # package.yaml fetched and within Tuning.local_max_bytes
        self._size = 0  # package.yaml's size, as fetched
        self._locked = c.TakeLockResult()  # dependencies as the Lock saw them

    @workflow.run
    async def run(self, inp: c.InstallRevisionInput) -> c.InstallRevisionResult:
        """Run the install steps; see the module docstring."""
        self._began = workflow.time()
        metrics.install_started(workflow.metric_meter(), inp.kind, _mode(inp))
        try:
            result = await self._install(inp)
        except ActivityError as err:
            if is_cancellation(err):
                raise
            failure = classify(err)
            if failure.type == c.OBJECT_GONE:
                # The revision or its package went away: nothing to write it on, nothing
                # to retry; the parent looks again.
                workflow.set_current_details(f"**stopped**: {failure.message[:160]}")
                return c.InstallRevisionResult(revision=inp.revision, digest=inp.digest,
                                               gone=True, message=failure.message)
            await self._write_failure(inp, failure)
            self._finished(inp, failure.type)
            raise ApplicationError(status.prefixed(self._step, failure.message), self._step,
                                   type=failure.type, non_retryable=failure.permanent) from err
        if not result.dependencies_unmet:  # waiting for its dependencies: not over yet
            self._finished(inp, "" if result.healthy else metrics.UNHEALTHY)
        return result

    def _finished(self, inp: c.InstallRevisionInput, error_type: str) -> None:
        metrics.install_finished(workflow.metric_meter(), inp.kind, _mode(inp),
                                 workflow.time() - self._began, error_type)

    async def _install(self, inp: c.InstallRevisionInput) -> c.InstallRevisionResult:
        if inp.prepare and workflow.patched(PATCH_PREPARE_BESIDE_PARSE):
            return await self._prepared_beside_parse(inp)
        parsed = await self._contents(inp)
        if inp.prepare and workflow.patched(PATCH_PREPARE_TOGETHER):
            return await self._prepared_together(inp, parsed)
        await self._take_lock(inp)
        dependencies = self._locked.dependencies
        if inp.prepare:
            return await self._prepared(inp, parsed)
        if not await self._dependencies_met(inp):
            return await self._unmet(inp)
        # TLS only after the Lock: a package that loses the Lock must have touched nothing.
        runtime = inp.kind in c.KINDS_WITH_RUNTIME and inp.active
        steps = self._establish_steps(inp, parsed, runtime)
        # RBAC renders the types of the revision's claim (status.objectRefs), which the Lock
        # take wrote; a revision outside the Lock (inactive) has only what establish writes.
        if self._locked.resource_version and workflow.patched(PATCH_ESTABLISH_TOGETHER):
            established = await self._together(inp, steps)
        else:
            established = await self._in_turn(inp, steps)
        health = c.CheckHealthResult(healthy=True)
        if runtime:
            awaiting = awaiting_activation(parsed.capabilities, established.definitions,
                                           established.active_definitions)
            ensured = await self._run(inp, c.ENSURE_RUNTIME, c.EnsureRuntimeInput(
                kind=inp.kind, package=inp.package, revision=inp.revision, source=inp.source,
                digest=inp.digest, awaiting_activation=awaiting), c.EnsureRuntimeResult,
                f"runtime for {inp.package}" + (" (awaiting activation)" if awaiting else ""))
            # Safe-start at zero replicas counts as healthy (Crossplane's AwaitingActivation).
            health = (c.CheckHealthResult(healthy=True, message=MSG_AWAITING_ACTIVATION)
                      if ensured.scaled_to_zero else await self._wait_healthy(inp, ensured))
        beside = await self._write_outcome(inp, status.revision_ok(runtime, health.healthy,
                                                                   health.message),
                                           health, established.objects, parsed.capabilities)
        workflow.set_current_details(f"**installed** `{inp.revision}` healthy={health.healthy}")
        return c.InstallRevisionResult(revision=inp.revision, digest=inp.digest,
                                       objects=established.objects, dependencies=dependencies,
                                       healthy=health.healthy, message=health.message,
                                       active_definitions=established.active_definitions,
                                       package_healthy=beside)

    async def _contents(self, inp: c.InstallRevisionInput) -> c.ParsePackageResult:
        """Fetch, parse and lint, check Crossplane's version; or, a switch handed its
        preparation's parse, take it (``PATCH_SWITCH_TAKES_PARSE``)."""
        if inp.parsed is not None and workflow.patched(PATCH_SWITCH_TAKES_PARSE):
            self._size = inp.size
            self._small = inp.size <= inp.tuning.local_max_bytes
            return inp.parsed
        parsed = await self._parse(inp, await self._fetch(inp))
        await self._check_crossplane(inp, parsed)
        return parsed

    async def _fetch(self, inp: c.InstallRevisionInput) -> str:
        """Fetch the package into the worker's cache; its digest. Whether it is small
        follows from its size."""
        fetched = await self._run(inp, c.FETCH_PACKAGE, c.FetchPackageInput(
            kind=inp.kind, package=inp.package, revision=inp.revision, source=inp.source,
            digest=inp.digest), c.FetchPackageResult, f"fetch {inp.digest[:19]}")
        self._size = fetched.size
        self._small = fetched.size <= inp.tuning.local_max_bytes
        return fetched.digest

    async def _parse(self, inp: c.InstallRevisionInput, digest: str) -> c.ParsePackageResult:
        """Parse and lint the fetched package; its lint warnings go to the log."""
        parsed = await self._run(inp, c.PARSE_PACKAGE, c.ParsePackageInput(
            kind=inp.kind, revision=inp.revision, digest=digest),
            c.ParsePackageResult, f"parse and lint {inp.revision}")
        if parsed.warnings:
            workflow.logger.info("lint warnings revision=%s count=%d first=%s",
                                 inp.revision, parsed.warnings, parsed.first_warnings[:1],
                                 extra=_log_fields(inp))
        return parsed

    async def _check_crossplane(self, inp: c.InstallRevisionInput,
                                parsed: c.ParsePackageResult) -> None:
        """The package's Crossplane version constraint, unless told to ignore it."""
        if parsed.crossplane_constraint and not inp.ignore_crossplane_constraints:
            await self._run(inp, c.CHECK_CROSSPLANE_VERSION, c.CheckCrossplaneVersionInput(
                revision=inp.revision, constraint=parsed.crossplane_constraint),
                c.CheckCrossplaneVersionResult, f"crossplane {parsed.crossplane_constraint}")

    def _establish_steps(self, inp: c.InstallRevisionInput, parsed: c.ParsePackageResult,
                         runtime: bool) -> list[_Step]:
        """TLS (a runtime's), the objects, RBAC (a Provider's): what the runtime needs."""
        steps = [_Step(c.ESTABLISH_OBJECTS, c.EstablishObjectsInput(
            kind=inp.kind, package=inp.package, revision=inp.revision, digest=inp.digest,
            control=inp.active, trust=inp.checked), c.EstablishObjectsResult,
            f"establish {parsed.objects} objects ({'control' if inp.active else 'owner'})")]
        if runtime:
            steps.insert(0, _Step(c.ENSURE_TLS, c.EnsureTlsInput(
                kind=inp.kind, package=inp.package, revision=inp.revision),
                c.EnsureTlsResult, f"tls secrets for {inp.package}"))
        if inp.kind == c.PROVIDER:
            steps.append(_Step(c.ENSURE_RBAC, c.EnsureRbacInput(
                kind=inp.kind, package=inp.package, revision=inp.revision, digest=inp.digest,
                active=inp.active), c.EnsureRbacResult, f"rbac for {inp.revision}"))
        return steps

    async def _in_turn(self, inp: c.InstallRevisionInput,
                       steps: list[_Step]) -> c.EstablishObjectsResult:
        """Runs before PATCH_ESTABLISH_TOGETHER: one step after another."""
        results = [await self._run(inp, s.name, s.arg, s.result_type, s.summary)
                   for s in steps]
        return next(r for r in results if isinstance(r, c.EstablishObjectsResult))

    async def _together(self, inp: c.InstallRevisionInput,
                        steps: list[_Step]) -> c.EstablishObjectsResult:
        """The steps side by side; each is awaited to its end before a failure is raised,
        and the failure named is the first step's in the flow's order (docs/design.md,
        "TLS, objects and RBAC side by side")."""
        self._step = "+".join(s.name for s in steps)
        workflow.set_current_details(f"**{self._step}** `{inp.revision}`")
        results = await self._side_by_side([
            (s.name, call(s.name, s.arg, s.result_type, s.summary, inp.tuning, self._small))
            for s in steps])
        return next(r for r in results if isinstance(r, c.EstablishObjectsResult))

    async def _side_by_side(self, steps: list[tuple[str | _Lane, Awaitable[Any]]]
                            ) -> list[Any]:
        """Await ``steps`` at once, each to its end; then raise the first failure in their
        order, naming its step (a lane's: the step it failed in)."""
        results = await asyncio.gather(*(aw for _, aw in steps), return_exceptions=True)
        for (name, _), result in zip(steps, results, strict=True):
            if isinstance(result, BaseException):
                self._step = name.step if isinstance(name, _Lane) else name
                raise result
        return list(results)

    async def _prepared(self, inp: c.InstallRevisionInput,
                        parsed: c.ParsePackageResult) -> c.InstallRevisionResult:
        """An upgrade's preparation before PATCH_PREPARE_TOGETHER (the Lock checked
        already): every object write dry-run as if active, then the plan; no runtime."""
        checked = await self._dry_run(inp, parsed)
        return await self._record_prepared(inp, parsed, checked, await self._plan(inp))

    async def _prepared_together(self, inp: c.InstallRevisionInput,
                                 parsed: c.ParsePackageResult) -> c.InstallRevisionResult:
        """An upgrade's preparation: the Lock's check, the dry run and the plan side by
        side, each awaited to its end; a failure is named after the first step in the
        flow's order, as "TLS, objects and RBAC side by side" does (docs/design.md)."""
        _, checked, plan = await self._side_by_side([
            (c.TAKE_LOCK, self._take_lock(inp)), (c.ESTABLISH_OBJECTS, self._dry_run(inp, parsed)),
            (c.PLAN_REVISION, self._plan(inp))])
        return await self._record_prepared(inp, parsed, cast(c.EstablishObjectsResult, checked),
                                           cast(Plan | None, plan))

    async def _prepared_beside_parse(self, inp: c.InstallRevisionInput
                                     ) -> c.InstallRevisionResult:
        """An upgrade's preparation: the fetch, then the parse (Crossplane's version and the
        Lock's check after it), the dry run and the plan side by side, each awaited to its
        end; a failure is named as :meth:`_prepared_together` names one, the parse's lane
        first (docs/design.md, "One dry run per switch-over")."""
        digest, lane = await self._fetch(inp), _Lane()
        parsed, checked, plan = await self._side_by_side([
            (lane, self._parsed_and_checked(inp, digest, lane)),
            (c.ESTABLISH_OBJECTS, self._dry_run(inp)), (c.PLAN_REVISION, self._plan(inp))])
        return await self._record_prepared(inp, cast(c.ParsePackageResult, parsed),
                                           cast(c.EstablishObjectsResult, checked),
                                           cast(Plan | None, plan))

    async def _parsed_and_checked(self, inp: c.InstallRevisionInput, digest: str,
                                  lane: _Lane) -> c.ParsePackageResult:
        """The parse, then Crossplane's version and the Lock's check, in ``lane``."""
        lane.step = c.PARSE_PACKAGE
        parsed = await self._parse(inp, digest)
        lane.step = c.CHECK_CROSSPLANE_VERSION
        await self._check_crossplane(inp, parsed)
        lane.step = c.TAKE_LOCK
        await self._take_lock(inp)
        return parsed

    async def _dry_run(self, inp: c.InstallRevisionInput,
                       parsed: c.ParsePackageResult | None = None) -> c.EstablishObjectsResult:
        """Every object write of the revision dry-run, as if it were active."""
        return await self._run(inp, c.ESTABLISH_OBJECTS, c.EstablishObjectsInput(
            kind=inp.kind, package=inp.package, revision=inp.revision, digest=inp.digest,
            control=True, dry_run=True), c.EstablishObjectsResult,
            f"dry-run {parsed.objects if parsed else 'the'} objects (control)")

    async def _record_prepared(self, inp: c.InstallRevisionInput,
                               parsed: c.ParsePackageResult,
                               checked: c.EstablishObjectsResult,
                               plan: Plan | None) -> c.InstallRevisionResult:
        """The prepared revision's status (its plan's verdict too), and the result."""
        await self._write(inp, status.revision_ok(False, True, "") + status.planned(plan),
                          objects=checked.objects, capabilities=parsed.capabilities)
        workflow.set_current_details(f"**prepared** `{inp.revision}`"
                                     + (f": {plan.summary()}" if plan else ""))
        return c.InstallRevisionResult(revision=inp.revision, digest=inp.digest,
                                       objects=checked.objects,
                                       dependencies=self._locked.dependencies,
                                       healthy=True, plan=plan, checked=checked.checked,
                                       parsed=parsed, size=self._size)

    async def _plan(self, inp: c.InstallRevisionInput) -> Plan | None:
        """What the switch would change against the active revision (none when nothing
        is active, or for runs started before plans)."""
        if not inp.against or not workflow.patched(PATCH_UPGRADE_PLAN):
            return None
        return await self._run(inp, c.PLAN_REVISION, c.PlanRevisionInput(
            kind=inp.kind, package=inp.package, revision=inp.revision, digest=inp.digest,
            against=inp.against, against_digest=inp.against_digest), Plan,
            f"plan {inp.against} → {inp.revision}",
            small=self._small and workflow.patched(PATCH_LOCAL_PLAN))

    async def _take_lock(self, inp: c.InstallRevisionInput) -> None:
        # skipDependencyResolution used to skip the Lock, and with it the claim on objects.
        if inp.skip_dependency_resolution and not workflow.patched(PATCH_SKIP_KEEPS_CLAIM):
            return
        self._locked = await self._run(inp, c.TAKE_LOCK, c.TakeLockInput(
            kind=inp.kind, package=inp.package, revision=inp.revision, source=inp.source,
            digest=inp.digest, check_only=inp.prepare,
            skip_dependencies=inp.skip_dependency_resolution), c.TakeLockResult,
            f"{'check the Lock for' if inp.prepare else 'lock'} {inp.kind} {inp.package}")

    async def _dependencies_met(self, inp: c.InstallRevisionInput) -> bool:
        """Whether the Lock says every dependency is met (a switch waits for them)."""
        if not self._locked.dependency_message or not workflow.patched(PATCH_DEPENDENCY_GATE):
            return True
        if inp.health_deadline_s:  # a switch: the old revision runs on while we wait
            await self._await_dependencies(inp)
        return not self._locked.dependency_message

    async def _await_dependencies(self, inp: c.InstallRevisionInput) -> None:
        """A switch to a revision with new dependencies: wait for the resolver, in the gate.

        The revision is in the Lock now, so the resolver installs what it needs; the Lock
        is looked at again every health poll until the switch's deadline.
        """
        await self._write(inp, status.revision_failed(c.TAKE_LOCK,
                                                      self._locked.dependency_message))
        polls = max(1, math.ceil(inp.health_deadline_s / inp.tuning.health_poll_s))
        for poll in range(polls):
            await workflow.sleep(timedelta(seconds=inp.tuning.health_poll_s),
                                 summary="wait for the dependencies to be installed")
            self._locked = await self._run(inp, c.TAKE_LOCK, c.TakeLockInput(
                kind=inp.kind, package=inp.package, revision=inp.revision, source=inp.source,
                digest=inp.digest), c.TakeLockResult,
                f"dependencies of {inp.revision} ({poll + 1}/{polls})")
            if not self._locked.dependency_message:
                return

    async def _unmet(self, inp: c.InstallRevisionInput) -> c.InstallRevisionResult:
        """Dependencies missing or invalid: say so and stop before anything is established.

        The resolver installs what is missing; when the Lock then satisfies this revision
        it signals the package, whose next pass installs the rest (docs/crossplane.md §10 step 12).
        """
        message = self._locked.dependency_message
        await self._write(inp, status.revision_failed(c.TAKE_LOCK, message))
        workflow.set_current_details(f"**waiting for dependencies** `{inp.revision}`: "
                                     f"{message[:160]}")
        return c.InstallRevisionResult(revision=inp.revision, digest=inp.digest,
                                       dependencies=self._locked.dependencies,
                                       message=status.prefixed(c.TAKE_LOCK, message),
                                       dependencies_unmet=True)

    async def _wait_healthy(self, inp: c.InstallRevisionInput,
                            ensured: c.EnsureRuntimeResult) -> c.CheckHealthResult:
        deployment = ensured.deployment
        polls = max(1, inp.tuning.health_polls)
        if inp.health_deadline_s:  # a switch's health gate
            polls = max(1, math.ceil(inp.health_deadline_s / inp.tuning.health_poll_s))
        if workflow.patched(PATCH_HEALTH_WATCH):
            return await self._watch_healthy(inp, (polls - 1) * inp.tuning.health_poll_s,
                                             ensured)
        shown = ""
        health = c.CheckHealthResult()
        for poll in range(polls):
            health = await self._run(inp, c.CHECK_HEALTH, c.CheckHealthInput(
                kind=inp.kind, package=inp.package, revision=inp.revision,
                deployment=deployment),
                c.CheckHealthResult, f"health of {inp.revision} ({poll + 1}/{polls})")
            if health.healthy or poll + 1 == polls:
                return health
            if health.message != shown:
                # Only on change: the runtime's own words on the revision while we wait, and
                # (since PATCH_LOCAL_STEPS) on the package, as Crossplane's health follows
                # the revision's; the parent writes the outcome when the wait ends.
                shown = health.message
                await self._write(inp, status.revision_ok(True, False, health.message))
                if workflow.patched(PATCH_LOCAL_STEPS):
                    await self._write_package(inp, health.message)
            await workflow.sleep(timedelta(seconds=inp.tuning.health_poll_s),
                                 summary="wait for the runtime to become available")
        return health

    async def _watch_healthy(self, inp: c.InstallRevisionInput, budget_s: float,
                             ensured: c.EnsureRuntimeResult) -> c.CheckHealthResult:
        """The health wait since PATCH_HEALTH_WATCH: ``check_health`` watches the runtime
        for windows of at most ``HEALTH_WATCH_S`` until it is healthy or ``budget_s`` (the
        polls' span) is spent; a window it could not watch is followed by one poll's timer.
        Each window lists the Deployment no older than its apply (``not_older_than``).

        The budget is counted from the results, not ``workflow.now()``: local activities in
        one workflow task do not move the workflow's clock.
        """
        shown, left, window = "", budget_s, 0
        while True:
            watch_s = max(0.0, min(HEALTH_WATCH_S, left))
            window += 1
            health = await self._run(inp, c.CHECK_HEALTH, c.CheckHealthInput(
                kind=inp.kind, package=inp.package, revision=inp.revision, watch_s=watch_s,
                deployment=ensured.deployment, not_older_than=ensured.resource_version),
                c.CheckHealthResult, f"health of {inp.revision} (watch {window})")
            left -= watch_s if health.watched else 0.0
            if health.healthy or left <= _EPSILON_S:  # sums of floats: 0.3 - 3 × 0.1 > 0
                return health
            if health.message != shown:  # as in the poll: the runtime's words while we wait
                shown = health.message
                await self._write(inp, status.revision_ok(True, False, health.message))
                await self._write_package(inp, health.message)
            if not health.watched:  # the fallback: poll
                await workflow.sleep(timedelta(seconds=inp.tuning.health_poll_s),
                                     summary="wait for the runtime to become available")
                left -= inp.tuning.health_poll_s
            elif workflow.patched(PATCH_HEALTH_WINDOW_GAP):
                await workflow.sleep(timedelta(seconds=HEALTH_WINDOW_GAP_S),
                                     summary="end the workflow task between watch windows")

    async def _run(self, inp: c.InstallRevisionInput, name: str, arg: object,
                   result_type: type[R], summary: str, small: bool | None = None) -> R:
        """Run step ``name``; ``small``: whether it may run locally (default: the package
        is small)."""
        self._step = name
        workflow.set_current_details(f"**{name}** `{inp.revision}`")
        return await call(name, arg, result_type, summary, inp.tuning,
                          self._small if small is None else small)

    async def _write(self, inp: c.InstallRevisionInput, conditions: list[c.Condition],
                     objects: int = 0,
                     capabilities: list[str] | None = None) -> None:
        locked = self._locked
        await call(c.WRITE_REVISION_STATUS, c.WriteRevisionStatusInput(
            kind=inp.kind, revision=inp.revision, conditions=conditions, objects=objects,
            found_dependencies=locked.found_dependencies or locked.dependencies,
            resolved_image=inp.source,
            capabilities=capabilities or [],
            installed_dependencies=locked.installed_dependencies,
            invalid_dependencies=locked.invalid_dependencies), c.WriteRevisionStatusResult,
            f"status of {inp.revision}", inp.tuning)

    async def _write_outcome(self, inp: c.InstallRevisionInput, conditions: list[c.Condition],
                             health: c.CheckHealthResult, objects: int,
                             capabilities: list[str]) -> bool:
        """The revision's status; an active install's or switch's healthy end, the
        package's too, side by side (``PATCH_PACKAGE_HEALTHY_BESIDE``,
        ``PATCH_SWITCH_HEALTHY_BESIDE``): the parent's write after an install then finds
        nothing to change, and a switch's parent makes none. Both are awaited before a
        failure is raised, the revision's first. Returns whether the package's was
        written."""
        revision = self._write(inp, conditions, objects=objects, capabilities=capabilities)
        if not (inp.active and health.healthy and _package_beside(inp)):
            await revision
            return False
        step = self._step  # a status write that fails is reported as the last step
        await self._side_by_side([(step, revision), (step, self._write_package(
            inp, health.message, healthy=True))])
        return True

    async def _write_package(self, inp: c.InstallRevisionInput, runtime_message: str,
                             healthy: bool = False) -> None:
        await call(c.WRITE_PACKAGE_STATUS, c.WritePackageStatusInput(
            kind=inp.kind, name=inp.package, observed_generation=inp.generation,
            current_revision=inp.revision, current_identifier=inp.identifier,
            resolved_package=inp.source,
            conditions=status.package_ok(inp.active, healthy, runtime_message)),
            c.WritePackageStatusResult, f"status of {inp.kind} {inp.package}", inp.tuning)

    async def _write_failure(self, inp: c.InstallRevisionInput, failure: Failure) -> None:
        workflow.set_current_details(f"**failed** at {self._step}: {failure.message[:120]}")
        workflow.logger.warning("install failed revision=%s step=%s type=%s permanent=%s",
                                inp.revision, self._step, failure.type, failure.permanent,
                                extra=_log_fields(inp))
        try:
            await self._write(inp, status.revision_failed(self._step, failure.message))
        except ActivityError:
            # The API is likely down too; the parent's status and retry still report it.
            workflow.logger.warning("could not write failure status revision=%s", inp.revision,
                                    extra=_log_fields(inp))


def _package_beside(inp: c.InstallRevisionInput) -> bool:
    """Whether a healthy end writes the package's status beside the revision's: an
    install's since PATCH_PACKAGE_HEALTHY_BESIDE, a switch's since
    PATCH_SWITCH_HEALTHY_BESIDE."""
    if inp.health_deadline_s:
        return workflow.patched(PATCH_SWITCH_HEALTHY_BESIDE)
    return workflow.patched(PATCH_PACKAGE_HEALTHY_BESIDE)


def _mode(inp: c.InstallRevisionInput) -> str:
    """The install's ``mode`` label: an upgrade's preparation, its switch, or neither."""
    if inp.prepare:
        return metrics.PREPARE
    return metrics.SWITCH if inp.health_deadline_s else metrics.INSTALL


def _log_fields(inp: c.InstallRevisionInput) -> dict[str, str]:
    """``extra`` of this workflow's log lines: which package, which revision."""
    return {"kind": inp.kind, "package": inp.package, "revision": inp.revision}
