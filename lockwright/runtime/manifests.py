"""A Provider's or Function's runtime from a DeploymentRuntimeConfig (docs/crossplane.md §13).

The DeploymentRuntimeConfig (DRC) gives the base; the package manager wins on the
points docs/crossplane.md §13.2 lists. Functions here only build manifests; applying is I/O.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]

RUNTIME_CONTAINER = "package-runtime"
METRICS_PORT = 8080
WEBHOOK_PORT = 9443
GRPC_PORT = 9443
LABEL_REVISION = "pkg.crossplane.io/revision"
PKG_API_VERSION = "pkg.crossplane.io/v1"
POD_SECURITY_CONTEXT = {"runAsNonRoot": True, "runAsUser": 2000, "runAsGroup": 2000}
CONTAINER_SECURITY_CONTEXT = {"runAsUser": 2000, "runAsGroup": 2000,
                              "allowPrivilegeEscalation": False, "privileged": False,
                              "runAsNonRoot": True}
TLS_CLIENT = ("tls-client-certs", "/tls/client", "TLS_CLIENT_CERTS_DIR")
TLS_SERVER = ("tls-server-certs", "/tls/server", "TLS_SERVER_CERTS_DIR")


@dataclass(frozen=True)
class RuntimeInput:
    """Everything the runtime manifests depend on, read beforehand.

    ``image`` is the resolved (possibly rewritten) package reference; ``controller_image``
    is v1.x ``spec.controller.image`` from the package metadata, which wins over it.
    """

    kind: str  # "Provider" or "Function"
    package_name: str
    revision_name: str
    revision_uid: str
    namespace: str
    image: str
    controller_image: str | None = None
    pull_secrets: list[str] = field(default_factory=list)
    pull_policy: str | None = "IfNotPresent"
    tls_server_secret: str | None = None
    tls_client_secret: str | None = None
    image_config_pull_secret: str | None = None
    crossplane_sa_pull_secrets: list[str] = field(default_factory=list)

    @property
    def revision_kind(self) -> str:
        """``ProviderRevision`` or ``FunctionRevision``."""
        return f"{self.kind}Revision"

    @property
    def selector(self) -> dict[str, str]:
        """The labels that select the revision's pods."""
        return {LABEL_REVISION: self.revision_name,
                f"pkg.crossplane.io/{self.kind.lower()}": self.package_name}


def owner_references(inp: RuntimeInput) -> list[Obj]:
    """``[controller → revision]``, the only owner of every runtime object."""
    return [{"apiVersion": PKG_API_VERSION, "kind": inp.revision_kind,
             "name": inp.revision_name, "uid": inp.revision_uid,
             "controller": True, "blockOwnerDeletion": True}]


def _template(drc: Obj | None, key: str) -> Obj:
    return copy.deepcopy(((drc or {}).get("spec") or {}).get(key) or {})


def _metadata(template: Obj, default_name: str, inp: RuntimeInput) -> Obj:
    src = template.get("metadata") or {}
    meta: Obj = {"name": src.get("name") or default_name, "namespace": inp.namespace,
                 "ownerReferences": owner_references(inp)}
    for key in ("labels", "annotations"):
        if src.get(key):
            meta[key] = dict(src[key])
    return meta


def service_account_name(inp: RuntimeInput, drc: Obj | None) -> str:
    """The DRC's ServiceAccount name, or the revision name."""
    meta = _template(drc, "serviceAccountTemplate").get("metadata") or {}
    return str(meta.get("name") or inp.revision_name)


def service_name(inp: RuntimeInput, drc: Obj | None) -> str:
    """The DRC's Service name, or the package name (one Service per package)."""
    meta = _template(drc, "serviceTemplate").get("metadata") or {}
    return str(meta.get("name") or inp.package_name)


def _unique(names: list[str]) -> list[Obj]:
    return [{"name": n} for n in dict.fromkeys(n for n in names if n)]


def render_service_account(inp: RuntimeInput, drc: Obj | None,
                           live_pull_secrets: list[str] | None = None) -> Obj:
    """The runtime ServiceAccount: package + Crossplane SA pull secrets + live ones kept."""
    meta = _metadata(_template(drc, "serviceAccountTemplate"), inp.revision_name, inp)
    secrets = [*inp.pull_secrets, *inp.crossplane_sa_pull_secrets, *(live_pull_secrets or [])]
    sa: Obj = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta}
    if secrets:
        sa["imagePullSecrets"] = _unique(secrets)
    return sa


def render_service(inp: RuntimeInput, drc: Obj | None) -> Obj:
    """The package's Service: webhook port for providers, headless gRPC for functions."""
    meta = _metadata(_template(drc, "serviceTemplate"), inp.package_name, inp)
    spec: Obj = {"selector": inp.selector}
    if inp.kind == "Function":
        spec["clusterIP"] = "None"
        spec["ports"] = [{"name": "grpc", "protocol": "TCP", "port": GRPC_PORT,
                          "targetPort": "grpc", "appProtocol": "tls"}]
    else:
        spec["ports"] = [{"name": "webhook", "protocol": "TCP", "port": WEBHOOK_PORT,
                          "targetPort": "webhook"}]
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": spec}


def function_endpoint(service: str, namespace: str) -> str:
    """``status.endpoint`` of a FunctionRevision."""
    return f"dns:///{service}.{namespace}:{GRPC_PORT}"


def _runtime_container(pod: Obj) -> Obj:
    containers: list[Obj] = pod.get("containers") or []
    found = next((c for c in containers if c.get("name") == RUNTIME_CONTAINER), None)
    runtime = found if found is not None else {"name": RUNTIME_CONTAINER}
    pod["containers"] = [runtime, *(c for c in containers if c is not found)]
    return runtime


def _set_env(container: Obj, name: str, value: str | None = None,
             field_path: str | None = None) -> None:
    var: Obj = {"name": name}
    if field_path:
        var["valueFrom"] = {"fieldRef": {"apiVersion": "v1", "fieldPath": field_path}}
    else:
        var["value"] = value or ""
    env = [e for e in container.get("env") or [] if e.get("name") != name]
    container["env"] = [*env, var]


def _add_port(container: Obj, name: str, port: int) -> None:
    ports = container.setdefault("ports", [])
    if not any(p.get("name") == name for p in ports):
        ports.append({"name": name, "containerPort": port, "protocol": "TCP"})


def _mount_tls(pod: Obj, container: Obj, secret: str, spec: tuple[str, str, str]) -> None:
    volume, path, env = spec
    items = [{"key": k, "path": k} for k in ("tls.crt", "tls.key", "ca.crt")]
    pod["volumes"] = [v for v in pod.get("volumes") or [] if v.get("name") != volume] + [
        {"name": volume, "secret": {"secretName": secret, "items": items}}]
    mounts = [m for m in container.get("volumeMounts") or [] if m.get("name") != volume]
    container["volumeMounts"] = [*mounts, {"name": volume, "readOnly": True, "mountPath": path}]
    _set_env(container, env, path)


def _apply_defaults(spec: Obj, pod: Obj, container: Obj, sa_name: str) -> None:
    spec.setdefault("replicas", 1)
    pod["securityContext"] = pod.get("securityContext") or dict(POD_SECURITY_CONTEXT)
    container.setdefault("imagePullPolicy", "IfNotPresent")
    container["securityContext"] = container.get("securityContext") or dict(
        CONTAINER_SECURITY_CONTEXT)
    pod["serviceAccountName"] = pod.get("serviceAccountName") or sa_name


def _kind_overrides(inp: RuntimeInput, template: Obj, container: Obj) -> None:
    label = f"pkg.crossplane.io/{inp.kind.lower()}"
    if inp.kind == "Provider":
        annotations = template.setdefault("metadata", {}).setdefault("annotations", {})
        if "prometheus.io/scrape" not in annotations:
            metrics = next(p for p in container["ports"] if p.get("name") == "metrics")
            annotations.update({"prometheus.io/scrape": "true",
                                "prometheus.io/port": str(metrics["containerPort"]),
                                "prometheus.io/path": "/metrics"})
        _set_env(container, "POD_NAMESPACE", field_path="metadata.namespace")
        _set_env(container, "PROVIDER_NAME", field_path=f"metadata.labels['{label}']")
    else:
        _set_env(container, "FUNCTION_NAME", field_path=f"metadata.labels['{label}']")
    _set_env(container, "REVISION_NAME", field_path=f"metadata.labels['{LABEL_REVISION}']")
    _set_env(container, "REVISION_UID", inp.revision_uid)
    if inp.kind == "Provider":
        _add_port(container, "webhook", WEBHOOK_PORT)
        _set_env(container, "WEBHOOK_TLS_CERT_DIR", "$(TLS_SERVER_CERTS_DIR)")
    else:
        _add_port(container, "grpc", GRPC_PORT)
    container["image"] = container.get("image") or inp.controller_image or inp.image


def runtime_image(drc: Obj | None, controller_image: str | None) -> str | None:
    """The image a runtime runs when it is not the package's own: the DRC template's
    runtime container image, else the package metadata's; None for the package image
    (the choice :func:`render_deployment` makes)."""
    pod = ((_template(drc, "deploymentTemplate").get("spec") or {}).get("template")
           or {}).get("spec") or {}
    container: Obj = next((c for c in pod.get("containers") or []
                           if c.get("name") == RUNTIME_CONTAINER), {})
    return str(container.get("image") or controller_image or "") or None


def has_run(live: Obj | None) -> bool:
    """Whether a live Deployment was ever asked for replicas (a safe-start runtime that ran
    is never scaled back to zero)."""
    return int(((live or {}).get("spec") or {}).get("replicas") or 0) > 0


def render_deployment(inp: RuntimeInput, drc: Obj | None, awaiting_activation: bool = False) -> Obj:
    """The runtime Deployment: the DRC's template with the package manager's overrides.

    Args:
        inp: the revision, package and image facts.
        drc: the DeploymentRuntimeConfig object (None: defaults only).
        awaiting_activation: safe-start scale-to-zero forces ``replicas: 0``.
    """
    template = _template(drc, "deploymentTemplate")
    meta = _metadata(template, inp.revision_name, inp)
    spec: Obj = template.get("spec") or {}
    pod_template = spec.setdefault("template", {})
    pod: Obj = pod_template.setdefault("spec", {})
    container = _runtime_container(pod)
    _apply_defaults(spec, pod, container, service_account_name(inp, drc))
    spec["selector"] = {"matchLabels": dict(inp.selector)}
    pod_meta = pod_template.setdefault("metadata", {})
    pod_meta["labels"] = {**(pod_meta.get("labels") or {}), **inp.selector}
    pod["imagePullSecrets"] = _unique([*inp.pull_secrets, inp.image_config_pull_secret or ""])
    _add_port(container, "metrics", METRICS_PORT)
    if awaiting_activation:
        spec["replicas"] = 0
    if inp.pull_policy:
        container["imagePullPolicy"] = inp.pull_policy
    if inp.tls_client_secret and inp.kind == "Provider":
        _mount_tls(pod, container, inp.tls_client_secret, TLS_CLIENT)
    if inp.tls_server_secret:
        _mount_tls(pod, container, inp.tls_server_secret, TLS_SERVER)
    _kind_overrides(inp, pod_template, container)
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": spec}


def manages_service_account(deployment: Obj, service_account: Obj) -> bool:
    """Apply the SA only when the Deployment runs as it (a DRC may name an external one)."""
    pod = deployment["spec"]["template"]["spec"]
    return bool(pod.get("serviceAccountName") == service_account["metadata"]["name"])


def deployment_observed(deployment: Obj) -> bool:
    """True when the Deployment's controller has reported on its current spec.

    Until then its status describes the previous spec (or is empty), so health read from
    it would be stale.
    """
    status = deployment.get("status") or {}
    generation = int((deployment.get("metadata") or {}).get("generation") or 0)
    observed = int(status.get("observedGeneration") or 0)
    return bool(status.get("conditions")) and observed >= generation


def deployment_health(deployment: Obj | None, kind: str = "Provider") -> tuple[bool, str]:
    """Read the Deployment's ``Available`` condition as RuntimeHealthy does.

    Returns:
        ``(True, "")`` when Available is True; otherwise False and Crossplane's message
        (``<kind> package deployment is unavailable with message: <msg>``, or that it
        has no ``Available`` condition yet).
    """
    what = f"{kind.lower()} package deployment"
    conditions = ((deployment or {}).get("status") or {}).get("conditions") or []
    available = next((c for c in conditions if c.get("type") == "Available"), None)
    if available is None:
        return False, f'{what} has no condition of type "Available" yet'
    if available.get("status") == "True":
        return True, ""
    return False, f"{what} is unavailable with message: {available.get('message', '')}"
