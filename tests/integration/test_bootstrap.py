"""``lockwright crds install`` against devcluster: idempotent, and kubectl reads the result.

Runs on a private devcluster (the CRDs are cluster-wide; the session cluster is shared).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lockwright.k8s.bootstrap import HASH_ANNOTATION
from tests.fixtures.devcluster import DevCluster, start_devcluster

pytestmark = pytest.mark.kubectl


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    dc = start_devcluster(str(tmp_path_factory.mktemp("bootstrap-dc")))
    yield dc
    dc.stop()


def lockwright(*args: str, kubeconfig: str,
               **more_env: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": kubeconfig, **more_env}
    return subprocess.run([sys.executable, "-m", "lockwright", *args], env=env, text=True,
                          capture_output=True, timeout=120, check=False)


def kubectl(*args: str, kubeconfig: str) -> str:
    out = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, *args], text=True,
                         capture_output=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.fixture
def fresh_cluster(tmp_path: Path) -> Iterator[DevCluster]:
    dc = start_devcluster(str(tmp_path))
    yield dc
    dc.stop()


def test_crds_install_twice_is_idempotent(fresh_cluster: DevCluster) -> None:
    cluster = fresh_cluster
    first = lockwright("crds", "install", "--kubeconfig", cluster.kubeconfig,
                       kubeconfig="/nonexistent")  # the flag beats $KUBECONFIG
    assert first.returncode == 0, first.stderr
    # 12 CRDs, the namespace, the default DRC, the Lock and the default activation policy
    assert "created 16, updated 0, unchanged 0" in first.stdout
    rv_before = kubectl("get", "crd", "providers.pkg.crossplane.io", "-o",
                        "jsonpath={.metadata.resourceVersion}", kubeconfig=cluster.kubeconfig)
    second = lockwright("crds", "install", kubeconfig=cluster.kubeconfig)
    assert second.returncode == 0, second.stderr
    assert "created 0, updated 0, unchanged 16" in second.stdout
    rv_after = kubectl("get", "crd", "providers.pkg.crossplane.io", "-o",
                       "jsonpath={.metadata.resourceVersion}", kubeconfig=cluster.kubeconfig)
    assert rv_before == rv_after


def _activations(kubeconfig: str) -> str:
    return kubectl("get", "mrap", "-o", "jsonpath={range .items[*]}{.metadata.name}="
                   "{.spec.activate}{end}", kubeconfig=kubeconfig)


def test_the_default_activation_policy_from_flags_or_the_setting(
        fresh_cluster: DevCluster) -> None:
    """As Crossplane's --activation: repeated flags make the `default` policy; without
    them LOCKWRIGHT_DEFAULT_ACTIVATIONS does (``*`` unless set); once made it is kept."""
    kc = fresh_cluster.kubeconfig
    done = lockwright("crds", "install", "--activation", "*.aws.upbound.io",
                      "--activation", "buckets.s3.gcp.io", kubeconfig=kc)
    assert done.returncode == 0, done.stderr
    assert _activations(kc) == 'default=["*.aws.upbound.io","buckets.s3.gcp.io"]'
    again = lockwright("crds", "install", kubeconfig=kc)
    assert again.returncode == 0 and "created 0" in again.stdout  # an admin's policy stays
    assert _activations(kc) == 'default=["*.aws.upbound.io","buckets.s3.gcp.io"]'


@pytest.mark.parametrize(("setting", "expected"), [("*", 'default=["*"]'), ("", "")])
def test_the_setting_makes_the_default_policy_or_none(fresh_cluster: DevCluster, setting: str,
                                                      expected: str) -> None:
    kc = fresh_cluster.kubeconfig
    done = lockwright("crds", "install", kubeconfig=kc, LOCKWRIGHT_DEFAULT_ACTIVATIONS=setting)
    assert done.returncode == 0, done.stderr
    assert _activations(kc) == expected


def test_a_malformed_activation_pattern_is_refused(cluster: DevCluster) -> None:
    done = lockwright("crds", "install", "--activation", "[aws", kubeconfig=cluster.kubeconfig)
    assert done.returncode == 2
    assert "--activation '[aws' is not a valid pattern" in done.stderr


def test_kubectl_reads_packages_and_system_objects(cluster: DevCluster) -> None:
    assert lockwright("crds", "install", kubeconfig=cluster.kubeconfig).returncode == 0
    kc = cluster.kubeconfig
    out = subprocess.run(["kubectl", "--kubeconfig", kc, "get", "providers,providerrevisions"],
                         text=True, capture_output=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert "No resources found" in out.stderr + out.stdout
    assert kubectl("get", "namespace", "crossplane-system", "-o", "name", kubeconfig=kc).strip() \
        == "namespace/crossplane-system"
    assert kubectl("get", "deploymentruntimeconfigs", "-o", "name", kubeconfig=kc).strip() \
        == "deploymentruntimeconfig.pkg.crossplane.io/default"
    assert kubectl("get", "locks", "lock", "-o", "jsonpath={.packages}", kubeconfig=kc) in (
        "", "[]")


def test_changed_crd_is_updated_and_edits_of_system_objects_survive(
        cluster: DevCluster) -> None:
    kc = cluster.kubeconfig
    assert lockwright("crds", "install", kubeconfig=kc).returncode == 0
    kubectl("annotate", "--overwrite", "crd", "functions.pkg.crossplane.io",
            f"{HASH_ANNOTATION}=stale", kubeconfig=kc)
    kubectl("label", "deploymentruntimeconfig", "default", "edited=yes", kubeconfig=kc)
    again = lockwright("crds", "install", kubeconfig=kc)
    assert again.returncode == 0, again.stderr
    assert "updated 1" in again.stdout
    assert kubectl("get", "deploymentruntimeconfig", "default", "-o",
                   "jsonpath={.metadata.labels.edited}", kubeconfig=kc) == "yes"


def test_invalid_setting_exits_2_naming_the_flag(cluster: DevCluster) -> None:
    out = lockwright("crds", "install", "--system-namespace", "Not_A_Label",
                     kubeconfig=cluster.kubeconfig)
    assert out.returncode == 2
    assert "--system-namespace / LOCKWRIGHT_SYSTEM_NAMESPACE" in out.stderr


def test_help_is_fast_and_lists_commands() -> None:
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "lockwright", "--help"],
                         text=True, capture_output=True, timeout=60, check=False)
    assert out.returncode == 0
    for command in ("crds", "worker", "watcher", "dev"):
        assert command in out.stdout
    heavy = [line for line in out.stderr.splitlines()
             if line.rstrip().endswith(("temporalio", "kubernetes"))]
    assert heavy == [], heavy
