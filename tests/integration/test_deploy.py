"""deploy/ applied with ``kubectl apply -k`` to a devcluster enforcing RBAC (issue 10).

The manifests render with kustomize as the tests' loader reads them, their CRDs are the
ones lockwright serves, the worker and watcher Deployments come up (devcluster simulates
their Pods) as a non-root image with the settings they need, and ``lockwright crds
install`` works under deploy/'s ServiceAccount and nothing else.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config

from lockwright.k8s.crds import crd_files, load_crds
from tests.fixtures.deploy import (
    DEPLOY,
    ROOT,
    SERVICE_ACCOUNT,
    deploy_objects,
    kubeconfig_as,
    kustomization,
    system_namespace,
    token_for,
)
from tests.fixtures.devcluster import DevCluster, start_devcluster
from tests.helpers import wait_for

pytestmark = pytest.mark.kubectl
Obj = dict[str, Any]


def kubectl(dc: DevCluster, home: Path, *args: str) -> str:
    env = {**os.environ, "KUBECONFIG": dc.kubeconfig, "HOME": str(home)}
    done = subprocess.run(["kubectl", *args], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def by_key(objects: list[Obj]) -> dict[tuple[str, str, str], Obj]:
    return {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o
            for o in objects}


def test_deploys_crds_are_the_ones_lockwright_serves() -> None:
    shipped = sorted(p.name for p in (DEPLOY / "crds").glob("*.yaml"))
    assert shipped == crd_files()
    assert [f"crds/{name}" for name in shipped] == [
        r for r in kustomization()["resources"] if r.startswith("crds/")]
    copies = [yaml.safe_load((DEPLOY / "crds" / name).read_text()) for name in shipped]
    assert copies == load_crds(), "copy lockwright/data/crds/*.yaml to deploy/crds/"


def test_kustomize_renders_what_the_tests_apply(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path)}
    rendered = subprocess.run(["kubectl", "kustomize", str(DEPLOY)], capture_output=True,
                              text=True, env=env, timeout=60, check=True).stdout
    docs = [d for d in yaml.safe_load_all(rendered) if d]
    assert by_key(docs) == by_key(deploy_objects())
    assert len(docs) == len(deploy_objects()) == 23


@pytest.fixture
def deployed(tmp_path: Path) -> Iterator[tuple[DevCluster, client.ApiClient]]:
    """An RBAC devcluster with deploy/ applied by its admin through kubectl."""
    dc = start_devcluster(str(tmp_path), "--authorization-mode", "RBAC")
    configuration = client.Configuration()
    config.load_kube_config(config_file=dc.kubeconfig, client_configuration=configuration)
    api = client.ApiClient(configuration)
    try:
        (tmp_path / "home").mkdir()
        out = kubectl(dc, tmp_path / "home", "apply", "-k", str(DEPLOY))
        assert out.count(" created\n") == 23, out
        yield dc, api
    finally:
        api.close()
        dc.stop()


def available(api: client.ApiClient, name: str) -> Obj:
    dep = client.AppsV1Api(api).read_namespaced_deployment(name, system_namespace())
    found: Obj = api.sanitize_for_serialization(dep)  # type: ignore[no-untyped-call]
    conditions = (found.get("status") or {}).get("conditions") or []
    ok = any(c["type"] == "Available" and c["status"] == "True" for c in conditions)
    return found if ok else {}


def check_pod(deployment: Obj, command: str) -> dict[str, Obj]:
    """A non-root, read-only container running ``lockwright <command>``; its env by name."""
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == SERVICE_ACCOUNT
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 10001  # the image's user
    [container] = pod["containers"]
    assert (container["image"], container["args"]) == ("lockwright:0.1.0", [command])
    security = container["securityContext"]
    assert security["allowPrivilegeEscalation"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["capabilities"] == {"drop": ["ALL"]}
    env = {e["name"]: e for e in container["env"]}
    assert env["LOCKWRIGHT_SYSTEM_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == (
        "metadata.namespace")
    assert env["LOCKWRIGHT_TEMPORAL_ADDRESS"]["value"].endswith(":7233")
    return env


def test_the_worker_and_watcher_come_up_with_a_metrics_service(
        deployed: tuple[DevCluster, client.ApiClient]) -> None:
    _, api = deployed
    worker = wait_for(lambda: available(api, "lockwright-worker"), timeout=30,
                      what="the worker Available")
    watcher = wait_for(lambda: available(api, "lockwright-watcher"), timeout=30,
                       what="the watcher Available")
    env = check_pod(worker, "worker")
    assert env["LOCKWRIGHT_METRICS_ADDRESS"]["value"] == "0.0.0.0:9090"
    assert env["LOCKWRIGHT_CACHE_DIR"]["value"] == "/var/cache/lockwright"
    assert "LOCKWRIGHT_METRICS_ADDRESS" not in check_pod(watcher, "watcher")
    [port] = worker["spec"]["template"]["spec"]["containers"][0]["ports"]
    assert (port["name"], port["containerPort"]) == ("metrics", 9090)
    svc = client.CoreV1Api(api).read_namespaced_service("lockwright-worker-metrics",
                                                        system_namespace())
    assert svc.spec.selector == worker["spec"]["selector"]["matchLabels"]
    [svc_port] = svc.spec.ports
    assert (svc_port.port, svc_port.target_port) == (9090, "metrics")


def crds_install(kubeconfig: str, namespace: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": kubeconfig, "PYTHONPATH": str(ROOT)}
    env.pop("LOCKWRIGHT_SYSTEM_NAMESPACE", None)
    env.update({"LOCKWRIGHT_SYSTEM_NAMESPACE": namespace} if namespace else {})
    return subprocess.run([sys.executable, "-m", "lockwright", "crds", "install"], env=env,
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)


def test_crds_install_works_under_the_service_account_alone(
        deployed: tuple[DevCluster, client.ApiClient], tmp_path: Path) -> None:
    dc, api = deployed
    token = token_for(api, system_namespace(), SERVICE_ACCOUNT)
    kubeconfig = kubeconfig_as(dc.kubeconfig, token, tmp_path / "lockwright.kubeconfig")
    first = crds_install(kubeconfig)
    assert first.returncode == 0, first.stderr[-3000:]
    # kubectl applied the CRDs; lockwright marks them with their manifest's hash once.
    # DRC, Lock, default activation policy; namespace
    assert first.stdout.strip() == "created 3, updated 12, unchanged 1"
    second = crds_install(kubeconfig)
    assert second.stdout.strip() == "created 0, updated 0, unchanged 16"
    record = dc.rbac_record()
    assert record["denied"] == []
    ours = {u["role"] for u in record["allowed"] if u["user"].endswith(f":{SERVICE_ACCOUNT}")}
    assert ours == {"lockwright"}  # the ClusterRole; no discovery, no Secrets


def test_a_missing_system_namespace_is_named_with_the_fix_not_created(
        deployed: tuple[DevCluster, client.ApiClient], tmp_path: Path) -> None:
    """deploy/ grants no right to create namespaces: one that is missing is reported."""
    dc, api = deployed
    token = token_for(api, system_namespace(), SERVICE_ACCOUNT)
    kubeconfig = kubeconfig_as(dc.kubeconfig, token, tmp_path / "lockwright.kubeconfig")
    missing = crds_install(kubeconfig, namespace="not-there")
    assert missing.returncode == 1
    assert ("error: the system namespace not-there does not exist" in missing.stderr
            and "kubectl create namespace not-there" in missing.stderr), missing.stderr[-3000:]
    names = [n.metadata.name for n in client.CoreV1Api(api).list_namespace().items]
    assert "not-there" not in names
    denied = [(d["verb"], d["resource"]) for d in dc.rbac_record()["denied"]]
    # A refusal from a ready server is asked once more before it is RBAC's answer (a
    # restarted kube-apiserver refuses until its authorizer syncs): the one create, twice.
    assert denied == [("create", "namespaces")] * 2, denied


def test_the_service_account_reaches_secrets_of_its_namespace_only(
        deployed: tuple[DevCluster, client.ApiClient]) -> None:
    dc, api = deployed
    token = token_for(api, system_namespace(), SERVICE_ACCOUNT)
    assert dc.get(f"/api/v1/namespaces/{system_namespace()}/secrets", token)["items"] == []
    with pytest.raises(Exception) as refused:
        dc.get("/api/v1/namespaces/default/secrets", token)
    assert getattr(refused.value, "code", None) == 403
