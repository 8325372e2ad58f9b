"""The ``InstallRevision`` child workflow, the revision-level activities it calls, and the
Events it records."""

from __future__ import annotations

from dataclasses import dataclass, field

from lockwright.contracts.activation import Activated
from lockwright.contracts.names import PROVIDER
from lockwright.contracts.shared import Condition, Tuning
from lockwright.upgrade.plan import Plan


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
    # A switch: the fingerprints of its preparation's dry run (EstablishObjectsResult).
    checked: list[str] = field(default_factory=list)
    # A switch: its preparation's parse and the package's size, from the same pass moments
    # before, so it neither fetches nor parses again (None: it does both).
    parsed: ParsePackageResult | None = None
    size: int = 0


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
    # Crossplane v2: how many of its ManagedResourceDefinitions were Active when installed.
    active_definitions: int = 0
    # Preparing: the fingerprints of what its dry run checked, for the switch to trust.
    checked: list[str] = field(default_factory=list)
    # Preparing: its parse and the package's size, for the switch to take.
    parsed: ParsePackageResult | None = None
    size: int = 0
    # Ended healthy and active, and wrote the package's Healthy beside the revision's
    # status: a switch's parent need not write it again before retiring the old revision.
    package_healthy: bool = False



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
    # The revision side of resolution (docs/crossplane.md §11), read from the Lock just written:
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
    controller; otherwise it only adds plain owner references (docs/design.md invariant 5).
    """

    kind: str = ""
    package: str = ""
    revision: str = ""
    digest: str = ""
    control: bool = True
    # Preparing an upgrade: check everything and dry-run every write; write nothing.
    dry_run: bool = False
    # A switch: the preparation's fingerprints (EstablishObjectsResult.checked); a batch
    # whose planned writes fingerprint the same is not dry-run again.
    trust: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class EstablishObjectsResult:
    """How many objects the revision now controls or owns."""

    objects: int = 0
    created: int = 0
    updated: int = 0
    # Crossplane v2: the ManagedResourceDefinitions among them, and how many are Active.
    definitions: int = 0
    active_definitions: int = 0
    # A dry run's fingerprints, per batch of objects (lockwright.activities.trust).
    checked: list[str] = field(default_factory=list)
    # Objects not dry-run again: their fingerprint was the preparation's.
    trusted: int = 0
    # A switch written from its preparation's checks, kept by the worker that ran it
    # (lockwright.activities.trust.Kept): no object read again but those changed since,
    # ``rechecked`` of them, refused (409) and read, checked and written again.
    from_preparation: bool = False
    rechecked: int = 0
    # Safe-start MRDs made Active by this install because a policy in force names them
    # (each with the policy; at most MAX_NAMES, the count says how many in all).
    activated: list[Activated] = field(default_factory=list)
    activated_count: int = 0


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
    # Safe-start: none of the revision's ManagedResourceDefinitions is Active yet, so the
    # runtime runs no replica (unless it already ran: never back to zero).
    awaiting_activation: bool = False


@dataclass(frozen=True)
class EnsureRuntimeResult:
    """Names of the runtime objects."""

    deployment: str = ""
    service_account: str = ""
    service: str = ""
    # Safe-start: the Deployment runs no replica, awaiting the first Active MRD.
    scaled_to_zero: bool = False
    # The Deployment's resourceVersion as applied: the health watch lists it no older.
    resource_version: str = ""


@dataclass(frozen=True)
class CheckHealthInput:
    """Activity ``check_health``: one look at the runtime Deployment or, with ``watch_s``,
    a watch of it until it is Available or ``watch_s`` seconds have passed.

    ``deployment``: its name, as ``ensure_runtime`` just applied it (empty: found from the
    revision's runtime config, as before). ``not_older_than``: its ``resourceVersion`` as
    applied; the watch's first list is then served from the API server's watch cache
    once the cache holds that version, instead of waiting for it to reach etcd's latest
    (empty: a consistent list, as before).
    """

    kind: str = ""
    package: str = ""
    revision: str = ""
    watch_s: float = 0.0
    deployment: str = ""
    not_older_than: str = ""


@dataclass(frozen=True)
class CheckHealthResult:
    """``healthy`` plus the runtime's own message when it is not.

    ``watched``: the whole ``watch_s`` window was watched (the workflow need not poll).
    """

    healthy: bool = False
    message: str = ""
    watched: bool = False


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
    workflow's history (``workflow_id``; ``run_id``: the run that received the approval,
    not always the one recording it); for ``via="kubectl"`` the manager and time of the
    revision's ``spec.desiredState`` are read from its managedFields.
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
