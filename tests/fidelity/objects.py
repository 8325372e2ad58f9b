"""Fresh objects of a kind for the replay: built-in kinds from a short template each, and
lockwright's custom resources from their CRD's schema (every required field given the
simplest value its type and enum allow)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

import lockwright.data
from tests.e2e.packages import OPEN_KINDS
from tests.e2e.packages import crd as open_crd

Obj = dict[str, Any]
CRDS = Path(lockwright.data.__file__).with_name("crds")
#: Crossplane core's XRD and Composition CRDs, as the test stacks install them.
CROSSPLANE_CRDS = Path(__file__).resolve().parents[1] / "data" / "crds"
IMAGE = "registry.invalid/fidelity:v1"
#: Where a test package's requests are replayed (devcluster records each such group as
#: ``{group}`` and its resource as ``{resource}``): one cluster-scoped kind, served at
#: every version the tests' packages use.
FIXTURE_GROUP, FIXTURE_RESOURCE = "fidelity.example.org", "gadgets"
FIXTURE_VERSIONS = ("v1alpha1", "v1beta1", "v1")


def replay_crds() -> list[Obj]:
    """Every CRD a test stack may serve: lockwright's, Crossplane core's, the open
    Crossplane kinds and the test package kind."""
    files = sorted(CRDS.glob("*.yaml")) + sorted(CROSSPLANE_CRDS.glob("*.yaml"))
    out = [yaml.safe_load(path.read_text()) for path in files]
    out += [open_crd(group, kind, plural=plural) for group, kind, plural in OPEN_KINDS]
    return out + [fixture_crd()]


def fixture_crd() -> Obj:
    """The test package kind: ``gadgets.fidelity.example.org`` at each fixture version."""
    base = open_crd(FIXTURE_GROUP, "Gadget", plural=FIXTURE_RESOURCE)
    served = base["spec"]["versions"][0]
    versions = [{**served, "name": v, "storage": v == "v1"} for v in FIXTURE_VERSIONS]
    return {**base, "spec": {**base["spec"], "versions": versions}}


def concrete(template: str) -> str:
    """A path template (or body kind) with a test package's group and resource filled in."""
    return template.replace("{group}", FIXTURE_GROUP).replace("{resource}", FIXTURE_RESOURCE)


def _pod_spec() -> Obj:
    return {"containers": [{"name": "c", "image": IMAGE}]}


def _builtin(kind: str, ns: str) -> Obj | None:
    templates: dict[str, Obj] = {
        "Role": {"rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]},
        "ClusterRole": {"rules": [{"apiGroups": [""], "resources": ["configmaps"],
                                   "verbs": ["get"]}]},
        "RoleBinding": {"roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                    "kind": "ClusterRole", "name": "view"},
                        "subjects": [{"kind": "ServiceAccount", "name": "default",
                                      "namespace": ns}]},
        "Deployment": {"spec": {"replicas": 1, "selector": {"matchLabels": {"app": "f"}},
                                "template": {"metadata": {"labels": {"app": "f"}},
                                             "spec": _pod_spec()}}},
        "Service": {"spec": {"ports": [{"port": 80}]}},
        "Pod": {"spec": _pod_spec()},
        "TokenRequest": {"spec": {"audiences": []}},
        "ConfigMap": {"data": {"k": "v"}},
        "Secret": {"stringData": {"k": "v"}},
        "Event": {"involvedObject": {"kind": "ConfigMap", "name": "x", "namespace": ns},
                  "reason": "Fidelity", "message": "m"},
        "ValidatingAdmissionPolicy": {"spec": {
            "matchConstraints": {"resourceRules": [{
                "apiGroups": [""], "apiVersions": ["v1"], "operations": ["DELETE"],
                "resources": ["configmaps"]}]},
            "validations": [{"expression": "false", "message": "m"}]}},
        "ValidatingAdmissionPolicyBinding": {"spec": {
            "policyName": "fidelity-absent", "validationActions": ["Deny"],
            "matchResources": {"objectSelector": {"matchLabels": {"fidelity": "never"}}}}},
        "SelfSubjectAccessReview": {"spec": {"resourceAttributes": {
            "namespace": ns, "verb": "get", "resource": "configmaps"}}},
        # A custom resource whose CRD's CEL rules the schema's minimum breaks: "of" names a
        # resource, and "by" or "reason" is set (kube-apiserver answers 422 otherwise).
        "ClusterUsage": {"spec": {"of": {"apiVersion": "v1", "kind": "ConfigMap",
                                         "resourceRef": {"name": "fidelity"}},
                                  "reason": "fidelity"}},
    }
    templates["ClusterRoleBinding"] = templates["RoleBinding"]
    for plain in ("Namespace", "ServiceAccount", "Lease"):
        templates[plain] = {}
    found = templates.get(kind)
    return copy.deepcopy(found) if found is not None else None


def _schemas() -> dict[tuple[str, str], Obj]:
    out: dict[tuple[str, str], Obj] = {}
    for path in sorted(CRDS.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        for version in crd["spec"]["versions"]:
            key = (f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])
            out[key] = version["schema"]["openAPIV3Schema"]
    return out


SCHEMAS = _schemas()


def minimal(schema: Obj) -> Any:
    """The simplest value a schema accepts: required fields only, the first enum value."""
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        return {k: minimal(props.get(k, {})) for k in schema.get("required") or []}
    if kind == "array":
        return [minimal(schema.get("items") or {}) for _ in range(schema.get("minItems", 0))]
    if kind == "integer" or kind == "number":
        return max(1, schema.get("minimum", 1))
    if kind == "boolean":
        return False
    return "x" * max(1, schema.get("minLength", 1))


def fresh_object(api_version: str, kind: str, name: str, ns: str) -> Obj:
    """An object of ``kind`` named ``name`` (in ``ns``; cluster-scoped servers ignore it)."""
    meta: Obj = {"name": name, "namespace": ns, "labels": {"fidelity": "yes"}}
    if kind == "CustomResourceDefinition":
        return crd(name)
    body = _builtin(kind, ns)
    if body is None:
        schema = SCHEMAS.get((api_version, kind))
        body = {k: v for k, v in minimal(schema).items() if k not in ("apiVersion", "kind",
                                                                      "metadata")} \
            if schema else {}
    if kind.endswith("AccessReview"):
        meta = {}  # a review's metadata must be empty (kube-apiserver answers 422)
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, **body}


def crd(name: str) -> Obj:
    """A small namespaced CRD; ``name`` gives its plural and group."""
    plural = "w" + "".join(c for c in name if c.isalnum())
    group = "fidelity.lockwright.io"
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}", "labels": {"fidelity": "yes"}},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": plural, "singular": plural, "kind": plural.capitalize(),
                           "listKind": f"{plural.capitalize()}List"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {
                                   "type": "object", "properties": {"spec": {
                                       "type": "object",
                                       "x-kubernetes-preserve-unknown-fields": True}}}}}]}}
