"""devcluster with ``--authorization-mode RBAC``, driven by kubectl and the Python client.

HTTPS with its own CA (kubectl sends tokens over TLS only), the admin's token in the
kubeconfig it writes, ServiceAccount tokens from ``kubectl create token``, 403s with
kube's Status, 401 for a bad token, kube's escalation check on roles and bindings, the
record at ``/debug/rbac``, and everything still valid after a restart.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from tests.fixtures.deploy import kubeconfig_as
from tests.fixtures.devcluster import DevCluster, start_devcluster

pytestmark = pytest.mark.kubectl

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
Obj = dict[str, Any]
BOT = "system:serviceaccount:default:bot"


@dataclass
class Cluster:
    """An RBAC devcluster, and kubectl as its admin."""

    dc: DevCluster
    home: Path

    def kubectl(self, *args: str, token: str | None = None,
                stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        extra = ["--token", token] if token else []
        env = {**os.environ, "KUBECONFIG": self.dc.kubeconfig, "HOME": str(self.home)}
        return subprocess.run([KUBECTL, *extra, *args], input=stdin, capture_output=True,
                              text=True, env=env, timeout=60, check=False)

    def ok(self, *args: str, token: str | None = None, stdin: str | None = None) -> str:
        done = self.kubectl(*args, token=token, stdin=stdin)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def api(self, kubeconfig: str | None = None) -> client.ApiClient:
        configuration = client.Configuration()
        config.load_kube_config(config_file=kubeconfig or self.dc.kubeconfig,
                                client_configuration=configuration)
        return client.ApiClient(configuration)


@pytest.fixture
def rbac_cluster(tmp_path: Path) -> Iterator[Cluster]:
    dc = start_devcluster(str(tmp_path), "--authorization-mode", "RBAC")
    (tmp_path / "home").mkdir()
    try:
        yield Cluster(dc, tmp_path / "home")
    finally:
        dc.stop()


def bot_token(c: Cluster) -> str:
    c.ok("create", "serviceaccount", "bot", "-n", "default")
    return c.ok("create", "token", "bot", "-n", "default", "--duration", "1h").strip()


def test_https_with_the_admins_token_and_a_service_account_refused_then_allowed(
        rbac_cluster: Cluster) -> None:
    c = rbac_cluster
    assert c.dc.url.startswith("https://127.0.0.1:")
    assert "cluster-admin" in c.ok("get", "clusterroles")
    token = bot_token(c)
    refused = c.kubectl("get", "secrets", "-n", "default", token=token)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        f'Error from server (Forbidden): secrets is forbidden: User "{BOT}" cannot list '
        'resource "secrets" in API group "" in the namespace "default"')
    c.ok("create", "role", "read-secrets", "-n", "default", "--verb=get,list",
         "--resource=secrets")
    c.ok("create", "rolebinding", "bot-reads", "-n", "default", "--role=read-secrets",
         "--serviceaccount=default:bot")
    assert c.kubectl("get", "secrets", "-n", "default", token=token).returncode == 0
    other = c.kubectl("get", "secrets", "-n", "kube-system", token=token)
    assert "cannot list resource" in other.stderr and '"kube-system"' in other.stderr


def test_a_bad_token_is_401_and_anonymous_sees_only_health(rbac_cluster: Cluster) -> None:
    c = rbac_cluster
    bad = c.kubectl("get", "namespaces", token="not.a.token")
    assert bad.stderr.splitlines()[-1] == ("error: You must be logged in to the server (the "
                                           "server has asked for the client to provide "
                                           "credentials)")  # kubectl's words for a 401
    context = c.dc.ssl_context()
    with urllib.request.urlopen(f"{c.dc.url}/healthz", timeout=5, context=context) as resp:
        assert resp.read() == b"ok"
    with pytest.raises(urllib.error.HTTPError) as anonymous:
        urllib.request.urlopen(f"{c.dc.url}/apis", timeout=5, context=context)
    body = json.loads(anonymous.value.read())
    assert (anonymous.value.code, body["reason"], body["message"]) == (
        403, "Forbidden", 'forbidden: User "system:anonymous" cannot get path "/apis"')


def write_role(api: client.ApiClient, name: str, rules: list[Obj]) -> None:
    client.RbacAuthorizationV1Api(api).create_cluster_role(  # type: ignore[arg-type]
        {"metadata": {"name": name}, "rules": rules})


def grant(c: Cluster, name: str, rules: list[Obj]) -> None:
    """A ClusterRole of ``rules`` bound to the bot (as the admin)."""
    with c.api() as admin:
        write_role(admin, name, rules)
        client.RbacAuthorizationV1Api(admin).create_cluster_role_binding({  # type: ignore[arg-type]
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "default"}]})


ROLES = [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"],
          "verbs": ["create"]}]
READ = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]
DELETE = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["delete"]}]


def test_roles_grant_only_what_their_writer_holds_unless_it_may_escalate(
        rbac_cluster: Cluster, tmp_path: Path) -> None:
    c = rbac_cluster
    bot = kubeconfig_as(c.dc.kubeconfig, bot_token(c), tmp_path / "bot.kubeconfig")
    grant(c, "bot-writes-roles", ROLES + READ)
    with c.api(bot) as api:
        write_role(api, "within", READ)  # it holds that itself
        with pytest.raises(ApiException) as refused:
            write_role(api, "beyond", READ + DELETE)
        status = json.loads(refused.value.body)
        assert (refused.value.status, status["reason"]) == (403, "Forbidden")
        assert status["message"].startswith(
            'clusterroles.rbac.authorization.k8s.io "beyond" is forbidden: user '
            f'"{BOT}" (groups=["system:serviceaccounts" "system:serviceaccounts:default" '
            '"system:authenticated"]) is attempting to grant RBAC permissions not currently '
            'held:\n{APIGroups:[""], Resources:["configmaps"], Verbs:["delete"]}')
        grant(c, "bot-escalates", [{"apiGroups": ["rbac.authorization.k8s.io"],
                                    "resources": ["clusterroles"], "verbs": ["escalate"]}])
        write_role(api, "beyond", READ + DELETE)
    assert c.ok("get", "clusterrole", "beyond", "-o", "name") == (
        "clusterrole.rbac.authorization.k8s.io/beyond\n")


def bind(api: client.ApiClient, role: str) -> None:
    client.RbacAuthorizationV1Api(api).create_cluster_role_binding({  # type: ignore[arg-type]
        "metadata": {"name": f"to-{role}"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": role},
        "subjects": [{"kind": "User", "name": "someone"}]})


def test_bindings_need_the_bind_verb_or_the_roles_rights(rbac_cluster: Cluster,
                                                         tmp_path: Path) -> None:
    c = rbac_cluster
    bot = kubeconfig_as(c.dc.kubeconfig, bot_token(c), tmp_path / "bot.kubeconfig")
    bindings = [{"apiGroups": ["rbac.authorization.k8s.io"],
                 "resources": ["clusterrolebindings"], "verbs": ["create"]}]
    grant(c, "bot-binds", bindings + READ)
    with c.api() as admin:
        write_role(admin, "reader", READ)
        write_role(admin, "deleter", DELETE)
    with c.api(bot) as api:
        bind(api, "reader")
        with pytest.raises(ApiException) as refused:
            bind(api, "deleter")
        assert refused.value.status == 403
        assert "attempting to grant RBAC permissions not currently held" in refused.value.body
        grant(c, "bot-may-bind", [{"apiGroups": ["rbac.authorization.k8s.io"],
                                   "resources": ["clusterroles"], "verbs": ["bind"],
                                   "resourceNames": ["deleter"]}])
        bind(api, "deleter")


def test_the_record_names_the_rule_that_allowed_each_request_and_every_denial(
        rbac_cluster: Cluster, tmp_path: Path) -> None:
    c = rbac_cluster
    token = bot_token(c)
    grant(c, "bot-reads", READ)
    c.kubectl("get", "configmap", "x", "-n", "default", token=token)
    c.kubectl("delete", "configmap", "x", "-n", "default", token=token)
    record = c.dc.rbac_record()
    used = [u for u in record["allowed"] if u["user"] == BOT and u["role"] == "bot-reads"]
    assert used == [{"user": BOT, "roleKind": "ClusterRole", "role": "bot-reads", "rule": 0,
                     "binding": "ClusterRoleBinding bot-reads",
                     "atom": ["get", "", "configmaps"], "count": 1}]
    assert any(u["role"] == "system:discovery" for u in record["allowed"])
    [denied] = [d for d in record["denied"] if d["user"] == BOT]
    assert (denied["verb"], denied["resource"], denied["name"]) == ("delete", "configmaps", "x")
    forbidden = c.kubectl("get", "--raw", "/debug/rbac", token=token)
    assert forbidden.stderr.strip() == ('Error from server (Forbidden): forbidden: User '
                                        f'"{BOT}" cannot get path "/debug/rbac"')


def test_a_refused_write_leaves_the_connection_usable(rbac_cluster: Cluster,
                                                      tmp_path: Path) -> None:
    c = rbac_cluster
    bot = kubeconfig_as(c.dc.kubeconfig, bot_token(c), tmp_path / "bot.kubeconfig")
    grant(c, "bot-reads", READ)
    with c.api(bot) as api:
        core = client.CoreV1Api(api)
        for _ in range(3):  # one keep-alive connection: each refused body is read
            with pytest.raises(ApiException) as refused:
                core.create_namespaced_config_map("default", {
                    "metadata": {"name": "x"}, "data": {"big": "y" * 50_000}})
            assert refused.value.status == 403
            with pytest.raises(ApiException) as missing:
                core.read_namespaced_config_map("x", "default")
            assert missing.value.status == 404


def test_tokens_and_the_ca_survive_a_restart(tmp_path: Path) -> None:
    dc = start_devcluster(str(tmp_path), "--authorization-mode", "RBAC")
    c = Cluster(dc, tmp_path)
    try:
        token = bot_token(c)
        ca = yaml.safe_load(Path(dc.kubeconfig).read_text())["clusters"][0]["cluster"]
    finally:
        dc.stop()
    dc = start_devcluster(str(tmp_path), "--authorization-mode", "RBAC")
    c = Cluster(dc, tmp_path)
    try:
        again = yaml.safe_load(Path(dc.kubeconfig).read_text())["clusters"][0]["cluster"]
        assert again["certificate-authority-data"] == ca["certificate-authority-data"]
        refused = c.kubectl("get", "secrets", token=token)
        assert "Forbidden" in refused.stderr and BOT in refused.stderr  # known, not 401
    finally:
        dc.stop()


def test_deleting_a_role_grants_nothing_and_needs_no_escalation(rbac_cluster: Cluster,
                                                                tmp_path: Path) -> None:
    c = rbac_cluster
    bot = kubeconfig_as(c.dc.kubeconfig, bot_token(c), tmp_path / "bot.kubeconfig")
    grant(c, "bot-deletes-roles", [{"apiGroups": ["rbac.authorization.k8s.io"],
                                    "resources": ["clusterroles"], "verbs": ["delete"]}])
    with c.api() as admin:
        write_role(admin, "held-by-finalizer", DELETE)
    c.ok("patch", "clusterrole", "held-by-finalizer", "--type", "merge", "-p",
         '{"metadata": {"finalizers": ["example.org/hold"]}}')
    with c.api(bot) as api:
        rbac = client.RbacAuthorizationV1Api(api)
        rbac.delete_cluster_role("held-by-finalizer", propagation_policy="Foreground")
    role = json.loads(c.ok("get", "clusterrole", "held-by-finalizer", "-o", "json"))
    assert role["metadata"]["deletionTimestamp"]  # marked by the bot, held by the finalizer
