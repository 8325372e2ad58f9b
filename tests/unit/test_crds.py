"""The packaged CRDs: names, versions, printer columns, categories, defaults, validation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest

from lockwright.k8s.crds import crd_files, load_crds
from lockwright.names import FULLY_QUALIFIED_PACKAGE

CRDS = {c["metadata"]["name"]: c for c in load_crds()}
ROOT = Path(__file__).resolve().parents[2]


def _version(crd: str, name: str = "v1") -> dict[str, Any]:
    return next(v for v in CRDS[crd]["spec"]["versions"] if v["name"] == name)


def _schema(crd: str, version: str = "v1") -> dict[str, Any]:
    return dict(_version(crd, version)["schema"]["openAPIV3Schema"])


def _prop(schema: dict[str, Any], path: str) -> dict[str, Any]:
    for part in path.split("."):
        schema = schema["properties"][part]
    return schema


@pytest.mark.parametrize(("name", "kind", "versions", "storage", "categories", "status"), [
    ("providers.pkg.crossplane.io", "Provider", ["v1"], "v1", ["crossplane", "pkg"], True),
    ("configurations.pkg.crossplane.io", "Configuration", ["v1"], "v1", ["crossplane", "pkg"],
     True),
    ("functions.pkg.crossplane.io", "Function", ["v1", "v1beta1"], "v1", ["crossplane", "pkg"],
     True),
    ("providerrevisions.pkg.crossplane.io", "ProviderRevision", ["v1"], "v1",
     ["crossplane", "pkgrev"], True),
    ("configurationrevisions.pkg.crossplane.io", "ConfigurationRevision", ["v1"], "v1",
     ["crossplane", "pkgrev"], True),
    ("functionrevisions.pkg.crossplane.io", "FunctionRevision", ["v1", "v1beta1"], "v1",
     ["crossplane", "pkgrev"], True),
    ("locks.pkg.crossplane.io", "Lock", ["v1beta1"], "v1beta1", None, True),
    ("deploymentruntimeconfigs.pkg.crossplane.io", "DeploymentRuntimeConfig", ["v1beta1"],
     "v1beta1", ["crossplane"], False),
    ("imageconfigs.pkg.crossplane.io", "ImageConfig", ["v1beta1"], "v1beta1", ["crossplane"],
     False),
])
def test_names_versions(name: str, kind: str, versions: list[str], storage: str,
                        categories: list[str] | None, status: bool) -> None:
    crd = CRDS[name]
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    spec = crd["spec"]
    assert spec["group"] == "pkg.crossplane.io"
    assert spec["scope"] == "Cluster"
    assert spec["names"]["kind"] == kind
    assert spec["names"]["plural"] == name.split(".")[0]
    assert spec["names"]["singular"] == kind.lower()
    assert spec["names"]["listKind"] == f"{kind}List"
    assert "shortNames" not in spec["names"]
    assert spec["names"].get("categories") == categories
    assert [v["name"] for v in spec["versions"]] == versions
    assert [v["name"] for v in spec["versions"] if v["storage"]] == [storage]
    assert all(v["served"] for v in spec["versions"])
    assert all(("subresources" in v) is status for v in spec["versions"])


def test_twelve_files_one_crd_each() -> None:
    assert len(crd_files()) == 12 == len(CRDS)


def test_crossplanes_cluster_usage() -> None:
    """Provider deletion protection's usages: Crossplane's ClusterUsage, its columns."""
    spec = CRDS["clusterusages.protection.crossplane.io"]["spec"]
    assert (spec["group"], spec["scope"], spec["names"]["kind"]) == (
        "protection.crossplane.io", "Cluster", "ClusterUsage")
    [version] = spec["versions"]
    assert version["name"] == "v1beta1"
    assert [c["name"] for c in version["additionalPrinterColumns"]] == [
        "DETAILS", "READY", "AGE"]


@pytest.mark.parametrize(("name", "kind", "short", "columns"), [
    ("managedresourcedefinitions.apiextensions.crossplane.io", "ManagedResourceDefinition",
     ["mrd", "mrds"], ["STATE", "ESTABLISHED", "AGE"]),
    ("managedresourceactivationpolicies.apiextensions.crossplane.io",
     "ManagedResourceActivationPolicy", ["mrap"], ["AGE"]),
])
def test_crossplane_v2_definitions(name: str, kind: str, short: list[str],
                                   columns: list[str]) -> None:
    """Crossplane v2's MRD and MRAP types: names, short names and columns as Crossplane's."""
    crd = CRDS[name]
    spec = crd["spec"]
    assert (spec["group"], spec["scope"], spec["names"]["kind"]) == (
        "apiextensions.crossplane.io", "Cluster", kind)
    assert spec["names"]["shortNames"] == short
    assert spec["names"]["categories"] == ["crossplane"]
    [version] = spec["versions"]
    assert version["name"] == "v1alpha1" and "status" in version["subresources"]
    assert [c["name"] for c in version["additionalPrinterColumns"]] == columns


def test_mrd_state_defaults_inactive_and_stays_active() -> None:
    state = _version("managedresourcedefinitions.apiextensions.crossplane.io", "v1alpha1")[
        "schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["state"]
    assert state["default"] == "Inactive" and state["enum"] == ["Active", "Inactive"]
    assert state["x-kubernetes-validations"][0]["rule"] == "self == oldSelf || oldSelf != 'Active'"
    assert sorted(p.name for p in (ROOT / "crds").glob("*.yaml")) == crd_files()


def _columns(crd: str) -> list[tuple[str, str, int]]:
    return [(c["name"], c["jsonPath"], c.get("priority", 0))
            for c in _version(crd)["additionalPrinterColumns"]]


@pytest.mark.parametrize("plural", ["providers", "configurations", "functions"])
def test_package_columns(plural: str) -> None:
    assert _columns(f"{plural}.pkg.crossplane.io") == [
        ("INSTALLED", ".status.conditions[?(@.type=='Installed')].status", 0),
        ("HEALTHY", ".status.conditions[?(@.type=='Healthy')].status", 0),
        ("PACKAGE", ".spec.package", 0),
        ("AGE", ".metadata.creationTimestamp", 0)]


@pytest.mark.parametrize(("plural", "runtime"), [
    ("providerrevisions", True), ("configurationrevisions", False), ("functionrevisions", True)])
def test_revision_columns(plural: str, runtime: bool) -> None:
    cols = _columns(f"{plural}.pkg.crossplane.io")
    want = [("HEALTHY", ".status.conditions[?(@.type=='RevisionHealthy')].status", 0),
            ("REVISION", ".spec.revision", 0), ("IMAGE", ".spec.image", 0),
            ("STATE", ".spec.desiredState", 0), ("DEP-FOUND", ".status.foundDependencies", 0),
            ("DEP-INSTALLED", ".status.installedDependencies", 0),
            ("AGE", ".metadata.creationTimestamp", 0)]
    if runtime:
        want.insert(1, ("RUNTIME-HEALTHY",
                        ".status.conditions[?(@.type=='RuntimeHealthy')].status", 1))
    assert cols == want


@pytest.mark.parametrize("name", ["locks", "deploymentruntimeconfigs", "imageconfigs"])
def test_age_only_columns(name: str) -> None:
    crd = f"{name}.pkg.crossplane.io"
    version = CRDS[crd]["spec"]["versions"][0]["name"]
    assert [c["name"] for c in _version(crd, version)["additionalPrinterColumns"]] == ["AGE"]


@pytest.mark.parametrize(("crd", "path", "default"), [
    ("providers", "spec.revisionActivationPolicy", "Automatic"),
    ("providers", "spec.revisionHistoryLimit", 1),
    ("providers", "spec.packagePullPolicy", "IfNotPresent"),
    ("providers", "spec.ignoreCrossplaneConstraints", False),
    ("providers", "spec.skipDependencyResolution", False),
    ("providers", "spec.runtimeConfigRef", {"name": "default"}),
    ("providers", "spec.runtimeConfigRef.apiVersion", "pkg.crossplane.io/v1beta1"),
    ("providers", "spec.runtimeConfigRef.kind", "DeploymentRuntimeConfig"),
    ("functions", "spec.runtimeConfigRef", {"name": "default"}),
    ("configurations", "spec.revisionHistoryLimit", 1),
    ("providerrevisions", "spec.packagePullPolicy", "IfNotPresent"),
    ("providerrevisions", "spec.runtimeConfigRef", {"name": "default"}),
    ("functionrevisions", "spec.skipDependencyResolution", False),
    ("configurationrevisions", "spec.ignoreCrossplaneConstraints", False),
])
def test_defaults(crd: str, path: str, default: Any) -> None:
    assert _prop(_schema(f"{crd}.pkg.crossplane.io"), path)["default"] == default


def test_configuration_has_no_runtime_fields() -> None:
    for crd in ("configurations", "configurationrevisions"):
        spec = _prop(_schema(f"{crd}.pkg.crossplane.io"), "spec")["properties"]
        assert "runtimeConfigRef" not in spec


@pytest.mark.parametrize(("crd", "path", "required"), [
    ("providers", "spec", ["package"]),
    ("providerrevisions", "spec", ["desiredState", "image", "revision"]),
    ("functionrevisions", "spec", ["desiredState", "image", "revision"]),
])
def test_required(crd: str, path: str, required: list[str]) -> None:
    assert _prop(_schema(f"{crd}.pkg.crossplane.io"), path)["required"] == required


def test_function_versions_share_schema() -> None:
    for crd in ("functions.pkg.crossplane.io", "functionrevisions.pkg.crossplane.io"):
        assert _schema(crd, "v1") == _schema(crd, "v1beta1")


def test_revision_status_fields() -> None:
    status = _prop(_schema("providerrevisions.pkg.crossplane.io"), "status")["properties"]
    assert {"conditions", "objectRefs", "foundDependencies", "installedDependencies",
            "invalidDependencies", "resolvedImage", "appliedImageConfigRefs", "capabilities",
            "permissionRequests", "tlsServerSecretName", "tlsClientSecretName"} <= set(status)
    assert status["conditions"]["x-kubernetes-list-map-keys"] == ["type"]
    fn = _prop(_schema("functionrevisions.pkg.crossplane.io"), "status")["properties"]
    assert "endpoint" in fn and "permissionRequests" not in fn


def test_lock_schema() -> None:
    schema = _schema("locks.pkg.crossplane.io", "v1beta1")
    entry = schema["properties"]["packages"]["items"]
    assert entry["required"] == ["dependencies", "name", "source", "version"]
    assert entry["properties"]["type"]["enum"] == ["Configuration", "Provider", "Function"]
    dep = entry["properties"]["dependencies"]["items"]
    assert dep["required"] == ["constraints", "package"]
    assert "spec" not in schema["properties"]


def test_drc_templates_are_permissive() -> None:
    schema = _schema("deploymentruntimeconfigs.pkg.crossplane.io", "v1beta1")
    spec = _prop(schema, "spec.deploymentTemplate.spec")
    assert spec["x-kubernetes-preserve-unknown-fields"] is True
    jsonschema.validate({"spec": {"deploymentTemplate": {"spec": {
        "selector": {}, "template": {"spec": {"containers": [{"name": "package-runtime"}]}}}},
        "serviceAccountTemplate": {"metadata": {"name": "sa"}}}}, schema)


def test_imageconfig_schema() -> None:
    schema = _schema("imageconfigs.pkg.crossplane.io", "v1beta1")
    match = _prop(schema, "spec.matchImages")
    assert match["minItems"] == 1
    assert match["items"]["properties"]["type"] == {
        "type": "string", "description": "Type is the type of match.", "enum": ["Prefix"],
        "default": "Prefix"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"spec": {"matchImages": []}}, schema)


@pytest.mark.parametrize(("package", "valid"), [
    ("xpkg.upbound.io/crossplane-contrib/provider-nop:v0.2.0", True),
    ("127.0.0.1:5000/org/provider:v1@sha256:" + "a" * 64, True),
    ("localhost:5000/x:v1", False),
    ("crossplane/provider-nop:v0.2.0", False),
    ("xpkg.upbound.io/crossplane-contrib/provider-nop", False),
])
def test_package_pattern(package: str, valid: bool) -> None:
    schema = _schema("providers.pkg.crossplane.io")
    pattern = _prop(schema, "spec.package")["pattern"]
    assert pattern == FULLY_QUALIFIED_PACKAGE.pattern
    obj = {"apiVersion": "pkg.crossplane.io/v1", "kind": "Provider",
           "metadata": {"name": "p"}, "spec": {"package": package}}
    if valid:
        jsonschema.validate(obj, schema)
    else:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(obj, schema)


def test_pattern_noted_in_yaml_comment() -> None:
    text = (ROOT / "crds" / "pkg.crossplane.io_providers.yaml").read_text()
    assert "CEL" in text.split("---")[0] and "pattern" in text.split("---")[0]


def _nodes(schema: dict[str, Any], path: str = "") -> list[tuple[str, dict[str, Any]]]:
    out = [(path, schema)]
    for name, sub in (schema.get("properties") or {}).items():
        out += _nodes(sub, f"{path}.{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            out += _nodes(schema[key], f"{path}[{key}]")
    return out


@pytest.mark.parametrize("crd", sorted(CRDS))
def test_structural(crd: str) -> None:
    for version in CRDS[crd]["spec"]["versions"]:
        for path, node in _nodes(version["schema"]["openAPIV3Schema"]):
            assert "type" in node, f"{crd} {version['name']}{path} has no type"
            for req in node.get("required") or []:
                assert req in node["properties"], f"{crd}{path} requires unknown {req}"
            if "default" in node:
                jsonschema.validate(node["default"], {**node, "default": None})


class _CrdsByName:
    """A cluster's CRDs, read by name only: listing every CRD fails, as it timed out on a
    cluster holding a 2,000-CRD Provider's."""

    class discovery:  # noqa: N801 - the seam's attribute
        @staticmethod
        def know(*kinds: Any) -> None:
            pass

    def __init__(self) -> None:
        self.stored: dict[str, dict[str, Any]] = {}
        self.gets = 0

    def get(self, api: str, kind: str, name: str) -> dict[str, Any] | None:
        self.gets += 1
        return self.stored.get(name)

    def create(self, obj: dict[str, Any]) -> None:
        established = {"conditions": [{"type": "Established", "status": "True"}]}
        self.stored[obj["metadata"]["name"]] = {**obj, "status": established}

    def list(self, api: str, kind: str) -> list[Any]:
        raise AssertionError("every CRD listed: read lockwright's own by name")


def test_the_crds_install_reads_its_own_crds_by_name_only() -> None:
    from lockwright.k8s.bootstrap import install_crds

    kube = _CrdsByName()
    report = install_crds(kube)  # type: ignore[arg-type]
    assert len(report.created) == len(load_crds()) == len(kube.stored)
    again = install_crds(kube)  # type: ignore[arg-type]
    assert len(again.unchanged) == len(load_crds())
