"""Conditions the workflows write, in Crossplane's types and reasons (docs/crossplane.md §4).

Pure functions of what happened; the workflows decide which one applies and the
``write_*_status`` activities only store the result. Tests assert on reasons, which are
fixed strings; messages follow Crossplane's wording where it has one.
"""

from __future__ import annotations

from datetime import timedelta

from lockwright import contracts as c
from lockwright.conditions import (
    ACTIVE_PACKAGE_REVISION,
    ACTIVE_RUNTIME,
    AWAITING_ACTIVATION,
    FALSE,
    HEALTHY,
    HEALTHY_PACKAGE_REVISION,
    INACTIVE_PACKAGE_REVISION,
    INSTALLED,
    MSG_AWAITING_ACTIVATION,
    MSG_ESTABLISH,
    MSG_GET_PACKAGE,
    MSG_INACTIVE,
    MSG_PAUSED,
    MSG_POST_HOOK,
    MSG_PRE_HOOK,
    MSG_RESOLVE_DEPENDENCIES,
    RECONCILE_PAUSED,
    REVISION_HEALTHY,
    RUNTIME_ACTIVE,
    RUNTIME_HEALTHY,
    SYNCED,
    TRUE,
    UNHEALTHY_PACKAGE_REVISION,
    UNPACKING_PACKAGE,
)
from lockwright.upgrade.gate import STRICT, reasons
from lockwright.upgrade.plan import PLAN_CONDITION, Plan

# Steps whose failure means "we could not even get the package" (Installed=False).
UNPACK_STEPS = (c.RESOLVE_DIGEST, c.FETCH_PACKAGE, c.PARSE_PACKAGE)

# Crossplane's message prefix per failing revision step.
STEP_PREFIX = {
    c.FETCH_PACKAGE: MSG_GET_PACKAGE,
    c.TAKE_LOCK: MSG_RESOLVE_DEPENDENCIES,
    c.ENSURE_TLS: MSG_PRE_HOOK,
    c.ESTABLISH_OBJECTS: MSG_ESTABLISH,
    c.ENSURE_RUNTIME: MSG_POST_HOOK,
}


def cond(type_: str, status: str, reason: str, message: str = "") -> c.Condition:
    """Build one condition."""
    return c.Condition(type=type_, status=status, reason=reason, message=message)


def package_ok(active: bool, healthy: bool, health_message: str,
               revision_unhealthy: bool = False) -> list[c.Condition]:
    """Conditions of a package whose current revision installed (docs/crossplane.md §4.2, §9).

    ``revision_unhealthy``: the revision itself is not healthy (its dependencies are not
    met) and ``health_message`` is its message; otherwise the runtime's.
    """
    installed = (cond(INSTALLED, TRUE, ACTIVE_PACKAGE_REVISION) if active
                 else cond(INSTALLED, FALSE, INACTIVE_PACKAGE_REVISION, MSG_INACTIVE))
    if healthy and health_message == MSG_AWAITING_ACTIVATION:  # safe-start, scaled to zero
        return [installed, cond(HEALTHY, TRUE, AWAITING_ACTIVATION, health_message)]
    if healthy:
        return [installed, cond(HEALTHY, TRUE, HEALTHY_PACKAGE_REVISION)]
    message = (f'Package revision health is "False" with message: {health_message}'
               if revision_unhealthy else
               f'Package runtime health is "False" with message: {runtime_failed(health_message)}')
    return [installed, cond(HEALTHY, FALSE, UNHEALTHY_PACKAGE_REVISION, message)]


def reconcile_paused() -> c.Condition:
    """``Synced=False/ReconcilePaused``, as Crossplane says it (docs/crossplane.md §1)."""
    return cond(SYNCED, FALSE, RECONCILE_PAUSED, MSG_PAUSED)


def package_reverted(active_revision: str, message: str) -> list[c.Condition]:
    """Conditions of a package whose switch to its current revision was reverted."""
    return [cond(INSTALLED, FALSE, INACTIVE_PACKAGE_REVISION,
                 f"{MSG_INACTIVE}: the switch to it was reverted, {active_revision} "
                 "is active"),
            cond(HEALTHY, FALSE, UNHEALTHY_PACKAGE_REVISION,
                 f'Package runtime health is "False" with message: {runtime_failed(message)}'
                 f"; reverted to {active_revision}")]


def package_plan_refused(active_revision: str, plan: Plan, gate: str = STRICT
                         ) -> list[c.Condition]:
    """Conditions of a package whose upgrade waits: its plan breaks, ``gate`` holds it and
    nobody accepted it. The message leads with what holds it (under the evidence gate,
    the resources it would break)."""
    return [cond(INSTALLED, FALSE, INACTIVE_PACKAGE_REVISION,
                 f"{MSG_INACTIVE}: the upgrade plan breaks, {active_revision} stays "
                 f"active (upgrade gate {gate}): {reasons(plan, gate)}. "
                 f"{plan.summary()}"[:4000]),
            cond(HEALTHY, TRUE, HEALTHY_PACKAGE_REVISION)]


def package_installing(active: bool) -> list[c.Condition]:
    """Conditions while a revision installs: health not known yet (Crossplane says the same)."""
    installed = (cond(INSTALLED, TRUE, ACTIVE_PACKAGE_REVISION) if active
                 else cond(INSTALLED, FALSE, INACTIVE_PACKAGE_REVISION, MSG_INACTIVE))
    return [installed, cond(HEALTHY, FALSE, UNHEALTHY_PACKAGE_REVISION,
                            'Package revision health is "Unknown"')]


def package_failed(step: str, message: str, retry_in: timedelta | None,
                   attempt: int) -> list[c.Condition]:
    """Conditions of a package whose pass failed at ``step``.

    A transient failure says when the next attempt comes, so ``kubectl get`` shows the
    error while it is being retried.
    """
    if retry_in is not None:
        message = f"{message} (retrying in {retry_in.total_seconds():g}s, attempt {attempt})"
    if step in UNPACK_STEPS:
        text = f"cannot unpack package: {message}"
        return [cond(INSTALLED, FALSE, UNPACKING_PACKAGE, text),
                cond(HEALTHY, FALSE, UNHEALTHY_PACKAGE_REVISION, text)]
    text = f'Package revision health is "False" with message: {message}'
    return [cond(INSTALLED, TRUE, ACTIVE_PACKAGE_REVISION),
            cond(HEALTHY, FALSE, UNHEALTHY_PACKAGE_REVISION, text)]


def revision_ok(runtime: bool, healthy: bool, runtime_message: str) -> list[c.Condition]:
    """Conditions of an installed revision; runtime ones only when it has a runtime."""
    out = [cond(REVISION_HEALTHY, TRUE, HEALTHY_PACKAGE_REVISION)]
    if runtime:
        out.append(cond(RUNTIME_HEALTHY, TRUE, HEALTHY_PACKAGE_REVISION) if healthy
                   else cond(RUNTIME_HEALTHY, FALSE, UNHEALTHY_PACKAGE_REVISION,
                             runtime_failed(runtime_message)))
        out.append(cond(RUNTIME_ACTIVE, FALSE, AWAITING_ACTIVATION, runtime_message)
                   if healthy and runtime_message == MSG_AWAITING_ACTIVATION
                   else cond(RUNTIME_ACTIVE, TRUE, ACTIVE_RUNTIME))
    return out


def revision_failed(step: str, message: str) -> list[c.Condition]:
    """Conditions of a revision whose install failed at ``step``."""
    text = prefixed(step, message)
    return [cond(REVISION_HEALTHY, FALSE, UNHEALTHY_PACKAGE_REVISION, text)]


def runtime_failed(message: str) -> str:
    """RuntimeHealthy's message for an unavailable runtime (docs/crossplane.md §13.1 step 9)."""
    return prefixed(c.ENSURE_RUNTIME, message)


def prefixed(step: str, message: str) -> str:
    """Return ``message`` with Crossplane's prefix for ``step``."""
    return STEP_PREFIX.get(step, "") + message


def planned(plan: Plan | None) -> list[c.Condition]:
    """The revision's ``PlanCompatible`` condition: the plan's verdict and summary."""
    if plan is None:
        return []
    if plan.compatible:
        return [cond(PLAN_CONDITION, TRUE, "Compatible", plan.summary()[:2000])]
    return [cond(PLAN_CONDITION, FALSE, "BreakingChanges", plan.summary()[:4000])]
