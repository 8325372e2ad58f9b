"""Discovery documents: legacy and aggregated, as kube-apiserver 1.32 serves them."""

from __future__ import annotations

from dataclasses import replace

import pytest

from lockwright.devcluster import discovery
from lockwright.devcluster.builtins import BUILTINS
from lockwright.devcluster.types import ResourceType

KUBECTL_ACCEPT = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
                  "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
                  "application/json")


def crd(group: str = "pkg.crossplane.io", version: str = "v1", kind: str = "Provider",
        storage: bool = True) -> ResourceType:
    plural = kind.lower() + "s"
    return ResourceType(group, version, kind, plural, kind.lower(), False, ("pkg",),
                        ("crossplane",), subresources=("status",), storage=storage,
                        crd_name=f"{plural}.{group}")


TYPES = BUILTINS + (crd(), crd(version="v1beta1", storage=False), crd(version="v2alpha1",
                                                                         storage=False))


def test_version_is_a_1_32_server() -> None:
    doc = discovery.version()
    assert (doc["major"], doc["minor"]) == ("1", "32")
    assert doc["gitVersion"].startswith("v1.32.")
    assert doc["platform"] == "linux/amd64"


def test_core_versions_lists_v1() -> None:
    assert discovery.core_versions()["versions"] == ["v1"]
    assert discovery.core_versions("127.0.0.1:6443")["serverAddressByClientCIDRs"] == [
        {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}]


def test_core_resources_include_subresources_sorted() -> None:
    doc = discovery.core_resources(TYPES)
    names = [r["name"] for r in doc["resources"]]
    assert doc["kind"] == "APIResourceList" and doc["groupVersion"] == "v1"
    assert names == sorted(names)
    assert "namespaces/status" in names and "services/status" in names
    status = next(r for r in doc["resources"] if r["name"] == "namespaces/status")
    assert status == {"name": "namespaces/status", "singularName": "", "namespaced": False,
                      "kind": "Namespace", "verbs": ["get", "patch", "update"]}
    cm = next(r for r in doc["resources"] if r["name"] == "configmaps")
    assert cm["shortNames"] == ["cm"] and cm["namespaced"] is True
    assert cm["storageVersionHash"] == discovery.storage_version_hash("", "v1", "ConfigMap")


@pytest.mark.parametrize("version", ["v1", "v1beta1"])
def test_every_served_version_names_the_stored_one_by_its_hash(version: str) -> None:
    """As kube-apiserver: a CRD's resource at any served version carries the hash of the
    version its objects are stored in (the fidelity check found v1beta1's missing)."""
    types = BUILTINS + tuple(replace(t, storage_version="v1") for t in TYPES
                             if t.group == "pkg.crossplane.io")
    doc = discovery.resource_list(types, "pkg.crossplane.io", version)
    assert doc is not None
    provider = next(r for r in doc["resources"] if r["name"] == "providers")
    assert provider["storageVersionHash"] == discovery.storage_version_hash(
        "pkg.crossplane.io", "v1", "Provider")


def test_scale_subresource_names_autoscaling_scale() -> None:
    doc = discovery.resource_list(TYPES, "apps", "v1")
    assert doc is not None
    scale = next(r for r in doc["resources"] if r["name"] == "deployments/scale")
    assert (scale["group"], scale["version"], scale["kind"]) == ("autoscaling", "v1", "Scale")


def test_group_list_prefers_highest_priority_version() -> None:
    doc = discovery.group_list(TYPES)
    names = [g["name"] for g in doc["groups"]]
    assert names.index("apps") < names.index("rbac.authorization.k8s.io") < names.index(
        "pkg.crossplane.io")
    pkg = next(g for g in doc["groups"] if g["name"] == "pkg.crossplane.io")
    assert [v["version"] for v in pkg["versions"]] == ["v1", "v1beta1", "v2alpha1"]
    assert pkg["preferredVersion"] == {"groupVersion": "pkg.crossplane.io/v1", "version": "v1"}
    assert "" not in names


@pytest.mark.parametrize("versions,expected", [
    (["v1beta1", "v1", "v2"], ["v2", "v1", "v1beta1"]),
    (["v1alpha1", "v1beta2", "v1beta1", "foo"], ["v1beta2", "v1beta1", "v1alpha1", "foo"]),
    (["v10", "v2"], ["v10", "v2"]),
])
def test_kube_aware_version_order(versions: list[str], expected: list[str]) -> None:
    assert sorted(versions, key=discovery.version_sort_key) == expected


def test_group_and_resource_list_unknown_are_none() -> None:
    assert discovery.group(TYPES, "nope.io") is None
    assert discovery.resource_list(TYPES, "apps", "v9") is None
    doc = discovery.group(TYPES, "pkg.crossplane.io")
    assert doc is not None and doc["kind"] == "APIGroup"
    rl = discovery.resource_list(TYPES, "pkg.crossplane.io", "v1")
    assert rl is not None and rl["apiVersion"] == "v1"
    assert [r["name"] for r in rl["resources"]] == ["providers", "providers/status"]
    assert rl["resources"][0]["categories"] == ["crossplane"]


@pytest.mark.parametrize("accept,expected", [
    (KUBECTL_ACCEPT, ("v2", discovery.AGGREGATED_V2)),
    (("application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
     "application/json"), ("v2beta1", discovery.AGGREGATED_V2BETA1)),
    ("application/json", None),
    ("", None),
    ("*/*", None),
    ("application/json, application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
     None),
    ("application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList", None),
])
def test_wants_aggregated(accept: str, expected: tuple[str, str] | None) -> None:
    assert discovery.wants_aggregated(accept) == expected


def test_aggregated_core_and_groups() -> None:
    core = discovery.aggregated(TYPES, core=True)
    assert core["kind"] == "APIGroupDiscoveryList"
    assert core["apiVersion"] == "apidiscovery.k8s.io/v2"
    assert len(core["items"]) == 1 and "name" not in core["items"][0]["metadata"]
    apis = discovery.aggregated(TYPES, core=False)
    pkg = next(i for i in apis["items"] if i["metadata"].get("name") == "pkg.crossplane.io")
    assert [v["version"] for v in pkg["versions"]] == ["v1", "v1beta1", "v2alpha1"]
    res = pkg["versions"][0]["resources"][0]
    assert res["resource"] == "providers" and res["scope"] == "Cluster"
    assert res["responseKind"] == {"group": "pkg.crossplane.io", "version": "v1",
                                   "kind": "Provider"}
    assert res["subresources"][0]["subresource"] == "status"
    assert pkg["versions"][0]["freshness"] == "Current"
    beta = discovery.aggregated(TYPES, core=False, version="v2beta1")
    assert beta["apiVersion"] == "apidiscovery.k8s.io/v2beta1"


def test_documents_follow_changes_of_types() -> None:
    before = discovery.group_list(TYPES)
    added = TYPES + (crd("example.org", "v1", "Widget"),)
    after = discovery.group_list(added)
    assert "example.org" in [g["name"] for g in after["groups"]]
    assert "example.org" not in [g["name"] for g in before["groups"]]
    assert discovery.group_list(list(TYPES)) == before


def test_two_thousand_types_are_built_once_and_one_more_costs_one_entry() -> None:
    """Discovery is asked on every request: the same set of types answers from the cache,
    and one CRD more builds one entry, not 2,000 (what kept 2,000 types fast; the speed
    itself is benchmarks/devcluster.py's, tests assert no wall-clock time)."""
    many = list(BUILTINS)
    for i in range(2000):
        many.append(crd(f"g{i}.example.org", "v1", f"Kind{i}"))
    first = discovery.aggregated(many, core=False)
    assert discovery.aggregated(list(many), core=False) is first
    assert discovery.group_list(list(many)) is discovery.group_list(list(many))
    before = len(discovery._PER_TYPE)
    grown = discovery.aggregated([*many, crd("extra.example.org", "v1", "Extra")], core=False)
    assert len(grown["items"]) == len(first["items"]) + 1
    assert len(discovery._PER_TYPE) - before <= 2
