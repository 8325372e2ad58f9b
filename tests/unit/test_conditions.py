"""Conditions: constructors, set_condition's transition times, package health (§4.2)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from lockwright import conditions as c

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
T1 = datetime(2026, 1, 1, 12, 5, 0, tzinfo=UTC)


@pytest.mark.parametrize(("cond", "type_", "status", "reason", "message"), [
    (c.installed_active(3), "Installed", "True", "ActivePackageRevision", ""),
    (c.installed_inactive(3), "Installed", "False", "InactivePackageRevision",
     "Package is inactive"),
    (c.healthy(3), "Healthy", "True", "HealthyPackageRevision", ""),
    (c.unhealthy("boom", 3), "Healthy", "False", "UnhealthyPackageRevision", "boom"),
    (c.health_unknown(3), "Healthy", "Unknown", "UnknownPackageRevisionHealth", ""),
    (c.revision_healthy(3), "RevisionHealthy", "True", "HealthyPackageRevision", ""),
    (c.revision_unhealthy("x", 3), "RevisionHealthy", "False", "UnhealthyPackageRevision", "x"),
    (c.revision_health_unknown(3), "RevisionHealthy", "Unknown",
     "UnknownPackageRevisionHealth", ""),
    (c.runtime_healthy(3), "RuntimeHealthy", "True", "HealthyPackageRevision", ""),
    (c.runtime_unhealthy("y", 3), "RuntimeHealthy", "False", "UnhealthyPackageRevision", "y"),
    (c.runtime_health_unknown(3), "RuntimeHealthy", "Unknown",
     "UnknownPackageRevisionHealth", ""),
    (c.runtime_active(3), "RuntimeActive", "True", "ActiveRuntime", ""),
    (c.runtime_awaiting_activation(3), "RuntimeActive", "False", "AwaitingActivation",
     ("Package runtime is scaled to zero; awaiting the first ManagedResourceDefinition to be "
     "activated")),
    (c.reconcile_paused(3), "Synced", "False", "ReconcilePaused",
     "Reconciliation (including deletion) is paused via the pause annotation"),
    (c.resolution_succeeded(3), "Resolved", "True", "DependencyResolutionSucceeded", ""),
    (c.resolution_failed("cycle", 3), "Resolved", "False", "DependencyResolutionFailed",
     "Error occurred during dependency resolution cycle"),
])
def test_constructors(cond: c.Condition, type_: str, status: str, reason: str,
                      message: str) -> None:
    assert (cond["type"], cond["status"], cond["reason"], cond.get("message", "")) == (
        type_, status, reason, message)
    assert ("message" in cond) is bool(message)
    assert cond["observedGeneration"] == 3


def test_unpacking_failed_sets_both() -> None:
    installed, healthy = c.unpacking_failed("not found", 2)
    assert (installed["type"], installed["reason"]) == ("Installed", "UnpackingPackage")
    assert (healthy["type"], healthy["reason"]) == ("Healthy", "UnhealthyPackageRevision")
    assert installed["message"] == healthy["message"] == "cannot unpack package: not found"


def test_set_condition_appends_with_time() -> None:
    out = c.set_condition([], c.healthy(1), T0)
    assert out == [{**c.healthy(1), "lastTransitionTime": "2026-01-01T12:00:00Z"}]


@pytest.mark.parametrize(("second", "want_time"), [
    (c.unhealthy("still bad, new words", 2), "2026-01-01T12:00:00Z"),  # same status: kept
    (c.healthy(2), "2026-01-01T12:05:00Z"),  # status flipped: now
])
def test_set_condition_transition_time(second: c.Condition, want_time: str) -> None:
    first = c.set_condition(None, c.unhealthy("bad", 1), T0)
    out = c.set_condition(first, second, T1)
    assert len(out) == 1
    assert out[0]["lastTransitionTime"] == want_time
    assert out[0].get("message") == second.get("message")
    assert out[0]["observedGeneration"] == 2
    assert first[0]["message"] == "bad"  # input untouched


def test_set_condition_keeps_other_types_and_order() -> None:
    conds = c.set_condition(c.set_condition([], c.installed_active(), T0), c.healthy(), T0)
    out = c.set_condition(conds, c.installed_inactive(), T1)
    assert [x["type"] for x in out] == ["Installed", "Healthy"]
    assert out[1] is conds[1]
    installed = c.get_condition(out, "Installed")
    assert installed is not None and installed["reason"] == "InactivePackageRevision"
    assert c.get_condition(out, "Missing") is None


def _revision(*conds: c.Condition) -> list[c.Condition]:
    return list(conds)


@pytest.mark.parametrize(("conds", "has_runtime", "status", "reason", "message"), [
    (_revision(), True, "False", "UnhealthyPackageRevision",
     'Package revision health is "Unknown"'),
    (_revision(c.revision_unhealthy("cannot get package: 404")), True, "False",
     "UnhealthyPackageRevision",
     'Package revision health is "False" with message: cannot get package: 404'),
    (_revision(c.revision_healthy()), True, "False", "UnhealthyPackageRevision",
     'Package runtime health is "Unknown"'),
    (_revision(c.revision_healthy()), False, "True", "HealthyPackageRevision", ""),
    (_revision(c.revision_healthy(), c.runtime_unhealthy("deployment is unavailable")), True,
     "False", "UnhealthyPackageRevision",
     'Package runtime health is "False" with message: deployment is unavailable'),
    (_revision(c.revision_healthy(), c.runtime_health_unknown(),
               c.runtime_awaiting_activation()), True, "False", "UnhealthyPackageRevision",
     'Package runtime health is "Unknown"; runtime is scaled to zero awaiting activation'),
    (_revision(c.revision_healthy(), c.runtime_healthy(), c.runtime_awaiting_activation()), True,
     "True", "AwaitingActivation", c.MSG_AWAITING_ACTIVATION),
    (_revision(c.revision_healthy(), c.runtime_healthy(), c.runtime_active()), True, "True",
     "HealthyPackageRevision", ""),
])
def test_package_health(conds: list[c.Condition], has_runtime: bool, status: str, reason: str,
                        message: str) -> None:
    got = c.package_health(conds, has_runtime=has_runtime, generation=7)
    assert (got["type"], got["status"], got["reason"], got.get("message", "")) == (
        "Healthy", status, reason, message)
    assert got["observedGeneration"] == 7


def test_message_constants() -> None:
    assert c.MSG_INCOMPATIBLE_CROSSPLANE.format("v1.20.0") == (
        "incompatible Crossplane version: package is not compatible with Crossplane version "
        "(v1.20.0)")
    assert c.MSG_POST_HOOK == "post establish runtime hook failed for package: "


def test_same_conditions_ignores_order() -> None:
    a = [c.healthy(), c.installed_active()]
    assert c.same_conditions(a, list(reversed(a)))
    assert not c.same_conditions(a, [c.healthy()])
