"""Fake activities over an in-memory "cluster", registered under the real activity names.

The workflows cannot tell them from the real ones (same names, same contracts). Each fake
records its calls; ``fail`` queues errors a named activity raises on its next calls, so a
test can produce a registry outage or a lint failure on demand. Only the workflows are
under test here; the real activities have their own tests against real servers.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from lockwright import contracts as c
from lockwright.upgrade.plan import Plan

PULL_SECRET_VALUE = "s3cr3t-pull-token-never-in-history"


def transient(message: str = "registry unreachable: connection refused") -> ApplicationError:
    """An error the real edge would raise for a registry outage (retryable)."""
    return ApplicationError(message, type="RegistryUnavailable")


def permanent(type_: str, message: str) -> ApplicationError:
    """An error the real edge would raise for a permanent problem."""
    return ApplicationError(message, type=type_, non_retryable=True)


def gone(message: str) -> ApplicationError:
    """What the real edge raises when the object a step acts on is gone or going."""
    return ApplicationError(message, type=c.OBJECT_GONE, non_retryable=True)


@dataclass
class FakePackage:
    """The fields of a package object the workflows read."""

    kind: str
    name: str
    source: str
    generation: int = 1
    policy: str = c.AUTOMATIC
    history_limit: int = 1
    pull_secret: str = "regcred"
    deleting: bool = False
    pull_policy: str = "IfNotPresent"
    paused: bool = False
    skip_dependency_resolution: bool = False
    accept_plan: str = ""  # the lockwright.io/accept-plan annotation
    upgrade_gate: str = "Evidence"  # the worker's default, or lockwright.dev/upgrade-gate


@dataclass
class FakeRevision:
    """A revision object."""

    name: str
    package: str
    digest: str
    number: int
    desired_state: str = c.INACTIVE
    deleting: bool = False
    source: str = ""


@dataclass
class FakeCluster:
    """An in-memory cluster plus registry, and the fake activities that act on it."""

    packages: dict[tuple[str, str], FakePackage] = field(default_factory=dict)
    revisions: dict[str, FakeRevision] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)
    package_status: dict[str, list[c.WritePackageStatusInput]] = field(default_factory=dict)
    # Which workflow type wrote each of package_status's entries, in the same order.
    package_status_from: dict[str, list[str]] = field(default_factory=dict)
    revision_status: dict[str, list[c.WriteRevisionStatusInput]] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)  # every activity entered, in order
    established: Counter[str] = field(default_factory=Counter)
    failures: dict[str, list[BaseException]] = field(default_factory=dict)
    health: dict[str, c.CheckHealthResult] = field(default_factory=dict)
    events: list[c.RecordEventInput] = field(default_factory=list)
    activations: list[c.SetActiveRevisionInput] = field(default_factory=list)
    approvals: list[c.RecordApprovalInput] = field(default_factory=list)
    tags: dict[str, str] = field(default_factory=dict)  # a tag moved to another digest
    says_paused: dict[str, bool] = field(default_factory=dict)
    # take_lock's dependency reports by package name, one per call, the last one repeated;
    # resolve_dependencies' decisions, in turn.
    lock_reports: dict[str, list[c.TakeLockResult]] = field(default_factory=dict)
    decisions: list[c.ResolveDependenciesResult] = field(default_factory=list)
    # activate_definitions' results, in turn; per package, its revision's capabilities and
    # (MRDs, Active MRDs) as establish_objects reports them.
    activation_passes: list[c.ActivateDefinitionsResult] = field(default_factory=list)
    capabilities: dict[str, list[str]] = field(default_factory=dict)
    definitions: dict[str, tuple[int, int]] = field(default_factory=dict)
    runtimes: list[c.EnsureRuntimeInput] = field(default_factory=list)
    applied: list[c.ApplyResolutionInput] = field(default_factory=list)
    locks_taken: list[c.TakeLockInput] = field(default_factory=list)
    # plan_revision's plan by package name (default: compatible), given the revisions'
    # names; the calls, in order.
    plans: dict[str, Plan] = field(default_factory=dict)
    planned: list[c.PlanRevisionInput] = field(default_factory=list)
    # Run inside cleanup_package, one per call: what happens in the cluster meanwhile.
    during_cleanup: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    # Run inside write_package_status, on every call: what happens meanwhile (an operator
    # approving the revision the status is about, say).
    during_status: list[Callable[[c.WritePackageStatusInput], Awaitable[None]]] = field(
        default_factory=list)
    # record_approval's lookup of the Temporal identity (the real one reads the history);
    # None: "identity of the <via>".
    approver: Callable[[c.RecordApprovalInput], Awaitable[str]] | None = None
    # record_approval's answers by revision (".../plan": the acceptance of its plan): who,
    # and the workflow run that recorded it.
    approved_by: dict[str, tuple[str, str]] = field(default_factory=dict)
    # When set, ensure_tls, establish_objects and ensure_rbac each wait here (10 s at most)
    # until all the parties have come: they pass only if they run side by side.
    side_by_side: asyncio.Barrier | None = None
    # The same for an upgrade's preparation: those of its steps ``prepare_parties`` names
    # (take_lock's check, the dry run and the plan unless told otherwise).
    prepare_side_by_side: asyncio.Barrier | None = None
    prepare_parties: frozenset[str] = frozenset({c.TAKE_LOCK, c.ESTABLISH_OBJECTS,
                                                 c.PLAN_REVISION})

    @property
    def calls(self) -> Counter[str]:
        """How many times each activity was entered (``order``, counted)."""
        return Counter(self.order)

    # --- test controls ------------------------------------------------------------------
    def add(self, pkg: FakePackage) -> FakePackage:
        """Create or replace a package object."""
        self.packages[(pkg.kind, pkg.name)] = pkg
        self.secrets[pkg.pull_secret] = PULL_SECRET_VALUE
        return pkg

    def fail(self, name: str, *errors: BaseException) -> None:
        """Make activity ``name`` raise ``errors`` on its next calls, one per call."""
        self.failures.setdefault(name, []).extend(errors)

    def last_status(self, name: str) -> dict[str, c.Condition]:
        """The package's last written conditions, by type."""
        writes = self.package_status.get(name, [])
        return {cond.type: cond for cond in writes[-1].conditions} if writes else {}

    def activities(self) -> list[Any]:
        """Every fake, for ``Worker(activities=...)``."""
        return [self.read_package, self.resolve_digest, self.ensure_revision,
                self.set_active_revision, self.collect_revisions, self.write_package_status,
                self.cleanup_package, self.fetch_package, self.parse_package,
                self.check_crossplane_version, self.take_lock, self.ensure_tls,
                self.establish_objects, self.ensure_rbac, self.ensure_runtime,
                self.check_health, self.write_revision_status, self.record_event,
                self.record_approval, self.resolve_dependencies, self.apply_resolution,
                self.plan_revision, self.activate_definitions, self.protect_providers]

    def _enter(self, name: str) -> None:
        self.order.append(name)
        queued = self.failures.get(name)
        if queued:
            raise queued.pop(0)

    async def _meet(self, preparing: str = "") -> None:
        """Wait at the barrier: ``preparing``, a preparation's step of that name, at its
        own if it is one of ``prepare_parties``."""
        if not preparing:
            barrier = self.side_by_side
        else:
            barrier = self.prepare_side_by_side if preparing in self.prepare_parties else None
        if barrier is not None:
            await asyncio.wait_for(barrier.wait(), 10)

    # --- package activities -------------------------------------------------------------
    @activity.defn(name=c.READ_PACKAGE)
    async def read_package(self, inp: c.ReadPackageInput) -> c.ReadPackageResult:
        self._enter(c.READ_PACKAGE)
        pkg = self.packages.get((inp.kind, inp.name))
        if pkg is None:
            return c.ReadPackageResult(found=False)
        revs = sorted((r for r in self.revisions.values() if r.package == inp.name),
                      key=lambda r: r.number)
        active_rev = next((r for r in revs if r.desired_state == c.ACTIVE), None)
        active = active_rev.name if active_rev else ""
        return c.ReadPackageResult(
            found=True, uid=f"uid-{pkg.name}", generation=pkg.generation, source=pkg.source,
            activation_policy=pkg.policy, revision_history_limit=pkg.history_limit,
            revisions=[r.name for r in revs], active_revision=active, deleting=pkg.deleting,
            pull_policy=pkg.pull_policy, paused=pkg.paused,
            skip_dependency_resolution=pkg.skip_dependency_resolution,
            synced_paused=self.says_paused.get(pkg.name, False),
            active_source=active_rev.source if active_rev else "",
            active_digest=active_rev.digest if active_rev else "",
            accept_plan=pkg.accept_plan, upgrade_gate=pkg.upgrade_gate,
            active_definitions=self.definitions.get(pkg.name, (0, -1))[1])

    @activity.defn(name=c.RESOLVE_DIGEST)
    async def resolve_digest(self, inp: c.ResolveDigestInput) -> c.ResolveDigestResult:
        self._enter(c.RESOLVE_DIGEST)
        pkg = self.packages[(inp.kind, inp.name)]
        assert self.secrets[pkg.pull_secret] == PULL_SECRET_VALUE  # read here, never passed
        digest = self.tags.get(inp.source) or (
            "sha256:" + hashlib.sha256(inp.source.encode()).hexdigest())
        return c.ResolveDigestResult(digest=digest, resolved_source=inp.source)

    @activity.defn(name=c.ENSURE_REVISION)
    async def ensure_revision(self, inp: c.EnsureRevisionInput) -> c.EnsureRevisionResult:
        self._enter(c.ENSURE_REVISION)
        name = f"{inp.package}-{inp.digest.removeprefix('sha256:')[:12]}"
        rev = self.revisions.get(name)
        created = rev is None
        if rev is not None and rev.deleting:
            raise gone(f"ProviderRevision {name} is being deleted")
        if rev is None:
            numbers = [r.number for r in self.revisions.values() if r.package == inp.package]
            state = c.ACTIVE if inp.active_if_first and not numbers else c.INACTIVE
            rev = self.revisions[name] = FakeRevision(name, inp.package, inp.digest,
                                                      max(numbers, default=0) + 1,
                                                      desired_state=state, source=inp.source)
        return c.EnsureRevisionResult(revision=name, number=rev.number, created=created,
                                      desired_state=rev.desired_state,
                                      fresh=name not in self.revision_status)

    @activity.defn(name=c.SET_ACTIVE_REVISION)
    async def set_active_revision(
            self, inp: c.SetActiveRevisionInput) -> c.SetActiveRevisionResult:
        self._enter(c.SET_ACTIVE_REVISION)
        self.activations.append(inp)
        deactivated = []
        for rev in self.revisions.values():
            if rev.package != inp.package:
                continue
            if rev.name == inp.revision:
                rev.desired_state = c.ACTIVE
            elif rev.desired_state == c.ACTIVE:
                rev.desired_state = c.INACTIVE
                deactivated.append(rev.name)
        return c.SetActiveRevisionResult(revision=inp.revision, deactivated=deactivated)

    @activity.defn(name=c.COLLECT_REVISIONS)
    async def collect_revisions(self, inp: c.CollectRevisionsInput) -> c.CollectRevisionsResult:
        self._enter(c.COLLECT_REVISIONS)
        revs = sorted((r for r in self.revisions.values() if r.package == inp.package),
                      key=lambda r: r.number)
        doomed = [r.name for r in revs if r.name != inp.current_revision][:-inp.keep or None]
        for name in doomed:
            del self.revisions[name]
        return c.CollectRevisionsResult(deleted=doomed)

    @activity.defn(name=c.WRITE_PACKAGE_STATUS)
    async def write_package_status(
            self, inp: c.WritePackageStatusInput) -> c.WritePackageStatusResult:
        self._enter(c.WRITE_PACKAGE_STATUS)
        if any(x.reason == "ReconcilePaused" for x in inp.conditions):
            self.says_paused[inp.name] = True
        if "Synced" in inp.drop:
            self.says_paused[inp.name] = False
        writes = self.package_status.setdefault(inp.name, [])
        changed = not writes or writes[-1] != inp
        writes.append(inp)
        self.package_status_from.setdefault(inp.name, []).append(
            activity.info().workflow_type or "")
        for during in self.during_status:
            await during(inp)
        return c.WritePackageStatusResult(changed=changed)

    @activity.defn(name=c.CLEANUP_PACKAGE)
    async def cleanup_package(self, inp: c.CleanupPackageInput) -> c.CleanupPackageResult:
        self._enter(c.CLEANUP_PACKAGE)
        if self.during_cleanup:
            await self.during_cleanup.pop(0)()
        # The garbage collector removes the revisions; tests play it by deleting them.
        waiting = sum(1 for r in self.revisions.values() if r.package == inp.name)
        return c.CleanupPackageResult(removed=1, waiting=waiting)

    # --- revision activities ------------------------------------------------------------
    @activity.defn(name=c.FETCH_PACKAGE)
    async def fetch_package(self, inp: c.FetchPackageInput) -> c.FetchPackageResult:
        self._enter(c.FETCH_PACKAGE)
        return c.FetchPackageResult(digest=inp.digest, size=4096,
                                    object_counts={"CustomResourceDefinition": 2})

    @activity.defn(name=c.PARSE_PACKAGE)
    async def parse_package(self, inp: c.ParsePackageInput) -> c.ParsePackageResult:
        await self._meet(preparing=c.PARSE_PACKAGE)
        self._enter(c.PARSE_PACKAGE)
        rev = self.revisions.get(inp.revision)
        return c.ParsePackageResult(meta_name="provider-nop", crossplane_constraint=">=v1.0.0",
                                    objects=2, warnings=1, first_warnings=["no docs"],
                                    capabilities=self.capabilities.get(
                                        rev.package if rev else "", []))

    @activity.defn(name=c.CHECK_CROSSPLANE_VERSION)
    async def check_crossplane_version(
            self, inp: c.CheckCrossplaneVersionInput) -> c.CheckCrossplaneVersionResult:
        self._enter(c.CHECK_CROSSPLANE_VERSION)
        return c.CheckCrossplaneVersionResult(version="v2.0.0")

    @activity.defn(name=c.TAKE_LOCK)
    async def take_lock(self, inp: c.TakeLockInput) -> c.TakeLockResult:
        if inp.check_only:
            await self._meet(preparing=c.TAKE_LOCK)
        self._enter(c.TAKE_LOCK)
        self.locks_taken.append(inp)
        reports = self.lock_reports.get(inp.package) or [c.TakeLockResult(resource_version="7")]
        return reports.pop(0) if len(reports) > 1 else reports[0]

    @activity.defn(name=c.ENSURE_TLS)
    async def ensure_tls(self, inp: c.EnsureTlsInput) -> c.EnsureTlsResult:
        await self._meet()
        self._enter(c.ENSURE_TLS)
        return c.EnsureTlsResult(server_secret=f"{inp.package}-tls-server",
                                 client_secret=f"{inp.package}-tls-client")

    @activity.defn(name=c.ESTABLISH_OBJECTS)
    async def establish_objects(
            self, inp: c.EstablishObjectsInput) -> c.EstablishObjectsResult:
        await self._meet(preparing=c.ESTABLISH_OBJECTS if inp.dry_run else "")
        self._enter(c.ESTABLISH_OBJECTS)
        mode = "dry-run" if inp.dry_run else "control" if inp.control else "owner"
        self.established[f"{inp.revision}/{mode}"] += 1
        definitions, active = self.definitions.get(inp.package, (0, 0))
        return c.EstablishObjectsResult(objects=2, created=2 if inp.control else 0,
                                        definitions=definitions, active_definitions=active)

    @activity.defn(name=c.ENSURE_RBAC)
    async def ensure_rbac(self, inp: c.EnsureRbacInput) -> c.EnsureRbacResult:
        await self._meet()
        self._enter(c.ENSURE_RBAC)
        return c.EnsureRbacResult(cluster_roles=3, bindings=1)

    @activity.defn(name=c.ENSURE_RUNTIME)
    async def ensure_runtime(self, inp: c.EnsureRuntimeInput) -> c.EnsureRuntimeResult:
        self._enter(c.ENSURE_RUNTIME)
        self.runtimes.append(inp)
        return c.EnsureRuntimeResult(deployment=inp.revision, service_account=inp.package,
                                     service=inp.package,
                                     scaled_to_zero=inp.awaiting_activation)

    @activity.defn(name=c.CHECK_HEALTH)
    async def check_health(self, inp: c.CheckHealthInput) -> c.CheckHealthResult:
        self._enter(c.CHECK_HEALTH)
        return self.health.get(inp.revision, self.health.get(
            inp.package, c.CheckHealthResult(healthy=True)))

    @activity.defn(name=c.WRITE_REVISION_STATUS)
    async def write_revision_status(
            self, inp: c.WriteRevisionStatusInput) -> c.WriteRevisionStatusResult:
        self._enter(c.WRITE_REVISION_STATUS)
        if inp.revision not in self.revisions:
            raise gone(f"ProviderRevision {inp.revision} is gone")
        self.revision_status.setdefault(inp.revision, []).append(inp)
        return c.WriteRevisionStatusResult(changed=True)

    @activity.defn(name=c.RECORD_EVENT)
    async def record_event(self, inp: c.RecordEventInput) -> c.RecordEventResult:
        self._enter(c.RECORD_EVENT)
        self.events.append(inp)
        return c.RecordEventResult(recorded=True)

    @activity.defn(name=c.RECORD_APPROVAL)
    async def record_approval(self, inp: c.RecordApprovalInput) -> c.RecordApprovalResult:
        self._enter(c.RECORD_APPROVAL)
        self.approvals.append(inp)
        by = inp.by or f"identity of the {inp.via}"
        if not inp.by and self.approver is not None:
            by = await self.approver(inp)
        key = inp.revision + ("/plan" if inp.plan else "")
        self.approved_by[key] = (by, activity.info().workflow_run_id or "")
        return c.RecordApprovalResult(by=by, at=inp.at)

    @activity.defn(name=c.PLAN_REVISION)
    async def plan_revision(self, inp: c.PlanRevisionInput) -> Plan:
        await self._meet(preparing=c.PLAN_REVISION)
        self._enter(c.PLAN_REVISION)
        self.planned.append(inp)
        return replace(self.plans.get(inp.package, Plan()), revision=inp.revision,
                       against=inp.against)

    @activity.defn(name=c.ACTIVATE_DEFINITIONS)
    async def activate_definitions(self, inp: c.ActivateDefinitionsInput
                                   ) -> c.ActivateDefinitionsResult:
        self._enter(c.ACTIVATE_DEFINITIONS)
        return (self.activation_passes.pop(0) if self.activation_passes
                else c.ActivateDefinitionsResult())

    @activity.defn(name=c.PROTECT_PROVIDERS)
    async def protect_providers(self, inp: c.ProtectProvidersInput
                                ) -> c.ProtectProvidersResult:
        self._enter(c.PROTECT_PROVIDERS)
        return c.ProtectProvidersResult()

    # --- dependency resolution ----------------------------------------------------------
    @activity.defn(name=c.RESOLVE_DEPENDENCIES)
    async def resolve_dependencies(self, inp: c.ResolveDependenciesInput
                                   ) -> c.ResolveDependenciesResult:
        self._enter(c.RESOLVE_DEPENDENCIES)
        return self.decisions.pop(0) if self.decisions else c.ResolveDependenciesResult()

    @activity.defn(name=c.APPLY_RESOLUTION)
    async def apply_resolution(self, inp: c.ApplyResolutionInput) -> c.ApplyResolutionResult:
        self._enter(c.APPLY_RESOLUTION)
        self.applied.append(inp)
        return c.ApplyResolutionResult(
            created=[ch.package for ch in inp.changes if not ch.from_version],
            moved=[ch.package for ch in inp.changes if ch.from_version],
            lock_status_written=True)
