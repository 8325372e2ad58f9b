"""Defaults and validation kube-apiserver applies to the built-in kinds devcluster serves.

Only what clients observe matters here: defaulted fields a controller would otherwise see
as drift, and the validation errors a wrong manifest gets. Each function works in place.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from lockwright.devcluster.schema import Cause

Obj = dict[str, Any]


def _pod_spec(spec: Obj) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    for c in spec.get("containers") or []:
        _container(c)
    for c in spec.get("initContainers") or []:
        _container(c)


def _container(c: Obj) -> None:
    image = str(c.get("image", ""))
    tagless = ":" not in image.rsplit("/", 1)[-1] and "@" not in image
    latest = tagless or image.endswith(":latest")
    c.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    c.setdefault("resources", {})  # no omitempty in kube's Container
    for port in c.get("ports") or []:
        port.setdefault("protocol", "TCP")


def deployment(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    strategy = spec.setdefault("strategy", {"type": "RollingUpdate"})
    if strategy.get("type", "RollingUpdate") == "RollingUpdate":
        strategy.setdefault("type", "RollingUpdate")
        strategy.setdefault("rollingUpdate", {"maxUnavailable": "25%", "maxSurge": "25%"})
    _pod_spec(spec.setdefault("template", {}).setdefault("spec", {}))
    obj.setdefault("status", {})  # kube answers a new Deployment with status: {}


def service(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec["type"] != "ExternalName" and "clusterIP" not in spec:
        spec["clusterIP"] = _cluster_ip(obj)
    if spec.get("clusterIP") and spec.get("clusterIP") != "None":
        spec.setdefault("clusterIPs", [spec["clusterIP"]])
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")
    spec.setdefault("internalTrafficPolicy", "Cluster")
    for port in spec.get("ports") or []:
        port.setdefault("protocol", "TCP")
        port.setdefault("targetPort", port.get("port"))
    obj.setdefault("status", {}).setdefault("loadBalancer", {})


def _cluster_ip(obj: Obj) -> str:
    meta = obj.get("metadata", {})
    h = hashlib.sha256(f"{meta.get('namespace')}/{meta.get('name')}".encode()).digest()
    return f"10.96.{h[0]}.{max(h[1], 1)}"


def secret(obj: Obj) -> None:
    obj.setdefault("type", "Opaque")
    # kube-apiserver folds stringData into data (base64) and never stores stringData.
    strings = obj.pop("stringData", None) or {}
    if strings:
        data = obj.setdefault("data", {})
        for key, value in strings.items():
            data[key] = base64.b64encode(str(value).encode()).decode()


def namespace(obj: Obj) -> None:
    # The NamespaceDefaultLabelName admission kube-apiserver applies to every Namespace.
    name = (obj.get("metadata") or {}).get("name")
    if name:
        labels = obj.setdefault("metadata", {}).setdefault("labels", {})
        labels["kubernetes.io/metadata.name"] = name
    obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
    obj.setdefault("status", {}).setdefault("phase", "Active")


def service_account(obj: Obj) -> None:
    return None


def _match_resources(match: Obj) -> None:
    match.setdefault("namespaceSelector", {})
    match.setdefault("objectSelector", {})
    match.setdefault("matchPolicy", "Equivalent")
    for rule in (match.get("resourceRules") or []) + (match.get("excludeResourceRules") or []):
        rule.setdefault("scope", "*")


def admission_policy(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("failurePolicy", "Fail")
    if spec.get("matchConstraints") is not None:
        _match_resources(spec["matchConstraints"])
    obj.setdefault("status", {})  # kube answers a new policy with status: {}


def admission_policy_binding(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    if spec.get("matchResources") is not None:
        _match_resources(spec["matchResources"])


DEFAULTERS = {
    ("apps", "Deployment"): deployment,
    ("", "Service"): service,
    ("", "Secret"): secret,
    ("", "Namespace"): namespace,
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"): admission_policy,
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"):
        admission_policy_binding,
}


def apply_defaults(group: str, kind: str, obj: Obj) -> None:
    """Fill in the defaults kube-apiserver sets for a built-in kind."""
    fn = DEFAULTERS.get((group, kind))
    if fn:
        fn(obj)


def validate(group: str, kind: str, obj: Obj, old: Obj | None) -> list[Cause]:
    """The validation errors a built-in object gets (a subset of kube-apiserver's)."""
    if (group, kind) == ("apps", "Deployment"):
        return _validate_deployment(obj, old)
    if (group, kind) == ("", "Service"):
        spec = obj.get("spec") or {}
        if spec.get("type") != "ExternalName" and not spec.get("ports"):
            return [Cause("FieldValueRequired", "spec.ports", "")]
    if (group, kind) in {("rbac.authorization.k8s.io", "RoleBinding"),
                         ("rbac.authorization.k8s.io", "ClusterRoleBinding")}:
        if old is not None and old.get("roleRef") != obj.get("roleRef"):
            return [Cause("FieldValueInvalid", "roleRef", "cannot change roleRef",
                          obj.get("roleRef"))]
    return []


def _validate_deployment(obj: Obj, old: Obj | None) -> list[Cause]:
    spec = obj.get("spec") or {}
    selector = (spec.get("selector") or {}).get("matchLabels") or {}
    template = spec.get("template") or {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    causes: list[Cause] = []
    if not spec.get("selector"):
        causes.append(Cause("FieldValueRequired", "spec.selector", ""))
    elif any(labels.get(k) != v for k, v in selector.items()) or not selector:
        causes.append(Cause("FieldValueInvalid", "spec.template.metadata.labels",
                            "`selector` does not match template `labels`", labels))
    containers = (template.get("spec") or {}).get("containers") or []
    if not containers:
        causes.append(Cause("FieldValueRequired", "spec.template.spec.containers", ""))
    for i, c in enumerate(containers):
        if not c.get("name"):
            causes.append(Cause("FieldValueRequired", f"spec.template.spec.containers[{i}].name",
                                ""))
        if not c.get("image"):
            causes.append(Cause("FieldValueRequired", f"spec.template.spec.containers[{i}].image",
                                ""))
    if old is not None and (old.get("spec") or {}).get("selector") != spec.get("selector"):
        causes.append(Cause("FieldValueInvalid", "spec.selector", "field is immutable",
                            spec.get("selector")))
    return causes
