"""Provider deletion protection: the ClusterUsages, and the admission policy that reads them.

As Crossplane's provider protection (``internal/controller/apiextensions/managed/
protection.go``): one ``ClusterUsage`` of
``protection.crossplane.io/v1beta1`` per managed resource type of a Provider that has at
least one resource, named ``provider-protection-<hex of the first 26 bytes of sha256(MRD
name)>``, labelled ``crossplane.io/provider-protection: "true"``, ``spec.of`` naming the
Provider and ``spec.reason`` the type. Where Crossplane's webhook refuses the Provider's
deletion, lockwright installs a ValidatingAdmissionPolicy with the usages as its
parameters (docs/design.md, "Provider deletion protection"). Pure functions over plain
data; the activity reads and writes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from lockwright.managed.convert import EXEMPT_KINDS

Obj = dict[str, Any]

USAGE_API_VERSION, USAGE_KIND = "protection.crossplane.io/v1beta1", "ClusterUsage"
PROTECTION_LABEL = "crossplane.io/provider-protection"
PACKAGE_LABEL = "pkg.crossplane.io/package"
MRD_LABEL = "apiextensions.crossplane.io/mrd"
#: Crossplane's field owner of the usages it applies (FieldOwnerMRDProtection).
FIELD_OWNER = "apiextensions.crossplane.io/managed-protection"
#: The policy and its binding carry the name of Crossplane's webhook, so a refusal names it.
POLICY_NAME = "nousages.protection.crossplane.io"
ADMISSION_API_VERSION = "admissionregistration.k8s.io/v1"
POLICY_KIND = "ValidatingAdmissionPolicy"
BINDING_KIND = "ValidatingAdmissionPolicyBinding"
PROVIDER_API_VERSION, PROVIDER_KIND = "pkg.crossplane.io/v1", "Provider"
SETTING = "LOCKWRIGHT_PROVIDER_DELETION_PROTECTION"


def usage_name(mrd: str) -> str:
    """The ClusterUsage of one MRD (or CRD: the same name), as Crossplane names it."""
    return "provider-protection-" + hashlib.sha256(mrd.encode()).digest()[:26].hex()


def reason(kind: str, group: str) -> str:
    """``spec.reason``: Crossplane's words naming the type."""
    return f"Provider has active managed resources of type {kind}.{group}"


@dataclass(frozen=True)
class ManagedType:
    """One type a Provider installed: its CRD's name, kind, group and the Provider."""

    crd: str
    kind: str
    group: str
    provider: str


def provider_of(crd_metadata: Obj) -> str:
    """The Provider a CRD belongs to: its plain owner reference of kind Provider ("")."""
    for ref in crd_metadata.get("ownerReferences") or []:
        if ref.get("kind") == PROVIDER_KIND and str(ref.get("apiVersion", "")).startswith(
                "pkg.crossplane.io/"):
            return str(ref.get("name", ""))
    return ""


def protects(kind: str) -> bool:
    """Whether a kind is a managed resource (provider configs are not, as in Crossplane)."""
    return kind not in EXEMPT_KINDS


def usage(t: ManagedType) -> Obj:
    """The ClusterUsage protecting ``t.provider`` while ``t`` has resources."""
    return {
        "apiVersion": USAGE_API_VERSION, "kind": USAGE_KIND,
        "metadata": {"name": usage_name(t.crd),
                     "labels": {PROTECTION_LABEL: "true", PACKAGE_LABEL: t.provider,
                                MRD_LABEL: t.crd}},
        "spec": {"of": {"apiVersion": PROVIDER_API_VERSION, "kind": PROVIDER_KIND,
                        "resourceRef": {"name": t.provider}},
                 "reason": reason(t.kind, t.group)},
    }


@dataclass(frozen=True)
class Changes:
    """What one pass writes: usages to apply, usage names to delete."""

    apply: tuple[Obj, ...]
    delete: tuple[str, ...]


def reconcile(in_use: Iterable[ManagedType], existing: Iterable[str]) -> Changes:
    """The usages to apply (every type in use) and to delete (labelled, not in use)."""
    wanted = {usage_name(t.crd): usage(t) for t in in_use}
    return Changes(apply=tuple(wanted[n] for n in sorted(wanted)),
                   delete=tuple(sorted(set(existing) - set(wanted))))


FIX = ("Delete the managed resources of that type first (the usage goes away "
       f"once they are gone), or turn deletion protection off ({SETTING}=false).")
#: CEL: the refusal's words, Crossplane's webhook's (``%T`` and ``%q`` of the usage), and
#: the fix. One parameter (usage) at a time, so the count of usages is not known here.
MESSAGE = ("'This resource is in-use by usage(s), including the *v1beta1.ClusterUsage \"' + "
           "params.metadata.name + '\" with reason: \"' + "
           "(has(params.spec.reason) ? params.spec.reason : '') + '\". " + FIX + "'")
RULE = ("!has(params.spec.of.resourceRef) || params.spec.of.kind != 'Provider' || "
        "params.spec.of.resourceRef.name != oldObject.metadata.name")


def policy() -> Obj:
    """The ValidatingAdmissionPolicy refusing to delete a Provider a usage names."""
    return {
        "apiVersion": ADMISSION_API_VERSION, "kind": POLICY_KIND,
        "metadata": {"name": POLICY_NAME, "labels": {"app.kubernetes.io/managed-by":
                                                     "lockwright"}},
        "spec": {
            "failurePolicy": "Fail",
            "paramKind": {"apiVersion": USAGE_API_VERSION, "kind": USAGE_KIND},
            "matchConstraints": {"resourceRules": [{
                "apiGroups": ["pkg.crossplane.io"], "apiVersions": ["*"],
                "operations": ["DELETE"], "resources": ["providers"]}]},
            "validations": [{"expression": RULE, "messageExpression": MESSAGE,
                             "reason": "Forbidden"}],
        },
    }


def binding() -> Obj:
    """The policy's binding: every usage labelled for provider protection is a parameter;
    none at all lets the deletion through."""
    return {
        "apiVersion": ADMISSION_API_VERSION, "kind": BINDING_KIND,
        "metadata": {"name": POLICY_NAME, "labels": {"app.kubernetes.io/managed-by":
                                                     "lockwright"}},
        "spec": {"policyName": POLICY_NAME, "validationActions": ["Deny"],
                 "paramRef": {"selector": {"matchLabels": {PROTECTION_LABEL: "true"}},
                              "parameterNotFoundAction": "Allow"}},
    }
