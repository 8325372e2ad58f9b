"""Server-side printing: Table responses as kube-apiserver renders them, and JSONPath."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from lockwright.devcluster import jsonpath, table
from lockwright.devcluster.builtins import BUILTINS
from lockwright.devcluster.types import ResourceType

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
CREATED = (NOW - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
KUBECTL_GET = ("application/json;as=Table;v=v1;g=meta.k8s.io,"
               "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")

Obj = dict[str, Any]


def builtin(group: str, kind: str) -> ResourceType:
    return next(t for t in BUILTINS if (t.group, t.kind) == (group, kind))


def meta(name: str = "x", **extra: Any) -> Obj:
    return {"name": name, "namespace": "default", "creationTimestamp": CREATED, **extra}


def cells(rtype: ResourceType, obj: Obj) -> list[Any]:
    return list(table.to_table(rtype, [obj], now=NOW)["rows"][0]["cells"])


def headers(rtype: ResourceType, wide: bool = False) -> list[str]:
    cols = table.to_table(rtype, [], now=NOW)["columnDefinitions"]
    return [c["name"].upper() for c in cols if wide or c["priority"] == 0]


WIDGET = ResourceType(
    "example.org", "v1", "Widget", "widgets", "widget", True, subresources=("status",),
    crd_name="widgets.example.org",
    printer_columns=(
        {"name": "Ready", "type": "string",
         "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
        {"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio"},
        {"name": "On", "type": "boolean", "jsonPath": ".spec.on"},
        {"name": "Tags", "type": "string", "jsonPath": ".spec.tags"},
        {"name": "Names", "type": "string", "jsonPath": ".spec.items[*].name", "priority": 1},
        {"name": "Seen", "type": "date", "jsonPath": ".status.seen"},
    ))


@pytest.mark.parametrize("accept,expected", [
    (KUBECTL_GET, ("Table", "meta.k8s.io/v1")),
    ("application/json;as=Table;v=v1beta1;g=meta.k8s.io", ("Table", "meta.k8s.io/v1beta1")),
    ("application/json", None),
    ("", None),
    ("application/json, application/json;as=Table;v=v1;g=meta.k8s.io", None),
    ("application/json;as=Table;v=v1;g=meta.k8s.io;q=0.5, application/yaml;q=0.9", None),
    (("application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,"
     "application/json;as=Table;v=v1;g=meta.k8s.io"), ("Table", "meta.k8s.io/v1")),
    ("application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
     ("PartialObjectMetadataList", "meta.k8s.io/v1")),
])
def test_negotiate(accept: str, expected: tuple[str, str] | None) -> None:
    assert table.negotiate(accept) == expected
    assert table.wants_table(accept) == (expected is not None and expected[0] == "Table")


def test_custom_resource_columns_and_cells() -> None:
    obj = {"metadata": meta("w1"), "spec": {
        "size": 3, "ratio": 1.5, "on": True, "tags": ["a", "b"],
        "items": [{"name": "first"}, {"name": "second"}]},
        "status": {"conditions": [{"type": "Synced", "status": "False"},
                                  {"type": "Ready", "status": "True"}],
                   "seen": (NOW - timedelta(hours=3, minutes=7)).isoformat()}}
    doc = table.to_table(WIDGET, [obj], now=NOW, list_meta={"resourceVersion": "7"})
    assert doc["kind"] == "Table" and doc["apiVersion"] == "meta.k8s.io/v1"
    assert doc["metadata"] == {"resourceVersion": "7"}
    first = doc["columnDefinitions"][0]
    assert (first["name"], first["type"], first["format"]) == ("Name", "string", "name")
    assert doc["columnDefinitions"][6]["priority"] == 1
    assert doc["rows"][0]["cells"] == ["w1", "True", 3, 1.5, True, '["a","b"]', "first",
                                       "3h7m"]


def test_custom_resource_missing_values_are_null() -> None:
    assert cells(WIDGET, {"metadata": meta("w2")}) == ["w2"] + [None] * 7


def test_custom_resource_without_columns_gets_age() -> None:
    plain = ResourceType("example.org", "v1", "Thing", "things", "thing", True,
                         crd_name="things.example.org")
    assert headers(plain) == ["NAME", "AGE"]
    assert cells(plain, {"metadata": meta("t")}) == ["t", "5m"]


@pytest.mark.parametrize("include,expected", [
    ("Metadata", {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                  "metadata": meta("w3")}),
    ("None", None),
    ("Object", {"metadata": meta("w3"), "spec": {}}),
])
def test_include_object(include: str, expected: Obj | None) -> None:
    doc = table.to_table(WIDGET, [{"metadata": meta("w3"), "spec": {}}],
                         include_object=include, now=NOW)
    assert doc["rows"][0]["object"] == expected


def test_single_object_table_carries_its_resource_version() -> None:
    doc = table.to_table(WIDGET, [{"metadata": meta("w4", resourceVersion="42")}], now=NOW)
    assert doc["metadata"] == {"resourceVersion": "42"}


def test_no_headers_for_later_watch_events() -> None:
    assert table.to_table(WIDGET, [], no_headers=True)["columnDefinitions"] == []


def test_deployment_reads_like_kubectl() -> None:
    rtype = builtin("apps", "Deployment")
    assert headers(rtype) == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert headers(rtype, wide=True)[5:] == ["CONTAINERS", "IMAGES", "SELECTOR"]
    obj = {"metadata": meta("web"), "spec": {
        "replicas": 2, "selector": {"matchLabels": {"app": "web"}},
        "template": {"spec": {"containers": [{"name": "a", "image": "nginx"},
                                             {"name": "b", "image": "busybox"}]}}},
        "status": {"readyReplicas": 1, "updatedReplicas": 2, "availableReplicas": 1}}
    assert cells(rtype, obj) == ["web", "1/2", 2, 1, "5m", "a,b", "nginx,busybox", "app=web"]
    assert cells(rtype, {"metadata": meta("new"), "spec": {}})[:4] == ["new", "0/1", 0, 0]


def test_service_ports_and_ips() -> None:
    rtype = builtin("", "Service")
    assert headers(rtype) == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    obj = {"metadata": meta("svc"), "spec": {
        "type": "NodePort", "clusterIP": "10.0.0.7", "clusterIPs": ["10.0.0.7"],
        "selector": {"b": "2", "a": "1"},
        "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30080}, {"port": 53,
                                                                       "protocol": "UDP"}]}}
    assert cells(rtype, obj) == ["svc", "NodePort", "10.0.0.7", "<none>",
                                 "80:30080/TCP,53/UDP", "5m", "a=1,b=2"]
    lb = {"metadata": meta("lb"), "spec": {"type": "LoadBalancer"}}
    assert cells(rtype, lb)[2:5] == ["<none>", "<pending>", "<none>"]


@pytest.mark.parametrize("kind,obj,expected", [
    ("ConfigMap", {"data": {"a": "1", "b": "2"}, "binaryData": {"c": ""}}, [3, "5m"]),
    ("Secret", {"type": "Opaque", "data": {"a": "MQ=="}}, ["Opaque", 1, "5m"]),
    ("Namespace", {"status": {"phase": "Active"}}, ["Active", "5m"]),
    ("ServiceAccount", {}, [0, "5m"]),
])
def test_core_kinds(kind: str, obj: Obj, expected: list[Any]) -> None:
    assert cells(builtin("", kind), {"metadata": meta("o"), **obj}) == ["o", *expected]


def test_event_columns() -> None:
    rtype = builtin("", "Event")
    assert headers(rtype) == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    obj = {"metadata": meta("e1"), "type": "Normal", "reason": "Installed",
           "message": "done\n", "involvedObject": {"kind": "Provider", "name": "p"},
           "lastTimestamp": (NOW - timedelta(seconds=30)).isoformat(), "count": 2,
           "source": {"component": "lockwright"}}
    assert cells(rtype, obj) == ["30s", "Normal", "Installed", "provider/p", "",
                                 "lockwright", "done", "<unknown>", 2, "e1"]


def test_rbac_and_crd_kinds() -> None:
    binding = {"metadata": meta("rb"), "roleRef": {"kind": "ClusterRole", "name": "edit"},
               "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "ns"},
                            {"kind": "User", "name": "alice"}]}
    assert cells(builtin("rbac.authorization.k8s.io", "RoleBinding"), binding) == [
        "rb", "ClusterRole/edit", "5m", "alice", "", "ns/sa"]
    crd = builtin("apiextensions.k8s.io", "CustomResourceDefinition")
    assert headers(crd) == ["NAME", "CREATED AT"]
    assert cells(crd, {"metadata": meta("a.b")}) == ["a.b", CREATED]


@pytest.mark.parametrize("delta,expected", [
    (timedelta(seconds=-5), "<invalid>"), (timedelta(seconds=-1), "0s"),
    (timedelta(seconds=59), "59s"), (timedelta(seconds=119), "119s"),
    (timedelta(minutes=3, seconds=20), "3m20s"), (timedelta(minutes=5), "5m"),
    (timedelta(minutes=42), "42m"), (timedelta(hours=5, minutes=4), "5h4m"),
    (timedelta(hours=9), "9h"), (timedelta(days=3, hours=2), "3d2h"),
    (timedelta(days=40), "40d"), (timedelta(days=365 * 3 + 30), "3y30d"),
    (timedelta(days=365 * 9), "9y"),
])
def test_human_duration(delta: timedelta, expected: str) -> None:
    assert table.human_duration(delta) == expected


@pytest.mark.parametrize("expr,expected", [
    (".spec.items[*].name", ["first", "second"]),
    ("{.spec.items[0].name}", ["first"]),
    (".spec.items[-1].name", ["second"]),
    (".spec.items[0:1]", [{"name": "first"}]),
    (".status.conditions[?(@.type=='Ready')].status", ["True"]),
    (".status.conditions[?(@.type!=\"Ready\")].type", ["Synced"]),
    (".status.conditions[?(@.status)].type", ["Synced", "Ready"]),
    (".spec['size']", [3]),
    ("..name", ["first", "second"]),
    (".spec.missing.deeper", []),
    (".spec.size[0]", []),
])
def test_jsonpath(expr: str, expected: list[Any]) -> None:
    data = {"spec": {"size": 3, "items": [{"name": "first"}, {"name": "second"}]},
            "status": {"conditions": [{"type": "Synced", "status": "False"},
                                      {"type": "Ready", "status": "True"}]}}
    assert jsonpath.find(expr, data) == expected


@pytest.mark.parametrize("value,text", [
    ("s", "s"), (True, "true"), (3, "3"), (2.0, "2"), (1.5, "1.5"),
    ({"b": 1, "a": [1]}, '{"a":[1],"b":1}')])
def test_jsonpath_text(value: Any, text: str) -> None:
    assert jsonpath.to_text(value) == text
