"""``PackageWorkflow``: its input, durable state, signals, update and query, and the
package-level activities it calls."""

from __future__ import annotations

from dataclasses import dataclass, field

from lockwright.contracts.names import AUTOMATIC, INACTIVE, PROVIDER
from lockwright.contracts.shared import Condition, Tuning
from lockwright.upgrade.plan import Plan


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
    # The run that received the approval: its history holds the signal or update with the
    # sender's identity; a continue-as-new before the record does not carry that event.
    approved_run_id: str = ""
    recorded_approval: str = ""
    # The last prepared upgrade's plan, and the revision whose breaking plan an operator
    # accepted through the approval update (the annotation is read each pass).
    plan: Plan | None = None
    accepted_plan: str = ""
    # Active ManagedResourceDefinitions of the installed revision when it was installed: a
    # revision recording another count (an activation since) installs again.
    active_definitions: int = 0
    # The runtime's DeploymentRuntimeConfig (``name@generation``) when it was installed: a
    # changed config installs again. "" until a pass has recorded one (see package.py).
    runtime_config: str = ""


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

    The fields are for logs only, but for ``deferrable``, which says when to look, not what
    is seen: the workflow re-reads the object, so a lost, repeated or reordered signal
    changes nothing (docs/design.md invariant 1).
    """

    generation: int = 0
    reason: str = ""
    # Only an MRD's CRD was written while an activation policy waits: the activation
    # workflow may start its pass later (docs/design.md, "Activation passes deferred
    # while a policy waits").
    deferrable: bool = False


@dataclass(frozen=True)
class ApproveRevisionInput:
    """Update ``approve_revision`` and signal ``request_approval`` (Manual policy; registered
    as ``activate_revision`` and ``request_activation``).

    Both also take the revision name as a plain string (what people type on the
    ``temporal`` CLI: ``--input '"provider-x-0123456789ab"'``).
    """

    revision: str = ""
    # Who approves, when the caller says; otherwise the Temporal identity of the call.
    by: str = ""
    # Also accept this revision's breaking plan (and only this revision's).
    accept_plan: bool = False


def approval(inp: ApproveRevisionInput | str) -> ApproveRevisionInput:
    """The update's or signal's input, whichever form it came in."""
    return ApproveRevisionInput(revision=inp) if isinstance(inp, str) else inp


@dataclass(frozen=True)
class ApproveRevisionResult:
    """What the update's caller learns once the approval has been carried out."""

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
    """Activity ``read_package``: re-read the package object (docs/design.md invariant 1)."""

    kind: str = ""
    name: str = ""


@dataclass(frozen=True)
class ReadPackageResult:
    """The spec fields the workflow decides on. ``found=False`` means the object is gone."""

    found: bool = False
    uid: str = ""
    generation: int = 0
    source: str = ""
    # Crossplane's revisionActivationPolicy, under the name histories hold.
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
    # The active revision's count of Active ManagedResourceDefinitions, as last recorded
    # (ACTIVE_DEFINITIONS_ANNOTATION); -1 when it records none.
    active_definitions: int = -1
    # The upgrade gate (lockwright.dev/upgrade-gate, else the worker's setting): Evidence
    # or Strict; "" (a result from before gates) is Strict. ``upgrade_gate_problem`` says
    # what is wrong with an annotation that names no gate (it is then Strict).
    upgrade_gate: str = ""
    upgrade_gate_problem: str = ""
    # The DeploymentRuntimeConfig the package's runtime is rendered from, as
    # ``name@generation`` ("" for none: a Configuration, the External runtime, a missing
    # one, or a result from before this field).
    runtime_config: str = ""


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
    """Activity ``ensure_revision``: create or update the package's revision of ``digest``
    at ``generation`` (``<package>-<12 hex of sha256(digest|generation)>``).

    A new revision is created Inactive with an owner reference to its package, or Active
    when ``active_if_first`` and the package has no other revision: then there is nothing
    to hand over. Otherwise the activity never changes which revision is active (that is
    ``set_active_revision``).
    """

    kind: str = ""
    package: str = ""
    source: str = ""
    digest: str = ""
    generation: int = 0
    # The workflow's decision: the package's first revision starts Active (Automatic
    # activation, as Crossplane creates it), saving set_active_revision's reads and write.
    active_if_first: bool = False


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
