"""Condition types, reasons and messages of Crossplane's package manager (reference §4).

Conditions are plain dicts shaped as Kubernetes writes them::

    {"type", "status", "reason", "message", "lastTransitionTime", "observedGeneration"}

Constructors leave ``lastTransitionTime`` empty; :func:`set_condition` stamps it.
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


def installed_active(generation: int = 0) -> Condition:
    """Installed=True/ActivePackageRevision: the current revision is applied and Active."""
    return condition(INSTALLED, TRUE, ACTIVE_PACKAGE_REVISION, "", generation)


def installed_inactive(generation: int = 0) -> Condition:
    """Installed=False/InactivePackageRevision "Package is inactive" (Manual policy)."""
    return condition(INSTALLED, FALSE, INACTIVE_PACKAGE_REVISION, MSG_INACTIVE, generation)


def unpacking_failed(error: str, generation: int = 0) -> list[Condition]:
    """Installed and Healthy both False with ``cannot unpack package: <error>``."""
    message = MSG_UNPACK + error
    return [condition(INSTALLED, FALSE, UNPACKING_PACKAGE, message, generation),
            condition(HEALTHY, FALSE, UNHEALTHY_PACKAGE_REVISION, message, generation)]


def healthy(generation: int = 0) -> Condition:
    """Healthy=True/HealthyPackageRevision on a package."""
    return condition(HEALTHY, TRUE, HEALTHY_PACKAGE_REVISION, "", generation)


def unhealthy(message: str, generation: int = 0) -> Condition:
    """Healthy=False/UnhealthyPackageRevision on a package."""
    return condition(HEALTHY, FALSE, UNHEALTHY_PACKAGE_REVISION, message, generation)


def health_unknown(generation: int = 0) -> Condition:
    """Healthy=Unknown/UnknownPackageRevisionHealth on a package."""
    return condition(HEALTHY, UNKNOWN, UNKNOWN_PACKAGE_REVISION_HEALTH, "", generation)


def revision_healthy(generation: int = 0) -> Condition:
    """RevisionHealthy=True/HealthyPackageRevision."""
    return condition(REVISION_HEALTHY, TRUE, HEALTHY_PACKAGE_REVISION, "", generation)


def revision_unhealthy(message: str, generation: int = 0) -> Condition:
    """RevisionHealthy=False/UnhealthyPackageRevision with ``message``."""
    return condition(REVISION_HEALTHY, FALSE, UNHEALTHY_PACKAGE_REVISION, message, generation)


def revision_health_unknown(generation: int = 0) -> Condition:
    """RevisionHealthy=Unknown/UnknownPackageRevisionHealth."""
    return condition(REVISION_HEALTHY, UNKNOWN, UNKNOWN_PACKAGE_REVISION_HEALTH, "", generation)


def runtime_healthy(generation: int = 0) -> Condition:
    """RuntimeHealthy=True/HealthyPackageRevision."""
    return condition(RUNTIME_HEALTHY, TRUE, HEALTHY_PACKAGE_REVISION, "", generation)


def runtime_unhealthy(message: str, generation: int = 0) -> Condition:
    """RuntimeHealthy=False/UnhealthyPackageRevision with ``message``."""
    return condition(RUNTIME_HEALTHY, FALSE, UNHEALTHY_PACKAGE_REVISION, message, generation)


def runtime_health_unknown(generation: int = 0) -> Condition:
    """RuntimeHealthy=Unknown/UnknownPackageRevisionHealth."""
    return condition(RUNTIME_HEALTHY, UNKNOWN, UNKNOWN_PACKAGE_REVISION_HEALTH, "", generation)


def runtime_active(generation: int = 0) -> Condition:
    """RuntimeActive=True/ActiveRuntime: the Deployment is scaled up."""
    return condition(RUNTIME_ACTIVE, TRUE, ACTIVE_RUNTIME, "", generation)


def runtime_awaiting_activation(generation: int = 0) -> Condition:
    """RuntimeActive=False/AwaitingActivation (safe-start scale-to-zero)."""
    return condition(RUNTIME_ACTIVE, FALSE, AWAITING_ACTIVATION, MSG_AWAITING_ACTIVATION,
                     generation)


def reconcile_paused(generation: int = 0) -> Condition:
    """Synced=False/ReconcilePaused, set while the pause annotation is present."""
    return condition(SYNCED, FALSE, RECONCILE_PAUSED, MSG_PAUSED, generation)


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


def same_conditions(a: list[Condition] | None, b: list[Condition] | None) -> bool:
    """True when both lists hold the same conditions by type, ignoring order."""
    return {c["type"]: c for c in a or []} == {c["type"]: c for c in b or []}


def _health_message(what: str, cond: Condition | None) -> str:
    status = cond.get("status", UNKNOWN) if cond else UNKNOWN
    message = f'Package {what} health is "{status}"'
    if cond and cond.get("message"):
        message += f" with message: {cond['message']}"
    return message


def package_health(revision_conditions: list[Condition] | None, has_runtime: bool = True,
                   generation: int = 0) -> Condition:
    """Combine a revision's conditions into the package's Healthy condition (§4.2).

    Args:
        revision_conditions: ``status.conditions`` of the current revision; a missing
            condition reads as Unknown with no message.
        has_runtime: False for Configurations, whose runtime always counts as healthy.
        generation: the package's ``metadata.generation`` for ``observedGeneration``.
    """
    rh = get_condition(revision_conditions, REVISION_HEALTHY)
    rth = get_condition(revision_conditions, RUNTIME_HEALTHY)
    ra = get_condition(revision_conditions, RUNTIME_ACTIVE)
    awaiting = bool(ra and ra.get("reason") == AWAITING_ACTIVATION)
    if not rh or rh.get("status") != TRUE:
        return unhealthy(_health_message("revision", rh), generation)
    if has_runtime and (not rth or rth.get("status") != TRUE):
        message = _health_message("runtime", rth)
        if awaiting:
            message += "; runtime is scaled to zero awaiting activation"
        return unhealthy(message, generation)
    if awaiting and ra:
        return condition(HEALTHY, TRUE, AWAITING_ACTIVATION, ra.get("message", ""), generation)
    return healthy(generation)
