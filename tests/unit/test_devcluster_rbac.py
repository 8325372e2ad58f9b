"""devcluster's RBAC rules, read and matched as kube-apiserver does, table by table."""

from __future__ import annotations

from typing import Any

import pytest

from lockwright.devcluster.rbac import (
    Attributes,
    Rule,
    compile_rule,
    covers,
    escalation_reason,
    forbidden_error,
    forbidden_reason,
    match,
    service_account_user,
    uncovered,
)
from lockwright.devcluster.requestinfo import request_attributes

Obj = dict[str, Any]
BOT = service_account_user("crossplane-system", "lockwright")


def ask(verb: str, resource: str, group: str = "", sub: str = "", name: str = "",
        namespace: str = "") -> Attributes:
    return Attributes(BOT, verb, True, group, "v1", resource, sub, namespace, name)


def path(verb: str, url: str) -> Attributes:
    return Attributes(BOT, verb, False, path=url)


RULES: dict[str, Obj] = {
    "read-providers": {"apiGroups": ["pkg.crossplane.io"], "resources": ["providers"],
                       "verbs": ["get", "list", "watch"]},
    "status": {"apiGroups": ["pkg.crossplane.io"], "resources": ["providers/status"],
               "verbs": ["patch"]},
    "any-status": {"apiGroups": ["*"], "resources": ["*/status"], "verbs": ["update"]},
    "all": {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
    "named": {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["pull"],
              "verbs": ["get", "update"]},
    "core-events": {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
    "discovery": {"nonResourceURLs": ["/api", "/apis/*"], "verbs": ["get"]},
    "everything-url": {"nonResourceURLs": ["*"], "verbs": ["*"]},
}

MATCHES = [
    # (rule, question, the rule's elements that allow it, or None)
    ("read-providers", ask("get", "providers", "pkg.crossplane.io", name="p"),
     ("get", "pkg.crossplane.io", "providers")),
    ("read-providers", ask("watch", "providers", "pkg.crossplane.io"),
     ("watch", "pkg.crossplane.io", "providers")),
    ("read-providers", ask("delete", "providers", "pkg.crossplane.io", name="p"), None),
    ("read-providers", ask("get", "providers", "other.io", name="p"), None),
    ("read-providers", ask("get", "functions", "pkg.crossplane.io", name="p"), None),
    # a subresource is its own resource: the parent's rule does not reach it
    ("read-providers", ask("get", "providers", "pkg.crossplane.io", "status", "p"), None),
    ("status", ask("patch", "providers", "pkg.crossplane.io", "status", "p"),
     ("patch", "pkg.crossplane.io", "providers/status")),
    ("status", ask("patch", "providers", "pkg.crossplane.io", name="p"), None),
    ("any-status", ask("update", "locks", "pkg.crossplane.io", "status", "lock"),
     ("update", "*", "*/status")),
    ("any-status", ask("update", "locks", "pkg.crossplane.io", name="lock"), None),
    ("all", ask("deletecollection", "deployments", "apps", namespace="ns"), ("*", "*", "*")),
    ("all", ask("create", "serviceaccounts", "", "token", "sa", "ns"), ("*", "*", "*")),
    ("all", path("get", "/version"), None),  # resource rules never allow paths
    ("named", ask("get", "secrets", name="pull", namespace="ns"), ("get", "", "secrets")),
    ("named", ask("get", "secrets", name="other", namespace="ns"), None),
    # resourceNames cannot allow a list or a create: they carry no name
    ("named", ask("list", "secrets", namespace="ns"), None),
    ("core-events", ask("create", "events", namespace="default"), ("create", "", "events")),
    ("core-events", ask("create", "events", "events.k8s.io", namespace="default"), None),
    ("discovery", path("get", "/api"), ("get", "/api")),
    ("discovery", path("get", "/apis/pkg.crossplane.io/v1"), ("get", "/apis/*")),
    ("discovery", path("get", "/api/v1"), None),
    ("discovery", path("post", "/api"), None),
    ("discovery", ask("get", "api", name="x"), None),  # URL rules never allow resources
    ("everything-url", path("delete", "/debug/rbac"), ("*", "*")),
]


@pytest.mark.parametrize(("rule", "attrs", "allowed_by"), MATCHES)
def test_a_rule_allows_exactly_what_kube_would(rule: str, attrs: Attributes,
                                               allowed_by: tuple[str, ...] | None) -> None:
    assert match(compile_rule(RULES[rule]), attrs) == allowed_by


REQUESTS = [
    # (method, path, query) -> (verb, group, resource, subresource, namespace, name)
    ("GET", "/api/v1/namespaces/ns/secrets/s", {}, ("get", "", "secrets", "", "ns", "s")),
    ("GET", "/api/v1/namespaces/ns/secrets", {}, ("list", "", "secrets", "", "ns", "")),
    ("GET", "/api/v1/namespaces/ns/secrets", {"watch": "true"},
     ("watch", "", "secrets", "", "ns", "")),
    ("GET", "/api/v1/watch/namespaces/ns/secrets", {}, ("watch", "", "secrets", "", "ns", "")),
    ("GET", "/apis/pkg.crossplane.io/v1/providers", {"fieldSelector": "metadata.name=p"},
     ("list", "pkg.crossplane.io", "providers", "", "", "p")),
    ("POST", "/apis/pkg.crossplane.io/v1/providers", {},
     ("create", "pkg.crossplane.io", "providers", "", "", "")),
    ("PUT", "/apis/pkg.crossplane.io/v1beta1/locks/lock", {},
     ("update", "pkg.crossplane.io", "locks", "", "", "lock")),
    ("PATCH", "/apis/pkg.crossplane.io/v1/providers/p/status", {},
     ("patch", "pkg.crossplane.io", "providers", "status", "", "p")),
    ("DELETE", "/apis/apps/v1/namespaces/ns/deployments/d", {},
     ("delete", "apps", "deployments", "", "ns", "d")),
    ("DELETE", "/apis/apps/v1/namespaces/ns/deployments", {},
     ("deletecollection", "apps", "deployments", "", "ns", "")),
    ("POST", "/api/v1/namespaces/ns/serviceaccounts/sa/token", {},
     ("create", "", "serviceaccounts", "token", "ns", "sa")),
    # a namespace is read in its own namespace, as kube's RequestInfoFactory says
    ("GET", "/api/v1/namespaces/ns", {}, ("get", "", "namespaces", "", "ns", "ns")),
    ("PUT", "/api/v1/namespaces/ns/finalize", {},
     ("update", "", "namespaces", "finalize", "ns", "ns")),
    ("POST", "/api/v1/namespaces", {}, ("create", "", "namespaces", "", "", "")),
]


@pytest.mark.parametrize(("method", "url", "query", "want"), REQUESTS)
def test_requests_are_described_as_kube_describes_them(
        method: str, url: str, query: dict[str, str], want: tuple[str, ...]) -> None:
    a = request_attributes(BOT, method, url, query)
    assert a.resource_request
    assert (a.verb, a.api_group, a.resource, a.subresource, a.namespace, a.name) == want


@pytest.mark.parametrize(("method", "url", "verb"), [
    ("GET", "/api", "get"), ("GET", "/api/v1", "get"), ("GET", "/apis/apps", "get"),
    ("GET", "/apis/apps/v1", "get"), ("GET", "/version", "get"), ("GET", "/healthz", "get"),
    ("GET", "/openapi/v3/apis/apps/v1", "get"), ("POST", "/debug/rbac", "post")])
def test_other_paths_are_non_resource_requests(method: str, url: str, verb: str) -> None:
    a = request_attributes(BOT, method, url, {})
    assert (a.resource_request, a.verb, a.path) == (False, verb, url)


# -- 403 bodies --------------------------------------------------------------------------
def test_a_denied_named_request_answers_kubes_forbidden_status() -> None:
    a = ask("patch", "providers", "pkg.crossplane.io", "status", "p")
    error = forbidden_error(a, forbidden_reason(a))
    assert error.code == 403
    assert error.status() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'providers.pkg.crossplane.io "p" is forbidden: User '
                   '"system:serviceaccount:crossplane-system:lockwright" cannot patch resource '
                   '"providers/status" in API group "pkg.crossplane.io" at the cluster scope',
        "reason": "Forbidden", "code": 403,
        "details": {"name": "p", "group": "pkg.crossplane.io", "kind": "providers"}}


def test_a_denied_list_in_a_namespace_names_no_object_and_the_namespace() -> None:
    a = ask("list", "secrets", namespace="default")
    body = forbidden_error(a, forbidden_reason(a)).status()
    assert body["message"] == (
        'secrets is forbidden: User "system:serviceaccount:crossplane-system:lockwright" '
        'cannot list resource "secrets" in API group "" in the namespace "default"')
    assert body["details"] == {"kind": "secrets"}


def test_a_denied_path_says_path() -> None:
    a = path("get", "/apis")
    body = forbidden_error(a, forbidden_reason(a)).status()
    assert body["message"] == ('forbidden: User "system:serviceaccount:crossplane-system:'
                               'lockwright" cannot get path "/apis"')
    assert body["details"] == {}


# -- escalation --------------------------------------------------------------------------
def rules(*raw: Obj) -> list[Rule]:
    return [compile_rule(r) for r in raw]


COVERS = [
    # (owned rules, wanted rule, covered)
    ([RULES["all"]], RULES["named"], True),
    ([RULES["read-providers"]], {"apiGroups": ["pkg.crossplane.io"],
                                 "resources": ["providers"], "verbs": ["get"]}, True),
    ([RULES["read-providers"]], {"apiGroups": ["pkg.crossplane.io"],
                                 "resources": ["providers"], "verbs": ["*"]}, False),
    ([RULES["read-providers"]], {"apiGroups": ["*"], "resources": ["providers"],
                                 "verbs": ["get"]}, False),
    ([RULES["named"]], {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}, False),
    ([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}], RULES["named"], False),
    ([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "update"]}],
     RULES["named"], True),
    ([RULES["any-status"]], {"apiGroups": ["apps"], "resources": ["deployments/status"],
                             "verbs": ["update"]}, True),
    ([{"apiGroups": ["apps"], "resources": ["deployments/*"], "verbs": ["get"]}],
     {"apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["get"]}, True),
    ([RULES["discovery"]], {"nonResourceURLs": ["/apis/apps"], "verbs": ["get"]}, True),
    ([RULES["discovery"]], {"nonResourceURLs": ["/version"], "verbs": ["get"]}, False),
    ([RULES["all"]], {"nonResourceURLs": ["/version"], "verbs": ["get"]}, False),
]


@pytest.mark.parametrize(("owned", "wanted", "covered"), COVERS)
def test_a_role_grants_only_what_its_writer_holds(owned: list[Obj], wanted: Obj,
                                                   covered: bool) -> None:
    assert (uncovered(rules(*owned), rules(wanted)) == []) is covered


def test_uncovered_names_each_missing_atom_as_kube_prints_it() -> None:
    wanted = rules({"apiGroups": ["apps"], "resources": ["deployments"],
                    "verbs": ["get", "delete"]})
    missing = uncovered(rules({"apiGroups": ["apps"], "resources": ["deployments"],
                               "verbs": ["get"]}), wanted)
    assert len(missing) == 1 and not covers(compile_rule(RULES["read-providers"]), missing[0])
    assert escalation_reason(BOT, missing) == (
        'user "system:serviceaccount:crossplane-system:lockwright" (groups=['
        '"system:serviceaccounts" "system:serviceaccounts:crossplane-system" '
        '"system:authenticated"]) is attempting to grant RBAC permissions not currently '
        'held:\n{APIGroups:["apps"], Resources:["deployments"], Verbs:["delete"]}')
