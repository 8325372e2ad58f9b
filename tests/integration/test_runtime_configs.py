"""Which DeploymentRuntimeConfig a revision's runtime uses, against devcluster: a
``runtimeConfigRef`` of another kind under each package runtime (docs/crossplane.md §13.1)."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from lockwright.activities.reads import Registries, RuntimeConfigs
from lockwright.errors import InvalidPackage, KubeAlreadyExists
from lockwright.k8s import Kube
from lockwright.k8s.crds import load_crds
from lockwright.runtime.external import MSG_UNKNOWN_KIND
from tests.helpers import unique

DRC_API = "pkg.crossplane.io/v1beta1"


@pytest.fixture(scope="module")
def kube(devcluster: Any) -> Kube:
    k = Kube.connect(devcluster.kubeconfig)
    for crd in load_crds():
        with contextlib.suppress(KubeAlreadyExists):
            k.create(crd)
    return k


def revision(ref: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": unique("rev")},
            "spec": {"image": "registry.example.org/p:v1", "runtimeConfigRef": ref}}


def configs(kube: Kube, runtime: str) -> RuntimeConfigs:
    return RuntimeConfigs(kube, Registries(kube, "crossplane-system", []), runtime)


def named_drc(kube: Kube) -> str:
    """A DRC that exists, so only the ref's kind decides whether it is used."""
    name = unique("drc")
    kube.create({"apiVersion": DRC_API, "kind": "DeploymentRuntimeConfig",
                 "metadata": {"name": name}, "spec": {}})
    return name


def test_deployment_runtime_refuses_a_ref_of_another_kind(kube: Kube) -> None:
    name = named_drc(kube)
    rev = revision({"apiVersion": "runtime.example.org/v1", "kind": "PodRuntime", "name": name})
    with pytest.raises(InvalidPackage, match=MSG_UNKNOWN_KIND) as caught:
        configs(kube, "Deployment").runtime_config(rev)
    assert "PodRuntime" in str(caught.value) and "LOCKWRIGHT_PACKAGE_RUNTIME" in str(caught.value)
    # Where the DRC is optional (TLS names, health), the ref names none.
    assert configs(kube, "Deployment").runtime_config(rev, required=False) == (None, None)


def test_deployment_runtime_reads_the_named_drc(kube: Kube) -> None:
    name = named_drc(kube)
    drc, _ = configs(kube, "Deployment").runtime_config(
        revision({"apiVersion": DRC_API, "kind": "DeploymentRuntimeConfig", "name": name}))
    assert drc is not None and drc["metadata"]["name"] == name


def test_external_runtime_reads_no_drc_whatever_the_ref(kube: Kube) -> None:
    name = named_drc(kube)
    for ref in ({"apiVersion": "runtime.example.org/v1", "kind": "PodRuntime", "name": name},
                {"apiVersion": DRC_API, "kind": "DeploymentRuntimeConfig", "name": name}):
        assert configs(kube, "External").runtime_config(revision(ref)) == (None, None)
