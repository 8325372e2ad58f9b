"""Metadata-only reads: ``as=PartialObjectMetadata[List]`` through the official client.

Matrix: list (kind, apiVersion, items of metadata only, pages, empty list, v1beta1, a
custom resource); a single GET; ADDED/MODIFIED/DELETED and BOOKMARK watch events with the
resourceVersions a full watch reports; 406 NotAcceptable where kube-apiserver answers it
(a list kind for one object and back, a watch as a list kind, no acceptable media range);
the first supported alternative wins; Table and kubectl unchanged.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any

import pytest
from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines

from tests.fixtures.devcluster import DevCluster
from tests.helpers import unique, wait_for

Obj = dict[str, Any]
META_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
META_ONE = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
TABLE = ("application/json;as=Table;v=v1;g=meta.k8s.io,"
         "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")
SUPPORTED = ("only the following media types are accepted: application/json, "
             "application/yaml, application/vnd.kubernetes.protobuf")
SECRET_VALUE = "aHVudGVyMg=="  # what must never appear in a metadata-only answer


def request(api: client.ApiClient, path: str, accept: str, timeout: float = 10,
            **query: str) -> Any:
    """GET through the official ApiClient (its auth and pool); the unread urllib3 response."""
    params = list(query.items())
    headers = {"Accept": accept}
    if not hasattr(api, "param_serialize"):  # kubernetes < 36: one call_api does it all
        return api.call_api(path, "GET", query_params=params, header_params=headers,
                            auth_settings=["BearerToken"], _preload_content=False,
                            _return_http_data_only=True, _request_timeout=timeout)
    req = api.param_serialize("GET", path, query_params=params, header_params=headers,
                              auth_settings=["BearerToken"])
    return api.call_api(*req, _request_timeout=timeout).response


def get(api: client.ApiClient, path: str, accept: str, **query: str) -> tuple[int, Obj]:
    """Status code and JSON body of one GET."""
    resp = request(api, path, accept, **query)
    try:
        return resp.status, json.loads(resp.data)
    finally:
        resp.release_conn()


def watch_events(api: client.ApiClient, path: str, accept: str, count: int,
                 **query: str) -> list[Obj]:
    """The first ``count`` events of a watch (fewer if the server ends the stream)."""
    resp = request(api, path, accept, timeout=15, watch="true", timeoutSeconds="10", **query)
    try:
        assert resp.status == 200, resp.data
        events: list[Obj] = []
        for line in iter_resp_lines(resp):
            if line.strip():
                events.append(json.loads(line))
            if len(events) >= count:
                break
        return events
    finally:
        resp.close()  # a stream left half-read must not go back to the pool
        resp.release_conn()


def secret(name: str, **labels: str) -> Obj:
    return {"metadata": {"name": name, "labels": labels, "annotations": {"note": name}},
            "data": {"token": SECRET_VALUE}}


@pytest.fixture
def secrets(core: client.CoreV1Api, namespace: str) -> str:
    """Two Secrets with data in a fresh namespace; returns the collection path."""
    for name in ("one", "two"):
        core.create_namespaced_secret(namespace, secret(name, app="demo"))
    return f"/api/v1/namespaces/{namespace}/secrets"


def assert_metadata_only(obj: Obj, api_version: str = "meta.k8s.io/v1") -> None:
    assert obj["kind"] == "PartialObjectMetadata" and obj["apiVersion"] == api_version
    assert set(obj) == {"kind", "apiVersion", "metadata"}, obj
    assert SECRET_VALUE not in json.dumps(obj)


# --- list and get -------------------------------------------------------------------

def test_list_secrets_as_metadata(kube_client: client.ApiClient, core: client.CoreV1Api,
                                  namespace: str, secrets: str) -> None:
    status, body = get(kube_client, secrets, META_LIST)
    full = core.list_namespaced_secret(namespace)
    assert status == 200
    assert (body["kind"], body["apiVersion"]) == ("PartialObjectMetadataList", "meta.k8s.io/v1")
    assert body["metadata"]["resourceVersion"] == full.metadata.resource_version
    for item in body["items"]:
        assert_metadata_only(item)
    assert [(i["metadata"]["name"], i["metadata"]["resourceVersion"], i["metadata"]["uid"])
            for i in body["items"]] == [(s.metadata.name, s.metadata.resource_version,
                                         s.metadata.uid) for s in full.items]
    assert body["items"][0]["metadata"]["labels"] == {"app": "demo"}
    assert body["items"][0]["metadata"]["annotations"] == {"note": "one"}


def test_metadata_list_pages_and_selectors(kube_client: client.ApiClient,
                                           secrets: str) -> None:
    _, first = get(kube_client, secrets, META_LIST, limit="1", labelSelector="app=demo")
    assert [i["metadata"]["name"] for i in first["items"]] == ["one"]
    assert first["metadata"]["remainingItemCount"] == 1 and first["metadata"]["continue"]
    _, rest = get(kube_client, secrets, META_LIST, limit="1",
                  **{"continue": first["metadata"]["continue"]})
    assert [i["metadata"]["name"] for i in rest["items"]] == ["two"]
    assert rest["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


def test_empty_metadata_list_has_null_items(kube_client: client.ApiClient,
                                            namespace: str) -> None:
    """kube builds the list from a nil slice: encoding/json writes ``"items": null``."""
    status, body = get(kube_client, f"/api/v1/namespaces/{namespace}/secrets", META_LIST)
    assert status == 200 and body["items"] is None and body["metadata"]["resourceVersion"]


def test_v1beta1_metadata_list(kube_client: client.ApiClient, secrets: str) -> None:
    _, body = get(kube_client, secrets, META_LIST.replace("v=v1", "v=v1beta1"))
    assert (body["kind"], body["apiVersion"]) == ("PartialObjectMetadataList",
                                                  "meta.k8s.io/v1beta1")
    for item in body["items"]:
        assert_metadata_only(item, "meta.k8s.io/v1beta1")


def test_get_one_secret_as_metadata(kube_client: client.ApiClient, core: client.CoreV1Api,
                                    namespace: str, secrets: str) -> None:
    status, body = get(kube_client, f"{secrets}/one", META_ONE)
    assert status == 200
    assert_metadata_only(body)
    full = core.read_namespaced_secret("one", namespace)
    assert body["metadata"]["resourceVersion"] == full.metadata.resource_version
    assert body["metadata"]["namespace"] == namespace and body["metadata"]["labels"]


def test_custom_resources_as_metadata(kube_client: client.ApiClient) -> None:
    group = f"{unique('g')}.example.org"
    client.ApiextensionsV1Api(kube_client).create_custom_resource_definition({
        "metadata": {"name": f"gizmos.{group}"},
        "spec": {"group": group, "scope": "Cluster",
                 "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                     "openAPIV3Schema": {"type": "object", "properties": {"spec": {
                         "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}]}})
    custom = client.CustomObjectsApi(kube_client)
    body = {"apiVersion": f"{group}/v1", "kind": "Gizmo", "metadata": {"name": "g1"},
            "spec": {"token": SECRET_VALUE}}
    wait_for(lambda: custom.create_cluster_custom_object(group, "v1", "gizmos", body),
             what="the custom resource to be served")
    path = f"/apis/{group}/v1/gizmos"
    _, listed = get(kube_client, path, META_LIST)
    assert [i["metadata"]["name"] for i in listed["items"]] == ["g1"]
    assert_metadata_only(listed["items"][0])
    status, refused = get(kube_client, path, META_ONE)
    assert (status, refused["message"]) == (406, ("you requested PartialObjectMetadata, but the "
                                            "requested object is a list "
                                            "(*unstructured.UnstructuredList)"))


# --- 406 and negotiation ------------------------------------------------------------

def test_list_kind_for_one_object_and_back_is_406(kube_client: client.ApiClient,
                                                  secrets: str) -> None:
    status, body = get(kube_client, f"{secrets}/one", META_LIST)
    assert (status, body["reason"], body["message"]) == (
        406, "NotAcceptable", ("you requested PartialObjectMetadataList, but the requested "
                              "object is not a list (*core.Secret)"))
    status, body = get(kube_client, secrets, META_ONE)
    assert (status, body["message"]) == (406, ("you requested PartialObjectMetadata, but the "
                                              "requested object is a list (*core.SecretList)"))


@pytest.mark.parametrize("accept", [
    "application/json;as=Foo;g=meta.k8s.io;v=v1",
    "application/json;as=PartialObjectMetadataList;g=example.org;v=v1",
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v2",
    "application/json;as=PartialObjectMetadataList",
    "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1",
    "text/html",
])
def test_nothing_acceptable_is_406(kube_client: client.ApiClient, secrets: str,
                                   accept: str) -> None:
    for query in ({}, {"watch": "true"}):
        status, body = get(kube_client, secrets, accept, **query)
        assert (status, body["reason"], body["message"]) == (406, "NotAcceptable", SUPPORTED)


def test_missing_object_is_404_before_kind_mismatch(kube_client: client.ApiClient,
                                                    secrets: str) -> None:
    status, body = get(kube_client, f"{secrets}/absent", META_LIST)
    assert (status, body["reason"]) == (404, "NotFound")


@pytest.mark.parametrize("accept,kind", [
    (f"application/json;as=Foo;g=meta.k8s.io;v=v1,{META_LIST}", "PartialObjectMetadataList"),
    ("application/json;as=Foo;g=meta.k8s.io;v=v1,application/json", "SecretList"),
    (f"{META_LIST},{TABLE}", "PartialObjectMetadataList"),
    (f"{TABLE},{META_LIST}", "Table"),
    (f"application/json,{META_LIST}", "SecretList"),
    (f"{META_LIST};q=0.5,application/json", "SecretList"),
    ((f"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
     f"{META_LIST},application/json"), "PartialObjectMetadataList"),  # client-go's metadata client
])
def test_first_supported_alternative_wins(kube_client: client.ApiClient, secrets: str,
                                          accept: str, kind: str) -> None:
    status, body = get(kube_client, secrets, accept)
    assert (status, body["kind"]) == (200, kind)


# --- watch --------------------------------------------------------------------------

def test_watch_as_metadata_matches_a_full_watch(kube_client: client.ApiClient,
                                                core: client.CoreV1Api, namespace: str) -> None:
    rv = core.list_namespaced_secret(namespace).metadata.resource_version
    created = core.create_namespaced_secret(namespace, secret("w"))
    patched = core.patch_namespaced_secret("w", namespace, {"data": {"more": SECRET_VALUE}})
    core.delete_namespaced_secret("w", namespace)
    path = f"/api/v1/namespaces/{namespace}/secrets"
    meta = watch_events(kube_client, path, META_ONE, 3, resourceVersion=rv)
    full = watch_events(kube_client, path, "application/json", 3, resourceVersion=rv)
    seen = [(e["type"], e["object"]["metadata"]["resourceVersion"]) for e in meta]
    assert seen == [(e["type"], e["object"]["metadata"]["resourceVersion"]) for e in full]
    assert [t for t, _ in seen] == ["ADDED", "MODIFIED", "DELETED"]
    assert [v for _, v in seen[:2]] == [created.metadata.resource_version,
                                         patched.metadata.resource_version]
    for event in meta:
        assert_metadata_only(event["object"])
        assert event["object"]["metadata"]["name"] == "w"
    assert all("data" in e["object"] for e in full)


def test_live_metadata_watch(kube_client: client.ApiClient, core: client.CoreV1Api,
                             namespace: str) -> None:
    """A watch without a version first lists (ADDED) and then follows live changes."""
    core.create_namespaced_secret(namespace, secret("before"))
    resp = request(kube_client, f"/api/v1/namespaces/{namespace}/secrets", META_ONE,
                   timeout=15, watch="true", timeoutSeconds="10")
    try:
        lines = iter_resp_lines(resp)
        first = json.loads(next(lines))
        core.create_namespaced_secret(namespace, secret("after"))
        second = json.loads(next(lines))
    finally:
        resp.close()
        resp.release_conn()
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in (first, second)] == [
        ("ADDED", "before"), ("ADDED", "after")]
    assert_metadata_only(first["object"])
    assert_metadata_only(second["object"])


def test_metadata_watch_bookmarks(kube_client: client.ApiClient, core: client.CoreV1Api,
                                  namespace: str) -> None:
    rv = core.list_namespaced_secret(namespace).metadata.resource_version
    [event] = watch_events(kube_client, f"/api/v1/namespaces/{namespace}/secrets", META_ONE,
                           1, resourceVersion=rv, allowWatchBookmarks="true")
    assert event["type"] == "BOOKMARK"
    assert_metadata_only(event["object"])
    assert int(event["object"]["metadata"]["resourceVersion"]) >= int(rv)


def test_watch_as_list_kind_ends_at_the_first_event(kube_client: client.ApiClient,
                                                    core: client.CoreV1Api,
                                                    namespace: str) -> None:
    """kube cannot encode an event as a list: the stream closes; no whole object goes out."""
    rv = core.list_namespaced_secret(namespace).metadata.resource_version
    core.create_namespaced_secret(namespace, secret("gone"))
    events = watch_events(kube_client, f"/api/v1/namespaces/{namespace}/secrets", META_LIST,
                          5, resourceVersion=rv)
    assert events == []


# --- unchanged ----------------------------------------------------------------------

def test_table_still_served(kube_client: client.ApiClient, secrets: str) -> None:
    _, listed = get(kube_client, secrets, TABLE)
    assert (listed["kind"], listed["apiVersion"]) == ("Table", "meta.k8s.io/v1")
    assert [c["name"] for c in listed["columnDefinitions"]] == ["Name", "Type", "Data", "Age"]
    assert [r["cells"][:3] for r in listed["rows"]] == [["one", "Opaque", 1],
                                                        ["two", "Opaque", 1]]
    assert_metadata_only(listed["rows"][0]["object"])
    _, one = get(kube_client, f"{secrets}/two", TABLE)
    assert one["kind"] == "Table" and one["rows"][0]["cells"][0] == "two"


@pytest.mark.kubectl
@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_get_secrets(devcluster: DevCluster, namespace: str, secrets: str,
                             tmp_path: Any) -> None:
    env = {**os.environ, "KUBECONFIG": devcluster.kubeconfig, "HOME": str(tmp_path)}

    def kubectl(*args: str) -> str:
        return subprocess.run(["kubectl", *args, "-n", namespace], capture_output=True,
                              text=True, env=env, timeout=60, check=True).stdout

    assert kubectl("get", "secrets", "-o", "name").split() == ["secret/one", "secret/two"]
    assert kubectl("get", "secrets").split()[:4] == ["NAME", "TYPE", "DATA", "AGE"]
