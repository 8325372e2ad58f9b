"""CustomResourceDefinitions served at once, with kube-apiserver's rules.

Matrix: create → served (cluster and namespaced scope) with status conditions and
storedVersions; schema validation (types, required, enum, pattern, min/max) as 422 with
causes; defaults and pruning (and preserve-unknown); fieldValidation=Strict; the status
subresource and generation; removing a stored version refused; deleting a CRD deletes its
objects; patch types on custom resources (strategic merge refused with 415).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.fixtures.devcluster import DevCluster
from tests.helpers import unique, wait_for

Obj = dict[str, Any]


def crd_body(group: str, plural: str, kind: str, scope: str = "Cluster",
             versions: tuple[str, ...] = ("v1",)) -> Obj:
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "required": ["size"], "properties": {
            "size": {"type": "integer", "minimum": 1, "maximum": 10},
            "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
            "name": {"type": "string", "pattern": "^[a-z]+$"},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}},
        "status": {"type": "object", "properties": {
            "conditions": {"type": "array", "items": {
                "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": scope,
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind,
                               "listKind": f"{kind}List"},
                     "versions": [{"name": v, "served": True, "storage": i == 0,
                                   "schema": {"openAPIV3Schema": schema},
                                   "subresources": {"status": {}},
                                   "additionalPrinterColumns": [
                                       {"name": "Size", "type": "integer",
                                        "jsonPath": ".spec.size"}]}
                                  for i, v in enumerate(versions)]}}


@pytest.fixture
def ext(kube_client: client.ApiClient) -> client.ApiextensionsV1Api:
    return client.ApiextensionsV1Api(kube_client)


@pytest.fixture
def custom(kube_client: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(kube_client)


@pytest.fixture
def widget(ext: client.ApiextensionsV1Api) -> tuple[str, str]:
    """A fresh cluster-scoped CRD; returns (group, plural)."""
    group, plural = f"{unique('g')}.example.org", "widgets"
    ext.create_custom_resource_definition(crd_body(group, plural, "Widget"))
    return group, plural


def raw(dc: DevCluster, method: str, path: str, body: Any, ctype: str = "application/json"
        ) -> tuple[int, str]:
    """One request straight to devcluster, for what the typed client cannot send."""
    req = urllib.request.Request(dc.url + path, method=method, data=json.dumps(body).encode(),
                                 headers={"Content-Type": ctype})
    try:
        with urllib.request.urlopen(req) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _obj(group: str, name: str, spec: Obj) -> Obj:
    return {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": name},
            "spec": spec}


def test_crd_established_and_served(ext: client.ApiextensionsV1Api,
                                    custom: client.CustomObjectsApi,
                                    widget: tuple[str, str]) -> None:
    group, plural = widget
    crd = ext.read_custom_resource_definition(f"{plural}.{group}")
    conds = {c.type: c.status for c in crd.status.conditions}
    assert conds == {"NamesAccepted": "True", "Established": "True"}
    assert crd.status.stored_versions == ["v1"]
    made = custom.create_cluster_custom_object(group, "v1", plural, _obj(group, "w", {"size": 2}))
    assert made["metadata"]["generation"] == 1
    assert custom.get_cluster_custom_object(group, "v1", plural, "w")["spec"]["size"] == 2


def test_namespaced_crd(ext: client.ApiextensionsV1Api, custom: client.CustomObjectsApi) -> None:
    group = f"{unique('n')}.example.org"
    ext.create_custom_resource_definition(crd_body(group, "gadgets", "Gadget", "Namespaced"))
    body = {"apiVersion": f"{group}/v1", "kind": "Gadget", "metadata": {"name": "g"},
            "spec": {"size": 1}}
    custom.create_namespaced_custom_object(group, "v1", "default", "gadgets", body)
    listed = custom.list_namespaced_custom_object(group, "v1", "default", "gadgets")
    assert [i["metadata"]["namespace"] for i in listed["items"]] == ["default"]


@pytest.mark.parametrize("spec, field, reason", [
    ({}, "spec.size", "FieldValueRequired"),
    ({"size": "big"}, "spec.size", "FieldValueTypeInvalid"),
    ({"size": 11}, "spec.size", "FieldValueInvalid"),
    ({"size": 1, "color": "green"}, "spec.color", "FieldValueNotSupported"),
    ({"size": 1, "name": "UP"}, "spec.name", "FieldValueInvalid"),
])
def test_schema_validation(custom: client.CustomObjectsApi, widget: tuple[str, str],
                           spec: Obj, field: str, reason: str) -> None:
    group, plural = widget
    with pytest.raises(ApiException) as err:
        custom.create_cluster_custom_object(group, "v1", plural, _obj(group, unique("v"), spec))
    body = json.loads(err.value.body)
    assert err.value.status == 422 and body["reason"] == "Invalid"
    assert (body["details"]["causes"][0]["field"], body["details"]["causes"][0]["reason"]) == (
        field, reason)
    assert body["message"].startswith(f'Widget.{group} "')


def test_defaults_and_pruning(custom: client.CustomObjectsApi, widget: tuple[str, str]) -> None:
    group, plural = widget
    made = custom.create_cluster_custom_object(group, "v1", plural, _obj(
        group, "d", {"size": 1, "unknown": True, "free": {"anything": {"goes": 1}}}))
    assert made["spec"] == {"size": 1, "color": "red", "free": {"anything": {"goes": 1}}}


def test_strict_field_validation(devcluster: DevCluster, widget: tuple[str, str]) -> None:
    group, plural = widget
    code, body = raw(devcluster, "POST", f"/apis/{group}/v1/{plural}?fieldValidation=Strict",
                     _obj(group, "strict", {"size": 1, "bogus": 1}))
    assert code == 400 and 'unknown field \\"spec.bogus\\"' in body


def test_status_subresource_and_generation(custom: client.CustomObjectsApi,
                                           widget: tuple[str, str]) -> None:
    group, plural = widget
    custom.create_cluster_custom_object(group, "v1", plural, _obj(group, "s", {"size": 1}))
    obj = custom.patch_cluster_custom_object_status(group, "v1", plural, "s", {
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}, "spec": {"size": 9}})
    assert obj["spec"]["size"] == 1 and obj["status"]["conditions"][0]["type"] == "Ready"
    assert obj["metadata"]["generation"] == 1
    obj = custom.patch_cluster_custom_object(group, "v1", plural, "s", {"spec": {"size": 3}})
    assert obj["metadata"]["generation"] == 2 and obj["status"]["conditions"]


def test_update_without_resource_version_is_invalid(custom: client.CustomObjectsApi,
                                                    widget: tuple[str, str]) -> None:
    group, plural = widget
    custom.create_cluster_custom_object(group, "v1", plural, _obj(group, "u", {"size": 1}))
    with pytest.raises(ApiException) as err:
        custom.replace_cluster_custom_object(group, "v1", plural, "u", _obj(group, "u",
                                                                            {"size": 2}))
    assert err.value.status == 422


def test_strategic_merge_refused_for_custom(devcluster: DevCluster,
                                            custom: client.CustomObjectsApi,
                                            widget: tuple[str, str]) -> None:
    group, plural = widget
    custom.create_cluster_custom_object(group, "v1", plural, _obj(group, "smp", {"size": 1}))
    code, _ = raw(devcluster, "PATCH", f"/apis/{group}/v1/{plural}/smp", {"spec": {"size": 2}},
                  "application/strategic-merge-patch+json")
    assert code == 415


def test_json_patch_on_custom(devcluster: DevCluster, custom: client.CustomObjectsApi,
                              widget: tuple[str, str]) -> None:
    group, plural = widget
    custom.create_cluster_custom_object(group, "v1", plural, _obj(group, "jp", {"size": 1}))
    code, _ = raw(devcluster, "PATCH", f"/apis/{group}/v1/{plural}/jp",
                  [{"op": "replace", "path": "/spec/size", "value": 4}],
                  "application/json-patch+json")
    assert code == 200
    assert custom.get_cluster_custom_object(group, "v1", plural, "jp")["spec"]["size"] == 4


def test_removing_stored_version_refused(ext: client.ApiextensionsV1Api) -> None:
    group = f"{unique('sv')}.example.org"
    name = f"things.{group}"
    ext.create_custom_resource_definition(crd_body(group, "things", "Thing",
                                                   versions=("v1alpha1", "v1")))
    crd = ext.read_custom_resource_definition(name).to_dict()
    body = ext.api_client.sanitize_for_serialization(ext.read_custom_resource_definition(name))
    body["spec"]["versions"] = [v for v in body["spec"]["versions"] if v["name"] == "v1"]
    body["spec"]["versions"][0]["storage"] = True
    with pytest.raises(ApiException) as err:
        ext.replace_custom_resource_definition(name, body)
    message = json.loads(err.value.body)["message"]
    assert err.value.status == 422 and crd["status"]["stored_versions"] == ["v1alpha1"]
    assert 'status.storedVersions[0]: Invalid value: "v1alpha1": must appear in spec.versions' \
        in message


def test_deleting_crd_deletes_objects(ext: client.ApiextensionsV1Api,
                                      custom: client.CustomObjectsApi,
                                      widget: tuple[str, str]) -> None:
    group, plural = widget
    custom.create_cluster_custom_object(group, "v1", plural, _obj(group, "doomed", {"size": 1}))
    ext.delete_custom_resource_definition(f"{plural}.{group}")

    def gone() -> bool:
        try:
            ext.read_custom_resource_definition(f"{plural}.{group}")
        except ApiException as exc:
            return exc.status == 404
        return False

    wait_for(gone, what="CRD deleted")
    with pytest.raises(ApiException) as err:
        custom.get_cluster_custom_object(group, "v1", plural, "doomed")
    assert err.value.status == 404
