"""Everything that crosses a Temporal boundary in lockwright, in one place.

Each activity, child workflow, signal, update and query has an ``<Op>Input`` and an
``<Op>Result``: frozen dataclasses whose every field has a default, so a field can be added
while workflows run (an old history decodes into the new class; a new payload decodes
into the old one by ignoring the extra key).

Only names, digests, counts and short messages cross (invariant 2). Package contents live
in the per-worker content-addressed cache keyed by digest; pull secrets are named by the
package object and read inside the activity that uses them. Messages are short: activities
truncate them (``lockwright.errors.truncate``) and lint results carry the first few
findings plus a count.

Activity names are constants so workflows, real activities and test fakes agree on them
without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from temporalio.common import SearchAttributeKey

from lockwright.upgrade.plan import Plan

TASK_QUEUE = "lockwright"

# Package kinds, as they appear in workflow ids (lower case) and in Kubernetes (title case).
PROVIDER, CONFIGURATION, FUNCTION = "provider", "configuration", "function"
KINDS_WITH_RUNTIME = (PROVIDER, FUNCTION)

AUTOMATIC, MANUAL = "Automatic", "Manual"
ACTIVE, INACTIVE = "Active", "Inactive"
# Package annotation: seconds an upgrade waits for the new runtime before reverting.
SWITCH_DEADLINE_ANNOTATION = "lockwright.dev/switch-deadline-seconds"
# Package annotation that stops every step for the package while it is "true".
PAUSED_ANNOTATION = "crossplane.io/paused"
# Revision annotation: the digest a revision was made from (its name keeps only 12 hex).
DIGEST_ANNOTATION = "lockwright.dev/digest"

# Permanent error types: the PermanentError classes of lockwright/errors.py, by name (a
# test keeps the two in step). Only a new spec can fix them; the attempt ends, the error is
# written to status and the workflow waits for a change (invariant 6). Everything else
# heals on its own and is retried with capped backoff.
PERMANENT_ERRORS = (
    "InvalidPackage",
    "InvalidReference",
    "LintError",
    "ConstraintError",
    "PermissionRejected",
    "PreflightError",
    "KubeInvalid",
    "KubeForbidden",
)
# lockwright.errors.ObjectGone: the object a step acts on is gone or being deleted. Not
# retried and not a failure: the branch ends and the workflow looks again (invariant 8).
OBJECT_GONE = "ObjectGone"

# --- activity names -------------------------------------------------------------------
READ_PACKAGE = "read_package"
RESOLVE_DIGEST = "resolve_digest"
ENSURE_REVISION = "ensure_revision"
SET_ACTIVE_REVISION = "set_active_revision"
COLLECT_REVISIONS = "collect_revisions"
WRITE_PACKAGE_STATUS = "write_package_status"
CLEANUP_PACKAGE = "cleanup_package"
FETCH_PACKAGE = "fetch_package"
PARSE_PACKAGE = "parse_package"
CHECK_CROSSPLANE_VERSION = "check_crossplane_version"
TAKE_LOCK = "take_lock"
ENSURE_TLS = "ensure_tls"
ESTABLISH_OBJECTS = "establish_objects"
ENSURE_RBAC = "ensure_rbac"
ENSURE_RUNTIME = "ensure_runtime"
CHECK_HEALTH = "check_health"
WRITE_REVISION_STATUS = "write_revision_status"
RECORD_EVENT = "record_event"
RECORD_APPROVAL = "record_approval"
RESOLVE_DEPENDENCIES = "resolve_dependencies"
APPLY_RESOLUTION = "apply_resolution"
PLAN_REVISION = "plan_revision"

ALL_ACTIVITY_NAMES = (
    READ_PACKAGE, RESOLVE_DIGEST, ENSURE_REVISION, SET_ACTIVE_REVISION, COLLECT_REVISIONS,
    WRITE_PACKAGE_STATUS, CLEANUP_PACKAGE, FETCH_PACKAGE, PARSE_PACKAGE,
    CHECK_CROSSPLANE_VERSION, TAKE_LOCK, ENSURE_TLS, ESTABLISH_OBJECTS, ENSURE_RBAC,
    ENSURE_RUNTIME, CHECK_HEALTH, WRITE_REVISION_STATUS, RECORD_EVENT, RECORD_APPROVAL,
    RESOLVE_DEPENDENCIES, APPLY_RESOLUTION, PLAN_REVISION,
)

# --- signal, update and query names ----------------------------------------------------
SIGNAL_LOOK_AGAIN = "look_again"
SIGNAL_REQUEST_ACTIVATION = "request_activation"
UPDATE_ACTIVATE_REVISION = "activate_revision"
QUERY_STATUS = "status"
# The plan of the last prepared upgrade (``Plan``), or None.
QUERY_PLAN = "plan"

# --- search attributes (register them on the server before use) -----------------------
SA_PACKAGE_KIND = SearchAttributeKey.for_keyword("LockwrightPackageKind")
SA_PACKAGE_NAME = SearchAttributeKey.for_keyword("LockwrightPackageName")
SA_PACKAGE_SOURCE = SearchAttributeKey.for_keyword("LockwrightPackageSource")
SA_PACKAGE_DIGEST = SearchAttributeKey.for_keyword("LockwrightPackageDigest")
SA_REVISION = SearchAttributeKey.for_keyword("LockwrightRevision")
SEARCH_ATTRIBUTES = (SA_PACKAGE_KIND, SA_PACKAGE_NAME, SA_PACKAGE_SOURCE, SA_PACKAGE_DIGEST,
                     SA_REVISION)


def package_workflow_id(kind: str, name: str) -> str:
    """Return the id of a package's entity workflow; it is the dedup key for watchers."""
    return f"package:{kind}:{name}"


def revision_workflow_id(kind: str, revision: str) -> str:
    """Return the id of the child workflow that installs one revision."""
    return f"revision:{kind}:{revision}"


def plan_workflow_id(kind: str, name: str, nonce: str) -> str:
    """Return the id of one ``PlanCandidate`` run (``nonce`` makes each run its own)."""
    return f"plan:{kind}:{name}:{nonce}"


def resolve_workflow_id(task_queue: str = TASK_QUEUE) -> str:
    """Return the id of the cluster's one dependency resolution workflow.

    ``resolve:lock`` on the default task queue. A Temporal namespace shared by several
    clusters gives each its own task queue, and then its own resolver:
    ``resolve:lock:<task queue>``.
    """
    return "resolve:lock" if task_queue == TASK_QUEUE else f"resolve:lock:{task_queue}"


# --- shared pieces ---------------------------------------------------------------------
@dataclass(frozen=True)
class Condition:
    """One Kubernetes status condition, as the workflow decided it."""

    type: str = ""
    status: str = "Unknown"
    reason: str = ""
    message: str = ""


@dataclass(frozen=True)
class Tuning:
    """Retry, backoff and polling knobs. Defaults are production values; tests shrink them."""

    retry_initial_s: float = 1.0
    retry_max_s: float = 30.0
    retry_attempts: int = 3
    # The workflow's own backoff between whole passes, as Crossplane requeues a failed
    # package: first retry after a second, doubling, capped at one minute.
    backoff_initial_s: float = 1.0
    backoff_max_s: float = 60.0
    health_poll_s: float = 2.0
    health_polls: int = 90
    unhealthy_recheck_s: float = 300.0
    # How often a package being deleted (or whose revision is) is looked at again if no
    # signal comes: the watcher signals each step of a deletion, this only backs it up.
    gone_recheck_s: float = 5.0
    # An upgrade's health gate: the new runtime must be healthy within this, or the
    # package goes back to the previous revision (per package: SWITCH_DEADLINE_ANNOTATION).
    switch_deadline_s: float = 300.0
    # packagePullPolicy: Always re-resolves the tag this often (an upgrade if it moved).
    pull_always_s: float = 60.0
    # Parse and establish run as local activities up to this package.yaml size (retry.py).
    local_max_bytes: int = 4 * 1024 * 1024


# --- PackageWorkflow: input, durable state, signals, update, query ----------------------
@dataclass(frozen=True)
class PackageState:
    """What a package's workflow remembers; carried across continue-as-new."""

    dirty: bool = True
    phase: str = "Pending"
    wake_after_s: float = 0.0
    signals_seen: int = 0
    passes: int = 0
    installs: int = 0
    policy: str = AUTOMATIC
    generation: int = 0
    source: str = ""
    digest: str = ""
    current_revision: str = ""
    active_revision: str = ""
    revisions: list[str] = field(default_factory=list)
    installed_key: str = ""
    # The last key an install was started for, so a re-attempt does not say "installing".
    attempted_key: str = ""
    healthy: bool = False
    health_message: str = ""
    # The revision, not its runtime, is unhealthy: its dependencies are not met.
    dependencies_unmet: bool = False
    approved_revision: str = ""
    retry_attempt: int = 0
    last_error: str = ""
    last_error_type: str = ""
    # When the next retry of a failed pass runs (ISO 8601, workflow time); "" if none.
    next_retry_at: str = ""
    # Deletion passes since the package object was found gone (backs off the re-checks).
    gone_checks: int = 0
    # The package object's UID: a new object of the same name starts from scratch.
    uid: str = ""
    # The revision the last switch was reverted from, and the generation it was tried at:
    # it is not tried again until the package's spec changes.
    reverted_revision: str = ""
    reverted_generation: int = 0
    # How the approval of approved_revision came (update, signal or kubectl), from whom
    # (if the caller said) and when (workflow time); recorded_approval: already on record.
    approved_via: str = ""
    approved_by: str = ""
    approved_at: str = ""
    recorded_approval: str = ""
    # The last prepared upgrade's plan, and the revision whose breaking plan an operator
    # accepted through the activation update (the annotation is read each pass).
    plan: Plan | None = None
    accepted_plan: str = ""


@dataclass(frozen=True)
class PackageInput:
    """Input of ``PackageWorkflow``: the package's identity, and state after continue-as-new."""

    kind: str = PROVIDER
    name: str = ""
    tuning: Tuning = field(default_factory=Tuning)
    state: PackageState | None = None


@dataclass(frozen=True)
class PackageResult:
    """Result of ``PackageWorkflow``: it only ends when the package object is gone."""

    kind: str = ""
    name: str = ""
    gone: bool = False
    installs: int = 0


@dataclass(frozen=True)
class LookAgainInput:
    """Signal ``look_again``: something about the package may have changed.

    The fields are for logs only; the workflow re-reads the object, so a lost, repeated or
    reordered signal changes nothing (invariant 1).
    """

    generation: int = 0
    reason: str = ""


@dataclass(frozen=True)
class ActivateRevisionInput:
    """Update ``activate_revision`` and signal ``request_activation`` (Manual policy).

    Both also take the revision name as a plain string (what people type on the
    ``temporal`` CLI: ``--input '"provider-x-0123456789ab"'``).
    """

    revision: str = ""
    # Who approves, when the caller says; otherwise the Temporal identity of the call.
    by: str = ""
    # Also accept this revision's breaking plan (and only this revision's).
    accept_plan: bool = False


def approval(inp: ActivateRevisionInput | str) -> ActivateRevisionInput:
    """The update's or signal's input, whichever form it came in."""
    return ActivateRevisionInput(revision=inp) if isinstance(inp, str) else inp


@dataclass(frozen=True)
class ActivateRevisionResult:
    """What the update's caller learns once the activation has been carried out."""

    revision: str = ""
    active: bool = False
    message: str = ""


@dataclass(frozen=True)
class PackageStatusResult:
    """Query ``status``: a small summary of progress for humans and tests."""

    kind: str = ""
    name: str = ""
    phase: str = ""
    idle: bool = False
    policy: str = AUTOMATIC
    source: str = ""
    digest: str = ""
    current_revision: str = ""
    active_revision: str = ""
    revisions: list[str] = field(default_factory=list)
    healthy: bool = False
    installs: int = 0
    passes: int = 0
    signals_seen: int = 0
    retry_attempt: int = 0
    last_error: str = ""
    last_error_type: str = ""
    next_retry_at: str = ""


# --- package-level activities --------------------------------------------------------
@dataclass(frozen=True)
class ReadPackageInput:
    """Activity ``read_package``: re-read the package object (invariant 1)."""

    kind: str = ""
    name: str = ""


@dataclass(frozen=True)
class ReadPackageResult:
    """The spec fields the workflow decides on. ``found=False`` means the object is gone."""

    found: bool = False
    uid: str = ""
    generation: int = 0
    source: str = ""
    activation_policy: str = AUTOMATIC
    revision_history_limit: int = 1
    ignore_crossplane_constraints: bool = False
    skip_dependency_resolution: bool = False
    deleting: bool = False
    revisions: list[str] = field(default_factory=list)
    active_revision: str = ""
    # How long a switch waits for the new runtime (annotation SWITCH_DEADLINE_ANNOTATION);
    # 0: Tuning.switch_deadline_s.
    switch_deadline_s: float = 0.0
    # The active revision's package: what a reverted switch reinstalls.
    active_source: str = ""
    active_digest: str = ""
    # crossplane.io/paused is "true"; and whether the status still says it was paused.
    paused: bool = False
    synced_paused: bool = False
    pull_policy: str = ""
    # The revision named by the lockwright.io/accept-plan annotation.
    accept_plan: str = ""


@dataclass(frozen=True)
class ResolveDigestInput:
    """Activity ``resolve_digest``: tag → digest, after ImageConfig rewrites.

    Pull secrets are looked up by the activity from the package object; never passed.
    """

    kind: str = ""
    name: str = ""
    source: str = ""


@dataclass(frozen=True)
class ResolveDigestResult:
    """The manifest digest and the reference actually pulled."""

    digest: str = ""
    resolved_source: str = ""
    applied_image_configs: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class EnsureRevisionInput:
    """Activity ``ensure_revision``: create or update ``<package>-<digest12>``.

    A new revision is created Inactive with an owner reference to its package; the
    activity never changes which revision is active (that is ``set_active_revision``).
    """

    kind: str = ""
    package: str = ""
    source: str = ""
    digest: str = ""
    generation: int = 0


@dataclass(frozen=True)
class EnsureRevisionResult:
    """The revision's name, number and desired state as now stored."""

    revision: str = ""
    number: int = 0
    created: bool = False
    desired_state: str = INACTIVE
    # No install has written the revision's status yet: a revision re-created after it was
    # deleted by hand is installed again even though its name, generation and state match.
    fresh: bool = False


@dataclass(frozen=True)
class SetActiveRevisionInput:
    """Activity ``set_active_revision``: make one revision Active, every other Inactive.

    Deactivated revisions release control of their objects and leave the Lock.
    """

    kind: str = ""
    package: str = ""
    revision: str = ""
    # A switch begins (or reverts): flip desiredState only. The other revisions keep their
    # runtime, Lock entry and objects until the switch is finished (a call without it).
    keep_runtime: bool = False
    # A switch is finished: objects only the retired revisions ship are released and,
    # when nothing else owns them, deleted (CRDs with custom resources are kept).
    drop_unshipped: bool = False


@dataclass(frozen=True)
class SetActiveRevisionResult:
    """Which revisions were switched to Inactive."""

    revision: str = ""
    deactivated: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class CollectRevisionsInput:
    """Activity ``collect_revisions``: delete revisions beyond ``revisionHistoryLimit``."""

    kind: str = ""
    package: str = ""
    current_revision: str = ""
    keep: int = 1


@dataclass(frozen=True)
class CollectRevisionsResult:
    """Names of the revisions deleted."""

    deleted: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class WritePackageStatusInput:
    """Activity ``write_package_status``: conditions and fields of the package's status.

    Conditions are merged by type (lastTransitionTime kept when unchanged); an empty string
    field leaves the stored value as it is.
    """

    kind: str = ""
    name: str = ""
    observed_generation: int = 0
    current_revision: str = ""
    current_identifier: str = ""
    resolved_package: str = ""
    conditions: list[Condition] = field(default_factory=list)
    # Condition types to remove (Synced once the pause annotation is gone).
    drop: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class WritePackageStatusResult:
    """``changed`` is False when the status already read this way."""

    changed: bool = False


@dataclass(frozen=True)
class CleanupPackageInput:
    """Activity ``cleanup_package``: the package is gone or being deleted; clean up.

    Drops the Lock entries of its revisions that are gone or being deleted, and reports
    what Kubernetes' garbage collector still has to remove. Creates and rewrites nothing.
    """

    kind: str = ""
    name: str = ""


@dataclass(frozen=True)
class CleanupPackageResult:
    """Lock entries removed; revisions still owned by the package (the GC removes them).

    ``waiting`` counts revisions that still carry an owner reference to the package; the
    clean-up is over once the package object is gone and ``waiting`` is 0. Revisions
    orphaned by ``propagationPolicy: Orphan`` are left alone and counted in ``orphaned``.
    """

    removed: int = 0
    waiting: int = 0
    orphaned: int = 0


# --- InstallRevision child ------------------------------------------------------------
@dataclass(frozen=True)
class InstallRevisionInput:
    """Child workflow ``InstallRevision``: install one revision, active or not."""

    kind: str = PROVIDER
    package: str = ""
    revision: str = ""
    source: str = ""
    digest: str = ""
    active: bool = True
    ignore_crossplane_constraints: bool = False
    skip_dependency_resolution: bool = False
    tuning: Tuning = field(default_factory=Tuning)
    # The package's generation and spec.package, for its status while the runtime starts.
    generation: int = 0
    identifier: str = ""
    # Prepare an upgrade: fetch, parse, lint, version check, and check the Lock and every
    # object write (server-side dry run) as if active; no runtime, nothing taken over.
    prepare: bool = False
    # A switch's health gate: wait at most this long for the runtime (0: Tuning's polls).
    health_deadline_s: float = 0.0
    # Preparing: the active revision (and its digest) the plan compares against.
    against: str = ""
    against_digest: str = ""


@dataclass(frozen=True)
class InstallRevisionResult:
    """Counts and health of an installed revision; failures arrive as ApplicationError."""

    revision: str = ""
    digest: str = ""
    objects: int = 0
    dependencies: int = 0
    healthy: bool = False
    message: str = ""
    # The revision or its package went away (or began to) during the install: the install
    # stopped between steps and wrote nothing more.
    gone: bool = False
    # Dependencies missing or at an invalid version: the install stopped after the Lock,
    # ``message`` says which (the revision's health, not the runtime's).
    dependencies_unmet: bool = False
    # Preparing: what the switch would change (None before plans, or with nothing active).
    plan: Plan | None = None


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


# --- revision-level activities -------------------------------------------------------
@dataclass(frozen=True)
class FetchPackageInput:
    """Activity ``fetch_package``: pull by digest into the cache (heartbeats while pulling)."""

    kind: str = ""
    package: str = ""
    revision: str = ""
    source: str = ""
    digest: str = ""


@dataclass(frozen=True)
class FetchPackageResult:
    """What was cached: never the contents, only their size and object counts by kind."""

    digest: str = ""
    size: int = 0
    cached: bool = False
    object_counts: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ParsePackageInput:
    """Activity ``parse_package``: parse, validate and lint ``package.yaml`` from the cache."""

    kind: str = ""
    revision: str = ""
    digest: str = ""


@dataclass(frozen=True)
class ParsePackageResult:
    """The few meta facts the workflow needs; lint warnings capped (first few + count)."""

    meta_name: str = ""
    crossplane_constraint: str = ""
    dependencies: int = 0
    objects: int = 0
    warnings: int = 0
    first_warnings: list[str] = field(default_factory=list)
    capabilities: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class CheckCrossplaneVersionInput:
    """Activity ``check_crossplane_version``: compare the constraint with the worker's version."""

    revision: str = ""
    constraint: str = ""


@dataclass(frozen=True)
class CheckCrossplaneVersionResult:
    """The version compared against; a mismatch raises ConstraintError instead."""

    version: str = ""


@dataclass(frozen=True)
class TakeLockInput:
    """Activity ``take_lock``: add the package to the Lock by compare-and-swap.

    Dependencies are read from the cache by digest and recorded in the Lock entry.
    A conflict with another package raises ConflictError naming the winner.
    """

    kind: str = ""
    package: str = ""
    revision: str = ""
    source: str = ""
    digest: str = ""
    # Preparing an upgrade: check that the Lock would take the revision; write nothing.
    check_only: bool = False
    # skipDependencyResolution: the entry records no dependencies (its claim still counts).
    skip_dependencies: bool = False


@dataclass(frozen=True)
class TakeLockResult:
    """The Lock's resourceVersion after our write, and the dependencies recorded."""

    resource_version: str = ""
    dependencies: int = 0
    cas_attempts: int = 1
    # The revision side of resolution (reference §11), read from the Lock just written:
    # dependencies in the Lock, those at a version their constraint refuses, and
    # Crossplane's message when any is missing or invalid ("" when all are met).
    found_dependencies: int = 0  # transitive ones included, once all direct ones are in
    installed_dependencies: int = 0
    invalid_dependencies: int = 0
    dependency_message: str = ""


@dataclass(frozen=True)
class EnsureTlsInput:
    """Activity ``ensure_tls``: CA, server and client Secrets for a package's webhooks."""

    kind: str = ""
    package: str = ""
    revision: str = ""


@dataclass(frozen=True)
class EnsureTlsResult:
    """Secret names only; keys never leave the activity."""

    server_secret: str = ""
    client_secret: str = ""


@dataclass(frozen=True)
class EstablishObjectsInput:
    """Activity ``establish_objects``: all-or-nothing apply of the package's objects.

    ``control`` = the revision is Active: it creates missing objects and becomes their
    controller; otherwise it only adds plain owner references (invariant 5).
    """

    kind: str = ""
    package: str = ""
    revision: str = ""
    digest: str = ""
    control: bool = True
    # Preparing an upgrade: check everything and dry-run every write; write nothing.
    dry_run: bool = False


@dataclass(frozen=True)
class EstablishObjectsResult:
    """How many objects the revision now controls or owns."""

    objects: int = 0
    created: int = 0
    updated: int = 0


@dataclass(frozen=True)
class EnsureRbacInput:
    """Activity ``ensure_rbac``: per-revision ClusterRoles and the binding (providers)."""

    kind: str = ""
    package: str = ""
    revision: str = ""
    digest: str = ""
    active: bool = True


@dataclass(frozen=True)
class EnsureRbacResult:
    """Counts of what was applied."""

    cluster_roles: int = 0
    bindings: int = 0


@dataclass(frozen=True)
class EnsureRuntimeInput:
    """Activity ``ensure_runtime``: ServiceAccount, Deployment and Service of the package."""

    kind: str = ""
    package: str = ""
    revision: str = ""
    source: str = ""
    digest: str = ""


@dataclass(frozen=True)
class EnsureRuntimeResult:
    """Names of the runtime objects."""

    deployment: str = ""
    service_account: str = ""
    service: str = ""


@dataclass(frozen=True)
class CheckHealthInput:
    """Activity ``check_health``: one look at the runtime Deployment; no waiting inside."""

    kind: str = ""
    package: str = ""
    revision: str = ""


@dataclass(frozen=True)
class CheckHealthResult:
    """``healthy`` plus the runtime's own message when it is not."""

    healthy: bool = False
    message: str = ""


@dataclass(frozen=True)
class WriteRevisionStatusInput:
    """Activity ``write_revision_status``: conditions and counts of a revision."""

    kind: str = ""
    revision: str = ""
    conditions: list[Condition] = field(default_factory=list)
    objects: int = 0
    found_dependencies: int = 0
    resolved_image: str = ""
    capabilities: list[str] = field(default_factory=list)
    installed_dependencies: int = 0
    invalid_dependencies: int = 0


@dataclass(frozen=True)
class WriteRevisionStatusResult:
    """``changed`` is False when the status already read this way."""

    changed: bool = False


# --- events -----------------------------------------------------------------------------
@dataclass(frozen=True)
class RecordEventInput:
    """Activity ``record_event``: a Kubernetes Event on a package or one of its revisions.

    For what the workflow decides and Kubernetes cannot see: a reverted switch, an
    approval (who and when).
    """

    kind: str = ""
    name: str = ""
    revision: str = ""  # the Event is about this revision; "" for the package itself
    type: str = "Normal"
    reason: str = ""
    message: str = ""


@dataclass(frozen=True)
class RecordEventResult:
    """``recorded`` is False when the object was gone."""

    recorded: bool = False


@dataclass(frozen=True)
class RecordApprovalInput:
    """Activity ``record_approval``: who approved a revision and when, as an Event on it.

    ``by`` empty: the Temporal identity of the update or signal is read from the
    workflow's history (``workflow_id``, ``run_id``); for ``via="kubectl"`` the manager
    and time of the revision's ``spec.desiredState`` are read from its managedFields.
    """

    kind: str = ""
    package: str = ""
    revision: str = ""
    via: str = ""
    by: str = ""
    at: str = ""
    workflow_id: str = ""
    run_id: str = ""
    # The approval accepts the revision's breaking plan (Event AcceptPlan); via
    # "annotation": who set lockwright.io/accept-plan on the package, from its managedFields.
    plan: bool = False


@dataclass(frozen=True)
class RecordApprovalResult:
    """Who and when, as recorded."""

    by: str = ""
    at: str = ""


# --- ResolveDependencies: the cluster's dependency resolution workflow ---------------
@dataclass(frozen=True)
class ResolveState:
    """What the resolution workflow remembers; carried across continue-as-new."""

    dirty: bool = True
    wake_after_s: float = 0.0
    passes: int = 0
    signals_seen: int = 0
    retry_attempt: int = 0
    resolved: bool = True
    created: int = 0
    moved: int = 0
    last_message: str = ""


@dataclass(frozen=True)
class ResolveInput:
    """Input of ``ResolveDependencies``; ``state`` after continue-as-new."""

    tuning: Tuning = field(default_factory=Tuning)
    state: ResolveState | None = None


@dataclass(frozen=True)
class ResolveResult:
    """Result of ``ResolveDependencies`` (it runs for as long as the cluster does)."""

    passes: int = 0


@dataclass(frozen=True)
class PackageRef:
    """A package object: its kind in workflow ids (``provider``) and its name."""

    kind: str = ""
    name: str = ""


@dataclass(frozen=True)
class DependencyChange:
    """A package the resolver creates (``from_version`` "") or moves to ``package``."""

    kind: str = ""  # Provider, Configuration or Function
    name: str = ""
    package: str = ""  # spec.package: repository:tag or repository@digest
    api_version: str = "pkg.crossplane.io/v1"
    from_version: str = ""


@dataclass(frozen=True)
class UnresolvedDependencies:
    """Revisions whose dependencies have no solution, and the chain that explains it."""

    revisions: list[str] = field(default_factory=list)
    message: str = ""


@dataclass(frozen=True)
class ResolveDependenciesInput:
    """Activity ``resolve_dependencies``: read the graph, resolve it, decide (writes nothing)."""

    reason: str = ""


@dataclass(frozen=True)
class ResolveDependenciesResult:
    """The inputs in brief (counts, names and versions) and the decision.

    ``installed`` lists ``<source>@<version>`` of the Lock's packages (at most
    ``MAX_LISTED_PACKAGES``); never package contents.
    """

    lock_packages: int = 0
    package_objects: int = 0
    dependencies: int = 0
    repositories_listed: int = 0
    installed: list[str] = field(default_factory=list)
    changes: list[DependencyChange] = field(default_factory=list)
    unresolved: list[UnresolvedDependencies] = field(default_factory=list)
    # The Lock's status or annotation does not say this yet: apply_resolution writes it.
    lock_stale: bool = False
    # Packages whose revisions' dependency status no longer matches the Lock: look again.
    nudge: list[PackageRef] = field(default_factory=list)
    # Some of it failed on the registry: resolve again later even if nothing changes.
    retry: bool = False


MAX_LISTED_PACKAGES = 50


@dataclass(frozen=True)
class ApplyResolutionInput:
    """Activity ``apply_resolution``: create or move packages, write the Lock's status."""

    changes: list[DependencyChange] = field(default_factory=list)
    unresolved: list[UnresolvedDependencies] = field(default_factory=list)


@dataclass(frozen=True)
class ApplyResolutionResult:
    """What was written."""

    created: list[str] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)
    lock_status_written: bool = False


@dataclass(frozen=True)
class ResolveStatusResult:
    """Query ``status`` of ``ResolveDependencies``."""

    passes: int = 0
    signals_seen: int = 0
    idle: bool = False
    resolved: bool = True
    created: int = 0
    moved: int = 0
    last_message: str = ""
    retry_attempt: int = 0
