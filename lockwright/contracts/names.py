"""Names that cross a Temporal boundary: the task queue, package kinds and annotations,
error types, activity, signal, update and query names, search attributes and workflow ids.

One source of truth: workflows, activities, the watcher, the CLI and test fakes all take
these from here, so none has to import another to agree on a name.
"""

from __future__ import annotations

import hashlib

from temporalio.common import SearchAttributeKey

from lockwright.identity import names as identity_names

# A revision's desired states as the core names them (re-exported: workflows speak them).
from lockwright.names import ACTIVE as ACTIVE
from lockwright.names import INACTIVE as INACTIVE
from lockwright.upgrade import gate

TASK_QUEUE = "lockwright"

# Package kinds, as they appear in workflow ids (lower case) and in Kubernetes (title case).
PROVIDER, CONFIGURATION, FUNCTION = "provider", "configuration", "function"
KINDS_WITH_RUNTIME = (PROVIDER, FUNCTION)

AUTOMATIC, MANUAL = "Automatic", "Manual"
# Package annotation: seconds an upgrade waits for the new runtime before reverting.
SWITCH_DEADLINE_ANNOTATION = "lockwright.dev/switch-deadline-seconds"
# Package annotation: the upgrade gate of this package, Evidence or Strict (default: the
# worker's LOCKWRIGHT_UPGRADE_GATE).
UPGRADE_GATE_ANNOTATION = gate.ANNOTATION
# Package annotation that stops every step for the package while it is "true".
PAUSED_ANNOTATION = "crossplane.io/paused"
# Revision annotation: the digest a revision was made from (its name keeps only 12 hex).
DIGEST_ANNOTATION = identity_names.PACKAGE_DIGEST
# On a Provider revision: how many of its ManagedResourceDefinitions are Active, written by
# establish_objects and by the activation workflow; a change makes the package install again
# (the CRDs of newly Active MRDs, a safe-start runtime scaled up).
ACTIVE_DEFINITIONS_ANNOTATION = "lockwright.dev/active-definitions"

# Permanent error types: the PermanentError classes of lockwright/errors.py, by name (a
# test keeps the two in step). Only a new spec can fix them; the attempt ends, the error is
# written to status and the workflow waits for a change (docs/design.md invariant 6). All else
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
    "ApiUnserved",
)
# lockwright.errors.ObjectGone: the object a step acts on is gone or being deleted. Not
# retried, not a failure: the branch ends and the workflow looks again (docs/design.md invariant 8).
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
APPLY_RESOLUTION = "apply_resolution"  # registered name: carries out the resolver's decision
PLAN_REVISION = "plan_revision"
ACTIVATE_DEFINITIONS = "activate_definitions"
PROTECT_PROVIDERS = "protect_providers"

ALL_ACTIVITY_NAMES = (
    READ_PACKAGE, RESOLVE_DIGEST, ENSURE_REVISION, SET_ACTIVE_REVISION, COLLECT_REVISIONS,
    WRITE_PACKAGE_STATUS, CLEANUP_PACKAGE, FETCH_PACKAGE, PARSE_PACKAGE,
    CHECK_CROSSPLANE_VERSION, TAKE_LOCK, ENSURE_TLS, ESTABLISH_OBJECTS, ENSURE_RBAC,
    ENSURE_RUNTIME, CHECK_HEALTH, WRITE_REVISION_STATUS, RECORD_EVENT, RECORD_APPROVAL,
    RESOLVE_DEPENDENCIES, APPLY_RESOLUTION, PLAN_REVISION, ACTIVATE_DEFINITIONS,
    PROTECT_PROVIDERS,
)

# --- signal, update and query names ----------------------------------------------------
SIGNAL_LOOK_AGAIN = "look_again"
# An operator's approval of a revision (Manual policy): registered names, kept for histories
# and clients (they keep the older word, "activation"; docs/design.md, "Words").
SIGNAL_REQUEST_APPROVAL = "request_activation"
UPDATE_APPROVE_REVISION = "activate_revision"
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


#: The longest workflow id a Temporal cluster on SQL keeps: its PostgreSQL and MySQL schemas
#: store ids as VARCHAR(255) (and compose setups set ``limit.maxIDLength`` to 255 to match).
#: A Kubernetes name may have 253 characters, so ``package:configuration:<name>`` may not fit.
MAX_WORKFLOW_ID = 255
_DIGEST_CHARS = 32


def _on_queue(base: str, task_queue: str) -> str:
    """Return ``base`` on the default task queue, else ``base:<task queue>``, fitted into
    :data:`MAX_WORKFLOW_ID`.

    A Temporal namespace shared by several clusters gives each cluster its own task queue;
    ids that carry it keep one cluster's workflows from answering another's watcher. On
    the default queue ids stay as they always were (running workflows, recorded histories).
    """
    return _fitted(base if task_queue == TASK_QUEUE else f"{base}:{task_queue}")


def _fitted(workflow_id: str) -> str:
    """``workflow_id`` if it fits; else its beginning, ``~`` and a digest of the whole id, so
    a long id stays the same for the same package and distinct from every other one."""
    if len(workflow_id) <= MAX_WORKFLOW_ID:
        return workflow_id
    digest = hashlib.sha256(workflow_id.encode()).hexdigest()[:_DIGEST_CHARS]
    return f"{workflow_id[:MAX_WORKFLOW_ID - _DIGEST_CHARS - 1]}~{digest}"


def package_workflow_id(kind: str, name: str, task_queue: str) -> str:
    """Return the id of a package's entity workflow; it is the dedup key for watchers.

    ``package:<kind>:<name>``, ending in ``:<task queue>`` off the default queue.
    """
    return _on_queue(f"package:{kind}:{name}", task_queue)


def revision_workflow_id(kind: str, revision: str, task_queue: str) -> str:
    """Return the id of the child workflow that installs one revision (queue as above)."""
    return _on_queue(f"revision:{kind}:{revision}", task_queue)


def plan_workflow_id(kind: str, name: str, nonce: str, task_queue: str) -> str:
    """Return the id of one ``PlanCandidate`` run (``nonce`` makes each run its own)."""
    return _on_queue(f"plan:{kind}:{name}:{nonce}", task_queue)


def resolve_workflow_id(task_queue: str = TASK_QUEUE) -> str:
    """Return the id of the cluster's one dependency resolution workflow.

    ``resolve:lock`` on the default task queue. A Temporal namespace shared by several
    clusters gives each its own task queue, and then its own resolver:
    ``resolve:lock:<task queue>``.
    """
    return _on_queue("resolve:lock", task_queue)


def protection_workflow_id(task_queue: str = TASK_QUEUE) -> str:
    """Return the id of the cluster's one provider deletion protection workflow:
    ``protect:providers``, or ``protect:providers:<task queue>`` as for the resolver."""
    return _on_queue("protect:providers", task_queue)


def activation_workflow_id(task_queue: str = TASK_QUEUE) -> str:
    """Return the id of the cluster's one activation workflow (activation policies):
    ``activate:definitions``, or ``activate:definitions:<task queue>`` as for the resolver."""
    return _on_queue("activate:definitions", task_queue)
