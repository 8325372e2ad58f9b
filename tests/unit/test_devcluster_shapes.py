"""The request shapes devcluster records (lockwright.devcluster.shapes): names, namespaces
and values replaced, what chooses behaviour kept; and the session check against the
committed snapshot (tests/fidelity/recorded.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lockwright.devcluster import shapes
from tests.fidelity import recorded


@pytest.mark.parametrize(("path", "template"), [
    ("api/v1/namespaces/team-a/configmaps/cfg", "/api/v1/namespaces/{namespace}/configmaps/{name}"),
    ("api/v1/namespaces/team-a", "/api/v1/namespaces/{name}"),
    ("api/v1/namespaces/team-a/finalize", "/api/v1/namespaces/{name}/finalize"),
    ("apis/pkg.crossplane.io/v1/providers/p/status", "/apis/pkg.crossplane.io/v1/providers/{name}/status"),
    ("apis/apps/v1/watch/namespaces/ns/deployments", "/apis/apps/v1/watch/namespaces/{namespace}/deployments"),
    ("apis/served-97f730fc51.example.org/v1alpha1/things", "/apis/{group}/v1alpha1/{resource}"),
    ("apis/big-90e9ceac.example.org/v1alpha1/watch/namespaces/n/big17s/b",
     "/apis/{group}/v1alpha1/watch/namespaces/{namespace}/{resource}/{name}"),
    ("apis/r9-db09ffce.example.org/v1alpha1/gammas/g/status",
     "/apis/{group}/v1alpha1/{resource}/{name}/status"),
    ("apis/w-1.api.example.com", "/apis/{group}"),
    ("apis/cv-fidelity.example.org/v1", "/apis/{group}/v1"),
    ("openapi/v3/apis/up-9fb30b55be.activation.example.org/v1alpha1", "/openapi/v3/apis/{group}/v1alpha1"),
    ("apis/example.org.crossplane.io/v1/things", "/apis/example.org.crossplane.io/v1/things"),
    ("openapi/v3/apis/pkg.crossplane.io/v1", "/openapi/v3/apis/pkg.crossplane.io/v1"),
])
def test_paths_keep_types_and_drop_names(path: str, template: str) -> None:
    assert shapes.path_template(path.split("/")) == template


@pytest.mark.parametrize(("kind", "canonical"), [
    ("prov-392d941d40.example.org/v1alpha1 Widget", "{group}/v1alpha1 {kind}"),
    ("1d9d9af0.plans.example.org/v1 Widget", "{group}/v1 {kind}"),
    ("pkg.crossplane.io/v1 Provider", "pkg.crossplane.io/v1 Provider"),
    ("v1 Secret", "v1 Secret"),
    ("[patch]", "[patch]"),
])
def test_a_test_packages_body_kind_is_its_group_version_only(kind: str, canonical: str) -> None:
    assert shapes.fixture_kind(kind) == canonical


def test_query_keeps_behaviour_and_drops_values() -> None:
    got = shapes.query_shape({"watch": "true", "dryRun": "All", "fieldManager": "lockwright",
                              "labelSelector": "app=x,!gone,tier in (a,b)",
                              "fieldSelector": "metadata.name==p", "resourceVersion": "0",
                              "limit": "500"})
    assert got == {"watch": "true", "dryRun": "All", "fieldManager": "<set>",
                   "labelSelector": "!gone,app=,tier in", "fieldSelector": "metadata.name==",
                   "resourceVersion": "0", "limit": "<set>"}


def test_a_selectors_terms_in_any_order_are_one_shape() -> None:
    """kubectl describe orders its events' field selector as a Go map iterates: every
    order is the same request."""
    orders = ["involvedObject.name=a,involvedObject.uid=u,involvedObject.kind=K",
              "involvedObject.kind=K,involvedObject.name=a,involvedObject.uid=u"]
    assert len({shapes.query_shape({"fieldSelector": o})["fieldSelector"]
                for o in orders}) == 1


def test_body_kind_of_json_yaml_patch_and_protobuf() -> None:
    assert shapes.body_kind(b'{"apiVersion":"v1","kind":"Secret","data":{"k":"dg=="}}',
                            "application/json") == "v1 Secret"
    assert shapes.body_kind(b"apiVersion: apps/v1\nkind: Deployment\n",
                            "application/apply-patch+yaml") == "apps/v1 Deployment"
    assert shapes.body_kind(b'[{"op":"add"}]', "application/json-patch+json") == "[patch]"
    # k8s\0, then runtime.Unknown{typeMeta{apiVersion "v1", kind "Namespace"}}
    envelope = b"k8s\x00" + b"\x0a\x0f" + b"\x0a\x02v1" + b"\x12\x09Namespace"
    assert shapes.body_kind(envelope, "application/vnd.kubernetes.protobuf") == "v1 Namespace"


def test_each_shape_is_written_once_per_process(tmp_path: Path) -> None:
    recorder = shapes.Recorder(str(tmp_path / "s.jsonl"))
    shape = {"method": "GET", "path": "/api", "query": {}}
    recorder.record(shape)
    recorder.record(dict(shape))
    assert [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()] == [
        shape]


def test_a_shape_missing_from_the_snapshot_is_added_or_fails_the_session(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot = tmp_path / "recorded.jsonl"
    known = {"method": "GET", "path": "/api", "query": {}}
    recorded.write(snapshot, [known])
    (tmp_path / "shapes.jsonl").write_text(json.dumps(known) + "\n" + json.dumps(
        {"method": "GET", "path": "/apis", "query": {}}) + "\n")
    monkeypatch.setattr(recorded, "SNAPSHOT", snapshot)
    monkeypatch.setenv(recorded.ENV_DIR, str(tmp_path))
    monkeypatch.setenv(recorded.ENV_STRICT, "1")
    fails, lines = recorded.finish_session()
    assert fails and '"/apis"' in lines[1] and len(recorded.load(snapshot)) == 1
    monkeypatch.delenv(recorded.ENV_STRICT)
    fails, lines = recorded.finish_session()
    assert not fails and "added" in lines[0]
    assert len(recorded.load(snapshot)) == 2
    assert recorded.finish_session() == (False, [])


def test_the_committed_snapshot_is_canonical() -> None:
    lines = recorded.SNAPSHOT.read_text().splitlines()
    assert lines == sorted(set(lines)) and len(lines) > 50
    assert all("{unique}" in line or not shapes.UNIQUE.search(line) for line in lines)
    assert not any(".example.org" in line for line in lines), "a test package's group"
