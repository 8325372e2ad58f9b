"""CustomResourceDefinition semantics: defaults, validation, status, names, ResourceTypes."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from lockwright.devcluster.crd import (
    DEFAULT_COLUMNS,
    conflict,
    crd_status,
    default_crd,
    names_conflict,
    resource_types,
    schema_errors,
    validate_crd,
)

SCHEMA = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
    "package": {"type": "string"}}}}}
NOW, LATER = "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"


def make_crd(versions: tuple[str, ...] = ("v1",), storage: str = "v1",
             group: str = "pkg.crossplane.io") -> dict[str, Any]:
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": f"providers.{group}"},
           "spec": {"group": group, "scope": "Cluster",
                    "names": {"kind": "Provider", "plural": "providers", "shortNames": ["prov"],
                              "categories": ["crossplane"]},
                    "versions": [{"name": v, "served": True, "storage": v == storage,
                                  "schema": {"openAPIV3Schema": copy.deepcopy(SCHEMA)}}
                                 for v in versions]}}
    default_crd(crd)
    return crd


# --------------------------------------------------------------------------- defaulting

def test_default_crd_fills_names_and_conversion() -> None:
    crd = {"spec": {"names": {"kind": "Provider", "plural": "providers"}}}
    default_crd(crd)
    assert crd["spec"] == {"names": {"kind": "Provider", "plural": "providers",
                                     "singular": "provider", "listKind": "ProviderList"},
                           "conversion": {"strategy": "None"}}


def test_default_crd_keeps_given_values_and_defaults_webhook_port() -> None:
    service = {"name": "svc", "namespace": "ns"}
    names = {"kind": "P", "singular": "s", "listKind": "L"}
    crd: dict[str, Any] = {"spec": {"names": dict(names), "conversion": {
        "strategy": "Webhook", "webhook": {"clientConfig": {"service": service}}}}}
    default_crd(crd)
    assert crd["spec"]["names"] == names
    assert service == {"name": "svc", "namespace": "ns", "port": 443}


# --------------------------------------------------------------------------- validation

def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(crd: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = crd
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if value is _DELETE:
            del node[last]
        else:
            node[last] = value
    return mutate


_DELETE = object()
LABEL = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
         "with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name', "
         " or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
TWO = ("[]apiextensions.CustomResourceDefinitionVersion{"
       'apiextensions.CustomResourceDefinitionVersion{Name:"v1", Served:true, Storage:true, ...}}')


@pytest.mark.parametrize(("mutate", "expected"), [
    (lambda crd: None, []),
    (_set("metadata.name", "other.pkg.crossplane.io"),
     [('metadata.name: Invalid value: "other.pkg.crossplane.io": '
      'must be spec.names.plural+"."+spec.group')]),
    (_set("spec.scope", ""), ["spec.scope: Required value"]),
    (_set("spec.scope", "Global"),
     ['spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"']),
    (_set("spec.versions.0.storage", False),
     ["spec.versions: Invalid value: " + TWO.replace("Storage:true", "Storage:false")
      + ": must have exactly one version marked as storage version"]),
    (_set("spec.versions.0.name", "V1"),
     ['spec.versions[0].name: Invalid value: "V1": ' + LABEL]),
    (_set("spec.versions.0.schema", _DELETE),
     ["spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"]),
    (_set("spec.names.plural", ""),
     [('metadata.name: Invalid value: "providers.pkg.crossplane.io": must be '
      'spec.names.plural+"."+spec.group'), "spec.names.plural: Required value"]),
    (_set("spec.names.listKind", "Provider"),
     ['spec.names.listKind: Invalid value: "Provider": kind and listKind may not be the same']),
    (_set("spec.names.kind", "Pro_vider"),
     ['spec.names.kind: Invalid value: "Pro_vider": '
      "may have mixed case, but should otherwise match: "
      + LABEL]),
    (_set("spec.preserveUnknownFields", True),
     [("spec.preserveUnknownFields: Invalid value: true: cannot set to true, set "
      "x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead")]),
    (_set("spec.conversion", {"strategy": "Webhook"}),
     [("spec.conversion.webhookClientConfig: Required value: "
      "required when strategy is set to Webhook")]),
    (_set("spec.versions.0.additionalPrinterColumns",
          [{"name": "X", "type": "str", "jsonPath": ".a"}]),
     [('spec.versions[0].additionalPrinterColumns[0].type: Invalid value: "str": must be one of '
      "boolean,date,integer,number,string")]),
    (_set("spec.versions.0.subresources", {"scale": {"specReplicasPath": ".status.r",
                                                     "statusReplicasPath": ".status.r"}}),
     [('spec.versions[0].subresources.scale.specReplicasPath: Invalid value: ".status.r": '
      "should be a json path under .spec")]),
])
def test_validate_crd_on_create(mutate: Callable[[dict[str, Any]], None],
                                expected: list[str]) -> None:
    crd = make_crd()
    mutate(crd)
    assert [c.message for c in validate_crd(crd, None)] == expected


@pytest.mark.parametrize(("group", "expected"), [
    ("", ["spec.group: Required value"]),
    ("example", ['spec.group: Invalid value: "example": should be a domain with at least one dot']),
    ("Ex.com", [('spec.group: Invalid value: "Ex.com": '
                 "a lowercase RFC 1123 subdomain must consist of "
                "lower case alphanumeric characters, '-' or '.', and must start and end with an "
                "alphanumeric character (e.g. 'example.com', regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")]),
])
def test_validate_crd_group(group: str, expected: list[str]) -> None:
    crd = make_crd(group=group)
    assert [c.message for c in validate_crd(crd, None)] == expected


def test_validate_crd_duplicate_version_names() -> None:
    crd = make_crd(versions=("v1", "v1"), storage="none")
    crd["spec"]["versions"][0]["storage"] = True
    assert [c.detail for c in validate_crd(crd, None)] == ["must contain unique version names"]


def test_update_may_not_drop_a_stored_version() -> None:
    old = make_crd(versions=("v1alpha1", "v1"), storage="v1alpha1")
    old["status"] = crd_status(old, NOW)
    new = make_crd(versions=("v1",), storage="v1")
    new["status"] = old["status"]
    assert [c.message for c in validate_crd(new, old)] == [
        'status.storedVersions[0]: Invalid value: "v1alpha1": must appear in spec.versions']


def test_update_keeps_immutable_fields() -> None:
    old = make_crd()
    old["status"] = crd_status(old, NOW)
    new = make_crd()
    new["spec"]["scope"] = "Namespaced"
    new["spec"]["names"]["kind"] = "Other"
    new["spec"]["names"]["listKind"] = "OtherList"
    assert [c.message for c in validate_crd(new, old)] == [
        'spec.scope: Invalid value: "Namespaced": field is immutable',
        'spec.names.kind: Invalid value: "Other": field is immutable']


# ------------------------------------------------------------------ structural schemas

PATH = "spec.versions[0].schema.openAPIV3Schema"


@pytest.mark.parametrize(("schema", "expected"), [
    (SCHEMA, []),
    ({"type": "object", "properties": {"spec": {"properties": {}}}},
     [(f"{PATH}.properties[spec].type: Required value: "
      "must not be empty for specified object fields")]),
    ({"type": "string"}, [f'{PATH}.type: Invalid value: "string": must be object at the root']),
    ({"properties": {}}, [f"{PATH}.type: Required value: must not be empty at the root"]),
    ({"type": "object", "properties": {"l": {"type": "array"}}},
     [f"{PATH}.properties[l].items: Required value: must be specified"]),
    ({"type": "object", "properties": {"s": {"type": "thing"}}},
     [(f'{PATH}.properties[s].type: Unsupported value: "thing": supported values: "array", '
      '"boolean", "integer", "number", "object", "string"')]),
    ({"type": "object", "properties": {"s": {"type": "object",
                                             "properties": {"a": {"type": "string"}},
                                             "additionalProperties": {"type": "string"}}}},
     [(f"{PATH}.properties[s].additionalProperties: Forbidden: additionalProperties and properties "
      "are mutual exclusive")]),
    ({"type": "object", "properties": {"s": {"type": "object", "anyOf": [
        {"type": "object", "description": "d"}]}}},
     [f"{PATH}.properties[s].anyOf[0].description: Forbidden: must be empty to be structural",
      f"{PATH}.properties[s].anyOf[0].type: Forbidden: must be empty to be structural"]),
    ({"type": "object", "properties": {"p": {"x-kubernetes-int-or-string": True, "anyOf": [
        {"type": "integer"}, {"type": "string"}]}}}, []),
    ({"type": "object", "properties": {"metadata": {"type": "object", "properties": {
        "labels": {"type": "object"}}}}},
     [(f"{PATH}.properties[metadata]: Forbidden: must not specify anything other than name and "
      "generateName, but metadata is implicitly specified")]),
    ({"type": "object", "properties": {"t": {"type": "object",
                                             "x-kubernetes-embedded-resource": True}}},
     [(f"{PATH}.properties[t].properties: Required value: must not be empty if "
      "x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields")]),
    ({"type": "object", "properties": {"s": {"type": "object", "x-kubernetes-validations": [
        {"rule": "self.a > 0"}]}}}, []),
])
def test_schema_errors(schema: dict[str, Any], expected: list[str]) -> None:
    assert [c.message for c in schema_errors(schema, PATH)] == expected


# ------------------------------------------------------------------------------- status

def test_crd_status_of_a_new_crd() -> None:
    assert crd_status(make_crd(), NOW) == {
        "acceptedNames": {"plural": "providers", "singular": "provider", "shortNames": ["prov"],
                          "kind": "Provider", "listKind": "ProviderList",
                          "categories": ["crossplane"]},
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "lastTransitionTime": NOW,
             "reason": "NoConflicts", "message": "no conflicts found"},
            {"type": "Established", "status": "True", "lastTransitionTime": NOW,
             "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"}],
        "storedVersions": ["v1"]}


def test_crd_status_keeps_transition_times_and_adds_stored_versions_in_order() -> None:
    crd = make_crd(versions=("v1alpha1", "v1"), storage="v1alpha1")
    crd["status"] = crd_status(crd, NOW)
    crd["spec"]["versions"][0]["storage"], crd["spec"]["versions"][1]["storage"] = False, True
    status = crd_status(crd, LATER)
    assert ([c["lastTransitionTime"] for c in status["conditions"]], status["storedVersions"]) == (
        [NOW, NOW], ["v1alpha1", "v1"])


def test_crd_status_when_names_conflict() -> None:
    other = make_crd()
    other["metadata"]["name"] = "others.pkg.crossplane.io"
    status = crd_status(make_crd(), NOW, others=[other])
    assert ([(c["status"], c["reason"], c["message"]) for c in status["conditions"]],
            status["acceptedNames"]) == (
        [("False", "ListKindConflict", '"ProviderList" is already in use'),
         ("False", "NotAccepted", "not all names are accepted")], {})


# -------------------------------------------------------------------------------- names

def _other(**names: Any) -> dict[str, Any]:
    crd = make_crd()
    crd["metadata"]["name"] = "others.pkg.crossplane.io"
    crd["spec"]["names"] = {"plural": "others", "singular": "other", "kind": "Other",
                            "listKind": "OtherList", **names}
    return crd


@pytest.mark.parametrize(("other", "expected"), [
    (_other(), None),
    (_other(plural="providers"), ("PluralConflict", '"providers" is already in use')),
    (_other(shortNames=["prov"]), ("ShortNamesConflict", '"prov" is already in use')),
    (_other(singular="provider"), ("SingularConflict", '"provider" is already in use')),
    (_other(listKind="ProviderList"), ("ListKindConflict", '"ProviderList" is already in use')),
    ({**_other(plural="providers"),
      "spec": {**_other(plural="providers")["spec"], "group": "x.io"}}, None),
    (make_crd(), None),
])
def test_conflict(other: dict[str, Any], expected: tuple[str, str] | None) -> None:
    crd = make_crd()
    assert (conflict(crd, [other]), names_conflict(crd, [other])) == (
        expected, expected[1] if expected else None)


def test_names_already_accepted_do_not_conflict() -> None:
    crd = make_crd()
    crd["status"] = crd_status(crd, NOW)
    assert names_conflict(crd, [_other(plural="providers")]) is None


# ------------------------------------------------------------------------ resource types

def test_resource_types_one_per_served_version() -> None:
    crd = make_crd(versions=("v1alpha1", "v1beta1", "v1"))
    crd["spec"]["versions"][1]["served"] = False
    assert [(t.version, t.storage) for t in resource_types(crd)] == [
        ("v1alpha1", False), ("v1", True)]


def test_resource_type_fields() -> None:
    crd = make_crd()
    columns = [{"name": "Healthy", "type": "string", "jsonPath": ".status.h"}]
    crd["spec"]["scope"] = "Namespaced"
    crd["spec"]["versions"][0].update(subresources={"status": {}, "scale": {}},
                                      additionalPrinterColumns=columns)
    (rt,) = resource_types(crd)
    assert (rt.group, rt.kind, rt.plural, rt.singular, rt.namespaced, rt.short_names,
            rt.categories, rt.subresources, rt.printer_columns, rt.schema, rt.crd_name) == (
        "pkg.crossplane.io", "Provider", "providers", "provider", True, ("prov",),
        ("crossplane",), ("status", "scale"), tuple(columns), SCHEMA, "providers.pkg.crossplane.io")


def test_resource_type_defaults_to_an_age_column_and_no_subresources() -> None:
    (rt,) = resource_types(make_crd())
    assert (rt.printer_columns, rt.subresources, rt.has_status) == (DEFAULT_COLUMNS, (), False)


def test_resource_type_uses_accepted_names() -> None:
    crd = make_crd()
    crd["status"] = {"acceptedNames": {"plural": "providers", "kind": "Provider", "shortNames": []}}
    crd["spec"]["names"]["shortNames"] = ["p2"]
    (rt,) = resource_types(crd)
    assert rt.short_names == ()


def test_crd_without_versions() -> None:
    crd = make_crd()
    del crd["spec"]["versions"]
    assert [c.message for c in validate_crd(crd, None)] == [
        "spec.versions: Invalid value: []apiextensions.CustomResourceDefinitionVersion(nil): "
        "must have exactly one version marked as storage version"]


def test_cluster_serves_exactly_the_versions_each_crd_lists(tmp_path: Any) -> None:
    from lockwright.devcluster.admission import WriteOptions
    from lockwright.devcluster.cluster import Cluster

    cluster = Cluster(str(tmp_path))
    crds = cluster.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    opts = WriteOptions(field_manager="test")
    first = copy.deepcopy(cluster.create(crds, None, make_crd(("v1", "v2"),
                                                              group="a.example.org"), opts))
    cluster.create(crds, None, make_crd(("v1",), group="b.example.org"), opts)
    assert cluster.find("a.example.org", "v2", "providers") is not None
    first["spec"]["versions"] = first["spec"]["versions"][:1]
    cluster.update(crds, None, first["metadata"]["name"], first, opts)
    assert cluster.find("a.example.org", "v2", "providers") is None
    assert cluster.find("a.example.org", "v1", "providers") is not None
    assert cluster.find("b.example.org", "v1", "providers") is not None
