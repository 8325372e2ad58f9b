"""Condition types, reasons and messages of Crossplane's package manager (docs/crossplane.md §4).

Conditions are plain dicts shaped as Kubernetes writes them::

    {"type", "status", "reason", "message", "lastTransitionTime", "observedGeneration"}

The one vocabulary of condition types, reasons and messages: the workflows decide their
conditions from these names (``workflows.status``) and activities write them.
:func:`condition` leaves ``lastTransitionTime`` empty; :func:`set_condition` stamps it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

Condition = dict[str, Any]

TRUE, FALSE, UNKNOWN = "True", "False", "Unknown"

# Types.
INSTALLED = "Installed"
HEALTHY = "Healthy"
REVISION_HEALTHY = "RevisionHealthy"
RUNTIME_HEALTHY = "RuntimeHealthy"
RUNTIME_ACTIVE = "RuntimeActive"
SYNCED = "Synced"
RESOLVED = "Resolved"

# Reasons.
ACTIVE_PACKAGE_REVISION = "ActivePackageRevision"
INACTIVE_PACKAGE_REVISION = "InactivePackageRevision"
UNPACKING_PACKAGE = "UnpackingPackage"
HEALTHY_PACKAGE_REVISION = "HealthyPackageRevision"
UNHEALTHY_PACKAGE_REVISION = "UnhealthyPackageRevision"
UNKNOWN_PACKAGE_REVISION_HEALTH = "UnknownPackageRevisionHealth"
AWAITING_ACTIVATION = "AwaitingActivation"
AWAITING_VERIFICATION = "AwaitingSignatureVerification"
ACTIVE_RUNTIME = "ActiveRuntime"
RECONCILE_PAUSED = "ReconcilePaused"
DEPENDENCY_RESOLUTION_SUCCEEDED = "DependencyResolutionSucceeded"
DEPENDENCY_RESOLUTION_FAILED = "DependencyResolutionFailed"

# Message prefixes and fixed messages, exactly as Crossplane writes them.
MSG_UNPACK = "cannot unpack package: "
MSG_INACTIVE = "Package is inactive"
MSG_GET_PACKAGE = "cannot get package: "
MSG_VALIDATE = "validating package contents failed: "
MSG_LINT = "linting package contents failed: "
MSG_MULTIPLE_META = "cannot install package with multiple meta types"
MSG_INCOMPATIBLE_CROSSPLANE = (
    "incompatible Crossplane version: package is not compatible with Crossplane version ({})"
)
MSG_RESOLVE_DEPENDENCIES = "cannot resolve package dependencies: "
MSG_ESTABLISH = "cannot establish control of object: "
MSG_UPDATE_METADATA = "cannot update package revision object metadata: "
MSG_RUNTIME_OPTIONS = "cannot prepare runtime manifest builder options: "
MSG_PRE_HOOK = "pre establish runtime hook failed for package: "
MSG_POST_HOOK = "post establish runtime hook failed for package: "
MSG_REVISION_NOT_HEALTHY = "Package revision is not healthy yet"
MSG_AWAITING_ACTIVATION = (
    "Package runtime is scaled to zero; awaiting the first ManagedResourceDefinition to be "
    "activated"
)
MSG_PAUSED = "Reconciliation (including deletion) is paused via the pause annotation"
MSG_RESOLUTION_FAILED = "Error occurred during dependency resolution "


def condition(type_: str, status: str, reason: str, message: str = "",
              generation: int = 0) -> Condition:
    """Build a condition dict; ``lastTransitionTime`` is filled by :func:`set_condition`.

    An empty message is left out, as Crossplane's ``omitempty`` does.
    """
    out: Condition = {"type": type_, "status": status, "reason": reason,
                      "lastTransitionTime": "", "observedGeneration": generation}
    if message:
        out["message"] = message
    return out


def resolution_succeeded(generation: int = 0) -> Condition:
    """Resolved=True/DependencyResolutionSucceeded on the Lock."""
    return condition(RESOLVED, TRUE, DEPENDENCY_RESOLUTION_SUCCEEDED, "", generation)


def resolution_failed(error: str, generation: int = 0) -> Condition:
    """Resolved=False/DependencyResolutionFailed on the Lock (no colon, as in Crossplane)."""
    return condition(RESOLVED, FALSE, DEPENDENCY_RESOLUTION_FAILED,
                     MSG_RESOLUTION_FAILED + error, generation)


def format_time(now: datetime) -> str:
    """RFC 3339 in UTC with second precision, as Kubernetes serialises ``metav1.Time``."""
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def get_condition(conditions: list[Condition] | None, type_: str) -> Condition | None:
    """Return the condition of ``type_``, or None."""
    return next((c for c in conditions or [] if c.get("type") == type_), None)



def says_paused(conditions: list[Condition] | None) -> bool:
    """True when ``conditions`` still carry ``Synced`` with reason ``ReconcilePaused``.

    Once the pause annotation is gone, this is how the package's workflow knows it still
    has to drop the condition and resume.
    """
    synced = get_condition(conditions, SYNCED)
    return (synced or {}).get("reason") == RECONCILE_PAUSED

def set_condition(conditions: list[Condition] | None, new: Condition,
                  now: datetime) -> list[Condition]:
    """Return ``conditions`` with ``new`` set, keyed by type; the input is not changed.

    ``lastTransitionTime`` is kept when the status is unchanged and set to ``now``
    otherwise, so it records when the status last flipped.
    """
    old = get_condition(conditions, new["type"])
    if old is not None and old.get("status") == new["status"] and old.get("lastTransitionTime"):
        stamp = str(old["lastTransitionTime"])
    else:
        stamp = format_time(now)
    stamped = {**new, "lastTransitionTime": stamp}
    if old is None:
        return [*(conditions or []), stamped]
    return [stamped if c is old else c for c in conditions or []]
