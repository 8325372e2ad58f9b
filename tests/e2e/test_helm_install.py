"""``helm install`` of deploy/chart/lockwright into the real control plane (issue 29).

kube-apiserver takes the chart's objects (CRDs from crds/, then the rest); lockwright's
ServiceAccount and RBAC end up as deploy/ makes them, and ``lockwright crds install``
works under that ServiceAccount alone, refused nothing (kube-apiserver's audit log). kwok's
Pods run no containers, so the worker and watcher Deployments only roll out; lockwright
itself runs outside the cluster in the other end-to-end tests. An upgrade changes what
its values say, and an uninstall removes the release but keeps the system namespace. A
second release, kept in a namespace helm makes, lives beside the first.

Runs when the real control plane is selected (``LOCKWRIGHT_TEST_CLUSTER`` names kube).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.fixtures.deploy import (
    RBAC_KINDS,
    ROOT,
    SERVICE_ACCOUNT,
    deploy_objects,
    kubeconfig_as,
    system_namespace,
    token_for,
)
from tests.fixtures.helm import CHART, Helm
from tests.fixtures.kube import KubeCluster, cluster_kinds, start_kube
from tests.helpers import api_client, unique, wait_for

pytestmark = pytest.mark.skipif(
    "kube" not in cluster_kinds(),
    reason="the real control plane is not selected (LOCKWRIGHT_TEST_CLUSTER)")
Obj = dict[str, Any]
#: What RBAC objects are made of, beside their names (kube adds the rest).
RBAC_FIELDS = ("rules", "aggregationRule", "roleRef", "subjects")
#: Labels helm and kube-apiserver add of their own.
ADDED_LABELS = ("app.kubernetes.io/managed-by", "kubernetes.io/metadata.name")


@contextlib.contextmanager
def helm_installed(helm: Helm, state: Path) -> Iterator[tuple[KubeCluster, Any]]:
    """A control plane of its own with the chart installed by helm, its defaults kept
    (the release recorded in ``default``; the chart makes the system namespace)."""
    kube = start_kube(state)
    api = api_client(kube.kubeconfig)
    try:
        helm.run("install", "lockwright", str(CHART), "--namespace", "default", "--wait",
                 "--timeout", "3m", kubeconfig=kube.kubeconfig)
        yield kube, api
    finally:
        api.close()
        kube.stop()


@pytest.fixture(scope="module")
def installed(helm_executable: Path, tmp_path_factory: pytest.TempPathFactory
              ) -> Iterator[tuple[KubeCluster, Any]]:
    """One install the tests that only read it share."""
    state = tmp_path_factory.mktemp("helm-install")
    with helm_installed(Helm(helm_executable, state / "helm"), state) as done:
        yield done


def live(api: Any, obj: Obj) -> Obj:
    """The object of ``obj``'s kind and name as kube-apiserver holds it."""
    meta, kind = obj["metadata"], obj["kind"]
    rbac, core = client.RbacAuthorizationV1Api(api), client.CoreV1Api(api)
    read = {"Namespace": lambda: core.read_namespace(meta["name"]),
            "ServiceAccount": lambda: core.read_namespaced_service_account(
                meta["name"], meta["namespace"]),
            "ClusterRole": lambda: rbac.read_cluster_role(meta["name"]),
            "ClusterRoleBinding": lambda: rbac.read_cluster_role_binding(meta["name"]),
            "Role": lambda: rbac.read_namespaced_role(meta["name"], meta["namespace"]),
            "RoleBinding": lambda: rbac.read_namespaced_role_binding(
                meta["name"], meta["namespace"])}[kind]
    return dict(api.sanitize_for_serialization(read()))


def essence(obj: Obj) -> Obj:
    """What an RBAC object grants, and its labels, in deploy/'s shape."""
    out = {f: obj[f] for f in RBAC_FIELDS if obj.get(f) is not None}
    labels = {k: v for k, v in (obj["metadata"].get("labels") or {}).items()
              if k not in ADDED_LABELS}
    if "aggregationRule" in out:
        out.pop("rules", None)  # filled in by kube-controller-manager's aggregator
    for rule in out.get("rules", []):
        for key in ("apiGroups", "resources", "verbs"):
            rule.setdefault(key, [])
    return {**out, "labels": labels}


def test_helm_installs_what_deploy_makes(installed: tuple[KubeCluster, Any]) -> None:
    _, api = installed
    for obj in deploy_objects(RBAC_KINDS):
        found = live(api, obj)
        assert found["metadata"]["annotations"]["meta.helm.sh/release-name"] == "lockwright"
        assert essence(found) == essence(obj), (obj["kind"], obj["metadata"]["name"])
    apps = client.AppsV1Api(api)
    for name in ("lockwright-worker", "lockwright-watcher"):
        status = apps.read_namespaced_deployment_status(name, system_namespace()).status
        assert status.available_replicas == 1, (name, status)
    crds = client.ApiextensionsV1Api(api).list_custom_resource_definition().items
    assert len([c for c in crds if c.metadata.name.endswith(".crossplane.io")]) == 12


def crds_install(kubeconfig: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": kubeconfig, "PYTHONPATH": str(ROOT)}
    env.pop("LOCKWRIGHT_SYSTEM_NAMESPACE", None)
    return subprocess.run([sys.executable, "-m", "lockwright", "crds", "install"], env=env,
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)


def test_lockwright_works_under_the_charts_service_account(
        installed: tuple[KubeCluster, Any], tmp_path: Path) -> None:
    kube, api = installed
    token = token_for(api, system_namespace(), SERVICE_ACCOUNT)
    kubeconfig = kubeconfig_as(kube.kubeconfig, token, tmp_path / "lockwright.kubeconfig")
    first = crds_install(kubeconfig)
    assert first.returncode == 0, first.stderr[-3000:]
    # helm applied the CRDs; lockwright marks them with their manifest's hash once.
    assert first.stdout.strip() == "created 3, updated 12, unchanged 1"
    assert crds_install(kubeconfig).stdout.strip() == "created 0, updated 0, unchanged 16"
    assert kube.denials() == []
    assert kube.events_of(), "the audit log shows none of lockwright's requests"


def test_upgrade_then_uninstall_keeps_the_system_namespace(helm: Helm, tmp_path: Path
                                                           ) -> None:
    with helm_installed(helm, tmp_path) as (kube, api):
        upgrade_then_uninstall(helm, kube, api)


def upgrade_then_uninstall(helm: Helm, kube: KubeCluster, api: Any) -> None:
    helm.run("upgrade", "lockwright", str(CHART), "--namespace", "default", "--set",
             "worker.replicas=2", "--set", "watcher.enabled=false", "--wait", "--timeout", "3m",
             kubeconfig=kube.kubeconfig)
    apps = client.AppsV1Api(api)
    worker = apps.read_namespaced_deployment_status("lockwright-worker", system_namespace())
    assert worker.status.available_replicas == 2
    names = [d.metadata.name for d in apps.list_namespaced_deployment(system_namespace()).items]
    assert names == ["lockwright-worker"]
    helm.run("uninstall", "lockwright", "--namespace", "default", "--wait",
             kubeconfig=kube.kubeconfig)
    rbac = client.RbacAuthorizationV1Api(api)
    with pytest.raises(ApiException) as gone:
        rbac.read_cluster_role("lockwright")
    assert gone.value.status == 404
    namespace = client.CoreV1Api(api).read_namespace(system_namespace())
    assert namespace.status.phase == "Active"
    wait_for(lambda: not apps.list_namespaced_deployment(system_namespace()).items,
             timeout=60, what="the Deployments gone")


def test_a_release_in_a_namespace_helm_makes(installed: tuple[KubeCluster, Any],
                                             helm: Helm) -> None:
    """The other way of docs/operations.md, "Install with Helm": the release kept in the
    system namespace, which helm makes (``--create-namespace``), beside the first release
    (its roles named apart)."""
    kube, api = installed
    namespace = unique("lw-system")
    helm.run("install", "second", str(CHART), "--namespace", namespace, "--create-namespace",
             "--set", f"namespace.name={namespace}", "--set", "namespace.create=false",
             "--set", f"rbac.name={namespace}", "--wait", "--timeout", "3m",
             kubeconfig=kube.kubeconfig)
    binding = client.RbacAuthorizationV1Api(api).read_namespaced_role_binding(namespace,
                                                                               namespace)
    assert [(s.name, s.namespace) for s in binding.subjects] == [(SERVICE_ACCOUNT, namespace)]
    worker = client.AppsV1Api(api).read_namespaced_deployment_status("lockwright-worker",
                                                                     namespace)
    assert worker.status.available_replicas == 1
    releases = helm.run("list", "--all-namespaces", "-q", kubeconfig=kube.kubeconfig).stdout
    assert releases.split() == ["lockwright", "second"]
