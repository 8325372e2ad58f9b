"""devcluster's compiled RBAC policy: bindings, subjects, namespaces, aggregation, tokens."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from lockwright.devcluster.auth import ADMIN, ANONYMOUS, TokenAuthority, token_request
from lockwright.devcluster.errors import ApiError
from lockwright.devcluster.policy import compile_policy
from lockwright.devcluster.rbac import Attributes, User, service_account_user

Obj = dict[str, Any]
RBAC = "rbac.authorization.k8s.io"
BOT = service_account_user("system", "bot")


def role(name: str, rules: list[Obj], namespace: str = "", labels: Obj | None = None,
         aggregate: Obj | None = None) -> Obj:
    meta: Obj = {"name": name, "labels": labels or {}}
    if namespace:
        meta["namespace"] = namespace
    out: Obj = {"kind": "Role" if namespace else "ClusterRole", "metadata": meta,
                "rules": rules}
    if aggregate:
        out["aggregationRule"] = {"clusterRoleSelectors": [aggregate]}
    return out


def binding(name: str, role_kind: str, role_name: str, subjects: list[Obj],
            namespace: str = "") -> Obj:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"metadata": meta, "subjects": subjects,
            "roleRef": {"apiGroup": RBAC, "kind": role_kind, "name": role_name}}


def sa(name: str = "bot", namespace: str | None = None) -> Obj:
    return {"kind": "ServiceAccount", "name": name,
            **({"namespace": namespace} if namespace is not None else {})}


SECRETS = [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]
DEPLOYMENTS = [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["list"]}]
POLICY = {
    "clusterroles": [role("secrets", SECRETS), role("deployments", DEPLOYMENTS),
                     role("widget-view", [{"apiGroups": ["w.io"], "resources": ["widgets"],
                                           "verbs": ["list"]}],
                          labels={"aggregate-to-view": "true"}),
                     role("view", [], aggregate={"matchLabels": {"aggregate-to-view": "true"}})],
    "roles": [role("local-secrets", SECRETS, namespace="system")],
    "clusterrolebindings": [
        binding("bot-deployments", "ClusterRole", "deployments", [sa(namespace="system")]),
        binding("everyone-view", "ClusterRole", "view",
                [{"kind": "Group", "name": "system:serviceaccounts"}]),
        binding("dangling", "ClusterRole", "gone", [{"kind": "User", "name": "alice"}])],
    "rolebindings": [
        binding("bot-secrets", "Role", "local-secrets", [sa()], namespace="system"),
        binding("bot-secrets-elsewhere", "ClusterRole", "secrets", [sa(namespace="system")],
                namespace="apps")],
}


def secrets(namespace: str, user: User = BOT) -> Attributes:
    return Attributes(user, "get", True, "", "v1", "secrets", "", namespace, "s")


DECISIONS = [
    # (question, allowed, the role and binding that allowed it)
    (Attributes(BOT, "list", True, "apps", "v1", "deployments"), True,
     ("deployments", "ClusterRoleBinding bot-deployments")),
    # a ServiceAccount subject without a namespace is in the RoleBinding's
    (secrets("system"), True, ("system/local-secrets", "RoleBinding system/bot-secrets")),
    # a RoleBinding of a ClusterRole grants it in its own namespace only
    (secrets("apps"), True, ("secrets", "RoleBinding apps/bot-secrets-elsewhere")),
    (secrets("default"), False, None),
    (secrets(""), False, None),
    # through a group, and through an aggregated ClusterRole
    (Attributes(BOT, "list", True, "w.io", "v1", "widgets"), True,
     ("view", "ClusterRoleBinding everyone-view")),
    (Attributes(service_account_user("system", "other"), "list", True, "apps", "v1",
                "deployments"), False, None),
]


@pytest.mark.parametrize(("attrs", "allowed", "by"), DECISIONS)
def test_bindings_grant_their_roles_to_their_subjects_where_they_apply(
        attrs: Attributes, allowed: bool, by: tuple[str, str] | None) -> None:
    decision = compile_policy(POLICY).decide(attrs)
    assert decision.allowed is allowed
    source = decision.source
    assert (source.role, source.binding) == by if source else by is None


def test_an_aggregated_rule_says_which_role_it_came_from() -> None:
    decision = compile_policy(POLICY).decide(Attributes(BOT, "list", True, "w.io", "v1",
                                                        "widgets"))
    assert decision.source is not None and decision.source.aggregated_from == "widget-view"
    assert decision.atom == ("list", "w.io", "widgets")


def test_a_binding_to_a_missing_role_is_the_reason_of_its_subjects_denials() -> None:
    alice = User("alice", ("system:authenticated",))
    decision = compile_policy(POLICY).decide(secrets("default", alice))
    assert not decision.allowed
    assert decision.reason == f'RBAC: clusterrole.{RBAC} "gone" not found'


def test_decisions_are_cached_per_question() -> None:
    snapshot = compile_policy(POLICY)
    first = snapshot.decide(secrets("system"))
    assert snapshot.decide(secrets("system")) is first
    assert list(snapshot.decisions) == [secrets("system")]


# -- tokens ------------------------------------------------------------------------------
def lookup(uids: dict[tuple[str, str], str]) -> Any:
    return lambda namespace, name: uids.get((namespace, name))


def test_a_service_account_token_authenticates_while_the_account_is_the_same(
        tmp_path: Path) -> None:
    authority = TokenAuthority(str(tmp_path))
    token, expiry = authority.issue("system", "bot", "uid-1", 3600, ["api"])
    assert expiry > time.time() + 3500
    header = f"Bearer {token}"
    assert authority.authenticate(header, lookup({("system", "bot"): "uid-1"})) == User(
        "system:serviceaccount:system:bot", BOT.groups, "uid-1")
    for gone in ({}, {("system", "bot"): "uid-2"}):  # deleted, or deleted and re-created
        with pytest.raises(ApiError) as refused:
            authority.authenticate(header, lookup(gone))
        assert refused.value.code == 401 and refused.value.reason == "Unauthorized"


@pytest.mark.parametrize("mangle", [
    lambda t: t[:-2] + ("AA" if not t.endswith("AA") else "BB"),  # signature
    lambda t: t.split(".")[0] + ".e30." + t.split(".")[2],  # claims swapped
    lambda t: "not-a-jwt"])
def test_a_token_that_does_not_verify_is_401(tmp_path: Path, mangle: Any) -> None:
    authority = TokenAuthority(str(tmp_path))
    token, _ = authority.issue("system", "bot", "uid-1", 3600, ["api"])
    with pytest.raises(ApiError) as refused:
        authority.authenticate(f"Bearer {mangle(token)}", lookup({("system", "bot"): "uid-1"}))
    assert refused.value.code == 401


def test_an_expired_token_is_401_and_keys_persist_in_the_data_dir(tmp_path: Path) -> None:
    authority = TokenAuthority(str(tmp_path))
    expired = authority.sign({"admin": True, "exp": int(time.time()) - 1})
    with pytest.raises(ApiError):
        authority.authenticate(f"Bearer {expired}", lookup({}))
    again = TokenAuthority(str(tmp_path))  # a restart reads the same key
    assert again.authenticate(f"Bearer {authority.admin_token()}", lookup({})) == ADMIN
    assert ADMIN.privileged and not BOT.privileged


def test_no_token_is_anonymous(tmp_path: Path) -> None:
    authority = TokenAuthority(str(tmp_path))
    for header in (None, "", "Basic dXNlcjpwYXNz", "Bearer "):
        assert authority.authenticate(header, lookup({})) == ANONYMOUS


def test_token_request_answers_as_kube_and_refuses_short_durations(tmp_path: Path) -> None:
    authority = TokenAuthority(str(tmp_path))
    account = {"metadata": {"name": "bot", "namespace": "system", "uid": "uid-1"}}
    answer = token_request(authority, account, {"spec": {"expirationSeconds": 7200}})
    assert (answer["kind"], answer["apiVersion"]) == ("TokenRequest", "authentication.k8s.io/v1")
    assert answer["spec"]["expirationSeconds"] == 7200
    assert authority.authenticate(f"Bearer {answer['status']['token']}",
                                  lookup({("system", "bot"): "uid-1"})).name == (
        "system:serviceaccount:system:bot")
    with pytest.raises(ApiError) as short:
        token_request(authority, account, {"spec": {"expirationSeconds": 60}})
    assert short.value.code == 422 and "less than 10 minutes" in short.value.message
