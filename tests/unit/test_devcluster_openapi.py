"""OpenAPI documents: what kubectl 1.32 reads for field validation, explain and apply."""

from __future__ import annotations

import json
from typing import Any

from lockwright.devcluster import openapi
from lockwright.devcluster.builtins import BUILTINS
from lockwright.devcluster.types import ResourceType

SCHEMA = {"type": "object", "description": "A Provider installs a package.", "properties": {
    "spec": {"type": "object", "description": "ProviderSpec specifies the package.",
             "required": ["package"],
             "properties": {"package": {"type": "string", "description": "The OCI image."}}},
    "status": {"type": "object"}}}
PROVIDER = ResourceType("pkg.crossplane.io", "v1", "Provider", "providers", "provider", False,
                        subresources=("status",), schema=SCHEMA,
                        crd_name="providers.pkg.crossplane.io")
TYPES = BUILTINS + (PROVIDER,)


def patch_ops(doc: dict[str, Any], gvk: dict[str, str]) -> list[dict[str, Any]]:
    return [item["patch"] for item in doc["paths"].values()
            if "patch" in item and item["patch"]["x-kubernetes-group-version-kind"] == gvk]


def test_index_lists_every_group_version_with_hash() -> None:
    paths = openapi.v3_index(TYPES)["paths"]
    assert {"api/v1", "apis/apps/v1", "apis/pkg.crossplane.io/v1"} <= set(paths)
    url = paths["apis/pkg.crossplane.io/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/apis/pkg.crossplane.io/v1?hash=")


def test_hash_changes_with_the_schema_only() -> None:
    def url(types: Any) -> str:
        return str(openapi.v3_index(types)["paths"]["apis/pkg.crossplane.io/v1"][
            "serverRelativeURL"])
    first = url(TYPES)
    same = url(BUILTINS + (ResourceType(**{**PROVIDER.__dict__, "schema": dict(SCHEMA)}),))
    changed_schema = {**SCHEMA, "description": "changed"}
    changed = url(BUILTINS + (ResourceType(**{**PROVIDER.__dict__,
                                              "schema": changed_schema}),))
    assert first == same != changed
    assert openapi.v3_index(TYPES)["paths"]["api/v1"] == openapi.v3_index(
        BUILTINS + (ResourceType(**{**PROVIDER.__dict__, "schema": changed_schema}),)
    )["paths"]["api/v1"]


def test_patch_operations_accept_field_validation() -> None:
    for rtype in TYPES:
        if "patch" not in rtype.verbs:
            continue
        doc = openapi.v3_group_version(TYPES, rtype.group, rtype.version)
        assert doc is not None
        ops = patch_ops(doc, {"group": rtype.group, "kind": rtype.kind,
                              "version": rtype.version})
        assert ops, rtype.kind
        for op in ops:
            names = [p["name"] for p in op["parameters"] if p["in"] == "query"]
            assert "fieldValidation" in names and "fieldManager" in names
            assert "application/strategic-merge-patch+json" not in op["requestBody"]["content"]


def test_custom_resource_schema_is_explainable() -> None:
    doc = openapi.v3_group_version(TYPES, "pkg.crossplane.io", "v1")
    assert doc is not None and doc["openapi"].startswith("3.")
    gvk = {"group": "pkg.crossplane.io", "kind": "Provider", "version": "v1"}
    listing = doc["paths"]["/apis/pkg.crossplane.io/v1/providers"]["get"]
    assert listing["x-kubernetes-group-version-kind"] == gvk
    schema = doc["components"]["schemas"]["io.crossplane.pkg.v1.Provider"]
    assert schema["x-kubernetes-group-version-kind"] == [gvk]
    assert schema["properties"]["spec"]["properties"]["package"]["type"] == "string"
    assert schema["properties"]["metadata"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]
    assert "metadata" not in SCHEMA["properties"]  # the CRD's schema is not mutated
    for ref in _refs(doc):
        assert ref.removeprefix("#/components/schemas/") in doc["components"]["schemas"], ref


def test_namespaced_paths_and_scale() -> None:
    doc = openapi.v3_group_version(TYPES, "apps", "v1")
    assert doc is not None
    paths = doc["paths"]
    assert "/apis/apps/v1/namespaces/{namespace}/deployments/{name}" in paths
    assert "/apis/apps/v1/deployments" in paths
    scale = paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]["patch"]
    assert scale["x-kubernetes-group-version-kind"]["kind"] == "Scale"
    assert "io.k8s.api.apps.v1.Deployment" in doc["components"]["schemas"]
    core = openapi.v3_group_version(TYPES, "", "v1")
    assert core is not None and "/api/v1/namespaces/{name}" in core["paths"]
    assert "/api/v1/namespaces/{name}/status" in core["paths"]
    assert "/api/v1/namespaces/{namespace}/configmaps" in core["paths"]


def test_unknown_group_version_is_none() -> None:
    assert openapi.v3_group_version(TYPES, "nope.io", "v1") is None


def test_v2_is_swagger_with_definitions() -> None:
    doc = openapi.v2(TYPES)
    assert doc["swagger"] == "2.0"
    assert "io.crossplane.pkg.v1.Provider" in doc["definitions"]
    text = json.dumps(doc)
    assert "#/components/" not in text
    op = doc["paths"]["/apis/pkg.crossplane.io/v1/providers/{name}"]["patch"]
    assert "fieldValidation" in [p["name"] for p in op["parameters"]]


def test_many_custom_types_are_documented_once_per_set() -> None:
    """The same 2,000 types answer from the cache (what keeps the documents fast: the speed
    itself is benchmarks/devcluster.py's; tests assert no wall-clock time)."""
    many = list(BUILTINS) + [
        ResourceType(f"g{i}.example.org", "v1", f"K{i}", f"k{i}s", f"k{i}", True,
                     schema=SCHEMA, crd_name=f"k{i}s.g{i}.example.org") for i in range(2000)]
    index = openapi.v3_index(many)
    assert len(index["paths"]) >= 2000
    assert openapi.v3_index(list(many))["paths"] is index["paths"]
    group = openapi.v3_group_version(many, "g7.example.org", "v1")
    assert openapi.v3_group_version(list(many), "g7.example.org", "v1") is group


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == "$ref" and isinstance(v, str)] + [
            r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def test_builtin_kinds_carry_the_client_models_fields() -> None:
    doc = openapi.v3_group_version(TYPES, "apps", "v1")
    assert doc is not None
    schemas = doc["components"]["schemas"]
    deployment = schemas["io.k8s.api.apps.v1.Deployment"]
    assert deployment["x-kubernetes-group-version-kind"] == [
        {"group": "apps", "kind": "Deployment", "version": "v1"}]
    spec_ref = deployment["properties"]["spec"]["allOf"][0]["$ref"]
    spec = schemas[spec_ref.removeprefix("#/components/schemas/")]
    assert spec["properties"]["replicas"]["type"] == "integer"
    assert "Number of desired pods" in spec["properties"]["replicas"]["description"]
    assert set(spec["required"]) == {"selector", "template"}
    for group, version in (("apps", "v1"), ("", "v1"), ("apiextensions.k8s.io", "v1")):
        gv_doc = openapi.v3_group_version(TYPES, group, version)
        assert gv_doc is not None
        for ref in _refs(gv_doc):
            assert ref.removeprefix("#/components/schemas/") in gv_doc["components"][
                "schemas"], ref


def test_gvk_extension_only_on_the_served_kind() -> None:
    doc = openapi.v3_group_version(TYPES, "", "v1")
    assert doc is not None
    tagged = [name for name, s in doc["components"]["schemas"].items()
              if {"group": "", "kind": "ConfigMap", "version": "v1"} in s.get(
                  "x-kubernetes-group-version-kind", [])]
    assert tagged == ["io.k8s.api.core.v1.ConfigMap"]
