"""Point a package's webhooks at its Service (docs/crossplane.md §10 step 14.3).

Webhook configurations are renamed ``crossplane-<kind>-<package>`` so two packages never
collide. For an active revision every webhook, and every CRD whose conversion strategy
is ``Webhook``, gets ``caBundle`` and ``service`` (name, namespace, port 9443, the
package's own path kept).
"""

from __future__ import annotations

import base64
import copy
from typing import Any

from lockwright.errors import RuntimeNotReady
from lockwright.names import webhook_configuration_name

Obj = dict[str, Any]

WEBHOOK_PORT = 9443
WEBHOOK_KINDS = ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
DEFINITION_KINDS = ("CustomResourceDefinition", "ManagedResourceDefinition")
MSG_CONVERSION_WITHOUT_TLS = (
    "cannot deploy a CRD with webhook conversion strategy without having a TLS bundle")
MSG_WEBHOOK_WITHOUT_TLS = (
    "waiting for package runtime controller to set revision's webhook TLS secret")


def client_config(current: Obj | None, ca: bytes, service: str, namespace: str) -> Obj:
    """A webhook ``clientConfig`` for ``service`` on port 9443, keeping ``current``'s path."""
    svc: Obj = {"name": service, "namespace": namespace, "port": WEBHOOK_PORT}
    path = ((current or {}).get("service") or {}).get("path")
    if path:
        svc["path"] = path
    return {"caBundle": base64.b64encode(ca).decode(), "service": svc}


def inject_webhooks(obj: Obj, *, package_kind: str, package_name: str, active: bool,
                    ca: bytes | None, namespace: str, service: str | None = None) -> Obj:
    """Return ``obj`` renamed and injected as the module docstring says.

    Only an object this changes is copied (deeply, so ``obj`` is never modified); any
    other comes back as ``obj`` itself. A deep copy of each of a package's 2,000 CRDs, most
    of which need nothing, cost seconds per establish pass.

    Args:
        obj: any object of the package; others are returned unchanged.
        package_kind: ``Provider`` or ``Function``, for the configuration's name.
        package_name: the package name, also the default Service name.
        active: only an active revision injects (it alone owns the Service).
        ca: PEM of the CA bundle.
        namespace: the system namespace holding the Service.
        service: the Service name when a DeploymentRuntimeConfig renames it.

    Raises:
        RuntimeNotReady: an active revision with webhooks but no ``ca`` yet (the
            runtime's TLS Secret is not there or not reported yet; retried).
    """
    kind, svc = obj.get("kind"), service or package_name
    if kind in WEBHOOK_KINDS:
        out = copy.deepcopy(obj)
        out["metadata"]["name"] = webhook_configuration_name(package_kind, package_name)
        if not active:
            return out
        if ca is None:
            raise RuntimeNotReady(MSG_WEBHOOK_WITHOUT_TLS)
        for hook in out.get("webhooks") or []:
            hook["clientConfig"] = client_config(hook.get("clientConfig"), ca, svc, namespace)
        return out
    if kind not in DEFINITION_KINDS or not active:
        return obj
    conversion = (obj.get("spec") or {}).get("conversion") or {}
    if conversion.get("strategy") != "Webhook":
        return obj
    if ca is None:
        raise RuntimeNotReady(MSG_CONVERSION_WITHOUT_TLS)
    out = copy.deepcopy(obj)
    _inject_conversion(out["spec"]["conversion"], str(out.get("apiVersion")), ca, svc,
                       namespace)
    return out


def _inject_conversion(conversion: Obj, api_version: str, ca: bytes, svc: str,
                       namespace: str) -> None:
    if api_version.endswith("/v1beta1"):
        conversion["webhookClientConfig"] = client_config(
            conversion.get("webhookClientConfig"), ca, svc, namespace)
        return
    webhook = conversion.setdefault("webhook", {})
    webhook["clientConfig"] = client_config(webhook.get("clientConfig"), ca, svc, namespace)
    webhook.setdefault("conversionReviewVersions", ["v1"])
