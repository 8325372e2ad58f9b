"""Conditions: constructors and set_condition's transition times."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from lockwright import conditions as c

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
T1 = datetime(2026, 1, 1, 12, 5, 0, tzinfo=UTC)


@pytest.mark.parametrize(("cond", "type_", "status", "reason", "message"), [
    (c.condition("Healthy", "False", "UnhealthyPackageRevision", "boom", 3), "Healthy", "False",
     "UnhealthyPackageRevision", "boom"),
    (c.condition("Installed", "True", "ActivePackageRevision", "", 3), "Installed", "True",
     "ActivePackageRevision", ""),
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


def healthy(generation: int = 0) -> c.Condition:
    return c.condition(c.HEALTHY, c.TRUE, c.HEALTHY_PACKAGE_REVISION, "", generation)


def unhealthy(message: str, generation: int = 0) -> c.Condition:
    return c.condition(c.HEALTHY, c.FALSE, c.UNHEALTHY_PACKAGE_REVISION, message, generation)


def installed_with(reason: str) -> c.Condition:
    return c.condition(c.INSTALLED, c.TRUE if reason == c.ACTIVE_PACKAGE_REVISION else c.FALSE,
                       reason)


def test_set_condition_appends_with_time() -> None:
    out = c.set_condition([], healthy(1), T0)
    assert out == [{**healthy(1), "lastTransitionTime": "2026-01-01T12:00:00Z"}]


@pytest.mark.parametrize(("second", "want_time"), [
    (unhealthy("still bad, new words", 2), "2026-01-01T12:00:00Z"),  # same status: kept
    (healthy(2), "2026-01-01T12:05:00Z"),  # status flipped: now
])
def test_set_condition_transition_time(second: c.Condition, want_time: str) -> None:
    first = c.set_condition(None, unhealthy("bad", 1), T0)
    out = c.set_condition(first, second, T1)
    assert len(out) == 1
    assert out[0]["lastTransitionTime"] == want_time
    assert out[0].get("message") == second.get("message")
    assert out[0]["observedGeneration"] == 2
    assert first[0]["message"] == "bad"  # input untouched


def test_set_condition_keeps_other_types_and_order() -> None:
    first = c.set_condition([], installed_with(c.ACTIVE_PACKAGE_REVISION), T0)
    conds = c.set_condition(first, healthy(), T0)
    out = c.set_condition(conds, installed_with(c.INACTIVE_PACKAGE_REVISION), T1)
    assert [x["type"] for x in out] == ["Installed", "Healthy"]
    assert out[1] is conds[1]
    installed = c.get_condition(out, "Installed")
    assert installed is not None and installed["reason"] == "InactivePackageRevision"
    assert c.get_condition(out, "Missing") is None



@pytest.mark.parametrize(("conds", "paused"), [
    ([c.condition(c.SYNCED, c.FALSE, c.RECONCILE_PAUSED, c.MSG_PAUSED)], True),
    ([healthy(), c.condition(c.SYNCED, c.FALSE, c.RECONCILE_PAUSED)], True),
    ([c.condition(c.SYNCED, c.TRUE, "ReconcileSuccess")], False),
    ([c.condition(c.HEALTHY, c.FALSE, c.RECONCILE_PAUSED)], False),  # only Synced counts
    ([], False),
    (None, False),
])
def test_says_paused(conds: list[c.Condition] | None, paused: bool) -> None:
    assert c.says_paused(conds) is paused

def test_message_constants() -> None:
    assert c.MSG_INCOMPATIBLE_CROSSPLANE.format("v1.20.0") == (
        "incompatible Crossplane version: package is not compatible with Crossplane version "
        "(v1.20.0)")
    assert c.MSG_POST_HOOK == "post establish runtime hook failed for package: "
