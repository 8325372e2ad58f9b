"""The External runtime's decisions: which conditions lockwright writes, health as the
runtime's controller wrote it, and which runtimeConfigRefs name a DeploymentRuntimeConfig."""

from __future__ import annotations

from typing import Any

import pytest

from lockwright.conditions import MSG_AWAITING_ACTIVATION
from lockwright.runtime import external

RUNTIME_HEALTHY = "RuntimeHealthy"


@pytest.mark.parametrize(("condition_type", "runtime", "writes"), [
    ("RevisionHealthy", "Deployment", True),
    ("RuntimeHealthy", "Deployment", True),
    ("RuntimeActive", "Deployment", True),
    ("RevisionHealthy", "External", True),
    ("PlanCompatible", "External", True),
    ("RuntimeHealthy", "External", False),
    ("RuntimeActive", "External", False),
])
def test_under_external_the_runtime_conditions_are_its_controllers(
        condition_type: str, runtime: str, writes: bool) -> None:
    assert external.lockwright_writes(condition_type, runtime) is writes


def _cond(status: str, reason: str = "", message: str = "") -> dict[str, Any]:
    return {"type": RUNTIME_HEALTHY, "status": status, "reason": reason, "message": message}


@pytest.mark.parametrize(("found", "healthy", "message"), [
    (None, False, external.MSG_NOT_YET),
    ([{"type": "RevisionHealthy", "status": "True"}], False, external.MSG_NOT_YET),
    ([_cond("True", "HealthyPackageRevision")], True, ""),
    ([_cond("True", "Ready", "pods ready")], True, "pods ready"),
    ([_cond("False", "Crashing", "pod crash-looping")], False, "pod crash-looping"),
    ([_cond("False", "Crashing")], False, 'RuntimeHealthy is "False" (Crashing)'),
    ([_cond("Unknown")], False, 'RuntimeHealthy is "Unknown" (no reason given)'),
    # Safe-start at zero replicas, as the controller says it.
    ([_cond("True", "HealthyPackageRevision"), {"type": "RuntimeActive", "status": "False",
                                                "reason": "AwaitingActivation"}],
     True, MSG_AWAITING_ACTIVATION),
    ([_cond("False", "Crashing", "down"), {"type": "RuntimeActive", "status": "False",
                                           "reason": "AwaitingActivation"}], False, "down"),
    ([_cond("True", "Ready", "up"), {"type": "RuntimeActive", "status": "True",
                                     "reason": "ActiveRuntime"}], True, "up"),
])
def test_health_is_what_the_external_controller_wrote(
        found: list[dict[str, Any]] | None, healthy: bool, message: str) -> None:
    assert external.external_health(found) == (healthy, message)


@pytest.mark.parametrize(("ref", "is_drc"), [
    ({"name": "default"}, True),
    ({"name": "x", "apiVersion": "pkg.crossplane.io/v1beta1",
      "kind": "DeploymentRuntimeConfig"}, True),
    # Crossplane refuses only a ref whose apiVersion and kind are both foreign.
    ({"name": "x", "apiVersion": "example.org/v1", "kind": "DeploymentRuntimeConfig"}, True),
    ({"name": "x", "apiVersion": "pkg.crossplane.io/v1beta1", "kind": "PodRuntime"}, True),
    ({"name": "x", "kind": "PodRuntime"}, True),  # the CRD defaults the apiVersion
    ({"name": "x", "apiVersion": "example.org/v1", "kind": "PodRuntime"}, False),
])
def test_which_runtime_config_refs_name_a_deployment_runtime_config(
        ref: dict[str, str], is_drc: bool) -> None:
    assert external.is_deployment_runtime_config(ref) is is_drc


@pytest.mark.parametrize(("setting", "is_external"), [
    ("Deployment", False), ("External", True)])
def test_the_setting_names_who_runs_runtimes(setting: str, is_external: bool) -> None:
    assert external.is_external(setting) is is_external
