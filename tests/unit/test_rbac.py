"""RBAC (docs/crossplane.md §15): ClusterRoles field by field, the binding, permission requests."""

from __future__ import annotations

from typing import Any

import pytest

from lockwright.runtime import rbac

REV = "provider-nop-552a394a8acc"
OWNER = [{"apiVersion": "pkg.crossplane.io/v1", "kind": "ProviderRevision", "name": REV,
          "uid": "uid-1", "controller": True, "blockOwnerDeletion": True}]
REFS = [
    {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
     "name": "nopresources.nop.crossplane.io"},
    {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
     "name": "providerconfigs.nop.crossplane.io"},
    {"apiVersion": "apiextensions.crossplane.io/v1alpha1", "kind": "ManagedResourceDefinition",
     "name": "buckets.aws.example.org"},
    {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
     "name": "crossplane-provider-provider-nop"},
]


def test_defined_resources() -> None:
    assert rbac.defined_resources(REFS) == [("nopresources", "nop.crossplane.io"),
                                            ("providerconfigs", "nop.crossplane.io"),
                                            ("buckets", "aws.example.org")]


def test_cluster_roles_field_by_field() -> None:
    edit, view, system = rbac.render_cluster_roles(REV, "uid-1", rbac.defined_resources(REFS))
    resource_rules = [
        {"apiGroups": ["aws.example.org"], "resources": ["buckets", "buckets/status"]},
        {"apiGroups": ["nop.crossplane.io"],
         "resources": ["nopresources", "nopresources/status",
                       "providerconfigs", "providerconfigs/status"]},
    ]
    assert edit == {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": f"crossplane:provider:{REV}:aggregate-to-edit",
                     "labels": {"rbac.crossplane.io/aggregate-to-crossplane": "true",
                                "rbac.crossplane.io/aggregate-to-admin": "true",
                                "rbac.crossplane.io/aggregate-to-edit": "true"},
                     "ownerReferences": OWNER},
        "rules": [{**r, "verbs": ["*"]} for r in resource_rules]}
    assert view["metadata"]["name"] == f"crossplane:provider:{REV}:aggregate-to-view"
    assert view["metadata"]["labels"] == {"rbac.crossplane.io/aggregate-to-view": "true"}
    assert view["rules"] == [{**r, "verbs": ["get", "list", "watch"]} for r in resource_rules]
    assert system["metadata"]["name"] == f"crossplane:provider:{REV}:system"
    assert system["metadata"]["labels"] == {"rbac.crossplane.io/system": REV}
    assert system["metadata"]["ownerReferences"] == OWNER
    assert system["rules"] == [
        *[{**r, "verbs": ["get", "list", "watch", "update", "patch", "create"]}
          for r in resource_rules],
        {"apiGroups": ["aws.example.org"], "resources": ["*/finalizers"], "verbs": ["update"]},
        {"apiGroups": ["nop.crossplane.io"], "resources": ["*/finalizers"], "verbs": ["update"]},
        {"apiGroups": ["", "coordination.k8s.io"],
         "resources": ["secrets", "configmaps", "events", "leases"], "verbs": ["*"]},
    ]


def test_lockwrights_read_of_a_providers_types_is_held_by_the_provider() -> None:
    """The view role's rules, in a role of lockwright's the Provider controls: a revision
    deleted by hand leaves them in the aggregated provider-resources role."""
    *_, view, _ = rbac.render_cluster_roles(REV, "uid-1", rbac.defined_resources(REFS))
    role = rbac.render_package_role("provider-nop", "uid-p", REV, "uid-1",
                                    rbac.defined_resources(REFS))
    assert role == {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "lockwright:provider:provider-nop:read",
                     "labels": {"lockwright.dev/aggregate-to-provider-resources": "true"},
                     # Deleted once both are gone: the revision alone (deleted by hand)
                     # leaves it; after an orphaning deletion it goes with the orphan.
                     "ownerReferences": [{"apiVersion": "pkg.crossplane.io/v1",
                                          "kind": "Provider", "name": "provider-nop",
                                          "uid": "uid-p", "controller": True,
                                          "blockOwnerDeletion": True},
                                         {"apiVersion": "pkg.crossplane.io/v1",
                                          "kind": "ProviderRevision", "name": REV,
                                          "uid": "uid-1"}]},
        "rules": view["rules"]}
    assert rbac.render_package_role("provider-nop", "uid-p", REV, "uid-1", []) is None


@pytest.mark.parametrize(("refs", "owner"), [
    ([{"kind": "Provider", "name": "p", "uid": "u"}], ("p", "u")),
    ([{"kind": "Configuration", "name": "c", "uid": "u"}, {"kind": "Provider", "name": "p",
                                                           "uid": "v"}], ("p", "v")),
    ([{"kind": "Provider", "name": "p"}], None),  # no UID to own by
    ([], None),
])
def test_the_provider_a_revision_names_as_owner(refs: list[dict[str, Any]],
                                                owner: tuple[str, str] | None) -> None:
    assert rbac.provider_owner({"ownerReferences": refs}) == owner


def test_system_role_extras() -> None:
    request = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}
    *_, system = rbac.render_cluster_roles(REV, "u", [("xs", "g.io")], [request],
                                           safe_start=True)
    assert system["rules"][-2:] == [
        {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"],
         "verbs": ["get", "list", "watch"]},
        request]


def test_no_resources_no_roles() -> None:
    assert rbac.render_cluster_roles(REV, "u", []) == []


def test_binding() -> None:
    got = rbac.render_system_binding(REV, "uid-1", [("crossplane-system", REV),
                                                    ("crossplane-system", REV)])
    assert got == {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": f"crossplane:provider:{REV}:system", "ownerReferences": OWNER},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": f"crossplane:provider:{REV}:system"},
        "subjects": [{"kind": "ServiceAccount", "namespace": "crossplane-system", "name": REV}]}


def test_binding_subjects() -> None:
    def dep(uid: str, sa: str) -> dict[str, Any]:
        return {"metadata": {"namespace": "ns", "ownerReferences": [{"uid": uid}]},
                "spec": {"template": {"spec": {"serviceAccountName": sa}}}}
    deps = [dep("uid-1", "a"), dep("uid-2", "b"), dep("uid-1", "c")]
    assert rbac.binding_subjects(deps, "uid-1") == [("ns", "a"), ("ns", "c")]



ROLE = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "r", "labels": {"a": "b"}, "ownerReferences": OWNER},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}
BINDING = rbac.render_system_binding(REV, "uid-1", [("ns", "sa")])


def _live(obj: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """``obj`` as read back: server fields added, then ``changes`` (metadata's included)."""
    meta = {**obj["metadata"], "resourceVersion": "7", "uid": "live-uid",
            **changes.pop("metadata", {})}
    return {**obj, "metadata": meta, **changes}


@pytest.mark.parametrize(("live", "wanted", "want"), [
    (_live(ROLE), ROLE, True),  # server fields do not count
    (_live(ROLE, metadata={"annotations": {"x": "y"}}), ROLE, True),
    (_live(ROLE, rules=[]), ROLE, False),
    (_live(ROLE, metadata={"labels": {"a": "b", "c": "d"}}), ROLE, False),  # exact labels
    (_live(ROLE, metadata={"labels": None}), ROLE, False),
    (_live(ROLE, metadata={"ownerReferences": []}), ROLE, False),
    (_live(BINDING), BINDING, True),
    (_live(BINDING, subjects=[]), BINDING, False),
    (_live(BINDING, roleRef={**BINDING["roleRef"], "name": "other"}), BINDING, False),
])
def test_up_to_date(live: dict[str, Any], wanted: dict[str, Any], want: bool) -> None:
    assert rbac.up_to_date(live, wanted) is want

ALLOWED_ROLES = [
    {"metadata": {"name": "allow", "labels": {rbac.LABEL_ALLOWED: "true"}},
     "rules": [{"apiGroups": [""], "resources": ["configmaps", "pods"], "verbs": ["get", "list"]},
               {"apiGroups": ["apps"], "resources": ["*"], "verbs": ["*"]},
               {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["only-this"],
                "verbs": ["get"]},
               {"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]},
    {"metadata": {"name": "unlabelled"},
     "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]},
]


@pytest.mark.parametrize(("request_rule", "rejected"), [
    ({"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}, []),
    ({"apiGroups": ["apps"], "resources": ["deployments", "statefulsets"],
      "verbs": ["create", "delete"]}, []),
    ({"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "delete"]},
     ['{apiGroup: "", resource: "pods", resourceName: "*", verb: "delete"}']),
    ({"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["only-this"],
      "verbs": ["get"]}, []),
    ({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},  # all names: too much
     ['{apiGroup: "", resource: "secrets", resourceName: "*", verb: "get"}']),
    ({"apiGroups": ["*"], "resources": ["pods"], "verbs": ["get"]},  # a request's * is literal
     ['{apiGroup: "*", resource: "pods", resourceName: "*", verb: "get"}']),
    ({"nonResourceURLs": ["/healthz", "/metrics"], "verbs": ["get"]},
     ['{nonResourceURL: "/metrics", verb: "get"}']),
])
def test_permission_requests(request_rule: dict[str, Any], rejected: list[str]) -> None:
    allowed = rbac.allowed_rules(ALLOWED_ROLES)
    got = rbac.rejected_permissions([request_rule], allowed)
    assert [str(p) for p in got] == rejected
    assert rbac.rejection_messages(got) == [
        "refusing to apply any RBAC roles due to request for disallowed permission " + r
        for r in rejected]


def test_no_allow_list_rejects_everything() -> None:
    req = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]
    assert len(rbac.rejected_permissions(req, rbac.allowed_rules([]))) == 2


def test_expand_dedupes() -> None:
    rule = {"apiGroups": ["", ""], "resources": ["pods"], "verbs": ["get"]}
    assert rbac.expand([rule, rule]) == [rbac.Permission("", "pods", "*", "get")]
