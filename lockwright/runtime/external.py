"""Who runs a package's runtime, and what lockwright may say about it (docs/crossplane.md §13).

With the ``Deployment`` runtime lockwright deploys the runtime and writes the revision's
``RuntimeHealthy`` and ``RuntimeActive``. With ``External`` another controller runs it:
lockwright deploys nothing, reads no DeploymentRuntimeConfig, and leaves both conditions
to that controller, whose ``RuntimeHealthy`` is the health lockwright's gates follow. A
``runtimeConfigRef`` naming another kind is that controller's business then; under
``Deployment`` lockwright refuses it as Crossplane does.
"""

from __future__ import annotations

from typing import Any

from lockwright import conditions
from lockwright.conditions import Condition

DEPLOYMENT = "Deployment"
EXTERNAL = "External"
#: The conditions only the runtime's controller writes.
RUNTIME_CONDITIONS = (conditions.RUNTIME_HEALTHY, conditions.RUNTIME_ACTIVE)
DRC_API_VERSION = "pkg.crossplane.io/v1beta1"
DRC_KIND = "DeploymentRuntimeConfig"
MSG_UNKNOWN_KIND = "runtime config is set but is an unknown apiVersion and kind"
MSG_NOT_YET = ("waiting for the external runtime controller to set the revision's "
               "RuntimeHealthy condition")


def is_external(package_runtime: str) -> bool:
    """Whether ``package_runtime`` (the worker's setting) leaves runtimes to another
    controller."""
    return package_runtime == EXTERNAL


def lockwright_writes(condition_type: str, package_runtime: str) -> bool:
    """Whether lockwright writes a revision's condition of ``condition_type``: every one
    under ``Deployment``; under ``External`` none of the runtime's."""
    return not (is_external(package_runtime) and condition_type in RUNTIME_CONDITIONS)


def external_health(found: list[Condition] | None) -> tuple[bool, str]:
    """Health as the external controller wrote it on the revision: its ``RuntimeHealthy``
    status True, and its message (or why there is none yet).

    A healthy runtime whose ``RuntimeActive`` says ``AwaitingActivation`` (safe-start,
    scaled to zero) reads as lockwright's own safe-start health, so the package says
    ``Healthy=True/AwaitingActivation`` as under the Deployment runtime.
    """
    runtime = conditions.get_condition(found, conditions.RUNTIME_HEALTHY)
    if runtime is None:
        return False, MSG_NOT_YET
    healthy = runtime.get("status") == conditions.TRUE
    active = conditions.get_condition(found, conditions.RUNTIME_ACTIVE) or {}
    if healthy and active.get("reason") == conditions.AWAITING_ACTIVATION:
        return True, conditions.MSG_AWAITING_ACTIVATION
    message = str(runtime.get("message") or "")
    if not healthy and not message:
        message = (f'RuntimeHealthy is "{runtime.get("status", "Unknown")}" '
                   f'({runtime.get("reason") or "no reason given"})')
    return healthy, message


def is_deployment_runtime_config(ref: dict[str, Any]) -> bool:
    """Whether a ``runtimeConfigRef`` names a DeploymentRuntimeConfig.

    As Crossplane decides it: only a ref whose apiVersion *and* kind are both set and both
    other than the DeploymentRuntimeConfig's is another kind; a missing field takes the
    CRD's default.
    """
    api_version, kind = ref.get("apiVersion"), ref.get("kind")
    return not (api_version and kind and api_version != DRC_API_VERSION and kind != DRC_KIND)
